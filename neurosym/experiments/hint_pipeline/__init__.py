"""The neuro-symbolic HINT pipeline (``neurosym hint --model neurosym``), learned from results alone.

* ``--input image``: a symbol classifier trained from scratch on the embedded default images with no
  symbol labels: each batch is read with grammar-constrained decoding and corrected by abduction
  (top-down back-search) towards the known results, on a curriculum from short to long expressions.
  Reports accuracy per test subset (I, SS, LS, SL, LL), the perception's symbol accuracy (diagnosis),
  optionally accuracy with another symbol bank as test images (``--extra-test-bank``).
* ``--input symbol``: the digits are known, the meanings of ``+ - * /`` are induced from results by
  program search, then the few-shot concepts x, y (numbers), a, b, c, d (operators) are learned from
  their few-shot training sets of several sizes (value, precedence and meaning).

Both modes also time abduction on corrupted 7-symbol expressions. Generic options (``--scale``,
``--seed``, ``--steps``, ``--batch-size``, ``--lr``, ``--cnn``, ``--device``, ``--out``, ``--resume``,
``--progress``, ``--threads``, ``--eval-batch-size``) come from :mod:`neurosym.experiments.hint`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurosym.data.hint import (
    EVAL_SUBSETS,
    FEWSHOT_CONCEPTS,
    HintRecord,
    fewshot_split,
    main_split,
)
from neurosym.experiments.options import (
    comma_list,
    existing_file,
    fraction_up_to_one,
    non_negative_int,
    positive_float,
    positive_int,
)
from neurosym.experiments.published import HINT_FEWSHOT, HINT_NSR_IMAGE_AVERAGE, HINT_SEQ2SEQ, PUBLISHED_DATA
from neurosym.experiments.report import bar_vs_published, format_table, pyplot, save_figure, save_json
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.abduction_speed import abduction_speed
from neurosym.pipelines.concepts import (
    ConceptNotLearned,
    LearnedConcept,
    explained_fraction,
    induced_table,
    learn_concept,
)
from neurosym.pipelines.curriculum import Curriculum, parse_stages
from neurosym.pipelines.fewshot import FewShotConfig, learn_concept_from_images
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.trainer import (
    LEARNING_RULES,
    PSEUDO_LABELS,
    PipelineConfig,
    evaluate_pipeline,
    train_pipeline,
)
from neurosym.pipelines.windows import WindowSource
from neurosym.semantics import FEWSHOT_NUMBERS, HINT_SEMANTICS, BatchSolver
from neurosym.training import resolve_device
from neurosym.training.loop import SCHEDULES
from neurosym.training.stopping import StopRequests, TrainingInterrupted, minutes_to_seconds

SUBSETS = (*EVAL_SUBSETS, "avg")
PAPER_TRANSFORMER = HINT_SEQ2SEQ[("image", "transformer_rel_uni")]
"""The best seq2seq model of HINT's Table 2 (image input), the pipeline's anchor."""
DEFAULT_CURRICULUM = "1:150,3:350,7:500,15:1000,all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the neuro-symbolic pipeline (the generic ones are added by the ``hint`` runner)."""
    parser.add_argument(
        "--curriculum",
        type=_curriculum,
        default=DEFAULT_CURRICULUM,
        help="neurosym: stages 'max_length:steps,...,all' from short to long expressions",
    )
    parser.add_argument(
        "--lr-schedule",
        choices=SCHEDULES,
        default="constant",
        help="neurosym: learning-rate schedule over --steps (cosine decays to zero at the last step)",
    )
    parser.add_argument(
        "--augment-shift",
        type=non_negative_int,
        default=0,
        help="neurosym: shift each training window by up to this many pixels (0: no augmentation)",
    )
    parser.add_argument(
        "--learning-rule",
        choices=LEARNING_RULES,
        default="abduction",
        help="neurosym: abduction or the REINFORCE baseline",
    )
    parser.add_argument(
        "--pseudo-labels",
        choices=PSEUDO_LABELS,
        default="all",
        help="neurosym: train on the symbols of a pseudo-label that the result pins down, or on all of them",
    )
    parser.add_argument(
        "--abduction-changes", type=positive_int, default=2, help="neurosym: most symbols one abduced correction may change"
    )
    parser.add_argument(
        "--classifier-features", type=positive_int, default=64, help="neurosym: width of the classifier's encoder output"
    )
    parser.add_argument("--classifier-width", type=positive_int, default=16, help="neurosym: channels of the CNN's first stage")
    parser.add_argument("--checkpoint-every", type=positive_int, default=100, help="neurosym: steps between checkpoints")
    parser.add_argument(
        "--test-scale",
        type=fraction_up_to_one,
        default=None,
        help="neurosym: test on the test split generated at this scale (default: --scale); a larger test set "
        "narrows the interval of the accuracies",
    )
    parser.add_argument(
        "--extra-test-bank",
        type=existing_file,
        default=None,
        help="neurosym: .npz symbol bank whose test pool also serves as test images",
    )
    parser.add_argument(
        "--fewshot-scales",
        type=_fewshot_scales,
        default="0.01,0.1,1",
        help="neurosym: few-shot split scales (1 = 1,000 training sentences per operator) to learn the "
        "concepts x y a b c d from after the main task, comma-separated, or 'none'",
    )
    parser.add_argument(
        "--fewshot-bank",
        type=existing_file,
        default=None,
        help="neurosym (image input): .npz symbol bank whose new-concept glyphs (e.g. real handwritten x, y) "
        "replace the default bank's drawn ones in few-shot learning and testing",
    )
    parser.add_argument(
        "--fewshot-concepts",
        type=_fewshot_concepts,
        default=",".join(FEWSHOT_CONCEPTS),
        help="neurosym: which few-shot concepts to learn, comma-separated",
    )
    parser.add_argument(
        "--fewshot-steps",
        type=_fewshot_steps,
        default="150,100",
        help="neurosym (image input): steps spent on a new glyph's perception, then on abduction with its "
        "learned meaning, 'GLYPH,ABDUCTION'",
    )
    parser.add_argument(
        "--fewshot-replay",
        type=non_negative_int,
        default=200,
        help="neurosym (image input): main-task expressions replayed while a new glyph is learned",
    )
    parser.add_argument(
        "--speed-samples", type=positive_int, default=300, help="neurosym: corrupted expressions timed for abduction"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    test_scale = args.scale if args.test_scale is None else args.test_scale
    results: dict[str, Any] = {"input": args.input, "scale": args.scale, "test_scale": test_scale, "seed": args.seed}
    if args.input == "image":
        results.update(_run_image(args, out))
    else:
        results.update(_run_symbol(args, out))
    results["abduction_speed"] = abduction_speed(args.speed_samples, args.seed)
    speed = results["abduction_speed"]
    print(
        f"\nabduction on wrong 7-symbol expressions: median {speed['median_ms']:.2f} ms, "
        f"90th percentile {speed['p90_ms']:.2f} ms, corrected {speed['corrected']:.1%} of {speed['samples']}"
    )
    save_json(results, out / "results.json")
    return results


def _test_records(args: argparse.Namespace, splits: dict[str, list[HintRecord]]) -> list[HintRecord]:
    """The main split's test records, or those of the split generated at ``--test-scale``."""
    if args.test_scale is None or args.test_scale == args.scale:
        return splits["test"]
    return main_split(scale=args.test_scale, seed=args.seed, progress=args.progress)["test"]


# -- image input ------------------------------------------------------------------------------------


def _run_image(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    from neurosym.data.symbol_images import (
        HINT_SYMBOLS,
        default_bank,
        load_npz_bank,
        merge_banks,
    )

    device = resolve_device(args.device)
    torch.manual_seed(args.seed)
    splits = main_split(scale=args.scale, seed=args.seed, progress=args.progress)
    bank = default_bank(seed=args.seed)
    backbone = "resnet18" if args.cnn == "resnet18" else "small"
    classifier = SymbolClassifier(
        list(HINT_SYMBOLS), backbone=backbone, features=args.classifier_features, width=args.classifier_width
    )
    pipeline = HintPipeline(classifier, HINT_SEMANTICS, abduction_changes=args.abduction_changes)
    config = PipelineConfig(
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.lr or 1e-3,
        schedule=args.lr_schedule,
        augment_shift=args.augment_shift,
        curriculum=Curriculum(args.curriculum),
        learning=args.learning_rule,
        pseudo_labels=args.pseudo_labels,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
    )
    checkpoint = out / "checkpoint.pt"
    if not args.resume:
        checkpoint.unlink(missing_ok=True)
    started = time.perf_counter()
    history = train_pipeline(
        pipeline,
        WindowSource(splits["train"], bank, "train", args.seed),
        config,
        device,
        checkpoint,
        args.progress,
        time_limit=minutes_to_seconds(args.time_limit),
    )
    train_seconds = time.perf_counter() - started
    test = _test_records(args, splits)
    scores = evaluate_pipeline(pipeline, WindowSource(test, bank, "test", args.seed), device, args.eval_batch_size)
    results: dict[str, Any] = {
        "device": str(device),
        "train_seconds": train_seconds,
        "steps": args.steps,
        "test": scores,
    }
    rows = [["neurosym pipeline (this run)", *(100 * scores[s] for s in SUBSETS), 100 * scores["symbol"]]]
    if args.extra_test_bank is not None:
        extra = load_npz_bank(args.extra_test_bank, seed=args.seed, symbols=[s for s in HINT_SYMBOLS if s not in "()"])
        # Banks without brackets borrow them from the default bank's test pool.
        merged = merge_banks(extra, bank.subset(["(", ")"]))
        extra_scores = evaluate_pipeline(
            pipeline, WindowSource(test, merged, "test", args.seed), device, args.eval_batch_size
        )
        results["extra_test_bank"] = {"path": str(args.extra_test_bank), "test": extra_scores}
        rows.append(
            [
                f"same model, test images from {args.extra_test_bank.name}",
                *(100 * extra_scores[s] for s in SUBSETS),
                100 * extra_scores["symbol"],
            ]
        )
    rows.append([f"Transformer rel. uni. ({PUBLISHED_DATA})", *(PAPER_TRANSFORMER[s] for s in SUBSETS), "-"])
    rows.append([f"NSR ({PUBLISHED_DATA}; average only)", "-", "-", "-", "-", "-", HINT_NSR_IMAGE_AVERAGE, "-"])
    print(
        f"\nHINT image input, scale {args.scale}, {args.steps} steps ({train_seconds:.0f} s on {device}); "
        f"{len(test)} test expressions; accuracy %"
    )
    print(format_table(["model", *SUBSETS, "symbol acc."], rows))
    results["history"] = history
    _plot_image(history, scores, out / "hint_neurosym.png")
    replay = list(splits["train"])[: args.fewshot_replay]
    fewshot_bank, label = bank, "image input, glyphs learned from the few shots"
    if args.fewshot_bank is not None:
        own = load_npz_bank(args.fewshot_bank, seed=args.seed, symbols=list(FEWSHOT_CONCEPTS))
        if not own.symbols:
            raise ValueError(f"{args.fewshot_bank} has images of none of the few-shot concepts {FEWSHOT_CONCEPTS}")
        fewshot_bank = merge_banks(bank.subset([s for s in bank.symbols if s not in own.symbols]), own)
        label += f"; {', '.join(own.symbols)} from {args.fewshot_bank.name}"

    glyph_steps, abduction_steps = args.fewshot_steps
    config = FewShotConfig(glyph_steps=glyph_steps, abduction_steps=abduction_steps, seed=args.seed)

    def learn(concept: str, train: list[HintRecord], test: list[HintRecord]) -> tuple[str, float]:
        learned = learn_concept_from_images(pipeline, concept, train, replay, fewshot_bank, device, config)
        source = WindowSource(test, fewshot_bank, "test", args.seed)
        scores = evaluate_pipeline(learned.pipeline, source, device, args.eval_batch_size)
        return f"{learned.role}, {_meaning(learned.learned)}", scores["overall"]

    time_left = None if args.time_limit is None else max(0.0, minutes_to_seconds(args.time_limit) - train_seconds)
    results["fewshot"] = _learn_fewshot(args, out, label, learn, time_left)
    return results


def _plot_image(history: list[dict], scores: dict[str, float], path: Path) -> None:
    plt = pyplot()
    figure, (curve, bars) = plt.subplots(1, 2, figsize=(11, 4))
    steps = [h["step"] for h in history]
    curve.plot(
        steps, [h["loss"] if h["loss"] is not None else np.nan for h in history], label="pseudo-label loss", lw=0.8
    )
    curve.set_yscale("log")
    curve.set_xlabel("step")
    curve.set_title("training from results only")
    twin = curve.twinx()
    twin.plot(
        steps,
        [h["max_length"] if h["max_length"] < 10**6 else 41 for h in history],
        color="gray",
        ls="--",
        label="max length",
    )
    twin.set_ylabel("curriculum: max symbols")
    series = {"neurosym (this run)": [100 * scores[s] for s in SUBSETS], "Transformer rel. uni. (paper)": [PAPER_TRANSFORMER[s] for s in SUBSETS]}
    bar_vs_published(bars, SUBSETS, series, "accuracy %")
    save_figure(figure, path)


# -- symbol input: induced semantics and few-shot concepts -----------------------------------------------


def _subset_accuracy(table, records) -> dict[str, float]:
    values = BatchSolver(table).solve([r.expr for r in records])
    scores = {s: float(np.mean([v == r.res for v, r in zip(values, records) if r.eval == s])) for s in EVAL_SUBSETS}
    scores["avg"] = float(np.mean(list(scores.values())))
    return scores


def _run_symbol(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    splits = main_split(scale=args.scale, seed=args.seed, progress=args.progress)
    examples = [(r.expr, r.res) for r in splits["train"]]
    table, programs = induced_table(examples, HINT_SEMANTICS)
    scores = _subset_accuracy(table, _test_records(args, splits))
    print(f"\nHINT symbol input, operator meanings induced from results (scale {args.scale}):")
    print(format_table(["operator", "induced program"], [[s, str(p)] for s, p in programs.items()]))
    print(format_table(["model", *SUBSETS], [["induced semantics", *(100 * scores[s] for s in SUBSETS)]]))
    results: dict[str, Any] = {"programs": {s: str(p) for s, p in programs.items()}, "test": scores}

    def learn(concept: str, train: list[HintRecord], test: list[HintRecord]) -> tuple[str, float]:
        role = "number" if concept in FEWSHOT_NUMBERS else "operator"
        learned = learn_concept(concept, role, [(r.expr, r.res) for r in train], table)
        return _meaning(learned), explained_fraction(learned.table, [(r.expr, r.res) for r in test])

    results["fewshot"] = _learn_fewshot(args, out, "symbol input", learn, minutes_to_seconds(args.time_limit))
    return results


def _meaning(learned: LearnedConcept) -> str:
    return f"= {learned.value}" if learned.value is not None else f"level {learned.level}: {learned.program}"


def _learn_fewshot(
    args: argparse.Namespace,
    out: Path,
    label: str,
    learn: Callable[[str, list[HintRecord], list[HintRecord]], tuple[str, float]],
    time_limit: float | None = None,
) -> dict[str, Any]:
    """Learn every few-shot concept at every ``--fewshot-scales`` scale with ``learn(concept, train,
    test) -> (meaning, test accuracy)``; prints the table, plots, and keeps finished concepts in
    ``<out>/fewshot_<input>.json`` so that a resumed run skips them. SIGINT, SIGTERM or ``time_limit``
    seconds end the stage after the concept under way with :class:`TrainingInterrupted`."""
    progress_path = out / f"fewshot_{args.input}.json"
    done: dict[str, Any] = {}
    if progress_path.is_file() and args.resume:
        done = json.loads(progress_path.read_text())
    rows, scales, concepts = [], args.fewshot_scales, args.fewshot_concepts
    with StopRequests(time_limit) as stops:
        for number, (scale, concept) in enumerate(itertools.product(scales, concepts), start=1):
            per_concept: dict[str, Any] = done.setdefault(str(scale), {"concepts": {}})["concepts"]
            if concept in per_concept:
                continue
            split = fewshot_split(concept, scale=scale, seed=args.seed, progress=False)
            train, test = list(split["train"]), list(split["test"])
            started = time.perf_counter()
            try:
                meaning, accuracy = learn(concept, train, test)
            except ConceptNotLearned as error:  # no meaning: no expression using the concept can be evaluated
                meaning, accuracy = f"not learned ({error})", 0.0
            per_concept[concept] = {
                "train": len(train),
                "test": len(test),
                "learned": meaning,
                "test_accuracy": accuracy,
                "seconds": time.perf_counter() - started,
            }
            save_json(done, progress_path)
            print(f"  scale {scale}: {concept} learned as {meaning} from {len(train)} sentences, test {accuracy:.1%}")
            reason = stops.reason()
            if reason is not None:
                total = len(scales) * len(concepts)
                raise TrainingInterrupted(number, total, reason, progress_path, unit="few-shot concept")
    measured = {}
    for scale in scales:
        chosen = {c: done[str(scale)]["concepts"][c] for c in concepts}
        average = float(np.mean([info["test_accuracy"] for info in chosen.values()]))
        measured[str(scale)] = {"concepts": chosen, "avg": average}
        sizes = "/".join(sorted({str(info["train"]) for info in chosen.values()}))
        rows.append(
            [f"{sizes} training sentences", *(100 * chosen[c]["test_accuracy"] for c in concepts), 100 * average]
        )
    if not rows:
        return {}
    paper_average = np.mean([HINT_FEWSHOT[c] for c in concepts])
    rows.append(["Transformer rel. uni. (paper Table 4)", *(HINT_FEWSHOT[c] for c in concepts), paper_average])
    print(f"\nFew-shot concepts ({label}), test accuracy %:")
    print(format_table(["model", *concepts, "avg"], rows))
    _plot_fewshot(measured, concepts, out / f"hint_neurosym_fewshot_{args.input}.png")
    return measured


def _curriculum(text: str) -> tuple[tuple[int, int], ...]:
    """``--curriculum``: the stages of :func:`parse_stages`."""
    try:
        return parse_stages(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _fewshot_scales(text: str) -> list[float]:
    """``--fewshot-scales``: comma-separated positive scales, or ``none``."""
    return [] if text.strip().lower() == "none" else comma_list(positive_float, what="scale")(text)


_fewshot_concepts = comma_list(str, what="concept", choices=FEWSHOT_CONCEPTS)
"""``--fewshot-concepts``: comma-separated concepts among :data:`FEWSHOT_CONCEPTS`."""


def _fewshot_steps(text: str) -> tuple[int, int]:
    """``--fewshot-steps``: ``GLYPH,ABDUCTION`` positive step counts."""
    steps = comma_list(positive_int, what="step count")(text)
    if len(steps) != 2:
        raise argparse.ArgumentTypeError(f"expected two positive step counts 'GLYPH,ABDUCTION', got {text!r}")
    return steps[0], steps[1]


def _plot_fewshot(fewshot: dict[str, Any], concepts: list[str], path: Path) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 4))
    series = {
        f"scale {scale} (up to {max(entry['train'] for entry in info['concepts'].values())} sentences)":
            [100 * info["concepts"][c]["test_accuracy"] for c in concepts] + [100 * info["avg"]]
        for scale, info in fewshot.items()
    }  # fmt: skip
    paper = [HINT_FEWSHOT[c] for c in concepts]
    series["paper, Transformer"] = [*paper, float(np.mean(paper))]
    bar_vs_published(axis, [*concepts, "avg"], series, "test accuracy %")
    save_figure(figure, path)
