"""Dropout with a cheap mask on the CPU.

PyTorch's CPU dropout draws its mask with ``bernoulli_``, one Mersenne-Twister draw per element: about
5 ns per element on a Xeon core, a third of a training step of the HINT Transformers on a CPU
(``benchmarks/RESULTS.md``). Here a CPU mask comes from numpy's SFC64 generator instead: 16 random bits
per element, compared with a threshold, about a quarter of the time. The generator is seeded from
PyTorch's default generator at every call, so ``torch.manual_seed`` and a checkpointed RNG state
reproduce the masks as they would PyTorch's own. On other devices, and under ``torch.compile`` (which
fuses the mask into its own kernels, in one graph), :func:`torch.nn.functional.dropout` runs unchanged.

The drop probability is rounded to a multiple of 2⁻¹⁶ (``p = 0.1`` drops with probability
6554/65536 = 0.100006), and kept elements are scaled by ``1 / (1 − that probability)``, so the
expectation of the output is exactly the input.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from neurosym.layers.value_checks import values_are_readable

_LEVELS = 1 << 16
"""Resolution of the drop probability: a mask entry is 16 random bits."""


def _checked(p: float) -> float:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be between 0 and 1, got {p!r}")
    return p


def _dropped_levels(p: float) -> int:
    """``p`` as a count of the 2¹⁶ equally likely 16-bit draws that drop an element."""
    return round(_checked(p) * _LEVELS)


def keep_multiplier(shape: torch.Size | tuple[int, ...], p: float, dtype: torch.dtype = torch.float32) -> Tensor:
    """A CPU dropout mask of ``shape``, already scaled: each entry independently 0 with probability ``p``
    (rounded to a multiple of 2⁻¹⁶, which must leave it strictly between 0 and 1), else ``1 / (1 − p)``.
    Drawn from numpy's SFC64 seeded by PyTorch's default CPU generator."""
    dropped = _dropped_levels(p)
    if not 0 < dropped < _LEVELS:
        raise ValueError(f"dropout probability {p!r} rounds to {dropped}/{_LEVELS}: use torch.nn.functional.dropout")
    count = math.prod(shape)
    seed = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
    words = np.random.SFC64(seed).random_raw((count + 3) // 4)  # four 16-bit draws per 64-bit word
    draws = torch.from_numpy(words.view(np.int16)[:count]).reshape(shape)  # uniform over −2¹⁵ .. 2¹⁵ − 1
    keep = draws >= dropped - _LEVELS // 2
    return keep.to(dtype).mul_(_LEVELS / (_LEVELS - dropped))


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """:func:`torch.nn.functional.dropout` of ``x [...]`` (not in place), with the mask of
    :func:`keep_multiplier` for floating-point CPU tensors in eager mode; ``x`` itself when not training or
    ``p = 0``."""
    dropped = _dropped_levels(p)
    if not training or p == 0.0:
        return x
    if not values_are_readable(x) or not x.is_floating_point() or not 0 < dropped < _LEVELS:
        return F.dropout(x, p, training)
    return x * keep_multiplier(x.shape, p, x.dtype)


class Dropout(nn.Dropout):
    """``nn.Dropout(p)`` through :func:`dropout`: the same module and state (none), a faster CPU mask."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__(_checked(p))

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)
