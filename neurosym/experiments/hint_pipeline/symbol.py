"""``neurosym hint --model neurosym --input symbol``: the operators' meanings induced from results (the
digits known), then the few-shot concepts learned from their training sentences."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from neurosym.data.hint import EVAL_SUBSETS, HintRecord
from neurosym.experiments.hint_options import HintOptions, RunSetup
from neurosym.experiments.hint_pipeline.fewshot import FewShotSplits, learn_fewshot
from neurosym.experiments.hint_sources import load_hint_data
from neurosym.experiments.report import format_table
from neurosym.pipelines.concepts import explained_fraction, induced_table, learn_concept
from neurosym.pipelines.subsets import subset_scores
from neurosym.semantics import FEWSHOT_NUMBERS, HINT_SEMANTICS, BatchSolver, OperatorTable
from neurosym.training.stopping import minutes_to_seconds, time_left

SUBSETS = (*EVAL_SUBSETS, "avg")


def subset_accuracy(table: OperatorTable, records: list[HintRecord]) -> dict[str, float]:
    """Exact-match accuracy of executing ``records`` with ``table``, per test subset and over every record, ``avg``
    (:func:`~neurosym.pipelines.subsets.subset_scores`)."""
    missing = [s for s in EVAL_SUBSETS if not any(r.eval == s for r in records)]
    if missing:
        raise ValueError(f"no record of the test subsets {missing}: each of {EVAL_SUBSETS} needs one to be scored")
    hits: dict[str, list[bool]] = {subset: [] for subset in EVAL_SUBSETS}
    for value, record in zip(BatchSolver(table).solve([r.expr for r in records]), records):
        if record.eval in hits:
            hits[record.eval].append(value == record.res)
    return subset_scores(hits)


def run_symbol(args: HintOptions, out: Path, run_setup: RunSetup) -> dict[str, Any]:
    data = load_hint_data(args, image_input=False, fewshot=bool(args.fewshot_scales), test_scale=args.test_scale,
                          progress=args.progress)  # fmt: skip
    started, examples = time.perf_counter(), [(r.expr, r.res) for r in data.splits["train"]]
    table, programs = induced_table(examples, HINT_SEMANTICS)
    scores = subset_accuracy(table, data.splits["test"])
    print(f"\nHINT symbol input, operator meanings induced from results ({data.label}):")
    print(format_table(["operator", "induced program"], [[s, str(p)] for s, p in programs.items()]))
    print(format_table(["model", *SUBSETS], [["induced semantics", *(100 * scores[s] for s in SUBSETS)]]))
    left = time_left(minutes_to_seconds(args.time_limit), time.perf_counter() - started)
    fewshot = fewshot_from_symbols(args, out, "symbol input", table, data.fewshot, run_setup, left)
    return {"data": data.label, "programs": {s: str(p) for s, p in programs.items()}, "test": scores, "fewshot": fewshot}


def fewshot_from_symbols(
    args: HintOptions,
    out: Path,
    label: str,
    table: OperatorTable,
    splits: FewShotSplits,
    run_setup: RunSetup,
    time_limit: float | None,
) -> dict[str, Any]:
    """The few-shot stage on symbol input: each concept's meaning learned from its training sentences with
    ``table`` for the known symbols (the role, number or operator, is given by the concept's name); it stops after
    ``time_limit`` seconds, what is left of ``--time-limit``."""

    def learn(concept: str, train: list[HintRecord]) -> tuple[str, Callable[[list[HintRecord], str], float], None]:
        role = "number" if concept in FEWSHOT_NUMBERS else "operator"
        learned = learn_concept(concept, role, [(r.expr, r.res) for r in train], table)

        def score(records: list[HintRecord], split: str) -> float:  # no records: 0, as on image input
            return explained_fraction(learned.table, [(r.expr, r.res) for r in records]) if records else 0.0

        return learned.meaning, score, None  # the table is all it learned, and the results keep its meaning

    return learn_fewshot(args, out, label, learn, splits, run_setup, time_limit)
