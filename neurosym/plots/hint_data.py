"""The Figure A2-like plot of ``neurosym hint-data``: the statistics of
:func:`neurosym.data.hint.split_statistics`, one panel per aspect."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping

import numpy as np

from neurosym.data.hint import ASPECTS
from neurosym.plots.figure import legend, optional_figure, pyplot, save_figure

_CATEGORICAL = frozenset({"symbol", "result"})


@optional_figure
def plot_statistics(stats: Mapping[str, Mapping[str, Counter]], path: str | os.PathLike) -> None:
    """Figure A2-like panels, one per aspect: normalised frequencies per split (bars for symbols and result
    ranges, curves for the numeric aspects)."""
    figure, axes = pyplot().subplots(2, 3, figsize=(15, 8))
    for axis, aspect in zip(axes.flat, ASPECTS):
        keys = sorted({k for split in stats.values() for k in split[aspect]}, key=_sort_key)
        positions = np.arange(len(keys))
        width = 0.8 / max(1, len(stats))
        categorical = aspect in _CATEGORICAL
        for offset, (name, split) in enumerate(stats.items()):
            total = max(1, sum(split[aspect].values()))
            heights = [split[aspect].get(k, 0) / total for k in keys]
            if categorical:
                axis.bar(positions + offset * width, heights, width=width, label=name)
            else:
                axis.plot(keys, heights, marker=".", label=name)
        if categorical:
            axis.set_xticks(positions + 0.4 - width / 2, [str(k) for k in keys], fontsize=8)
        else:
            axis.set_xlabel(aspect.replace("_", " "))
        axis.set_title(aspect.replace("_", " "))
        axis.set_ylabel("frequency")
    legend(axes.flat[0], fontsize=7)
    save_figure(figure, path, dpi=110)


def _sort_key(key: int | np.integer | str) -> tuple[int, int, str]:
    if isinstance(key, (int, np.integer)):
        return (0, int(key), "")
    text = str(key)
    if text.startswith("["):
        return (1, int(text[1:].split(",")[0]), "")
    if text.startswith(">="):
        return (1, 10**9, "")
    order = "0123456789+-*/()"
    return (2, order.index(text) if text in order else len(order), text)
