"""Rendering per the paper's appendix B.1: symbols side by side, white on black, height 32, 32-wide windows."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange

from neurosym.training.checks import height_width, int_at_least, is_int

WINDOW = 32
"""Height of a rendered expression and width of the sliding window (appendix B.1)."""


def check_pixel_array(images: object, what: str) -> None:
    """Raise ``TypeError`` naming ``what`` unless ``images`` is a numpy array: a list failed on ``.ndim``, and a uint8
    tensor was refused as "must be uint8 pixels, got torch.uint8"."""
    if not isinstance(images, np.ndarray):
        hint = " (images.numpy(), or images.cpu().numpy(), gives one)" if isinstance(images, torch.Tensor) else ""
        raise TypeError(f"{what} must be a numpy array of uint8 pixels, got {type(images).__name__}{hint}")


def resize_images(images: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Resize uint8 ``[N, H, W]`` images (``H, W >= 1``) to ``[N, *size]`` (bilinear with anti-aliasing); ``TypeError``
    for images that are no numpy array (:func:`check_pixel_array`)."""
    check_pixel_array(images, "images")
    if images.ndim != 3 or 0 in images.shape[1:]:  # (images of no pixels failed inside torch's interpolation)
        raise ValueError(f"images must be [N, H, W] with H, W >= 1, got shape {images.shape}")
    if images.dtype != np.uint8:  # floats in [0, 1] came back black, larger ints clipped at 255
        raise ValueError(f"images must be uint8 pixels, got {images.dtype}")
    size = height_width(size, "size")  # a bool was taken as a side of 1
    if tuple(images.shape[1:]) == size:
        return images
    if len(images) == 0:
        return np.zeros((0, *size), dtype=np.uint8)
    batch = rearrange(torch.tensor(images, dtype=torch.float32), "n h w -> n 1 h w")
    resized = F.interpolate(batch, size=tuple(size), mode="bilinear", antialias=True, align_corners=False)
    return rearrange(resized, "n 1 h w -> n h w").round().clamp(0, 255).to(torch.uint8).numpy()


def render_strip(images: np.ndarray, height: int = WINDOW) -> np.ndarray:
    """Place symbol images ``[n, H, W]`` side by side and scale to ``height``: uint8 ``[height, n * W']``.

    Each symbol is scaled to ``height`` keeping its aspect ratio, so square symbols give ``W' = height`` (``TypeError``
    for images that are no numpy array, :func:`check_pixel_array`).
    """
    check_pixel_array(images, "symbol images")
    if images.ndim != 3 or 0 in images.shape:  # (images of no pixels failed in a division by zero or in torch)
        raise ValueError(f"need a non-empty [n, H, W] array of symbol images with H, W >= 1, got shape {images.shape}")
    if images.dtype != np.uint8:
        raise ValueError(f"symbol images must be uint8 pixels, got {images.dtype}")
    if not is_int(height) or height < 1:  # (True was taken as a height of 1, 31.5 named another size)
        raise ValueError(f"height must be a positive number of pixels, got {height!r}")
    width = max(1, round(images.shape[2] * height / images.shape[1]))
    return rearrange(resize_images(images, (height, width)), "n h w -> h (n w)")


def sliding_windows(strip: np.ndarray, window: int = WINDOW) -> torch.Tensor:
    """Cut a rendered strip ``[window, W]`` of uint8 pixels into windows of ``window`` columns: float
    ``[ceil(W / window), 1, window, window]`` in ``[0, 1]`` (a last partial window is padded with black). Other dtypes
    raise ``ValueError``: pixels are divided by 255, so a strip already in ``[0, 1]`` would read as black; a strip that is
    no numpy array ``TypeError`` (:func:`check_pixel_array`)."""
    window = int_at_least(window, "window", 1)  # (True was taken as a window of 1 pixel)
    check_pixel_array(strip, "strip")
    if strip.ndim != 2 or strip.shape[0] != window:
        raise ValueError(f"strip must be [{window}, W] for a window of at least 1 pixel, got shape {strip.shape}")
    if strip.dtype != np.uint8:
        raise ValueError(f"strip must hold uint8 pixels (0..255), got {strip.dtype}")
    pad = (-strip.shape[1]) % window
    padded = np.pad(strip, ((0, 0), (0, pad)))
    return rearrange(torch.from_numpy(padded).float() / 255.0, "h (n w) -> n 1 h w", w=window)


def render_windows(images: np.ndarray) -> torch.Tensor:
    """Square symbol images ``[n, S, S]`` (uint8, white on black) → windows float ``[n, 1, 32, 32]`` (one per symbol).
    Other images raise ``ValueError``: scaled to a height of 32 they are not 32 wide, and the windows cut from their
    strip would not hold one symbol each; images that are no numpy array ``TypeError`` (:func:`check_pixel_array`)."""
    check_pixel_array(images, "symbol images")
    if images.ndim == 3 and images.shape[1] != images.shape[2]:
        raise ValueError(f"symbol images must be square [n, S, S] to give one window each, got shape {images.shape}")
    return sliding_windows(render_strip(images))
