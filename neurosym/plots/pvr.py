"""Plots of the PVR benchmark (``neurosym pvr``): noise sensitivity, the vector sweep, the holdout shifts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from neurosym.plots.figure import drawable, grouped_bars, legend, log_scale, optional_figure, pyplot, save_figure


@optional_figure
def plot_noise_sensitivity(
    deltas: np.ndarray, curves: dict[str, dict[str, Any]], aggregations: list[str], max_m: int, path: Path
) -> None:
    """(a) ``NS_delta`` of mod_sum against delta for each m; (b) its average over delta against m per aggregation."""
    plt = pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for m in range(max_m + 1):
        curve = curves[f"mod_sum/{m}"]
        left.errorbar(deltas, curve["mean"], yerr=curve["std"], marker="o", ms=3, label=f"m={m}")
    log_scale(left, "x")
    left.set(xlabel="delta", ylabel="NS_delta", title="(a) mod_sum")
    legend(left, fontsize=8)
    for aggregation in aggregations:
        right.plot(
            range(max_m + 1), [curves[f"{aggregation}/{m}"]["average"] for m in range(max_m + 1)], marker="o", label=aggregation
        )
    right.set(xlabel="complexity m", ylabel="mean NS over delta", title="(b) aggregations")
    legend(right, fontsize=8)
    save_figure(figure, path)


def chance_level(runs: list[dict[str, Any]]) -> float | None:
    """A constant guess's accuracy where every run is ``mod_sum``'s (its labels are uniform over 10 digits): 0.1; else
    None (min, max, median and majority labels are skewed: a constant guess reads up to 47 % of them right)."""
    return 0.1 if runs and all(run.get("aggregation") == "mod_sum" for run in runs) else None


@optional_figure
def plot_vector_sweep(runs: list[dict[str, Any]], path: Path) -> None:
    """Test accuracy against training-set size, one line per (model, complexity); chance where it is one number
    (:func:`chance_level`)."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 4))
    for model, m in sorted({(r["model"], r["complexity"]) for r in runs}):
        points = sorted((r["train_size"], r["test_accuracy"]) for r in runs if (r["model"], r["complexity"]) == (model, m))
        axis.plot(*zip(*points), marker="o", label=f"{model}, m={m}")
    if (chance := chance_level(runs)) is not None:
        axis.axhline(chance, color="grey", linestyle=":", label="chance")
    log_scale(axis, "x")
    axis.set(xlabel="training examples", ylabel="test accuracy", ylim=(0, 1.02))
    legend(axis, fontsize=8)
    save_figure(figure, path)


@optional_figure
def plot_holdouts(block: dict[str, Any] | None, holdout_i: dict[str, Any] | None, path: Path) -> None:
    """Bars: block-task accuracy per test split and model; holdout-i test accuracy, neural and neuro-symbolic."""
    panels = [p for p in (block, holdout_i) if p is not None]
    if not panels:
        raise ValueError("plot_holdouts: neither block nor holdout_i results to draw")
    plt = pyplot()
    figure, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    axes = list(axes[0])
    if block is not None:
        axis = axes.pop(0)
        splits = ("iid", "dshift", "holdout")
        series = {run["model"]: [run[f"{s}_accuracy"] for s in splits] for run in block["runs"]}
        grouped_bars(axis, splits, series)
        axis.set(ylabel="test accuracy", ylim=(0, 1.02), title="block MNIST PVR, trained on the holdout split")
        legend(axis, fontsize=8)
    if holdout_i is not None:
        axis = axes.pop(0)
        runs = holdout_i["runs"]
        positions = np.arange(len(runs))
        neural = drawable(r["holdout_accuracy"] for r in runs)
        axis.bar(positions - 0.2, neural, 0.4, label=runs[0]["model"] if runs else "neural")
        axis.bar(positions + 0.2, drawable(r["neurosymbolic_holdout_accuracy"] for r in runs), 0.4, label="neuro-symbolic")
        axis.set(
            xticks=positions,
            xticklabels=[f"holdout-{r['i']}" for r in runs],
            ylabel="holdout test accuracy",
            ylim=(0, 1.02),
            title=f"vector holdout-i, m={holdout_i['complexity']}",
        )
        legend(axis, fontsize=8)
    save_figure(figure, path)
