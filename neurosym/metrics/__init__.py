"""Metrics: exact match for sequences, binomial intervals, and the arithmetic-extrapolation success criterion."""

from neurosym.metrics.interval import wilson_interval
from neurosym.metrics.sequence import exact_match, sequence_matches
from neurosym.metrics.success import RunOutcomes, SuccessSummary, run_outcomes, summarize
from neurosym.metrics.threshold import MonteCarloEstimate, perturbed_solution_mse

__all__ = [
    "wilson_interval",
    "exact_match",
    "sequence_matches",
    "RunOutcomes",
    "SuccessSummary",
    "run_outcomes",
    "summarize",
    "MonteCarloEstimate",
    "perturbed_solution_mse",
]
