"""Handwriting-like symbols drawn procedurally: + − × ÷ ( ), the few-shot letters x y a b c d, and the
digits in the shapes people commonly write them (:data:`DIGIT_ALLOGRAPHS`).

Each glyph is a few pen strokes (polylines in a unit square, x to the right and y downwards). Every
sample gets its own bends, endpoint jitter, scale, rotation, slant, shift, pen thickness and ink
pressure, is rasterised with soft edges, and is finally warped by a smooth random (elastic) field.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange, repeat

from neurosym.training.checks import int_at_least

_SUPERSAMPLE = 1
_CHUNK = 256


def _line(x0: float, y0: float, x1: float, y1: float, points: int = 6) -> np.ndarray:
    t = np.linspace(0.0, 1.0, points)[:, None]
    return (1 - t) * np.array([x0, y0]) + t * np.array([x1, y1])


def _arc(cx: float, cy: float, rx: float, ry: float, start_deg: float, end_deg: float, points: int = 12) -> np.ndarray:
    angles = np.deg2rad(np.linspace(start_deg, end_deg, points))
    return np.stack([cx + rx * np.cos(angles), cy + ry * np.sin(angles)], axis=1)


def _dot(x: float, y: float) -> np.ndarray:
    return _line(x - 0.025, y, x + 0.025, y, points=2)


GLYPHS: dict[str, tuple[np.ndarray, ...]] = {
    "+": (_line(0.18, 0.52, 0.82, 0.5), _line(0.5, 0.18, 0.5, 0.82)),
    "-": (_line(0.18, 0.5, 0.82, 0.5),),
    "*": (_line(0.3, 0.3, 0.7, 0.7), _line(0.7, 0.3, 0.3, 0.7)),
    "/": (_line(0.18, 0.5, 0.82, 0.5), _dot(0.5, 0.26), _dot(0.5, 0.74)),
    "(": (_arc(0.78, 0.5, 0.35, 0.42, 128, 232),),
    ")": (_arc(0.22, 0.5, 0.35, 0.42, -52, 52),),
    "x": (_arc(0.12, 0.58, 0.38, 0.3, -60, 60), _line(0.82, 0.3, 0.2, 0.86)),
    "y": (_line(0.25, 0.25, 0.52, 0.55), _arc(0.3, 0.3, 0.45, 0.62, -15, 85)),
    "a": (_arc(0.45, 0.6, 0.2, 0.22, 0, 360, points=16), _line(0.66, 0.36, 0.68, 0.84)),
    "b": (_line(0.34, 0.1, 0.34, 0.86), _arc(0.52, 0.64, 0.19, 0.21, 180, 540, points=16)),
    "c": (_arc(0.52, 0.56, 0.26, 0.3, 40, 320, points=14),),
    "d": (_arc(0.46, 0.64, 0.2, 0.21, 0, 360, points=16), _line(0.67, 0.1, 0.67, 0.86)),
}
"""Stroke skeletons (polylines in the unit square) of the procedurally drawn operators, brackets and letters."""

_ONE = _line(0.52, 0.1, 0.5, 0.9)
_ONE_FLAG = _line(0.3, 0.3, 0.52, 0.1)
_ONE_LONG_FLAG = _line(0.2, 0.42, 0.54, 0.1)
_SEVEN = (_line(0.2, 0.14, 0.8, 0.12), _line(0.8, 0.12, 0.42, 0.9))
_NINE_LOOP = _arc(0.46, 0.3, 0.22, 0.19, 0, 360, points=16)
DIGIT_ALLOGRAPHS: dict[str, tuple[tuple[np.ndarray, ...], ...]] = {
    "0": ((_arc(0.5, 0.5, 0.27, 0.4, -90, 275, points=20),),),
    "1": ((_ONE,), (_ONE_FLAG, _ONE), (_ONE_LONG_FLAG, _ONE), (_ONE_FLAG, _ONE, _line(0.3, 0.9, 0.72, 0.9))),
    "2": (
        (_arc(0.5, 0.34, 0.26, 0.22, 190, 400, points=14), _line(0.73, 0.48, 0.2, 0.88), _line(0.2, 0.88, 0.82, 0.87)),
        (_arc(0.5, 0.36, 0.26, 0.24, 190, 430, points=14), _arc(0.5, 0.78, 0.32, 0.12, -30, 180, points=10)),
    ),
    "3": (
        (_arc(0.48, 0.3, 0.24, 0.19, 200, 450, points=14), _arc(0.48, 0.69, 0.28, 0.21, 270, 520, points=14)),
        (_line(0.24, 0.12, 0.74, 0.12), _line(0.74, 0.12, 0.44, 0.44), _arc(0.48, 0.67, 0.28, 0.23, 280, 520, points=14)),
    ),
    "4": (
        (_line(0.62, 0.1, 0.18, 0.64), _line(0.18, 0.64, 0.84, 0.64), _line(0.64, 0.1, 0.64, 0.92)),
        (_line(0.28, 0.1, 0.24, 0.6), _line(0.24, 0.6, 0.82, 0.6), _line(0.66, 0.3, 0.66, 0.92)),
    ),
    "5": ((_line(0.74, 0.12, 0.32, 0.12), _line(0.32, 0.12, 0.29, 0.46), _arc(0.5, 0.65, 0.27, 0.24, 215, 505, points=16)),),
    "6": ((_arc(0.7, 0.62, 0.44, 0.52, 240, 180, points=10), _arc(0.5, 0.68, 0.23, 0.2, 0, 360, points=16)),),
    "7": (_SEVEN, (*_SEVEN, _line(0.38, 0.52, 0.78, 0.5))),
    "8": ((_arc(0.5, 0.29, 0.2, 0.18, 0, 360, points=16), _arc(0.5, 0.7, 0.25, 0.21, 0, 360, points=16)),),
    "9": (
        (_NINE_LOOP, _line(0.68, 0.3, 0.64, 0.9)),
        (_NINE_LOOP, _arc(0.38, 0.32, 0.3, 0.56, 0, 100, points=12)),
        (_NINE_LOOP, _line(0.68, 0.3, 0.64, 0.76), _arc(0.48, 0.76, 0.16, 0.14, 0, 160, points=8)),
    ),
}
"""The digits as several allographs each (the shapes different hands write): ``1`` plain, with a short or a long
flag, with flag and base; ``2`` with a straight or a curled foot; ``3`` round or flat-topped; ``4`` closed or open; ``7`` plain or
crossed; ``9`` with a straight, a curved or a hooked tail."""
ALLOGRAPHS: dict[str, tuple[tuple[np.ndarray, ...], ...]] = {
    **{symbol: (strokes,) for symbol, strokes in GLYPHS.items()},
    **DIGIT_ALLOGRAPHS,
}
"""Every drawable symbol's allographs (one for the symbols of :data:`GLYPHS`)."""


def _perturbed_points(glyph: Sequence[np.ndarray], count: int, rng: np.random.Generator) -> np.ndarray:
    """Sample ``count`` perturbed copies of the segments of ``glyph`` (its strokes): ``[count, S, 2, 2]``."""
    strokes = []
    for stroke in glyph:
        points = repeat(stroke, "p c -> n p c", n=count).copy()
        t = np.linspace(0.0, 1.0, len(stroke))
        direction = stroke[-1] - stroke[0]
        normal = np.array([-direction[1], direction[0]]) / max(np.linalg.norm(direction), 1e-6)
        bend = rng.normal(0.0, 0.04, size=(count, 1, 1)) * (4 * t * (1 - t))[None, :, None] * normal
        ends = rng.normal(0.0, 0.025, size=(count, 2, 2))
        points = points + bend + (1 - t)[None, :, None] * ends[:, :1] + t[None, :, None] * ends[:, 1:]
        points = points + rng.normal(0.0, 0.006, size=points.shape)
        strokes.append(np.stack([points[:, :-1], points[:, 1:]], axis=2))
    segments = np.concatenate(strokes, axis=1) - 0.5
    angle = rng.uniform(-0.2, 0.2, size=count)
    slant = rng.uniform(-0.3, 0.3, size=count)
    scale = rng.uniform(0.8, 1.12, size=(count, 2))
    cos, sin = np.cos(angle), np.sin(angle)
    rotation = np.stack([np.stack([cos, -sin], -1), np.stack([sin, cos], -1)], -2)
    shear = repeat(np.eye(2), "i j -> n i j", n=count).copy()
    shear[:, 0, 1] = -slant
    transform = rotation @ shear * scale[:, :, None]
    shift = rng.uniform(-0.06, 0.06, size=(count, 1, 1, 2))
    return np.einsum("nij,nsej->nsei", transform, segments) + 0.5 + shift


def _allograph_points(glyphs: Sequence[Sequence[np.ndarray]], count: int, rng: np.random.Generator) -> np.ndarray:
    """Segments ``[count, S, 2, 2]`` of ``count`` perturbed glyphs, each one of ``glyphs`` drawn uniformly. Glyphs
    with fewer segments repeat their last one up to ``S`` (a repeated segment draws nothing new)."""
    if len(glyphs) == 1:
        return _perturbed_points(glyphs[0], count, rng)
    choice = rng.integers(len(glyphs), size=count)
    parts = [_perturbed_points(glyph, int((choice == i).sum()), rng) for i, glyph in enumerate(glyphs)]
    longest = max(part.shape[1] for part in parts)
    segments = np.zeros((count, longest, 2, 2))
    for i, part in enumerate(parts):
        padding = repeat(part[:, -1:], "n 1 e c -> n s e c", s=longest - part.shape[1])
        segments[choice == i] = np.concatenate([part, padding], axis=1)
    return segments


def _rasterise(segments: torch.Tensor, thickness: torch.Tensor, ink: torch.Tensor, size: int) -> torch.Tensor:
    """Soft-edged strokes: segments ``[B, S, 2, 2]`` → intensities ``[B, 1, size, size]`` in ``[0, 1]``."""
    fine = size * _SUPERSAMPLE
    axis = (torch.arange(fine, dtype=torch.float32) + 0.5) / fine
    grid = torch.stack(torch.meshgrid(axis, axis, indexing="xy"), dim=-1).reshape(1, -1, 1, 2)
    start, end = segments[:, None, :, 0], segments[:, None, :, 1]
    along = end - start
    t = ((grid - start) * along).sum(-1) / (along * along).sum(-1).clamp_min(1e-9)
    nearest = start + t.clamp(0, 1)[..., None] * along
    distance = (grid - nearest).norm(dim=-1).amin(dim=-1)
    pixel = 1.0 / fine
    strength = ((thickness[:, None] - distance) / pixel + 0.5).clamp(0, 1) * ink[:, None]
    image = rearrange(strength, "b (h w) -> b 1 h w", h=fine)
    return F.avg_pool2d(image, _SUPERSAMPLE)


def _elastic(images: torch.Tensor, generator: torch.Generator, strength: float = 0.05) -> torch.Tensor:
    """Warp ``[B, 1, H, W]`` images by a smooth random displacement field (elastic distortion)."""
    batch, _, height, width = images.shape
    coarse = torch.randn(batch, 2, 4, 4, generator=generator) * strength
    field = F.interpolate(coarse, size=(height, width), mode="bicubic", align_corners=True)
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, height), torch.linspace(-1, 1, width), indexing="ij")
    base = torch.stack([xs, ys], dim=-1)
    grid = base[None] + rearrange(field, "b c h w -> b h w c")
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=True)


def draw_symbols(symbol: str, count: int, size: int = 28, seed: int = 0) -> np.ndarray:
    """Draw ``count`` handwriting-like images of ``symbol``: uint8 ``[count, size, size]``, white on black.
    A symbol with several allographs (:data:`ALLOGRAPHS`) draws each image in one of them, uniformly at random.
    ``count`` is an int of at least 0, ``size`` one of at least 8 and ``seed`` one of at least 0 (else ``ValueError``)."""
    if symbol not in ALLOGRAPHS:
        raise KeyError(f"no procedural glyph for {symbol!r}; available: {sorted(ALLOGRAPHS)}")
    count, size = int_at_least(count, "count", 0), int_at_least(size, "size", 8)  # (2.5 failed in numpy, 8.5 in torch)
    seed = int_at_least(seed, "seed", 0)  # (-1 failed in numpy's seeding, naming no seed; "1" was read as 1)
    rng = np.random.default_rng([seed, ord(symbol[0])])
    generator = torch.Generator().manual_seed(int(rng.integers(2**31)))
    segments = torch.from_numpy(_allograph_points(ALLOGRAPHS[symbol], count, rng)).float()
    thickness = torch.from_numpy(rng.uniform(0.03, 0.075, size=count)).float()
    ink = torch.from_numpy(rng.uniform(0.75, 1.0, size=count)).float()
    chunks = [
        _elastic(_rasterise(segments[i : i + _CHUNK], thickness[i : i + _CHUNK], ink[i : i + _CHUNK], size), generator)
        for i in range(0, count, _CHUNK)
    ]
    images = torch.cat(chunks) if chunks else torch.zeros(0, 1, size, size)
    return (rearrange(images, "b 1 h w -> b h w") * 255).round().clamp(0, 255).to(torch.uint8).numpy()


def draw_bank_images(symbols: Sequence[str], per_symbol: int, size: int = 28, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Images ``[len(symbols) * per_symbol, size, size]`` and their labels for several symbols."""
    drawn = [draw_symbols(s, per_symbol, size, seed) for s in symbols]
    images = np.concatenate(drawn) if drawn else np.zeros((0, size, size), np.uint8)
    labels = np.repeat(np.asarray(list(symbols), dtype=str), per_symbol)
    return images, labels
