"""One size for glyphs from different sets, in MNIST's convention: the ink's bounding box is scaled to
20 pixels of 28 on its longer side (aspect ratio kept) and centred by its centre of mass in the image.

The shipped sets differ most in size, not in style: ``bhmsds`` glyphs fill their 28×28 images, MNIST's
digits their central 20×20, ``handwritten-calculator``'s about 14×14. A network trained on one set reads
another set's glyphs far better once both are brought to one size (the other-writers protocol of
``benchmarks/RESULTS.md`` measures it). :func:`glyph_window` brings one image of one's own, of any size and either
polarity, to the window the banks' images give.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from neurosym.data.symbol_images.render import WINDOW, check_pixel_array, render_windows, resize_images
from neurosym.layers.value_checks import check_intensities
from neurosym.training.checks import int_at_least, is_int, is_real

MNIST_BOX = 20
"""The longer side of the ink's bounding box in MNIST's images (pixels of :data:`MNIST_SIZE`)."""
MNIST_SIZE = 28
"""The side of MNIST's images."""
INK_THRESHOLD = 32
"""The pixel value (of 255, white ink on black) above which a pixel is ink."""
GLYPH_WINDOWS = (WINDOW, MNIST_SIZE)
"""The sides :func:`glyph_window` returns: the banks' rendered windows (HINT's readers) and MNIST's images (the
``mnist-add`` and ``hwf`` readers')."""


def mnist_box(side: int) -> int:
    """The longer side of the ink's bounding box in MNIST's convention for images of ``side`` pixels:
    :data:`MNIST_BOX` of :data:`MNIST_SIZE`, in proportion (rounded, at least 1)."""
    return max(1, round(MNIST_BOX * side / MNIST_SIZE))


def normalise_glyphs(
    images: np.ndarray, box: int | None = None, threshold: float = INK_THRESHOLD, chunk: int = 8192
) -> np.ndarray:
    """Scale and centre uint8 glyphs ``[N, H, W]`` (white ink on black) to MNIST's convention -> ``[N, H, W]``.

    The ink is every pixel above ``threshold``; its bounding box's longer side becomes ``box`` pixels
    (default: :func:`mnist_box` of the images' shorter side, 20 for 28×28) and its centre of mass (of all
    pixel values) the image's centre, by one bilinear resampling. An image without ink is returned unchanged.
    ``box`` is an int, ``threshold`` a number in ``[0, 255)`` and ``chunk`` (images resampled at once) an int of at
    least 1; anything else raises ``ValueError`` (images that are no numpy array ``TypeError``, as
    :func:`~neurosym.data.symbol_images.render.check_pixel_array` says).
    """
    check_pixel_array(images, "images")
    if images.ndim != 3 or images.dtype != np.uint8 or 0 in images.shape[1:]:
        raise ValueError(f"images must be uint8 [N, H, W] with H, W >= 1, got {images.dtype} of shape {list(images.shape)}")
    if box is None:
        box = mnist_box(min(images.shape[1:]))
    if not (is_int(box) and 0 < box <= min(images.shape[1:])):  # (True was taken as a box of 1 pixel)
        raise ValueError(f"box must be an int in 1..{min(images.shape[1:])}, got {box!r}")
    if not (is_real(threshold) and 0 <= threshold < 255):  # (255 or NaN: no ink, and every image came back unchanged)
        raise ValueError(f"threshold must be a number in [0, 255), got {threshold!r}")
    int_at_least(chunk, "chunk", 1)  # (a negative chunk returned every image unchanged)
    parts = [_normalise(_tensor_of(images[start : start + chunk]), box, threshold) for start in range(0, len(images), chunk)]
    return np.concatenate(parts) if parts else images.copy()


def _normalise(images: torch.Tensor, box: int, threshold: float) -> np.ndarray:
    """:func:`normalise_glyphs` of one chunk ``[n, H, W]`` uint8."""
    n, height, width = images.shape
    pixels = images.float()
    ink = pixels > threshold
    rows, columns = ink.any(dim=2), ink.any(dim=1)  # [n, H], [n, W]
    extent = torch.maximum(_span(rows), _span(columns))  # [n] pixels
    mass = pixels.sum(dim=(1, 2)).clamp(min=1e-6)
    centre_y = (pixels.sum(dim=2) * torch.arange(height)).sum(dim=1) / mass
    centre_x = (pixels.sum(dim=1) * torch.arange(width)).sum(dim=1) / mass
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0] = theta[:, 1, 1] = extent / box  # input pixels per output pixel
    theta[:, 0, 2] = (2 * centre_x + 1) / width - 1  # normalised coordinates, align_corners=False
    theta[:, 1, 2] = (2 * centre_y + 1) / height - 1
    grid = F.affine_grid(theta, [n, 1, height, width], align_corners=False)
    resampled = F.grid_sample(pixels[:, None], grid, mode="bilinear", padding_mode="zeros", align_corners=False)[:, 0]
    empty = ~rows.any(dim=1)
    resampled[empty] = pixels[empty]
    return resampled.round().clamp(0, 255).to(torch.uint8).numpy()


def _span(occupied: torch.Tensor) -> torch.Tensor:
    """Length ``[n]`` from the first to the last ``True`` of each row of ``occupied [n, L]`` (0 when none)."""
    position = torch.arange(occupied.shape[1])
    first = torch.where(occupied, position, occupied.shape[1]).amin(dim=1)
    last = torch.where(occupied, position, -1).amax(dim=1)
    return (last - first + 1).clamp(min=0).float()


def glyph_window(image: np.ndarray | torch.Tensor, black_on_white: bool | None = None, window: int = WINDOW) -> torch.Tensor:
    """One grey glyph image of one's own ``[H, W]`` (any size; uint8 pixels or float intensities in ``[0, 1]``) as the
    banks' windows show their symbols: float ``[32, 32]`` in ``[0, 1]``, white ink on black, ready for
    :meth:`~neurosym.pipelines.HintPipeline.predict` (stack the windows of an expression to ``[T, 32, 32]``).

    The ink (pixels above :data:`INK_THRESHOLD`, white on black) is cropped to its bounding box, padded square with
    black so that its longer side fills :data:`MNIST_BOX` of :data:`MNIST_SIZE` pixels, resized to that size, brought to
    the banks' convention by :func:`normalise_glyphs` (the box's longer side 20 pixels, centred by mass) and rendered as
    :func:`~neurosym.data.symbol_images.render.render_windows` renders bank images (the ink's longer side about 23 of
    32 pixels). ``window=28`` returns that glyph itself, float ``[28, 28]``: MNIST's convention, which the readers of
    the grammar pipeline's ``mnist-add`` and ``hwf`` tasks read (``SymbolClassifier(..., window=28)``).
    ``black_on_white`` says the image's polarity; ``None`` reads it from the border: mostly bright (mean above half)
    is black ink on white. The paper's level (the border's median: grey paper, a scan's or a photograph's) is taken off
    every pixel before the ink is found, and the ink is stretched to full contrast (its brightest pixel white).
    ``ValueError`` for an image that is no ``[H, W]`` of at least one pixel, values that
    ``check_intensities`` refuses, an image without ink (blank), and a ``window`` other than 32 or 28.
    """
    if window not in GLYPH_WINDOWS or not is_int(window):
        raise ValueError(f"window must be {' or '.join(map(str, GLYPH_WINDOWS))} pixels, got {window!r}")
    pixels = _white_on_black(image, black_on_white)
    rows, columns = (np.flatnonzero((pixels > INK_THRESHOLD).any(axis=axis)) for axis in (1, 0))
    if len(rows) == 0:
        raise ValueError(
            f"the glyph image holds no ink: no pixel stands out from its background by more than {INK_THRESHOLD}/255"
        )
    box = pixels[rows[0] : rows[-1] + 1, columns[0] : columns[-1] + 1]
    ink = (box.astype(np.float64) * (255 / box.max())).round().astype(np.uint8)  # (dim ink on dark paper: full contrast)
    side = math.ceil(max(ink.shape) * MNIST_SIZE / MNIST_BOX)
    top, left = (side - ink.shape[0]) // 2, (side - ink.shape[1]) // 2
    square = np.pad(ink, ((top, side - ink.shape[0] - top), (left, side - ink.shape[1] - left)))
    glyph = normalise_glyphs(resize_images(square[None], (MNIST_SIZE, MNIST_SIZE)))
    return render_windows(glyph)[0, 0] if window == WINDOW else torch.from_numpy(glyph[0]).float() / 255


def _tensor_of(array: np.ndarray) -> torch.Tensor:
    """``torch.from_numpy(array)``, of a copy where ``array`` is read-only (the shipped images are: torch warned that
    writing through the tensor would be undefined)."""
    return torch.from_numpy(array if array.flags.writeable else array.copy())


def _white_on_black(image: np.ndarray | torch.Tensor, black_on_white: bool | None) -> np.ndarray:
    """``image [H, W]`` as uint8 pixels, white ink on black (inverted when ``black_on_white``, or, for ``None``, when its
    border's mean is above half), the paper's level (the border's median) taken off every pixel: grey paper is black."""
    tensor = (_tensor_of(image) if isinstance(image, np.ndarray) else torch.as_tensor(image)).detach().cpu()
    if tensor.dim() != 2 or 0 in tensor.shape:
        raise ValueError(f"a glyph image must be grey [H, W] with H, W >= 1, got shape {tuple(tensor.shape)}")
    check_intensities(tensor)
    if black_on_white is not None and not isinstance(black_on_white, bool | np.bool_):
        raise ValueError(f"black_on_white must be True, False or None (detect), got {black_on_white!r}")
    pixels = (tensor if tensor.dtype == torch.uint8 else (tensor.double() * 255).round().to(torch.uint8)).numpy()
    border = np.concatenate([pixels[0], pixels[-1], pixels[:, 0], pixels[:, -1]])
    if black_on_white is None:
        black_on_white = bool(border.mean() > 127.5)
    if black_on_white:
        pixels, border = 255 - pixels, 255 - border
    paper = np.median(border).astype(np.uint8)  # (grey paper: every pixel was ink, and a blank page was read)
    return pixels - np.minimum(pixels, paper)
