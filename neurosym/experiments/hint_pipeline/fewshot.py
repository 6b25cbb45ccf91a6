"""The few-shot stage of ``neurosym hint --model neurosym``: every concept at every scale, resumable, with
the accuracy on the concept's validation set (to choose on), its whole test set (as HINT's Table 4) and its
unseen test expressions."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from neurosym.data.hint import HintRecord
from neurosym.experiments.hint_options import DEFAULT_STEPS, PIPELINE_LEARNING_RATE, HintOptions, RunSetup
from neurosym.experiments.options import options_as_json
from neurosym.experiments.report import format_table, percent
from neurosym.metrics.published import HINT_FEWSHOT
from neurosym.pipelines.concepts import ConceptNotLearned
from neurosym.plots.hint_pipeline import plot_fewshot
from neurosym.semantics.induction import Program
from neurosym.training.checkpoint import Setup, check_setup, load_json, save_json
from neurosym.training.stopping import StopRequests, TrainingInterrupted

Learner = Callable[[str, list[HintRecord]], tuple[str, Callable[[list[HintRecord], str], float], Callable[[Path], None] | None]]
"""``learn(concept, train) -> (meaning, score, save)``: ``score(records, split)`` is the learned model's accuracy on
records of ``split`` (``"val"`` or ``"test"``: image input shows each split's own images); ``save(path)``, where
given, keeps the learned model at ``path`` (:func:`concept_checkpoint`)."""
FewShotSplits = Callable[[str, float], dict[str, list[HintRecord]]]
"""``splits(concept, scale) -> {"train", "val", "test"}``."""


def unseen(records: list[HintRecord], train: list[HintRecord]) -> list[HintRecord]:
    """The test ``records`` whose expressions are none of the concept's training sentences ``train`` (HINT's few-shot
    test sets hold every training sentence too, as their ``I`` subset; told apart by expression, not by ``eval``, which a
    release's few-shot records need not carry: read by ``eval``, a list without it counted its training sentences as
    unseen)."""
    trained = {record.expr for record in train}
    return [record for record in records if record.expr not in trained]


NOT_IN_SETUP = frozenset(
    {"out", "progress", "threads", "device", "resume", "time_limit", "fewshot_scales", "fewshot_concepts", "score_test",
     "speed_samples", "checkpoint_every", "eval_every", "num_workers", "eval_batch_size"}
)  # fmt: skip
"""The options that do not change what a few-shot concept learns: the others are saved with the finished concepts, and a
run under other ones does not take them (:class:`~neurosym.training.checkpoint.CheckpointMismatch`)."""


NOT_LEARNED = "not learned"
"""How a concept's ``learned`` entry starts where no meaning explained its examples (it keeps no model)."""


def concept_checkpoint(out: Path, input: str, scale: float | str, concept: str) -> Path:
    """Where a run in ``out`` keeps what it learned of ``concept`` at few-shot ``scale`` on ``input`` (``image``)."""
    return out / f"fewshot_{input}_{scale}_{concept}.pt"


def saved_program(program: Program | None) -> tuple | None:
    """An induced operator's ``program`` as a concept's checkpoint keeps it: its expression, a nested tuple of names
    and integers, which ``torch.load(..., weights_only=True)`` reads (the :class:`Program` object itself it refused)."""
    return None if program is None else program.expr


def program_from_saved(entry: Program | tuple | None) -> Program | None:
    """The program a concept's checkpoint keeps (:func:`saved_program`); files written before that hold the
    :class:`Program` itself."""
    return Program(entry) if isinstance(entry, tuple) else entry


def learn_fewshot(
    args: HintOptions,
    out: Path,
    label: str,
    learn: Learner,
    splits: FewShotSplits,
    run_setup: RunSetup,
    time_limit: float | None = None,
) -> dict[str, Any]:
    """Learn every ``--fewshot-concepts`` concept at every ``--fewshot-scales`` scale; prints the table,
    plots, and keeps finished concepts in ``<out>/fewshot_<input>.json`` so that a resumed run skips them (a run under
    other options, outside :data:`NOT_IN_SETUP` (``--steps`` / ``--learning-rate`` typed at their defaults are no other
    options), or on data rewritten since, as ``run_setup`` stamps it, raises
    :class:`~neurosym.training.checkpoint.CheckpointMismatch`), each learned model (where the learner saves one) first
    in its :func:`concept_checkpoint`. SIGINT, SIGTERM or ``time_limit`` seconds end the stage after the concept under way with
    :class:`TrainingInterrupted` (a signal within a concept's own training, which keeps no checkpoint, ends it there:
    ``out`` holds the run, and that concept alone is learned again). A run that learns no concept (no scale or no
    concept given) reads and writes nothing of the stage and returns ``{}``."""
    scales, concepts = args.fewshot_scales, args.fewshot_concepts
    if not (scales and concepts):  # (a leftover progress file of another setup would refuse a run that learns nothing)
        return {}
    progress_path = out / f"fewshot_{args.input}.json"
    done: dict[str, Any] = load_json(progress_path) if progress_path.is_file() and args.resume else {}
    data = run_setup.of((), {"steps": DEFAULT_STEPS["neurosym"], "learning_rate": PIPELINE_LEARNING_RATE})  # left out: these
    values = {name: value for name, value in options_as_json(args).items() if name not in NOT_IN_SETUP} | dict(data)
    setup = Setup(values, data.defaults)
    check_setup(done.get("setup"), setup, progress_path)  # another seed's or semantics' concepts are not this run's
    done["setup"] = values
    total = len(scales) * len(concepts)
    with StopRequests(time_limit) as stops:
        for number, (scale, concept) in enumerate(itertools.product(scales, concepts), start=1):
            per_concept: dict[str, Any] = done.setdefault(str(scale), {"concepts": {}})["concepts"]
            entry = per_concept.get(concept, {})
            if "val_accuracy" in entry and (entry.get("test_accuracy") is not None or not args.score_test):
                continue  # done (an entry without validation, or without test where test is wanted, is redone)
            split = splits(concept, scale)
            train, validation, test = split["train"], split["val"], split["test"]
            started = time.perf_counter()
            saved = concept_checkpoint(out, args.input, scale, concept)
            saved.unlink(missing_ok=True)  # another setup's, or the same concept's learned without a test score
            try:
                learned, score, save = learn(concept, train)
                val_accuracy = score(validation, "val")
                accuracy, unseen_accuracy = (
                    (score(test, "test"), score(unseen(test, train), "test")) if args.score_test else (None, None)
                )
                if save is not None:
                    save(saved)
            except ConceptNotLearned as error:  # no meaning: no expression using the concept can be evaluated
                learned, val_accuracy = f"{NOT_LEARNED} ({error})", 0.0
                accuracy, unseen_accuracy = (0.0, 0.0) if args.score_test else (None, None)
            except TrainingInterrupted as stop:  # the concept's own training, stopped: it said no checkpoint held anything
                raise TrainingInterrupted(number - 1, total, stop.reason, out, unit="few-shot concept") from None
            per_concept[concept] = {
                "train": len(train),
                "val": len(validation),
                "test": len(test),
                "test_unseen": len(unseen(test, train)),
                "learned": learned,
                "val_accuracy": val_accuracy,
                "test_accuracy": accuracy,
                "unseen_accuracy": unseen_accuracy,
                "seconds": time.perf_counter() - started,
            }
            save_json(done, progress_path)
            tested = "" if accuracy is None else f", test {accuracy:.1%}, unseen {unseen_accuracy:.1%}"
            print(f"  scale {scale}: {concept} learned as {learned} from {len(train)} sentences, validation "
                  f"{val_accuracy:.1%}{tested}")  # fmt: skip
            reason = stops.reason()
            if reason is not None:
                raise TrainingInterrupted(number, total, reason, progress_path, unit="few-shot concept")
    return _report(done, scales, concepts, label, out / f"hint_neurosym_fewshot_{args.input}.png", args.score_test)


def _report(
    done: dict[str, Any], scales: list[float], concepts: list[str], label: str, plot: Path, score_test: bool = True
) -> dict[str, Any]:
    """The few-shot table (validation, and test unless ``score_test`` is off) and plot; the averages per scale."""
    measured: dict[str, Any] = {}
    rows: list[list[Any]] = []
    scores = (("val_accuracy", "validation set"), ("test_accuracy", "whole test set"), ("unseen_accuracy", "unseen expressions"))
    scored = scores if score_test else scores[:1]
    for scale in scales:
        chosen = {c: done[str(scale)]["concepts"][c] for c in concepts}
        averages = {key: float(np.mean([info[key] for info in chosen.values()])) for key, _ in scored}
        measured[str(scale)] = {"concepts": chosen, "avg": averages.get("test_accuracy"), "avg_unseen": averages.get("unseen_accuracy"),
                                "avg_val": averages["val_accuracy"]}  # fmt: skip
        sizes = "/".join(sorted({str(info["train"]) for info in chosen.values()}))
        for key, what in scored:
            rows.append(
                [f"{sizes} training sentences, {what}", *(percent(chosen[c][key]) for c in concepts), percent(averages[key])]
            )
    if not rows:
        return {}
    paper_average = round(float(np.mean([HINT_FEWSHOT[c] for c in concepts])), 1)
    rows.append(["Transformer rel. uni. (paper Table 4, whole test set)", *(HINT_FEWSHOT[c] for c in concepts), paper_average])
    tested = (", on the whole test set (its training sentences included, as in HINT's Table 4) and on the unseen "
              "expressions alone") if score_test else " alone (the test sets not scored)"  # fmt: skip
    print(f"\nFew-shot concepts ({label}), accuracy %: on the validation set (to choose on){tested}")
    print(format_table(["model", *concepts, "avg"], rows))
    plot_fewshot(measured, concepts, HINT_FEWSHOT, plot, split="test" if score_test else "val")
    return measured
