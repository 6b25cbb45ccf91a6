"""Metrics: exact match for sequences, binomial intervals, the arithmetic-extrapolation success criterion, and
the published numbers the benchmarks compare with (:mod:`neurosym.metrics.published`)."""

from neurosym.metrics.interval import wilson_interval
from neurosym.metrics.sequence import exact_match, sequence_matches
from neurosym.metrics.success import (
    RunOutcomes,
    SuccessSummary,
    run_outcomes,
    summarize,
)
from neurosym.metrics.threshold import MonteCarloEstimate, perturbed_solution_mse

__all__ = [
    "MonteCarloEstimate",
    "RunOutcomes",
    "SuccessSummary",
    "exact_match",
    "perturbed_solution_mse",
    "run_outcomes",
    "sequence_matches",
    "summarize",
    "wilson_interval",
]
