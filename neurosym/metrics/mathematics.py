"""DeepMind Mathematics scoring as in the paper: exact match per module, then the mean over modules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from neurosym.metrics.sequence import sequence_matches


def module_accuracies(modules: Sequence[str], predictions: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    """Fraction of exactly matching answer strings for each module, keyed by module in sorted order.

    The three sequences are aligned: ``predictions[i]`` answers a question of ``modules[i]`` whose
    reference answer is ``answers[i]``.
    """
    if len(modules) != len(answers):
        raise ValueError(f"modules and answers must align: got {len(modules)} modules for {len(answers)} answers")
    if not modules:
        raise ValueError("no examples to score")
    names, groups = np.unique(np.asarray(modules, dtype=object), return_inverse=True)
    correct = sequence_matches(list(predictions), list(answers)).numpy().astype(np.float64)
    totals = np.bincount(groups, weights=correct, minlength=len(names)) / np.bincount(groups, minlength=len(names))
    return {str(name): float(total) for name, total in zip(names, totals)}


def mean_over_modules(per_module: Mapping[str, float]) -> float:
    """The interpolation or extrapolation score: the unweighted mean of per-module accuracies."""
    if not per_module:
        raise ValueError("no modules to average")
    return float(np.mean(list(per_module.values())))
