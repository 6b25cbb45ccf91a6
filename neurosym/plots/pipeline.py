"""The figure of ``neurosym pipeline``: learning from results, and the test accuracy beside the published."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from neurosym.plots.figure import bar_vs_published, optional_figure, pyplot, save_figure


@optional_figure
def plot_grammar_pipeline(
    history: Sequence[Mapping[str, Any]],
    ours: float,
    ours_label: str,
    published: Sequence[Any],
    title: str,
    path: str | os.PathLike,
) -> None:
    """Left: per training step, the fraction of the batch whose reading executes to its result (before the update) and
    the fraction abduction could label (moving averages over 50 steps; empty when nothing was trained, e.g. an ensemble of finished runs);
    right: the test accuracy in % (``ours``, named ``ours_label``, e.g. as a reference supervised by the true symbols)
    beside each ``published`` row (objects with ``method`` and ``accuracy``)."""
    figure, (curve, bars) = pyplot().subplots(1, 2, figsize=(11, 4))
    steps = [h["step"] for h in history]
    for key, label in (("correct", "reading gives the result"), ("labelled", "abduced")) if history else ():
        values = np.asarray([h[key] for h in history], dtype=float)
        window = min(50, len(values))
        curve.plot(steps[window - 1 :], np.convolve(values, np.ones(window) / window, mode="valid"), label=label, lw=0.9)
    curve.set_xlabel("step")
    curve.set_ylabel("fraction of the batch")
    curve.set_title(f"{title}: learning from results")
    if history:
        curve.legend(fontsize=8)
    series = {ours_label: [ours], **{row.method: [row.accuracy] for row in published}}
    bar_vs_published(bars, ["test accuracy"], series, "accuracy %")
    save_figure(figure, path)
