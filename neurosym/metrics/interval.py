"""Binomial confidence intervals for success rates, and the normal quantile of a confidence."""

from __future__ import annotations

import math
from fractions import Fraction

import torch

from neurosym.training.checks import as_int, is_int_tensor, is_real


def _count(value: object) -> int | None:
    """``value`` as a Python int when it is an integer (numpy's and 0-d integer tensors too, not a bool), else None."""
    if is_int_tensor(value) and value.dim() == 0:
        return int(value)
    return as_int(value)


def normal_quantile(confidence: float) -> float:
    """The two-sided standard normal quantile ``z`` of ``confidence``: ``P(|Z| <= z) = confidence`` (1.96 at 0.95),
    ``√2 · erf⁻¹(confidence)`` to the last digit for confidences near 0 and 1 too; ``ValueError`` unless ``confidence``
    is a number in ``(0, 1)``."""
    if not (is_real(confidence) and 0 < confidence < 1):
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return math.sqrt(2) * float(torch.special.erfinv(torch.tensor(float(confidence), dtype=torch.float64)))


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson (1927) score interval ``(low, high)`` for ``successes`` out of ``trials``.

    Unlike the normal approximation it stays inside ``[0, 1]`` and is informative at 0 and ``trials``
    successes: 98/100 gives (0.930, 0.994) and 0/100 gives (0, 0.037) at 95 %. Computed in exact fractions, so that
    any number of trials is taken (beyond the largest float too; 1e154 of them overflowed).
    """
    total, count = _count(trials), _count(successes)
    if total is None or total < 1:
        raise ValueError(f"trials must be a positive int, got {trials!r}")
    if count is None or not 0 <= count <= total:
        raise ValueError(f"successes must be an int in [0, {total}], got {successes!r}")
    z_squared = Fraction(normal_quantile(confidence)) ** 2
    scale = total + z_squared  # centre ± half-width = (count + z²/2 ± z √(count (total − count) / total + z²/4)) / scale
    centre = (count + z_squared / 2) / scale
    half_width = _square_root(z_squared * (Fraction(count * (total - count), total) + z_squared / 4) / scale**2)
    low = 0.0 if count == 0 else float(centre) - half_width  # exact bounds where rounding would leave 1e-18
    high = 1.0 if count == total else float(centre) + half_width
    return low, high


def _square_root(value: Fraction) -> float:
    """``√value`` of a fraction ``>= 0`` as a float, also where ``value`` alone is below the smallest float: scaled by a
    power of 4 into ``[1/4, 4)`` first."""
    shift = (value.denominator.bit_length() - value.numerator.bit_length()) // 2
    return math.ldexp(math.sqrt(value * Fraction(4) ** shift), -shift)
