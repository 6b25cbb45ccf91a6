"""What every figure shares: matplotlib without a display, grouped bars, and writing a figure to a file."""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from neurosym.paths import user_path
from neurosym.training.checkpoint import atomic_path

if TYPE_CHECKING:  # matplotlib is optional and imported only when a figure is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

T = TypeVar("T")


class PlotsUnavailable(RuntimeError):
    """matplotlib is not installed: figures are skipped, everything else runs."""


def pyplot() -> ModuleType:
    """Return ``matplotlib.pyplot`` with a non-interactive backend, or raise :class:`PlotsUnavailable`."""
    try:
        import matplotlib
    except ImportError as error:
        raise PlotsUnavailable("figures need matplotlib: pip install 'neurosym[plots]'") from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def optional_figure(draw: Callable[..., T]) -> Callable[..., T | None]:
    """``draw`` (a function that draws and writes a figure), which without matplotlib says so in one line on
    stderr and returns ``None``: a base install runs every command to the end, less its figures. When ``draw``
    raises, the figures it opened are closed before the error goes on, so that none is left open in the process."""

    @functools.wraps(draw)
    def drawing(*args: Any, **kwargs: Any) -> T | None:
        try:
            plt = pyplot()
        except PlotsUnavailable as missing:
            print(f"{missing} (figure skipped)", file=sys.stderr)
            return None
        opened = set(plt.get_fignums())
        try:
            return draw(*args, **kwargs)
        except BaseException:
            for number in set(plt.get_fignums()) - opened:
                plt.close(number)
            raise

    return drawing


def drawable(values: Iterable[float | None]) -> list[float]:
    """``values`` with each ``None`` (a number that is missing, e.g. a NaN read back from JSON) as NaN, which
    matplotlib draws as nothing."""
    return [math.nan if value is None else float(value) for value in values]


def grouped_bars(
    axis: Axes,
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    errors: Mapping[str, Sequence[Sequence[float]]] | None = None,
    value_format: str | None = None,
) -> dict[str, list[float]]:
    """Grouped bars on a matplotlib ``axis``: in each of ``categories``, one bar per entry of ``series``
    (``label -> one value per category``; NaN or ``None`` draws no bar), with ``errors[label]`` as ``[below, above]``
    error bars where given, and each bar's value written on it in ``value_format`` (e.g. ``"{:.4g}"``) when
    given. Returns the bars' centres per label."""
    width = 0.8 / max(1, len(series))
    centres = {}
    for k, (label, given) in enumerate(series.items()):
        values = drawable(given)
        centres[label] = [i + (k - (len(series) - 1) / 2) * width for i in range(len(categories))]
        yerr = None if errors is None else errors.get(label)
        bars = axis.bar(centres[label], values, width, yerr=yerr, capsize=2 if yerr is not None else 0, label=label)
        if value_format is not None:
            axis.bar_label(bars, ["" if math.isnan(value) else value_format.format(value) for value in values], fontsize=6)
    axis.set_xticks(range(len(categories)), categories)
    return centres


def legend(axis: Axes, **options: Any) -> None:
    """``axis.legend(**options)`` when something on ``axis`` is labelled; none otherwise (matplotlib warns of an
    empty legend)."""
    handles, _ = axis.get_legend_handles_labels()
    if handles:
        axis.legend(**options)


def log_scale(axis: Axes, which: Literal["x", "y"], base: float = 10) -> None:
    """Put the ``which`` axis of ``axis`` on a log scale of ``base`` when what is drawn on it has a positive value;
    else it stays linear (matplotlib warns of a log axis of no positive value, or cannot draw it). Call it after
    drawing: it reads the data limits."""
    smallest_positive = axis.dataLim.minposx if which == "x" else axis.dataLim.minposy
    if math.isfinite(smallest_positive):
        (axis.set_xscale if which == "x" else axis.set_yscale)("log", base=base)


def bar_vs_published(axis: Axes, categories: Sequence[str], series: Mapping[str, Sequence[float | None]], ylabel: str) -> None:
    """Grouped bars on a matplotlib ``axis``: in each of ``categories``, one bar per entry of ``series``
    (``label -> one value per category``, ours first, then the published rows), each with its value, and a legend."""
    grouped_bars(axis, categories, series, value_format="{:.4g}")
    axis.set_ylabel(ylabel)
    legend(axis, fontsize=8)


def save_figure(figure: Figure, path: str | os.PathLike, dpi: int = 120) -> Path:
    """Lay out, write (creating the folder; atomically: :func:`~neurosym.training.atomic_path`, in the format of
    ``path``'s suffix) and close a matplotlib ``figure``, closed too when writing fails; returns ``path``."""
    path = user_path(path)
    try:
        figure.tight_layout()
        with atomic_path(path, suffix=path.suffix) as partial:
            figure.savefig(partial, dpi=dpi)
    finally:
        pyplot().close(figure)
    return path


@optional_figure
def plot_vs_published(
    categories: Sequence[str], series: Mapping[str, Sequence[float | None]], ylabel: str, title: str, path: str | os.PathLike
) -> Path:
    """One figure of grouped bars (ours first, then the published rows; 0 to 100) written to ``path``."""
    figure, axis = pyplot().subplots(figsize=(7, 3.5))
    bar_vs_published(axis, categories, series, ylabel)
    axis.set(ylim=(0, 100), title=title)
    return save_figure(figure, path)
