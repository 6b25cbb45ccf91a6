"""Numerical guards shared by the arithmetic units.

The units must never produce NaN for a finite input, and must stay finite (outputs and gradients) for
inputs up to 1e6 in magnitude. Three guards achieve this:

* additive paths clamp their input to ``±finfo.max / (2 · in_features)``, so a weighted sum with
  weights in ``[-1, 1]`` cannot overflow (and therefore never meets ``inf − inf``);
* logarithms are taken of ``|x| + eps`` (or ``max(|x|, eps)``), never of zero (``eps`` is at least
  :data:`MIN_EPS`, so it is no 0 in float32 either);
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

MIN_EPS = torch.finfo(torch.float32).tiny
"""Smallest ε a unit takes, float32's smallest normal number (≈ 1.2e-38): a smaller one can be 0 in float32 (1e-50
is), and ``log(|x| + ε)`` is then ``−inf`` at ``x = 0``. (ε far below :data:`DEFAULT_EPS` still divides the gradient
at ``x = 0``, where it can overflow.)"""


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


def capped_exp(log_magnitude: Tensor) -> Tensor:
    """``exp(min(z, MAX_LOG_MAGNITUDE))`` element-wise: finite for every input, including ``+inf``."""
    return torch.exp(log_magnitude.clamp(max=MAX_LOG_MAGNITUDE))
