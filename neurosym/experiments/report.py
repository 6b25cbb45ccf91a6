"""The printed table every benchmark command shows (figures: :mod:`neurosym.plots.figure`; JSON:
:func:`neurosym.training.checkpoint.save_json`)."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from neurosym.training.checkpoint import recording_writes

MISSING = "—"
"""What a table shows for a value that is missing (``None``) or not a number (NaN)."""
INFINITE = "∞"
"""What a table shows for an infinite value (``-∞`` below zero), e.g. a speed-up over no time at all."""


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Render ``rows`` under ``headers`` as a GitHub-flavoured Markdown table.

    Floats (numpy's too) are written to 4 significant digits, ``None`` and NaN as :data:`MISSING`, infinities as
    :data:`INFINITE` (``-∞`` below zero); a ``|`` in a cell is escaped
    (``\\|``, a backslash before it doubled) and a line break becomes a space, so that every value stays in its cell. A row with another number of
    cells than ``headers`` raises ``ValueError`` naming it."""
    for index, row in enumerate(rows):
        if len(row) != len(headers):
            raise ValueError(f"table row {index} has {len(row)} cells for {len(headers)} columns {list(headers)}: {list(row)!r}")
    cells = [[_cell(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def report_results(folder: Path, *names: str) -> None:
    """Print the line every command ends with: the folder its results are in (its ``--out``) and their files there,
    ``Results in results/layer_speed: layer_speed.json, layer_speed.png``."""
    print(f"Results in {folder}: {', '.join(names)}")


def result_files(folder: Path, written: Iterable[Path]) -> list[str]:
    """The names of the JSON results and PNG plots among the files ``written`` (:func:`reporting_results`) that are in
    ``folder`` (not under it) and still there, sorted."""
    here = folder.resolve()
    return sorted(
        {path.name for path in written if path.suffix in (".json", ".png") and path.parent.resolve() == here and path.is_file()}
    )


@contextmanager
def reporting_results(folder: Path) -> Iterator[None]:
    """Run the block, then :func:`report_results` naming the JSON results and PNG plots it wrote or rewrote in
    ``folder`` (:func:`result_files` of :func:`~neurosym.training.checkpoint.recording_writes`): for a command whose
    files depend on its options, not those its earlier runs into the same folder left there. Nothing is printed when the
    block raises."""
    with recording_writes() as written:
        yield
    report_results(folder, *result_files(folder, written))


def percent(fraction: float | None, decimals: int = 1) -> str:
    """A fraction as a table's percentage cell, one decimal by default: ``0.9583`` -> ``"95.8"``; :data:`MISSING` for
    ``None`` or NaN, :data:`INFINITE` for an infinity."""
    return fixed(None if fraction is None else 100 * fraction, decimals)


def fixed(value: float | None, decimals: int) -> str:
    """``value`` as a table cell with ``decimals`` decimals (``fixed(1234.56, 0)`` -> ``"1235"``); :data:`MISSING`
    for ``None`` or NaN (a rate that could not be measured), :data:`INFINITE` for an infinity (``-∞`` below zero)."""
    return _not_finite(value) or f"{value:.{decimals}f}"


def symbol_cell(scores: Mapping[str, Any], weakest: int = 2) -> str:
    """The symbol accuracy of :func:`~neurosym.pipelines.trainer.evaluate_pipeline`'s ``scores`` (``symbol``, and
    ``symbol_by_class``: ``{symbol: accuracy}``) with its ``weakest`` classes, as percentages, for a table:
    ``"98.95 (4: 67.0, 9: 78.2)"``; as :func:`percent` writes them, so a NaN accuracy (no symbol read) is
    :data:`MISSING`; without classes the cell is the accuracy alone."""
    worst = sorted(scores["symbol_by_class"].items(), key=lambda item: item[1])[:weakest]
    classes = ", ".join(f"{symbol}: {percent(value)}" for symbol, value in worst)
    return f"{percent(scores['symbol'], 2)} ({classes})" if classes else percent(scores["symbol"], 2)


def _not_finite(value: float | None) -> str | None:
    """The cell of a ``value`` that is no finite number (:data:`MISSING`, :data:`INFINITE`); ``None`` for a finite one."""
    if value is None or math.isnan(value):
        return MISSING
    return None if math.isfinite(value) else INFINITE if value > 0 else f"-{INFINITE}"


def _cell(value: Any) -> str:
    """``value`` as the text of one cell (:func:`format_table`)."""
    fractional = isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral)  # (numpy's floats too)
    if value is None or fractional:
        return _not_finite(value) or f"{float(value):.4g}"
    return _BAR.sub(lambda bar: 2 * bar[1] + "\\|", " ".join(str(value).splitlines()))


_BAR = re.compile(r"(\\*)\|")
"""A ``|`` and the backslashes before it, which :func:`_cell` doubles (``\\|`` would escape the backslash, not the bar)."""
