"""Figures of the speed benchmarks: arithmetic units against ``nn.Linear`` (``layer-speed``), attention
time over sequence length (``attention-speed``) and HINT solver throughput (``solver-speed``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from neurosym.plots.figure import drawable, grouped_bars, legend, log_scale, optional_figure, pyplot, save_figure


@optional_figure
def plot_unit_ratios(records: list[dict], baseline: str, goals: Mapping[str, float], path: Path) -> Path:
    """Grouped bars of each unit's time relative to ``baseline`` per shape (log scale), with ``goals`` as
    black ticks. ``records``: ``{"shape", "unit", "ratio_to_linear"}`` per (shape, unit); a pair without a record (or
    with a ``None`` ratio) draws no bar."""
    shapes = list(dict.fromkeys(r["shape"] for r in records))
    units = [u for u in dict.fromkeys(r["unit"] for r in records) if u != baseline]
    ratios = {(r["unit"], r["shape"]): r["ratio_to_linear"] for r in records}
    figure, axis = pyplot().subplots(figsize=(2 + 2 * len(shapes), 4))
    centres = grouped_bars(axis, shapes, {unit: drawable(ratios.get((unit, s)) for s in shapes) for unit in units})
    for unit in units:
        if unit in goals:
            axis.scatter(centres[unit], [goals[unit]] * len(shapes), marker="_", s=400, color="black", zorder=3)
    axis.axhline(1.0, color="grey", linewidth=0.8)
    log_scale(axis, "y")
    axis.set_ylabel("forward+backward time / nn.Linear")
    axis.set_title("Arithmetic units vs nn.Linear\n(black ticks: goals)")  # (one line is wider than a figure of one shape)
    legend(axis)
    return save_figure(figure, path)


@optional_figure
def plot_times_over_length(
    seconds: Mapping[str, Mapping[int, float | None]], lengths: Sequence[int], title: str, path: Path
) -> Path:
    """One line per kind of attention: forward + backward milliseconds against sequence length (log-log);
    ``seconds[kind][length]``, where a time that is missing (``None``, NaN, or no entry for the length) draws no point."""
    figure, axis = pyplot().subplots(figsize=(6, 4))
    for kind, times in seconds.items():
        axis.plot(lengths, [1000 * value for value in drawable(times.get(n) for n in lengths)], marker="o", label=kind)
    log_scale(axis, "x", base=2)
    log_scale(axis, "y")
    axis.set_xlabel("sequence length")
    axis.set_ylabel("forward + backward (ms)")
    axis.set_title(title, fontsize=9)
    legend(axis)
    return save_figure(figure, path)


@optional_figure
def plot_solver_throughput(runs: list[dict], path: Path) -> Path:
    """Wall-clock throughput against batch size (log-log), one line per operator count, Lark dashed.
    ``runs``: the records of :func:`neurosym.benchmarking.solver_speed.measure_solvers`."""
    figure, axis = pyplot().subplots(figsize=(6, 4))
    for n_operators in sorted({r["n_operators"] for r in runs}):
        chosen = [r for r in runs if r["n_operators"] == n_operators]
        batch = [r for r in chosen if r["path"] == "batch"]
        sizes, rates = [r["batch_size"] for r in batch], [r["per_second"] for r in batch]
        line = axis.plot(sizes, rates, "o-", label=f"batch solver, n_op={n_operators}")
        lark = next(r for r in chosen if r["path"] == "lark")
        axis.axhline(
            lark["per_second"], linestyle="--", color=line[0].get_color(), label=f"Lark LALR + execute, n_op={n_operators}"
        )
    log_scale(axis, "x")
    log_scale(axis, "y")
    axis.set_xlabel("batch size (sentences per call)")
    axis.set_ylabel("expressions per second (wall clock)")
    axis.set_title("HINT solver throughput")
    legend(axis, fontsize=8)
    return save_figure(figure, path)
