"""The results of the arithmetic benchmark: success thresholds (cached on disk), per (model, operation) cell
of a trained group the success summary of its seeds, and the table of those cells beside the published rates."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from torch import Tensor

from neurosym.benchmarking.arithmetic_training import GroupRun
from neurosym.data.arithmetic import OPERATIONS, SubsetLayout
from neurosym.metrics import run_outcomes, summarize
from neurosym.metrics.published import ARITHMETIC
from neurosym.metrics.success import sparsity_at_best
from neurosym.metrics.threshold import perturbed_solution_mse
from neurosym.training.checkpoint import load_json, save_json

TABLE_ORDER = ("mul", "div", "add", "sub", "square", "sqrt")
"""Operations in the order of the paper's table (× ÷ + −), then the unary ones."""


def published_operations(model: str) -> tuple[str, ...]:
    """The operations with a published success rate for ``model`` (:data:`~neurosym.metrics.published.ARITHMETIC`),
    in :data:`TABLE_ORDER`."""
    return tuple(name for name in TABLE_ORDER if (name, model) in ARITHMETIC)


def cached_thresholds(
    operations: Iterable[str], ranges: str, layout: SubsetLayout, epsilon: float, samples: int, cache_path: Path
) -> dict[str, float]:
    """The success threshold (:func:`perturbed_solution_mse`) of every operation, cached in the JSON file
    ``cache_path`` (keyed by operation, ranges, layout, ``epsilon`` and ``samples``)."""
    cache = load_json(cache_path) if cache_path.exists() else {}
    thresholds = {}
    for name in dict.fromkeys(operations):
        key = f"{name} {ranges} {layout} eps={epsilon:g} n={samples}"
        if not cache.get(key, 0) > 0:  # (a 0 cached before such thresholds were refused is refused now, before training)
            cache[key] = perturbed_solution_mse(name, ranges, layout, epsilon, samples).value
        thresholds[name] = cache[key]
    save_json(cache, cache_path)
    return thresholds


def group_cells(
    group: GroupRun, thresholds: Mapping[str, float], published: Mapping[tuple[str, str], float] = ARITHMETIC
) -> list[dict]:
    """One result per operation of the group: the success summary of its seeds (rate, Wilson interval, mean
    solved-at step and mean sparsity error with their profiled intervals, the median solved-at step, per-seed outcomes
    with each solved seed's solved-at step and sparsity error, from which the intervals can be computed again) beside
    ``published[(operation, model)]``; ``ValueError`` for a group stopped before its first evaluation."""
    if not group.curves.steps:  # (failed in torch.stack)
        raise ValueError(f"{group.config.model} stopped before its first evaluation: it has no result yet (resume it)")
    config, curves = group.config, group.curves.stacked()
    count = len(config.seeds)
    cells = []
    for index, name in enumerate(config.operations):
        columns = slice(index * count, (index + 1) * count)
        outcomes = run_outcomes(curves["steps"], curves["validation"][:, columns], curves["test"][:, columns], thresholds[name])
        sparsity = curves["sparsity"][:, columns]
        summary = summarize(outcomes, sparsity)
        cells.append(
            {
                "operation": name,
                "model": config.model,
                "finished": group.finished,
                "steps_done": int(curves["steps"][-1]),
                "solved": summary.solved,
                "runs": summary.runs,
                "success_rate": summary.rate,
                "interval": summary.interval,
                "published": published.get((name, config.model)),
                "mean_solved_at": summary.mean_solved_at,
                "solved_at_interval": summary.solved_at_interval,
                "median_solved_at": summary.median_solved_at,
                "mean_sparsity_error": summary.mean_sparsity_error,
                "sparsity_error_interval": summary.sparsity_error_interval,
                "threshold": thresholds[name],
                "per_seed": {
                    "seed": list(config.seeds),
                    "solved": outcomes.solved.tolist(),
                    "solved_at": _nan_to_none(outcomes.solved_at),
                    "best_step": curves["steps"][outcomes.best_index].tolist(),
                    "best_extrapolation_mse": outcomes.best_extrapolation_mse.tolist(),
                    "sparsity_error": _nan_to_none(sparsity_at_best(outcomes, sparsity)),
                },
            }
        )
    return cells


def _nan_to_none(values: Tensor) -> list[float | None]:
    """``values [S]`` as a list with ``None`` for NaN (an unsolved run's), which JSON holds."""
    return [None if math.isnan(value) else value for value in values.tolist()]


def table_cells(groups: Iterable[GroupRun], thresholds: Mapping[str, float], models: list[str]) -> list[dict]:
    """The :func:`group_cells` of every group, in the table's order: operations in :data:`TABLE_ORDER`, then
    models in the order of ``models``."""
    cells = [cell for group in groups for cell in group_cells(group, thresholds)]
    return sorted(cells, key=lambda cell: (TABLE_ORDER.index(cell["operation"]), models.index(cell["model"])))


def _percent(value: float | None) -> str:
    """``value`` as a whole percentage, but ``<1%`` and ``>99%`` where it is not exactly 0 or 1 (1 solved run of 200
    was 0%, 199 of 200 100%)."""
    if value is None:
        return "—"
    shown = f"{100 * value:.0f}"
    return "<1%" if shown == "0" and value > 0 else ">99%" if shown == "100" and value < 1 else f"{shown}%"


def _with_interval(mean: float | None, interval: tuple[float, float] | None, digits: int) -> str:
    """``mean [low, high]`` to ``digits`` significant digits; the mean alone without an interval, — without a mean."""
    if mean is None:
        return "—"
    if interval is None:
        return f"{mean:.{digits}g}"
    low, high = interval
    return f"{mean:.{digits}g} [{low:.{digits}g}, {high:.{digits}g}]"


def results_table(
    cells: list[dict], seeds: int, steps: int, published_budget: tuple[int, int]
) -> tuple[str, list[str], list[list]]:
    """Caption (:func:`results_caption`), headers and rows of :func:`group_cells` results of ``seeds`` runs of
    ``steps`` steps: ours beside the published rate in every row, each with its budget (runs × iterations;
    ``published_budget`` is the paper's ``(seeds, iterations)``)."""
    headers = ["Op", "Model", "Solved", "Success", "95% interval", "Budget", "Published", "Published budget",
               "Solved at: mean [95% interval]", "Sparsity error: mean [95% interval]"]  # fmt: skip
    rows = []
    for cell in cells:
        low, high = cell["interval"]
        solved = f"{cell['solved']}/{cell['runs']}" + ("" if cell["finished"] else " (stopped)")
        rows.append(
            [
                OPERATIONS[cell["operation"]].symbol,
                cell["model"],
                solved,
                _percent(cell["success_rate"]),
                f"[{100 * low:.1f}%, {100 * high:.1f}%]",
                f"{cell['runs']} x {cell['steps_done']:,}",  # (whole: 4,381,000 steps read 4.38e+06)
                _percent(cell["published"]),
                "—" if cell["published"] is None else "{} x {:,}".format(*published_budget),
                _with_interval(cell["mean_solved_at"], cell["solved_at_interval"], 3),
                _with_interval(cell["mean_sparsity_error"], cell["sparsity_error_interval"], 2),
            ]
        )
    return results_caption(seeds, steps, published_budget), headers, rows


def results_caption(seeds: int, steps: int, published_budget: tuple[int, int]) -> str:
    """The table's caption: this run's budget beside the published one ``(seeds, iterations)``, flagged when
    it is shorter."""
    seeds_published, steps_published = published_budget
    published = (
        f"published: Madsen & Johansen 2019 Table 1 (NAU, NMU: 2020), {seeds_published} seeds x {steps_published:,} iterations"
    )
    if steps < steps_published:
        return f"Simple function task, {seeds} seeds x {steps:,} iterations: a shorter budget than published ({published})"
    return f"Simple function task, {seeds} seeds x {steps:,} iterations ({published})"
