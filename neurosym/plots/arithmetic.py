"""Figures of ``neurosym arithmetic``: success rates beside the published ones, learning curves, and the
speed-up of batched-seed training."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from neurosym.benchmarking.arithmetic_training import GroupRun
from neurosym.data.arithmetic import OPERATIONS
from neurosym.plots.figure import drawable, grouped_bars, legend, log_scale, optional_figure, pyplot, save_figure

if TYPE_CHECKING:  # matplotlib is optional and imported only when a figure is drawn
    from matplotlib.axes import Axes


@optional_figure
def plot_success_rates(cells: list[dict], path: Path) -> Path:
    """Grouped bars of success rate per operation and model, with Wilson intervals; published rates as crosses.

    ``cells``: the results of :func:`neurosym.benchmarking.arithmetic_results.group_cells` (``operation``,
    ``model``, ``success_rate``, ``interval``, ``published``), also as its JSON holds them: a rate or an interval that
    is missing (``None``, NaN) draws no bar or no error bar, and the others are drawn."""
    operations = list(dict.fromkeys(cell["operation"] for cell in cells))
    models = list(dict.fromkeys(cell["model"] for cell in cells))
    by_key = {(cell["model"], cell["operation"]): cell for cell in cells}
    missing = {"success_rate": None, "interval": None, "published": None}
    table = {model: [by_key.get((model, op), missing) for op in operations] for model in models}
    figure, axis = pyplot().subplots(figsize=(2 + 1.6 * len(operations), 4))
    bars = {model: [_bar(c) for c in chosen] for model, chosen in table.items()}
    rates = {model: [rate for rate, _, _ in chosen] for model, chosen in bars.items()}
    errors = {model: [[below for _, below, _ in chosen], [above for _, _, above in chosen]] for model, chosen in bars.items()}
    centres = grouped_bars(axis, [OPERATIONS[op].symbol for op in operations], rates, errors)
    published = [
        (x, cell["published"])
        for model, chosen in table.items()
        for x, cell in zip(centres[model], chosen)
        if cell["published"] is not None
    ]  # one set of crosses, labelled whichever model has a published rate
    if published:
        axis.scatter(*zip(*published), marker="x", color="black", zorder=3, label="published")
    axis.set_ylim(0, 1.05)
    axis.set_ylabel("success rate (Wilson 95% interval)")
    legend(axis, fontsize="small", ncol=2)
    return save_figure(figure, path)


def _bar(cell: Mapping[str, Any]) -> tuple[float, float, float]:
    """A cell's success rate and the lengths of its error bar below and above it, each NaN (drawn as nothing) where the
    rate or its interval is missing."""
    rate, (low, high) = drawable([cell["success_rate"]])[0], drawable(cell["interval"] or (None, None))
    return rate, rate - low, high - rate


@optional_figure
def plot_learning_curves(groups: list[GroupRun], thresholds: dict[str, float], path: Path) -> Path:
    """One panel per (model, operation) cell: the extrapolation MSE of every seed at each evaluation (log
    scale), with the cell's success threshold as a dashed line; evaluations where a seed's MSE is NaN or infinite
    (a diverged seed, which its line leaves out) as crosses along the top of the panel."""
    panels = [(group, index, name) for group in groups for index, name in enumerate(group.config.operations)]
    columns = max(1, min(3, len(panels)))
    rows = max(1, math.ceil(len(panels) / columns))
    figure, axes = pyplot().subplots(rows, columns, figsize=(4.2 * columns, 3.2 * rows), squeeze=False)
    for axis, (group, index, name) in zip(axes.flat, panels):
        count = len(group.config.seeds)
        if group.curves.steps:  # (a group not yet evaluated: its threshold alone)
            curves = group.curves.stacked()
            test = curves["test"][:, index * count : (index + 1) * count]
            axis.plot(curves["steps"].numpy(), test.clamp_min(1e-300).numpy(), linewidth=0.6, alpha=0.5)
            _mark_not_finite(axis, curves["steps"], test)
        axis.axhline(thresholds[name], color="black", linestyle="--", linewidth=1, label="success threshold")
        log_scale(axis, "y")
        axis.set_title(f"{group.config.model}, {OPERATIONS[name].symbol} ({count} seeds)", fontsize=10)
        axis.set_xlabel("iteration")
        axis.set_ylabel("extrapolation MSE")
        legend(axis, fontsize=7, loc="upper right")
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    return save_figure(figure, path, dpi=110)


def _mark_not_finite(axis: Axes, steps: Tensor, mse: Tensor) -> None:
    """A cross along the top of ``axis`` at each of ``steps [E]`` where a seed's ``mse [E, S]`` is NaN or infinite (no
    line can show it), labelled with the number of such seeds; nothing when every value is finite."""
    bad = ~torch.isfinite(mse)
    evaluations, seeds = bad.any(dim=1), int(bad.any(dim=0).sum())
    if seeds:
        marked = steps[evaluations].tolist()
        axis.plot(marked, [1.0] * len(marked), transform=axis.get_xaxis_transform(), linestyle="none", marker="x",
                  color="red", clip_on=False, label=f"NaN or inf ({seeds} seed{'s' if seeds > 1 else ''})")  # fmt: skip


@optional_figure
def plot_speedups(labels: list[str], speedups: list[float], goal: float, title: str, path: Path) -> Path:
    """Bars of the batched-seed speed-up of each model (``labels``), with the ``goal`` as a dashed line."""
    figure, axis = pyplot().subplots(figsize=(max(5.5, 1.2 * len(labels) + 2), 3.2))
    axis.bar(labels, speedups)
    axis.axhline(goal, color="grey", linestyle="--", label=f"goal on a CPU: {goal}×")
    legend(axis, loc="best", fontsize=8)
    axis.set_ylabel("speed-up (seed-iterations/s)")
    axis.set_title(title, fontsize=10)
    return save_figure(figure, path)
