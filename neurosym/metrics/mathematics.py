"""DeepMind Mathematics scoring as in the paper: exact match per module, then the mean over modules; and the
table of a run's scores beside the published ones."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np

from neurosym.metrics.published import MATHEMATICS, MATHEMATICS_TRANSFORMER_MODULES
from neurosym.metrics.sequence import sequence_matches
from neurosym.training.checks import is_real


def module_accuracies(modules: Sequence[str], predictions: Sequence[str], answers: Sequence[str]) -> dict[str, float]:
    """Fraction of exactly matching answer strings for each module, keyed by module in sorted order.

    The three sequences are aligned: ``predictions[i]`` answers a question of ``modules[i]`` whose
    reference answer is ``answers[i]``. Any sequences (lists, tuples, numpy arrays) of strings; ``TypeError``
    for anything else in them (the prediction ``1`` never matched the answer ``"1"``).
    """
    modules, predictions, answers = (
        _strings(modules, "modules"),
        _strings(predictions, "predictions"),
        _strings(answers, "answers"),
    )
    if len(modules) != len(answers):
        raise ValueError(f"modules and answers must align: got {len(modules)} modules for {len(answers)} answers")
    if not modules:
        raise ValueError("no examples to score")
    names, groups = np.unique(np.asarray(modules, dtype=object), return_inverse=True)
    correct = sequence_matches(predictions, answers).numpy().astype(np.float64)
    totals = np.bincount(groups, weights=correct, minlength=len(names)) / np.bincount(groups, minlength=len(names))
    return {str(name): float(total) for name, total in zip(names, totals)}


def _strings(values: Iterable[str], name: str) -> list[str]:
    """``values`` as a list of strings, else ``TypeError`` naming ``name`` and the first value that is no string, or
    naming a set (its strings would be listed in the order of their hashes) or a mapping (its keys would be listed)."""
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of strings, got the string {values[:50]!r}")
    if isinstance(values, AbstractSet | Mapping):
        raise TypeError(f"{name} must be a sequence of strings, got a {type(values).__name__}, which aligns with nothing")
    listed = list(values)
    if bad := next(((k, value) for k, value in enumerate(listed) if not isinstance(value, str)), None):
        raise TypeError(f"{name} must be strings, got {bad[1]!r} ({type(bad[1]).__name__}) at {bad[0]}")
    return listed


def mean_over_modules(per_module: Mapping[str, float]) -> float:
    """The interpolation or extrapolation score: the unweighted mean of per-module accuracies."""
    if not per_module:
        raise ValueError("no modules to average")
    for module, accuracy in per_module.items():
        if not (is_real(accuracy) and 0 <= accuracy <= 1):
            raise ValueError(f"module {module!r}: an accuracy must be a number in [0, 1], got {accuracy!r}")
    return float(np.mean(list(per_module.values())))


def _or_na(value: float | None) -> float | str:
    return "n/a" if value is None else value


def results_table(results: dict) -> tuple[list[str], list[list]]:
    """Headers and rows ``(regime, module, one accuracy per model, published Transformer)``, then per regime
    the means over modules and the published means; a model not scored on a module (the symbolic route
    outside arithmetic) shows ``n/a``. ``results``: ``{"modules": {regime: [module]}, "models": {name:
    {regime: {"per_module": {module: accuracy}, "mean": float | None}}}}``."""
    names = list(results["models"])
    headers = ["regime", "module", *names, "published Transformer"]
    rows = []
    for regime in ("interpolate", "extrapolate"):
        for module in results["modules"][regime]:
            accuracies = [results["models"][n][regime]["per_module"].get(module, "n/a") for n in names]
            rows.append(
                [regime, module.removeprefix("arithmetic__"), *accuracies, MATHEMATICS_TRANSFORMER_MODULES.get(module, "")]
            )
    for regime in (r for r in ("interpolate", "extrapolate") if results["modules"][r]):
        means = [_or_na(results["models"][n][regime]["mean"]) for n in names]
        rows.append([regime, "mean over modules", *means, f"{MATHEMATICS['transformer'][regime]} (all modules)"])
        published = [MATHEMATICS.get(n, {}).get(regime, "") for n in names]
        rows.append([regime, "published mean (all modules)", *published, MATHEMATICS["transformer"][regime]])
    return headers, rows
