"""``neurosym hint --model neurosym --semantics learned``: nothing given but the grammar's shape (:data:`GIVEN`).

Every symbol is an anonymous class; the learner finds each class's role (number, operator, bracket), each
number's value, each operator's program and which of the two given precedence levels it takes (and, on images,
the perception) from results alone (:mod:`neurosym.pipelines.ground_symbols`, :mod:`neurosym.pipelines.ground_images`). The
symbols are read only afterwards, to report how the learned grounding compares with HINT's table.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from neurosym.data.hint import EVAL_SUBSETS, HintRecord
from neurosym.experiments.hint_options import HintOptions, RunSetup
from neurosym.experiments.hint_pipeline.image import fewshot_from_images
from neurosym.experiments.hint_pipeline.symbol import fewshot_from_symbols
from neurosym.experiments.hint_sources import HintData
from neurosym.experiments.report import format_table
from neurosym.pipelines.concepts import ConceptNotLearned
from neurosym.pipelines.ground_images import (
    ImageGroundingConfig,
    glyph_grid,
    learn_grounding_from_images,
    save_glyph_grid,
    stages_checkpoint,
    symbol_accuracy,
)
from neurosym.pipelines.ground_symbols import (
    HINT_ALPHABET,
    accuracy_by_subset,
    anonymise,
    class_symbols,
    learn_grounding,
    random_permutation,
    shown_as,
)
from neurosym.pipelines.grounding import Grounding, compare_grounding
from neurosym.pipelines.trainer import evaluate_pipeline
from neurosym.pipelines.windows import WindowSource
from neurosym.semantics import HINT_SEMANTICS
from neurosym.training import resolve_device
from neurosym.training.stopping import minutes_to_seconds, time_left

SUBSETS = (*EVAL_SUBSETS, "avg")
GIVEN = (
    "given: the count of anonymous classes (--classes on images, the 16 symbols' ids on symbol input); numbers are single tokens; one pair of brackets; binary, left-associative "
    "operators at two precedence levels (each operator is assigned to one); the decoder's fewest-brackets prior; "
    "programs over i, j, 0, 1, 2 with + - * / max min ceil floor"
)
"""What ``--semantics learned`` is told, printed with its table."""


def _report(grounding: Grounding, truth: list[str], scores: dict[str, float], out: Path, what: str) -> dict[str, Any]:
    """Print and save the grounding; ``truth[c]`` is the symbol class ``c`` stands for (read for the report only)."""
    comparison = compare_grounding(grounding, HINT_SEMANTICS, truth)
    print(f"\nLearned grounding ({what}); in brackets the symbol each class stands for, read for this report only:")
    print(grounding.format([f"c{c} [{symbol or '-'}]" for c, symbol in enumerate(truth)]))
    print(format_table(["model", *SUBSETS], [[f"neurosym, everything learned ({what})", *(100 * scores[s] for s in SUBSETS)]]))
    print(GIVEN)
    print("the learned table equals HINT's" if comparison.equal else "differs from HINT's: " + "; ".join(comparison.mismatches))
    grounding.save(out / "grounding.json")
    return {
        "grounding": grounding.to_json(),
        "equals_hint": comparison.equal,
        "mismatches": list(comparison.mismatches),
        "test": scores,
    }


def run_learned_symbol(args: HintOptions, out: Path, data: HintData, run_setup: RunSetup) -> dict[str, Any]:
    """Symbol input: the tokens are given to the learner as ids of a random permutation of the alphabet's symbols."""
    permutation = random_permutation(len(HINT_ALPHABET), args.seed)
    started = time.perf_counter()
    train = data.splits["train"]
    grounding = learn_grounding(anonymise([r.expr for r in train], permutation), [r.res for r in train], len(permutation))
    seconds = time.perf_counter() - started
    test = data.splits["test"]
    scores = accuracy_by_subset(
        grounding, anonymise([r.expr for r in test], permutation), [r.res for r in test], [r.eval for r in test]
    )
    report = _report(grounding, class_symbols(permutation), scores, out, "symbol input")

    def shown(concept: str, scale: float) -> dict[str, list[HintRecord]]:  # the known symbols as the grounding shows them
        split = data.fewshot(concept, scale)
        return {name: [replace(r, expr=shown_as(r.expr, permutation, grounding)) for r in rs] for name, rs in split.items()}

    left = time_left(minutes_to_seconds(args.time_limit), time.perf_counter() - started)
    fewshot = fewshot_from_symbols(args, out, "symbol input, everything learned", grounding.table, shown, run_setup, left)
    return {"learn_seconds": seconds, **report, "fewshot": fewshot}


def run_learned_image(args: HintOptions, out: Path, data: HintData, run_setup: RunSetup) -> dict[str, Any]:
    """Image input: the perception has ``--classes`` anonymous classes, learned with everything else."""
    device = resolve_device(args.device)
    config = ImageGroundingConfig(
        classes=args.classes, refine_steps=args.training_steps(), batch_size=args.batch_size, seed=args.seed
    )
    started, checkpoint, time_limit = time.perf_counter(), out / "checkpoint.pt", minutes_to_seconds(args.time_limit)
    if not args.resume:
        checkpoint.unlink(missing_ok=True)
        stages_checkpoint(checkpoint).unlink(missing_ok=True)
    try:
        train = WindowSource(data.splits["train"], data.image_bank(), "train", args.seed)
        learned = learn_grounding_from_images(train, device, config, checkpoint, args.progress, time_limit)
    except ConceptNotLearned as error:  # a stage found no consistent grounding: say so, with what was measured
        print(f"\nno grounding found from the images ({data.label}): {error}")
        return {"grounding": None, "error": str(error), "learn_seconds": time.perf_counter() - started}
    seconds = time.perf_counter() - started
    # the few-shot stage before the scores: a call that a stop ends in it scores nothing
    fewshot = fewshot_from_images(args, out, learned.pipeline, data, device, time_left(time_limit, seconds), run_setup)
    test = WindowSource(data.splits["test"], data.image_bank(), "test", args.data_seed_or_seed())
    # evaluate_pipeline's "symbol" keys compare display letters with HINT's symbols: symbol_accuracy matches them
    scores = evaluate_pipeline(learned.pipeline, test, device, args.eval_batch_size)
    scores = {key: value for key, value in scores.items() if not key.startswith("symbol")}
    accuracy, symbols = symbol_accuracy(learned.pipeline, test, device)
    names = [symbols.get(c, "") for c in range(args.classes)]
    report = _report(learned.grounding, names, scores, out, f"image input, {data.label}")
    save_glyph_grid(glyph_grid(learned.pipeline, test, 8, device), names, out / "grounding_glyphs.png")
    print(f"symbol accuracy under the best class-to-symbol matching (report only): {100 * accuracy:.1f}%")
    return {**report, "learn_seconds": seconds, "symbol_accuracy": accuracy, "log": learned.log, "fewshot": fewshot}
