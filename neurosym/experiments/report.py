"""Reporting shared by all benchmarks: a printed table, a JSON file and an optional plot."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


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


def save_json(data: Any, path: str | os.PathLike) -> Path:
    """Write ``data`` as indented JSON (atomically: temporary file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_json_default))
    os.replace(tmp, path)
    return path


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def pyplot():
    """Return ``matplotlib.pyplot`` with a non-interactive backend, or raise a clear error."""
    try:
        import matplotlib
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise RuntimeError("plots need matplotlib: pip install 'neurosym[plots]'") from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def bar_vs_published(axis, categories: Sequence[str], series: Mapping[str, Sequence[float]], ylabel: str) -> None:
    """Grouped bars on a matplotlib ``axis``: in each of ``categories``, one bar per entry of ``series``
    (``label -> one value per category``, ours first, then the published rows), with a legend."""
    width = 0.8 / len(series)
    for k, (label, values) in enumerate(series.items()):
        axis.bar([i + (k - (len(series) - 1) / 2) * width for i in range(len(categories))], values, width, label=label)
    axis.set_xticks(range(len(categories)), categories)
    axis.set_ylabel(ylabel)
    axis.legend(fontsize=8)


def save_figure(figure, path: str | os.PathLike) -> Path:
    """Lay out, write (creating the folder) and close a matplotlib ``figure``; returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot().close(figure)
    return path
