"""Numerical guards shared by the arithmetic units.

The units must never produce NaN for a finite input, and must stay finite (outputs and gradients) for
inputs up to 1e6 in magnitude. Three guards achieve this:

* additive paths clamp their input to ``±finfo.max / (2 · in_features)``, so a weighted sum with
  weights in ``[-1, 1]`` cannot overflow (and therefore never meets ``inf − inf``); sums with an unbounded weight
  (the NALU gate's) divide the bound by its largest magnitude;
* logarithms are taken of ``|x| + eps`` (or ``max(|x|, eps)``), never of zero (``eps`` is at least
  :data:`MIN_EPS`, so the logarithm's derivative, at most ``1/eps``, cannot overflow the gradient);
* exponents are capped at :data:`MAX_LOG_MAGNITUDE`, so ``exp`` stays far below the float32 limit and
  its gradient (which multiplies by the output once more) stays finite too.
"""

from __future__ import annotations

import torch
from torch import Tensor

MAX_LOG_MAGNITUDE = 50.0
"""Largest natural logarithm of an output magnitude (e^50 ≈ 5.2e21); larger results saturate there."""

DEFAULT_EPS = 1e-7
"""Default ε added inside logarithms (Trask et al. 2018 use a small ε of this order)."""

MIN_EPS = 1e-12
"""Smallest ε a unit takes. The derivative of ``log(|x| + ε)`` reaches ``1/ε`` at ``x = 0``, and an output's gradient
multiplies it by the output (up to ``e^MAX_LOG_MAGNITUDE ≈ 5.2e21``) and a weight: with ε = 1e-12 that stays below
5.2e33 per weight of magnitude 1, some 6.5e4 times under float32's largest number, room for the loss's own factor and
the sum over outputs. A smaller ε overflowed it: with float32's smallest normal number (≈ 1.2e-38) as ε, an output
above about 4 made the input gradient ``inf`` near ``x = 0`` and NaN at ``x = 0`` (``inf · sign(0)``)."""


def input_bound(dtype: torch.dtype, in_features: int) -> float:
    """``finfo(dtype).max / (2 · in_features)``: inputs within it keep a sum of ``in_features`` terms
    weighted by ``|w| ≤ 1`` finite."""
    return torch.finfo(dtype).max / (2 * in_features)


def bounded_input(x: Tensor, in_features: int, weight: Tensor | None = None) -> Tensor:
    """Clamp ``x`` to ``±`` :func:`input_bound`: sums of ``in_features`` terms weighted by ``|w| ≤ 1``
    then cannot overflow. Shape is unchanged. Values this large only occur for inputs beyond ~1e35
    (float32), so ordinary inputs pass through untouched. ``weight [out, in]`` (or, for an ensemble's
    ``x [S, ..., in]``, ``[S, out, in]``) is an unbounded weight the sums also take, as the NALU's gate: the bound is
    then divided by its largest magnitude (each member's own) where that exceeds 1 (a gate weight of 10 made a sum of
    inputs within the bound overflow into ``inf − inf = NaN``)."""
    bound = input_bound(x.dtype, in_features)
    if weight is None:
        return x.clamp(-bound, bound)
    largest = weight.detach().abs().amax(dim=(-2, -1))  # [] or [S]: one member's weight bounds only its own inputs
    scaled = bound / largest.clamp(min=1.0).to(x.dtype).reshape(*largest.shape, *[1] * (x.dim() - largest.dim()))
    return x.clamp(-scaled, scaled)


def clamp_with_gradient_at_bounds(x: Tensor, low: float, high: float) -> Tensor:
    """``x`` clamped to ``[low, high]`` (any shape), its gradient 1 on the closed interval and 0 outside it: the
    subgradient 1 at the bounds that ``torch.clamp`` gave up to torch 2.13, on every torch. From 2.14 ``torch.clamp``
    gives 0 at a bound itself, and a weight projected onto its range after each optimiser step (``clamp_weights_``:
    Madsen & Johansen's NAU and NMU) sits exactly there once it reaches it: it could never leave the bound again."""
    inside = (x >= low) & (x <= high)
    return torch.where(inside, x, x.detach().clamp(low, high))


def capped_exp(log_magnitude: Tensor) -> Tensor:
    """``exp(min(z, MAX_LOG_MAGNITUDE))`` element-wise: finite for every input, including ``+inf``."""
    return torch.exp(log_magnitude.clamp(max=MAX_LOG_MAGNITUDE))
