"""Statistics of HINT splits as in the paper's Figure A2: symbol, number of operators, length, tree depth,
maximum dependency range and result frequencies."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from neurosym.data.hint.examples import HintRecord, HintSplit
from neurosym.data.hint.splits import EVAL_SUBSETS
from neurosym.data.randomness import as_generator
from neurosym.training.checks import int_at_least

ASPECTS: tuple[str, ...] = ("symbol", "n_op", "length", "depth", "dependency_range", "result")
"""The aspects of an expression whose frequencies :func:`split_statistics` counts."""
RESULT_BINS: tuple[int, ...] = (0, 10, 100, 1_000, 10_000)
_BRACKETS = frozenset("()")


def tree_depth(expr: str, head: Sequence[int]) -> int:
    """Depth of the parse tree (a single number has depth 1); brackets are not tree nodes."""
    depth = [0] * len(head)
    for index in parents_first(head):
        depth[index] = 1 if head[index] < 0 else depth[head[index]] + 1
    return max((d for d, c in zip(depth, expr) if c not in _BRACKETS), default=0)


def parents_first(head: Sequence[int]) -> list[int]:
    """The symbol indices of a ``head`` list, each after its parent; ``ValueError`` unless it is one tree rooted at -1."""
    children: dict[int, list[int]] = {}
    for index, parent in enumerate(head):
        children.setdefault(parent, []).append(index)
    order, frontier = [], list(children.get(-1, []))
    while frontier:
        index = frontier.pop()
        order.append(index)
        frontier.extend(children.get(index, []))
    if len(order) != len(head):
        raise ValueError(f"head list {list(head)} is not one tree rooted at -1")
    return order


def operator_count(expr: str) -> int:
    """Number of binary operators: a tree of ``k`` operators has ``2k + 1`` symbols besides brackets."""
    return (sum(c not in _BRACKETS for c in expr) - 1) // 2


def dependency_range(head: Sequence[int]) -> int:
    """The longest distance between a symbol and the symbol it depends on (0 for a single number); ``ValueError`` unless
    ``head`` is one tree rooted at -1 (:func:`parents_first`: a parent beyond the symbols, a symbol its own parent or a
    cycle was measured as a distance)."""
    parents_first(head)
    return max((abs(i - h) for i, h in enumerate(head) if h >= 0), default=0)


def result_bin(result: int) -> str:
    """The decade a result falls in, e.g. ``"[10, 100)"``, and ``">= 10000"`` beyond the last bin."""
    for low, high in pairwise(RESULT_BINS):
        if low <= result < high:
            return f"[{low}, {high})"
    return f">= {RESULT_BINS[-1]}"


def split_statistics(records: Sequence[HintRecord], max_records: int | None = 100_000, seed: int = 0) -> dict[str, Counter]:
    """Frequencies of every aspect of :data:`ASPECTS` over ``records`` (a seeded sample of ``max_records``, an int of
    at least 1 or ``None`` for all, when there are more; else ``ValueError``)."""
    if max_records is not None:  # (0 gave empty tables as if there were no records, -1 and 2.5 failed in numpy)
        max_records = int_at_least(max_records, "max_records", 1)
    indices = np.arange(len(records))
    if max_records is not None and len(records) > max_records:
        indices = np.sort(as_generator(seed).choice(len(records), size=max_records, replace=False))
    stats: dict[str, Counter] = {aspect: Counter() for aspect in ASPECTS}
    for index in indices.tolist():
        record = records[index]
        stats["symbol"].update(record.expr)
        stats["n_op"][operator_count(record.expr)] += 1
        stats["length"][len(record.expr)] += 1
        stats["depth"][tree_depth(record.expr, record.head)] += 1
        stats["dependency_range"][dependency_range(record.head)] += 1
        stats["result"][result_bin(record.res)] += 1
    return stats


def symbol_kl_divergence(p: Counter, q: Counter) -> float:
    """KL(p ‖ q) between two symbol frequency tables (the paper reports 0.0055 for train ‖ test); ``ValueError`` for a
    negative count (not a frequency)."""
    negative = {s: n for table in (p, q) for s, n in table.items() if n < 0}
    if negative:
        raise ValueError(f"negative counts {negative}: a frequency table counts occurrences (0 or more)")
    total_p, total_q = sum(p.values()), sum(q.values())
    if total_p == 0 or total_q == 0:
        raise ValueError("both frequency tables need at least one count")
    missing = [s for s in p if q.get(s, 0) == 0]
    if missing:
        raise ValueError(f"symbols {missing} never occur in the second table: the divergence is infinite")
    return sum((n / total_p) * math.log((n / total_p) / (q[s] / total_q)) for s, n in p.items() if n)


SUMMARY_COLUMNS = ("split", "subset", "examples", "mean n_op", "mean length", "max depth", "max dep. range", "results >= 100 (%)")
"""The columns of a row of :func:`split_summary`."""


def split_summary(name: str, split: HintSplit, sample: int, seed: int) -> tuple[list[list], dict[str, dict[str, Counter]]]:
    """Summary rows (:data:`SUMMARY_COLUMNS`) of split ``name``: all of it, then each test subset in it; and
    the :func:`split_statistics` of each (``{"all" | subset: {aspect: Counter}}``), over a seeded sample of
    at most ``sample`` records per row (an int of at least 1, else ``ValueError``)."""
    sample = int_at_least(sample, "sample", 1)  # (0 gave rows of means over no record, -1 failed in numpy)
    rows, stats = [], {}
    subsets = [("all", np.arange(len(split)))] + [
        (s, np.flatnonzero(split.eval == s)) for s in EVAL_SUBSETS if (split.eval == s).any()
    ]
    for subset, indices in subsets:
        chosen = indices
        if len(indices) > sample:
            chosen = np.sort(as_generator(seed).choice(indices, size=sample, replace=False))
        records = [split[int(i)] for i in chosen]
        counts = split_statistics(records, max_records=None)
        stats[subset] = counts
        total = max(1, len(records))
        rows.append(
            [
                name,
                subset,
                len(indices),
                _mean(counts["n_op"]),
                _mean(counts["length"]),
                max(counts["depth"], default=0),
                max(counts["dependency_range"], default=0),
                100 * sum(n for k, n in counts["result"].items() if not k.startswith(("[0,", "[10,"))) / total,
            ]
        )
    return rows, stats


def _mean(counter: Counter) -> float:
    total = sum(counter.values())
    return sum(k * n for k, n in counter.items()) / total if total else 0.0
