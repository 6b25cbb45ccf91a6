"""Stroke-width normalisation: every glyph thinned to its one-pixel skeleton and redrawn with one pen.

Writers and scanners differ in stroke width and blur far more than in the shape of a symbol (MNIST's
digits are bold and soft, ``bhmsds``' thin and sharp, ``handwritten-calculator``'s blurred). A reader that
sees only skeletons redrawn at one width is blind to those differences; ``benchmarks/RESULTS.md``
measures what it gives on the other-writers protocol.

The skeleton is Zhang & Suen's (1984) parallel thinning, computed as each pixel's 8-bit neighbour code and a
256-entry lookup per sub-iteration, so a batch of windows is thinned at once on any device. Every neighbourhood
(the codes, the pen, the blur) is a sum of shifted copies: oneDNN runs such one-channel convolutions and
max-pools over ten times slower on the CPU.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import check_tensor
from neurosym.layers.value_checks import check_intensities
from neurosym.training.checks import int_at_least, is_real, positive_number

_NEIGHBOURS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))
"""Offsets (row, column) of the neighbours P2 … P9 of Zhang & Suen, clockwise from north."""


@functools.cache
def _removable() -> torch.Tensor:
    """``[2, 256]`` bool: may a foreground pixel whose neighbours P2…P9 are the bits of the index (P2 the
    lowest) be removed in the first / second sub-iteration of Zhang & Suen's thinning?"""
    table = torch.zeros(2, 256, dtype=torch.bool)
    for code in range(256):
        p = [(code >> bit) & 1 for bit in range(8)]  # p[0] = P2, ..., p[7] = P9
        count = sum(p)
        transitions = sum(p[i] == 0 and p[(i + 1) % 8] == 1 for i in range(8))
        if not (2 <= count <= 6 and transitions == 1):
            continue
        north, east, south, west = p[0], p[2], p[4], p[6]
        table[0, code] = north * east * south == 0 and east * south * west == 0
        table[1, code] = north * east * west == 0 and north * south * west == 0
    return table


def _shifted(images: torch.Tensor, row: int, column: int) -> torch.Tensor:
    """``images [..., H, W]`` -> the same shape, each pixel holding its neighbour at offset (``row``,
    ``column``); zero beyond the border."""
    height, width = images.shape[-2:]
    margin = max(abs(row), abs(column))
    padded = F.pad(images, (margin, margin, margin, margin))
    return padded[..., margin + row : margin + row + height, margin + column : margin + column + width]


def _neighbour_codes(ink: torch.Tensor) -> torch.Tensor:
    """Bool images ``[N, H, W]`` -> uint8 ``[N, H, W]``: each pixel's neighbours P2 … P9 as bits 0 … 7."""
    pixels = ink.to(torch.uint8)
    codes = torch.zeros_like(pixels)
    for bit, (row, column) in enumerate(_NEIGHBOURS):
        codes |= _shifted(pixels, row, column) << bit
    return codes


def skeletonise(ink: torch.Tensor, max_iterations: int = 32) -> torch.Tensor:
    """Thin bool images ``[N, H, W]`` to one-pixel-wide skeletons ``[N, H, W]`` (bool, same device).

    Zhang & Suen's two sub-iterations are repeated until no pixel changes or ``max_iterations`` passes;
    connectivity and the end points of strokes are kept, and an isolated pixel stays, as does an isolated 2×2 square
    (their parallel step removes all four of its pixels at once: the dots of ÷ vanished). ``TypeError`` for ink that is
    no tensor (a list failed on ``.dtype``).
    """
    check_tensor(ink, "skeletonise's ink")
    if ink.dtype != torch.bool or ink.dim() != 3:
        raise ValueError(f"skeletonise expects bool images [N, H, W], got {ink.dtype} of shape {tuple(ink.shape)}")
    int_at_least(max_iterations, "max_iterations", 0)  # (a negative count returned the ink unthinned)
    table = _removable().to(ink.device)
    skeleton = ink.clone()
    for _ in range(max_iterations):
        before = skeleton
        for sub_iteration in (0, 1):
            codes = _neighbour_codes(skeleton)
            removable = table[sub_iteration][codes.long()]
            _keep_isolated_squares(removable, codes)
            skeleton = skeleton & ~removable
        if torch.equal(skeleton, before):
            break
    return skeleton


_SQUARE_CODES = (28, 112, 7, 193)
"""Neighbour codes of the top-left, top-right, bottom-left and bottom-right pixels of an isolated 2×2 square (east,
south-east and south for the top-left one, and so on)."""


def _keep_isolated_squares(removable: torch.Tensor, codes: torch.Tensor) -> None:
    """Clear ``removable [N, H, W]`` (bool, in place) at every pixel of a 2×2 square of ink with no other ink around it
    (each pixel's neighbours are the other three), read from the neighbour ``codes [N, H, W]``."""
    top_left, top_right, bottom_left, bottom_right = _SQUARE_CODES
    n, row, column = (codes[:, :-1, :-1] == top_left).nonzero(as_tuple=True)  # few: checked one by one
    isolated = (
        (codes[n, row, column + 1] == top_right)
        & (codes[n, row + 1, column] == bottom_left)
        & (codes[n, row + 1, column + 1] == bottom_right)
    )
    n, row, column = n[isolated], row[isolated], column[isolated]
    for d_row, d_column in ((0, 0), (0, 1), (1, 0), (1, 1)):
        removable[n, row + d_row, column + d_column] = False


def _gaussian_taps(blur: float) -> tuple[float, ...]:
    """A Gaussian of ``blur`` pixels at the offsets ``-r … r`` (``r = max(1, round(2 * blur))``), summing to 1: ``2r + 1``
    Python floats (float64), which a product with a window rounds to the window's dtype."""
    radius = max(1, round(2 * blur))
    taps = [math.exp(-(offset**2) / (2 * blur**2)) for offset in range(-radius, radius + 1)]
    total = math.fsum(taps)
    return tuple(tap / total for tap in taps)


class StrokeNormaliser(nn.Module):
    """Redraw every glyph as its skeleton traced by one round pen: windows ``[N, 1, S, S]`` float in
    ``[0, 1]`` -> ``[N, 1, S, S]`` float in ``[0, 1]``; a blank window stays blank.

    Ink is every pixel above ``threshold`` times the window's brightest pixel; the skeleton is widened to
    ``width`` pixels (a ``width``×``width`` max-pool) and softened by a Gaussian of ``blur`` pixels, then
    scaled so the brightest pixel is 1, all in the windows' dtype (the Gaussian's taps are float64 numbers).
    Parameter-free; the same on any batch, training or not. The buffer ``gaussian`` (the taps ``[2r + 1]`` in
    ``dtype``, torch's default dtype unless given) is there for the state dict, which thereby says a normaliser was
    used; the forward reads the taps, and loading a state of other taps (another ``blur``) is refused. ``width`` and
    ``threshold`` are not in the state: a loader builds the normaliser with the ones it was saved with (the
    runners keep ``stroke_width`` in their checkpoints' setup). ``device`` and ``dtype`` are torch's factory keyword arguments of that buffer
    (:mod:`neurosym.layers.factory`).
    """

    gaussian: torch.Tensor

    def __init__(
        self,
        width: int = 3,
        blur: float = 0.8,
        threshold: float = 0.4,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        int_at_least(width, "the stroke width (pixels)", 1)  # (2.5 made a max-pool of another size)
        positive_number(blur, "blur (pixels)")  # (NaN and infinity failed in round())
        if not (is_real(threshold) and 0 < threshold < 1):
            raise ValueError(f"threshold must be a number in (0, 1), got {threshold!r}")
        self.width, self.threshold, self.blur = width, threshold, blur
        self.taps = _gaussian_taps(blur)  # (a float32 buffer cast to float64 blurred float64 windows 6e-9 off)
        self.register_buffer("gaussian", torch.empty(len(self.taps), **factory))  # saved: a checkpoint says it was used
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The buffer ``gaussian`` set to the taps again (what deferred initialisation calls after ``to_empty``)."""
        with torch.no_grad():
            self.gaussian.copy_(torch.tensor(self.taps, device=self.gaussian.device, dtype=self.gaussian.dtype))

    def _load_from_state_dict(self, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        """Load as torch does, refusing (in ``load_state_dict``'s list of errors) a ``gaussian`` of other taps: a state
        saved by a normaliser of another ``blur`` was taken, and this one went on blurring at its own."""
        saved = state_dict.get(prefix + "gaussian")
        if isinstance(saved, torch.Tensor) and saved.shape == self.gaussian.shape:
            own = torch.tensor(self.taps, dtype=saved.dtype, device=saved.device)
            if not torch.allclose(saved, own, rtol=1e-3, atol=0):
                args[-1].append(  # error_msgs
                    f"{prefix}gaussian holds the taps of another blur than this StrokeNormaliser's ({self.blur:g} "
                    "pixels): build it with the blur it was saved with"
                )
        super()._load_from_state_dict(state_dict, prefix, *args)

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        """``windows [N, 1, S, S]`` in ``[0, 1]`` -> redrawn ``[N, 1, S, S]`` (``TypeError`` for windows that are no
        tensor: a list failed on ``.dim()``)."""
        check_tensor(windows, "StrokeNormaliser's windows")
        if windows.dim() != 4 or windows.shape[1] != 1 or 0 in windows.shape[2:]:  # (no pixels: failed in amax)
            raise ValueError(f"StrokeNormaliser expects windows [N, 1, S, S], got {tuple(windows.shape)}")
        if not windows.is_floating_point():
            raise ValueError(f"StrokeNormaliser expects floating-point windows in [0, 1], got {windows.dtype}")
        check_intensities(windows)  # (a NaN pixel blanked its window)
        peak = windows.amax(dim=(2, 3), keepdim=True)
        ink = (windows > self.threshold * peak) & (peak > 0)
        skeleton = skeletonise(rearrange(ink, "n 1 h w -> n h w"))
        offsets = range(-((self.width - 1) // 2), self.width // 2 + 1)  # the pen: a width × width square
        pen = functools.reduce(torch.logical_or, (_shifted(skeleton, 0, offset) for offset in offsets))
        pen = functools.reduce(torch.logical_or, (_shifted(pen, offset, 0) for offset in offsets)).to(windows.dtype)
        radius = len(self.taps) // 2
        soft = functools.reduce(torch.add, (weight * _shifted(pen, 0, tap - radius) for tap, weight in enumerate(self.taps)))
        soft = functools.reduce(torch.add, (weight * _shifted(soft, tap - radius, 0) for tap, weight in enumerate(self.taps)))
        soft = rearrange(soft, "n h w -> n 1 h w")
        return soft / soft.amax(dim=(2, 3), keepdim=True).clamp(min=torch.finfo(soft.dtype).tiny)
