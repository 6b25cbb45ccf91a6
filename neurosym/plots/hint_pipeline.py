"""The figures of ``neurosym hint --model neurosym``: training from results, and the few-shot concepts."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from neurosym.pipelines.curriculum import UNBOUNDED
from neurosym.plots.figure import bar_vs_published, drawable, legend, log_scale, optional_figure, pyplot, save_figure


@optional_figure
def plot_training(
    history: Sequence[Mapping[str, Any]],
    subsets: Sequence[str],
    series: Mapping[str, Sequence[float]],
    path: str | os.PathLike,
) -> None:
    """Left: the pseudo-label loss per logged step of ``history`` (log scale) with the curriculum's longest
    expression (right axis; the steps of an unbounded stage, :data:`~neurosym.pipelines.curriculum.UNBOUNDED`, have no
    cap to draw and are shaded instead); right: accuracy per test subset, one bar per entry of ``series`` (ours first)."""
    figure, (curve, bars) = pyplot().subplots(1, 2, figsize=(11, 4))
    steps = [h["step"] for h in history]
    curve.plot(steps, drawable(h["loss"] for h in history), label="pseudo-label loss", lw=0.8)
    log_scale(curve, "y")
    curve.set(xlabel="step", ylabel="pseudo-label loss", title="training from results only")
    twin = curve.twinx()
    caps = [h["max_length"] for h in history]
    twin.plot(steps, [math.nan if cap >= UNBOUNDED else cap for cap in caps], color="gray", ls="--", label="max length")
    unbounded = [step for step, cap in zip(steps, caps) if cap >= UNBOUNDED]
    if unbounded:
        curve.axvspan(min(unbounded), max(unbounded), color="gray", alpha=0.15, label="no length cap ('all' stage)")
    twin.set_ylabel("curriculum: max symbols")
    legend(curve, handles=curve.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0], fontsize=8)
    bar_vs_published(bars, subsets, series, "accuracy %")
    save_figure(figure, path)


@optional_figure
def plot_fewshot(
    fewshot: Mapping[str, Mapping[str, Any]],
    concepts: Sequence[str],
    paper: Mapping[str, float],
    path: str | os.PathLike,
    split: str = "test",
) -> None:
    """Test (``split="val"``: validation) accuracy per concept and on average: one bar per few-shot scale of ``fewshot``
    (``{scale: {"concepts": {concept: {"train", "test_accuracy", "val_accuracy"}}, "avg", "avg_val"}}``), then the
    ``paper``'s (test)."""
    figure, axis = pyplot().subplots(figsize=(7, 4))
    key, average = ("test_accuracy", "avg") if split == "test" else ("val_accuracy", "avg_val")
    series = {
        f"scale {scale} (up to {max(entry['train'] for entry in info['concepts'].values())} sentences)":
            [100 * info["concepts"][c][key] for c in concepts] + [100 * info[average]]
        for scale, info in fewshot.items()
    }  # fmt: skip
    published = [paper[c] for c in concepts]
    series["paper, Transformer (test)"] = [*published, float(np.mean(published)) if published else math.nan]
    bar_vs_published(axis, [*concepts, "avg"], series, f"{'test' if split == 'test' else 'validation'} accuracy %")
    save_figure(figure, path)
