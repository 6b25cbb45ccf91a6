"""The success criterion of Madsen & Johansen (2019) applied to evaluation curves of many runs.

A run is *solved* when its extrapolation MSE, taken at the evaluation with the lowest validation
(interpolation) MSE, is below the threshold (see :mod:`neurosym.metrics.threshold`). It is *solved at*
the first evaluation step whose extrapolation MSE is below the threshold. Runs are summarised as in the paper's
Table 1: the success rate with its Wilson interval, and over the solved runs the mean solved-at step and the mean
sparsity error, each with a maximum-likelihood profile interval (gamma and beta distributions:
:mod:`neurosym.metrics.profile`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from torch import Tensor

from neurosym.metrics.interval import wilson_interval
from neurosym.metrics.profile import beta_mean_interval, gamma_mean_interval
from neurosym.training.checks import holds_bool, positive_number


@dataclass(frozen=True)
class RunOutcomes:
    """Per-run results, each ``[S]``: ``solved`` (bool), ``solved_at`` (step, NaN when unsolved),
    ``best_index`` (evaluation index of the lowest validation MSE) and ``best_extrapolation_mse``; and
    ``evaluations``, the number ``E`` of evaluations the runs were scored at."""

    solved: Tensor
    solved_at: Tensor
    best_index: Tensor
    best_extrapolation_mse: Tensor
    evaluations: int


def run_outcomes(steps: Tensor, validation_mse: Tensor, extrapolation_mse: Tensor, threshold: float | Tensor) -> RunOutcomes:
    """Apply the success criterion to ``S`` runs evaluated at ``E`` steps.

    ``steps [E]`` strictly increasing; ``validation_mse`` and ``extrapolation_mse`` ``[E, S]`` (or ``[E]``
    for one run); tensors, arrays or lists of ints or floats (``TypeError`` for bools, complex numbers or text), the two
    MSE curves on one device (``ValueError``; arrays and lists are on the CPU); ``threshold`` a finite positive number
    (not a bool) or ``[S]`` of them (one per run). A NaN or infinite validation MSE never counts as best (a run with no
    other is unsolved), and a NaN extrapolation MSE never counts as under the threshold. Ties in validation MSE go to
    the earliest evaluation. A negative MSE (``-inf`` too) is no error of a prediction: ``ValueError`` naming where it
    is.
    """
    steps, validation_mse, extrapolation_mse = (
        _real(value, name)
        for value, name in ((steps, "steps"), (validation_mse, "validation_mse"), (extrapolation_mse, "extrapolation_mse"))
    )
    _check_one_device(validation_mse, extrapolation_mse, "validation_mse and extrapolation_mse")
    single = validation_mse.dim() == extrapolation_mse.dim() == 1  # (a 0-d one failed in unsqueeze: named below)
    validation = validation_mse.unsqueeze(1) if single else validation_mse
    extrapolation = extrapolation_mse.unsqueeze(1) if single else extrapolation_mse
    if steps.dim() != 1 or len(steps) == 0:
        raise ValueError(f"steps must be a non-empty [E] tensor, got shape {list(steps.shape)}")
    if not bool(torch.isfinite(steps).all()) or bool((steps[1:] <= steps[:-1]).any()):
        raise ValueError(f"steps must be finite and strictly increasing, got {steps.tolist()}")
    if (
        validation.dim() != 2
        or validation.shape != extrapolation.shape
        or validation.shape[0] != len(steps)
        or not validation.shape[1]
    ):
        raise ValueError(
            f"expected validation and extrapolation MSE of shape [{len(steps)}, S] with S >= 1 runs, got "
            f"{list(validation_mse.shape)} and {list(extrapolation_mse.shape)}"
        )
    _check_not_negative(validation, "validation")
    _check_not_negative(extrapolation, "extrapolation")
    # compared in float64: a threshold is not rounded to bfloat16 (1.48e-5 became 1.4782e-5) nor flushed to 0 in float16
    extrapolation = extrapolation.double()
    if isinstance(threshold, Tensor | np.ndarray | list | tuple):
        _real(threshold, "threshold")  # (a tensor of True was read as 1)
    else:  # (True was read as 1, text failed inside torch)
        threshold = positive_number(threshold, "threshold")
    threshold = torch.as_tensor(threshold, dtype=torch.float64, device=extrapolation.device)
    if threshold.dim() != 0 and tuple(threshold.shape) != (validation.shape[1],):
        raise ValueError(f"threshold must be a scalar or one per run [{validation.shape[1]}], got shape {list(threshold.shape)}")
    if not bool(torch.isfinite(threshold).all() and (threshold > 0).all()):
        raise ValueError(f"threshold must be finite and positive, got {threshold}")
    evaluations = len(steps)
    ranking = torch.nan_to_num(validation.double(), nan=math.inf, posinf=math.inf)  # (+inf became the largest double)
    lowest = ranking.min(dim=0, keepdim=True).values  # [1, S]; inf: no validation MSE but NaNs and infinities
    is_best = ranking == lowest
    order = torch.arange(evaluations, device=validation.device).unsqueeze(1)
    best_index = torch.where(is_best, order, evaluations).min(dim=0).values  # first index of the minimum
    best_extrapolation = extrapolation.gather(0, best_index.unsqueeze(0)).squeeze(0)
    solved = (best_extrapolation < threshold) & lowest.squeeze(0).isfinite()  # NaN compares False; a run without a
    # finite validation MSE has no best evaluation
    under = extrapolation < threshold
    first_under = torch.where(under, order, evaluations).min(dim=0).values
    first_step = steps.to(device=validation.device, dtype=torch.float64)[first_under.clamp(max=evaluations - 1)]
    solved_at = torch.where(solved, first_step, torch.full_like(first_step, math.nan))
    if single:
        solved, solved_at, best_index, best_extrapolation = (
            v.squeeze(0) for v in (solved, solved_at, best_index, best_extrapolation)
        )
    return RunOutcomes(solved, solved_at, best_index, best_extrapolation, evaluations)


def _real(values: object, name: str) -> Tensor:
    """``values`` (a tensor, an array or lists) as a tensor; ``TypeError`` naming ``name`` unless it holds ints or
    floats (a bool was read as an MSE, a step or a threshold of 0 or 1; complex numbers and text failed inside torch,
    text with "too many dimensions 'str'"; a list mixing bools with numbers, as ``[0, True]``, was read as numbers)."""
    try:
        tensor = torch.as_tensor(values)
    except (TypeError, ValueError, RuntimeError) as error:  # (None or a dict: torch's RuntimeError)
        if (text := _first_text(values)) is not None:
            raise TypeError(f"{name} must hold ints or floats, got {type(values).__name__} holding text {text!r}") from error
        if isinstance(error, RuntimeError):
            raise TypeError(f"{name} must hold ints or floats, got {type(values).__name__}: {error}") from None
        raise
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise TypeError(f"{name} must hold ints or floats, got {type(values).__name__} of {tensor.dtype}")
    if holds_bool(values):
        raise TypeError(f"{name} must hold ints or floats, got {type(values).__name__} holding a bool")
    return tensor


def _check_one_device(first: Tensor, second: Tensor, names: str) -> None:
    """``ValueError`` naming ``names`` unless ``first`` and ``second`` are on one device (torch raised a
    ``RuntimeError`` about an expected device, from deep inside the criterion)."""
    if first.device != second.device:
        raise ValueError(f"{names} must be on one device, got {first.device} and {second.device}")


def _first_text(values: object) -> str | bytes | None:
    """The first string (or bytes) in ``values`` (itself, or nested in lists, tuples or arrays), ``None`` if none."""
    if isinstance(values, str | bytes):
        return values.item() if isinstance(values, np.generic) else values  # (np.str_('a') named as 'a')
    if isinstance(values, list | tuple | np.ndarray):
        return next((text for value in values if (text := _first_text(value)) is not None), None)
    return None


def _check_not_negative(mse: Tensor, which: str) -> None:
    """Raise ``ValueError`` naming the first negative entry of ``mse [E, S]`` (NaN and ``+inf`` pass: a diverged
    evaluation); a negative one counted as under every threshold, and as the best validation MSE."""
    if negative := (mse < 0).nonzero().tolist():
        evaluation, run = negative[0]
        raise ValueError(
            f"{which} MSE must not be negative, got {mse[evaluation, run].item()} at evaluation {evaluation} of run {run}"
        )


SPARSITY_BOUND = 0.5
"""The sparsity error ``max_i min(|W_i|, |1 − |W_i||)`` lies in ``[0, 0.5]`` for weights in ``[−1.5, 1.5]``: the
support of the beta distribution its interval is profiled under (an unbounded weight, as the Linear baseline's, can
go beyond it)."""


@dataclass(frozen=True)
class SuccessSummary:
    """One cell of Madsen & Johansen's Table 1: the success rate with its Wilson interval, and over the solved runs
    the mean solved-at step with its gamma-profiled interval (and the median step), and the mean sparsity error with
    its interval profiled under a beta distribution on ``[0, 0.5]`` (:mod:`neurosym.metrics.profile`; the beta's
    maximum-likelihood mean). A mean is ``None`` when nothing was solved (the sparsity error's too when it was not
    given); an interval is ``None`` with fewer than two solved runs, the solved-at step's also when a run was solved
    at a step of 0 or below (outside a gamma's support), and the sparsity error's when one of them exceeds
    :data:`SPARSITY_BOUND` (its mean is then the plain mean). Intervals are at the summary's confidence."""

    solved: int
    runs: int
    rate: float
    interval: tuple[float, float]
    median_solved_at: float | None
    mean_solved_at: float | None
    solved_at_interval: tuple[float, float] | None
    mean_sparsity_error: float | None
    sparsity_error_interval: tuple[float, float] | None


def summarize(outcomes: RunOutcomes, sparsity_error: Tensor | None = None, confidence: float = 0.95) -> SuccessSummary:
    """Summarise ``S`` runs at ``confidence``; ``sparsity_error [E, S]`` (``[E]`` for one run) is read at each solved
    run's best evaluation (:func:`sparsity_at_best`); ``TypeError`` for ``outcomes`` that are no :class:`RunOutcomes`."""
    if not isinstance(outcomes, RunOutcomes):
        raise TypeError(f"summarize takes the RunOutcomes of run_outcomes, got {type(outcomes).__name__}")
    solved = outcomes.solved.reshape(-1)
    count, runs = int(solved.sum()), solved.numel()
    solved_at = outcomes.solved_at.reshape(-1)[solved].double()
    median = float(solved_at.quantile(0.5)) if count else None
    steps_profiled = gamma_mean_interval if bool((solved_at > 0).all()) else None  # (a step 0: evaluated untrained)
    mean_solved_at, solved_at_interval = _mean_and_interval(solved_at, steps_profiled, confidence)
    mean_sparsity, sparsity_interval = None, None
    if sparsity_error is not None:
        sparsity = sparsity_at_best(outcomes, sparsity_error)[solved]
        profiled = partial(beta_mean_interval, upper=SPARSITY_BOUND) if bool((sparsity <= SPARSITY_BOUND).all()) else None
        mean_sparsity, sparsity_interval = _mean_and_interval(sparsity, profiled, confidence)
    return SuccessSummary(count, runs, count / runs, wilson_interval(count, runs, confidence), median, mean_solved_at,
                          solved_at_interval, mean_sparsity, sparsity_interval)  # fmt: skip


def _mean_and_interval(
    values: Tensor, profiled: Callable[..., tuple[float, float, float]] | None, confidence: float
) -> tuple[float | None, tuple[float, float] | None]:
    """The mean of ``values [n]`` and its ``profiled(values, confidence=confidence)`` interval: ``(None, None)`` for no value,
    and the plain mean without an interval for one value or ``profiled=None``."""
    if len(values) < 2 or profiled is None:
        return (float(values.mean()) if len(values) else None), None
    mean, low, high = profiled(values, confidence=confidence)
    return mean, (low, high)


def sparsity_at_best(outcomes: RunOutcomes, sparsity_error: Tensor) -> Tensor:
    """``[S]`` (float64): the ``sparsity_error [E, S]`` (``[E]`` for one run, as :func:`run_outcomes` takes its curves;
    a tensor, an array or lists of ints or floats: ``TypeError`` for bools, complex numbers or text) of each solved run at
    its best evaluation, NaN for the unsolved runs. ``ValueError`` unless it is ``[E, S]`` (or that ``[E]``) over the
    outcomes' evaluations (solved runs or not) and a finite number of at least 0 at every solved run's best evaluation
    (a NaN there has no mean; a distance from {−1, 0, 1} is never negative), and unless it is on the outcomes' device."""
    solved, best_index = outcomes.solved.reshape(-1), outcomes.best_index.reshape(-1)
    expected = [outcomes.evaluations, solved.numel()]
    sparsity_error = _real(sparsity_error, "sparsity_error")  # (lists too, as run_outcomes takes them)
    _check_one_device(sparsity_error, best_index, "sparsity_error and the outcomes")
    if sparsity_error.dim() == 1 and solved.numel() == 1:  # one run's [E], as run_outcomes takes its curves
        sparsity_error = sparsity_error.unsqueeze(1)
    if list(sparsity_error.shape) != expected:  # (another run's longer curve, or [S, E], was read at the wrong steps)
        raise ValueError(f"sparsity_error must be [E, S] = {expected}, as the outcomes' evaluations and runs, got "
                         f"{list(sparsity_error.shape)}")  # fmt: skip
    at_best = sparsity_error.gather(0, best_index.reshape(1, -1)).squeeze(0).double()
    if bad := (solved & ~(at_best.isfinite() & (at_best >= 0))).nonzero().flatten().tolist():
        raise ValueError(
            f"sparsity_error is not a finite number >= 0 at the best evaluation of solved run(s) {bad} (evaluation "
            f"{best_index[bad].tolist()}): {at_best[bad].tolist()}"
        )
    return torch.where(solved, at_best, math.nan)
