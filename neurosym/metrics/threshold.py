"""The success threshold of the simple function task: the extrapolation MSE of an ε-perturbed optimum.

Madsen & Johansen (2019, Sec. 3) call a run solved when its extrapolation MSE is below that of a
nearly perfect solution: the operation is computed exactly, but every weight of the optimal subset
selection ``W*`` is off by ε (``W^ε = W* ± ε``, ε = 1e-5), estimated by Monte Carlo on the extrapolation
range. Here every selected weight becomes ``1 + ε`` and every ignored weight ``−ε``, i.e. each weight is
moved ε away from the other optimum value, so ``a^ε = a + ε(2a − Σx)``.

This construction reproduces all four published thresholds (+ 1.48e-5, − 1.38e-8, × 0.160,
÷ 4.94e-12) within Monte-Carlo error for subsets of 26 elements overlapping by 13 (``subset_ratio=0.26``);
for the task's default ``⌊0.25·100⌋ = 25`` overlapping by 12 it gives about 1.60e-5, 1.39e-8, 0.161
and 5.80e-12.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from neurosym.data.arithmetic import (
    DEFAULT_LAYOUT,
    Operation,
    SampleRange,
    SubsetLayout,
    check_domain,
    operation,
    range_pair,
    seed_stream,
)
from neurosym.training.checks import int_at_least, positive_number


class MonteCarloEstimate(NamedTuple):
    """A Monte-Carlo mean with its standard error."""

    value: float
    standard_error: float


def perturbed_solution_mse(
    operation_name: str,
    ranges: str = "[1,2]",
    layout: SubsetLayout = DEFAULT_LAYOUT,
    epsilon: float = 1e-5,
    samples: int = 1_000_000,
    seed: int = 0,
    chunk_size: int = 50_000,
) -> MonteCarloEstimate:
    """Extrapolation MSE of the ε-perturbed optimal solution for one operation (the success threshold).

    Draws ``samples`` inputs ``x [N, d]`` from the extrapolation range of ``ranges`` (in float64, in chunks
    of ``chunk_size``), computes the exact target ``op(a, b)`` and the prediction ``op(a^ε, b^ε)`` of the
    perturbed weights, and returns the mean squared difference with its standard error; ``ValueError`` where that is
    0 (no run could fall below it) or not finite (an ``epsilon`` that drives the perturbed inputs out of the operation's
    domain — checked exactly before sampling: ``sqrt`` of a perturbed sum that can be negative, a perturbed denominator
    that can be 0 — or overflows), ``TypeError`` for a ``layout`` that is no ``SubsetLayout``.
    """
    samples = int_at_least(samples, "samples", 2)
    chunk_size = int_at_least(chunk_size, "chunk_size", 1)  # (True passed as 1, as a seed too)
    seed = int_at_least(seed, "seed", 0)
    epsilon = positive_number(epsilon, "epsilon")  # (True passed as 1)
    if not isinstance(layout, SubsetLayout):
        raise TypeError(f"layout must be a SubsetLayout, got {type(layout).__name__}")
    op = operation(operation_name)
    extrapolation = range_pair(ranges)[1]
    check_domain(op, ranges, extrapolation)
    optimal = layout.weights(torch.zeros(1, dtype=torch.long))[0].double()  # [2, d]
    perturbed = optimal + epsilon * (2 * optimal - 1)
    _check_perturbed_domain(op, perturbed, extrapolation, epsilon)
    generator = torch.Generator().manual_seed(seed_stream(seed, 0))
    total, total_square = 0.0, 0.0
    for start in range(0, samples, chunk_size):
        count = min(chunk_size, samples - start)
        x = extrapolation.sample((count, layout.input_size), generator, dtype=torch.float64)
        exact = x @ optimal.T  # [count, 2]
        approximate = x @ perturbed.T
        error = op.function(approximate[:, :1], approximate[:, 1:]) - op.function(exact[:, :1], exact[:, 1:])
        squared = error.square()
        total += float(squared.sum())
        total_square += float(squared.square().sum())
    mean = total / samples
    if not math.isfinite(mean):  # (returned as the threshold: NaN failed later, in run_outcomes, naming no epsilon)
        raise ValueError(
            f"the perturbed solution of {op.name!r} at epsilon={epsilon:g} has no finite MSE ({mean}): its perturbed "
            "inputs leave the operation's domain or overflow; choose a smaller epsilon"
        )
    if mean == 0:  # (a run measured against it could never succeed: refused after the whole training budget was spent)
        raise ValueError(
            f"the perturbed solution of {op.name!r} is exact on subsets of this layout ({layout}): its MSE, the success "
            "threshold, is 0 (with the whole subsets overlapping, a - b and a / b do not depend on the weights)"
        )
    variance = max(total_square / samples - mean * mean, 0.0) * samples / (samples - 1)
    return MonteCarloEstimate(mean, (variance / samples) ** 0.5)


def _check_perturbed_domain(op: Operation, perturbed: Tensor, extrapolation: SampleRange, epsilon: float) -> None:
    """Raise ``ValueError`` when the perturbed sums ``a^ε, b^ε`` (rows of ``perturbed [2, d]``) can leave ``op``'s domain
    on the extrapolation range: a linear function's extremes over the box of inputs lie at its corners, so the bounds
    are exact (a few Monte-Carlo samples missed them, and the threshold came out NaN after the training)."""
    corners = torch.stack([perturbed * extrapolation.low, perturbed * extrapolation.high])  # [2, 2, d]
    low, high = corners.amin(0).sum(-1).tolist(), corners.amax(0).sum(-1).tolist()  # per sum
    if op.needs_non_negative and low[0] < 0:
        raise ValueError(
            f"the perturbed solution of {op.name!r} at epsilon={epsilon:g} takes the square root of sums down to "
            f"{low[0]:.4g} on the extrapolation range: choose a smaller epsilon"
        )
    if op.needs_one_sign and low[1] <= 0 <= high[1]:
        raise ValueError(
            f"the perturbed solution of {op.name!r} at epsilon={epsilon:g} divides by sums from {low[1]:.4g} to "
            f"{high[1]:.4g} on the extrapolation range, through 0: its MSE has no finite value; choose a smaller epsilon"
        )
