"""Throughput of the two HINT solvers on the same expressions: Lark LALR parse + execute (the reference
path) versus the vectorised :class:`~neurosym.semantics.BatchSolver` at several batch sizes.

The batch solver's answers are checked against the Lark path first. Measurements are interleaved: each
round times every path once, and the fastest round of each path is kept, so a burst of load from other
processes cannot favour one path. Throughput is counted per wall-clock second and per CPU second.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqdm import tqdm

from neurosym.semantics.batch import BatchSolver
from neurosym.semantics.executor import execute
from neurosym.semantics.operators import Value
from neurosym.semantics.table import HINT_SEMANTICS
from neurosym.syntax import lark_parser, parse


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of this process) of one call of ``work()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def _rate(count: int, seconds: float) -> float:
    """``count`` per second over ``seconds``; NaN (not measured) for no time at all, as a coarse CPU clock (15.6 ms
    on Windows) reads for short work, and NaN rates then make NaN speed-ups (a table's dash, JSON's ``null``)."""
    return count / seconds if seconds > 0 else math.nan


def lark_answers(sentences: list[str]) -> list[Value | None]:
    """The reference path: Lark LALR parse, then the tree executor."""
    return [execute(parse(s), HINT_SEMANTICS).value for s in sentences]


def measure_solvers(
    sentences: Mapping[int, Sequence[str]], lark_count: int, batch_sizes: Sequence[int], repeats: int, progress: bool = False
) -> list[dict[str, Any]]:
    """Time both paths on ``sentences`` (operator count -> expressions): Lark on the first ``lark_count``,
    the batch solver on ``max(size, lark_count)`` of them in batches of each of ``batch_sizes``, over
    ``repeats`` interleaved rounds. Raises ``AssertionError`` when the batch solver disagrees with Lark, ``ValueError``
    when an operator count has fewer expressions than that.

    Returns one record per (operator count, path, batch size): ``expressions``, ``seconds``,
    ``cpu_seconds``, ``per_second``, ``per_cpu_second`` and the ``speedup`` / ``cpu_speedup`` over Lark."""
    solver = BatchSolver(HINT_SEMANTICS)
    lark_parser()  # build the parser before timing
    runs: list[dict[str, Any]] = []
    needed = max(lark_count, *batch_sizes)
    for n_operators, all_sentences in sentences.items():
        if len(all_sentences) < needed:  # (fewer were solved than counted: throughput and speed-up inflated)
            raise ValueError(
                f"n_op={n_operators}: {len(all_sentences)} expressions given, the timing solves {needed} "
                "(lark_count and the largest batch)"
            )
        lark_sentences = list(all_sentences[:lark_count])
        expected = lark_answers(lark_sentences)
        if solver.solve(lark_sentences) != expected:
            raise AssertionError(f"the batch solver disagrees with Lark on n_op={n_operators} expressions")
        runs.append(
            {
                "n_operators": n_operators,
                "path": "lark",
                "batch_size": 1,
                "expressions": lark_count,
                "work": lambda s=lark_sentences: lark_answers(s),
                "agrees_with_lark": True,
                "invalid": sum(v is None for v in expected),
            }
        )
        for size in batch_sizes:
            solved = max(size, lark_count)  # at least as many expressions as the Lark path
            batches = [list(all_sentences[i : min(i + size, solved)]) for i in range(0, solved, size)]
            runs.append(
                {
                    "n_operators": n_operators,
                    "path": "batch",
                    "batch_size": size,
                    "expressions": solved,
                    "work": lambda b=batches: [solver.solve(batch) for batch in b],
                }
            )
    for _ in tqdm(range(repeats), desc="solver-speed rounds", disable=not progress):
        for entry in runs:
            wall, cpu = timed(entry["work"])
            entry["seconds"] = min(entry.get("seconds", wall), wall)
            entry["cpu_seconds"] = min(entry.get("cpu_seconds", cpu), cpu)
    for entry in runs:
        del entry["work"]
        entry["per_second"] = _rate(entry["expressions"], entry["seconds"])
        entry["per_cpu_second"] = _rate(entry["expressions"], entry["cpu_seconds"])
    lark = {r["n_operators"]: r for r in runs if r["path"] == "lark"}
    for entry in runs:
        entry["speedup"] = entry["per_second"] / lark[entry["n_operators"]]["per_second"]
        entry["cpu_speedup"] = entry["per_cpu_second"] / lark[entry["n_operators"]]["per_cpu_second"]
    return runs
