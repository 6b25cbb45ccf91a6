"""Reporting shared by all benchmarks: a printed table, a JSON file and a plot (the figure helpers of
:mod:`neurosym.plots.figure`, named here too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neurosym.plots.figure import bar_vs_published, pyplot, save_figure
from neurosym.training.checkpoint import save_json

__all__ = ["bar_vs_published", "format_table", "pyplot", "save_figure", "save_json"]


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Render ``rows`` under ``headers`` as a GitHub-flavoured Markdown table."""
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
