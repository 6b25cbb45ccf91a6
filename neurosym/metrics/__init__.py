"""Metrics: exact match for sequences, binomial intervals, profile-likelihood intervals of a mean (gamma, beta), the
arithmetic-extrapolation success criterion, and the published numbers the benchmarks compare with
(:mod:`neurosym.metrics.published`)."""

from neurosym.metrics.interval import wilson_interval
from neurosym.metrics.profile import beta_mean_interval, gamma_mean_interval
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
    "beta_mean_interval",
    "exact_match",
    "gamma_mean_interval",
    "perturbed_solution_mse",
    "run_outcomes",
    "sequence_matches",
    "summarize",
    "wilson_interval",
]
