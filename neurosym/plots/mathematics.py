"""The figure of ``neurosym mathematics``: accuracy per module and model beside the paper's Transformer."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from neurosym.plots.figure import grouped_bars, optional_figure, pyplot, save_figure

REGIMES = ("interpolate", "extrapolate")


@optional_figure
def plot_module_accuracies(results: dict, published_transformer: Mapping[str, float], path: Path) -> Path:
    """Grouped bars: accuracy per module and model, interpolation and extrapolation side by side, with the
    paper's Transformer mean (``published_transformer[regime]``) as a dashed line.

    ``results``: ``{"modules": {regime: [module]}, "models": {name: {regime: {"per_module": {module: accuracy}}}}}``; a
    module a model was not scored on (the symbolic route outside arithmetic, ``n/a`` in the table) draws no bar.
    """
    names = list(results["models"])
    figure, axes = pyplot().subplots(1, 2, figsize=(13, 4.5), sharey=True)
    for axis, regime in zip(axes, REGIMES):
        modules = results["modules"][regime]
        values = {name: [results["models"][name][regime]["per_module"].get(m) for m in modules] for name in names}
        grouped_bars(axis, [m.removeprefix("arithmetic__") for m in modules], values)
        axis.axhline(published_transformer[regime], color="black", linestyle="--", linewidth=1,
                     label="paper Transformer (mean, all modules)")  # fmt: skip
        axis.tick_params(axis="x", labelrotation=30)
        axis.set_title(regime)
        axis.set_ylim(0, 1.05)
    axes[0].set_ylabel("exact-match accuracy")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    return save_figure(figure, path)
