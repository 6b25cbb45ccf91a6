"""Numerical guards shared by the arithmetic units.

The units must never produce NaN for a finite input, and must stay finite (outputs and gradients) for
inputs up to 1e6 in magnitude. Three guards achieve this:

* additive paths clamp their input to ``±finfo.max / (2 · in_features)``, so a weighted sum with
  weights in ``[-1, 1]`` cannot overflow (and therefore never meets ``inf − inf``); on the CPU only
  when the unclamped sum did not come out finite (see :func:`~neurosym.layers.arithmetic.nac.nac_add`);
* logarithms are taken of ``|x| + eps`` (or ``max(|x|, eps)``), never of zero;
* exponents are capped at :data:`MAX_LOG_MAGNITUDE`, so ``exp`` stays far below the float32 limit and
  its gradient (which multiplies by the output once more) stays finite too.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..value_checks import values_are_readable

MAX_LOG_MAGNITUDE = 50.0
"""Largest natural logarithm of an output magnitude (e^50 ≈ 5.2e21); larger results saturate there."""

DEFAULT_EPS = 1e-7
"""Default ε added inside logarithms (Trask et al. 2018 use a small ε of this order)."""


def input_bound(dtype: torch.dtype, in_features: int) -> float:
    """``finfo(dtype).max / (2 · in_features)``: inputs within it keep a sum of ``in_features`` terms
    weighted by ``|w| ≤ 1`` finite."""
    return torch.finfo(dtype).max / (2 * in_features)


def bounded_input(x: Tensor, in_features: int) -> Tensor:
    """Clamp ``x`` to ``±`` :func:`input_bound`: sums of ``in_features`` terms weighted by ``|w| ≤ 1``
    then cannot overflow. Shape is unchanged. Values this large only occur for inputs beyond ~1e35
    (float32), so ordinary inputs pass through untouched."""
    bound = input_bound(x.dtype, in_features)
    return x.clamp(-bound, bound)


def clamp_where_needed(x: Tensor, min: float | None = None, max: float | None = None) -> Tensor:
    """``x.clamp(min, max)`` (any shape), returning ``x`` itself on the CPU when every entry already lies in
    ``[min, max]``.

    The clamp is then the identity in value and in gradient (``torch.clamp`` passes the gradient at the
    bounds too), and skipping it saves its backward node, which on a small layer costs more than the
    layer's product (``benchmarks/RESULTS.md``, layer speed). The check is one reduction read on the host,
    so accelerators always clamp: reading would stall the device. NaN entries fail the check and clamp.
    """
    if values_are_readable(x) and x.numel() > 0:
        low, high = torch.aminmax(x.detach())  # NaN anywhere makes both NaN
        if (min is None or float(low) >= min) and (max is None or float(high) <= max):
            return x
    return x.clamp(min, max)


def capped_exp(log_magnitude: Tensor) -> Tensor:
    """``exp(min(z, MAX_LOG_MAGNITUDE))`` element-wise: finite for every input, including ``+inf``."""
    return torch.exp(clamp_where_needed(log_magnitude, max=MAX_LOG_MAGNITUDE))


def autocast_enabled(x: Tensor) -> bool:
    """Whether autocast (AMP) is on for ``x``'s device type (never for a type without autocast, such as
    the ``meta`` device of shape-only tensors)."""
    device = x.device.type
    return torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device)
