"""The printed table every benchmark command shows (figures: :mod:`neurosym.plots.figure`; JSON:
:func:`neurosym.training.checkpoint.save_json`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Render ``rows`` under ``headers`` as a GitHub-flavoured Markdown table."""
    cells = [[str(h) for h in headers]] + [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def percent(fraction: float) -> str:
    """A fraction as a table's percentage cell, one decimal: ``0.9583`` -> ``"95.8"``."""
    return f"{100 * fraction:.1f}"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
