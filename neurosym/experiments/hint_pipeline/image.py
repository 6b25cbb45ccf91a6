"""``neurosym hint --model neurosym --input image``: the perception learned from results alone, optionally adapted to a
new writer from results alone (``--adapt``), the few-shot concepts learned, then (once every stage has trained, so that
a call stopped by the time limit scores nothing) validated and tested per subset, optionally on other images
(``--extra-test-bank``)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import torch

from neurosym.data.hint import EVAL_SUBSETS, HintRecord
from neurosym.data.symbol_images import HINT_SYMBOLS, SymbolBank, merge_banks, with_brackets
from neurosym.experiments import CommandFailed
from neurosym.experiments.hint_options import HintOptions, RunSetup
from neurosym.experiments.hint_pipeline.fewshot import learn_fewshot, saved_program
from neurosym.experiments.hint_sources import HintData, bank_from_option, load_hint_data
from neurosym.experiments.report import format_table, percent, symbol_cell
from neurosym.metrics.published import HINT_NSR_IMAGE_AVERAGE, HINT_SEQ2SEQ, published_data
from neurosym.perception.ensemble import ReaderEnsemble, readers_from_checkpoints
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.adapt import Adaptation, AdaptConfig, adapt_to_writer, check_adaptation_data
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.fewshot import FewShotConfig, learn_concept_from_images
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.trainer import PipelineConfig, evaluate_pipeline, evaluate_pipeline_on_each, train_pipeline
from neurosym.pipelines.windows import WindowSource
from neurosym.plots.hint_pipeline import plot_training
from neurosym.semantics import HINT_SEMANTICS
from neurosym.training import resolve_device
from neurosym.training.checkpoint import RESUME_ADVICE, CheckpointMismatch, save_checkpoint
from neurosym.training.checks import check_batch_fits
from neurosym.training.stopping import minutes_to_seconds, time_left

SUBSETS = (*EVAL_SUBSETS, "avg")
Evaluate = Callable[[Mapping[str, list[HintRecord]], SymbolBank, WindowSource | None], dict[str, dict[str, Any]]]
"""``run_image``'s scorer: ``(records, images, own)``, the scores of each split of ``records`` (``{split: records}``, shown
by ``images`` of the split's pool), ``own`` the windows whose batch-norm statistics read them all (estimated once)."""
READER_BUILT_FROM = ("cnn", "classifier_features", "classifier_width", "stroke_width")
"""The options the reader is built from (:func:`hint_reader`)."""
READER_OPTIONS = (*READER_BUILT_FROM, "abduction_changes")
"""The options the reader is built and trained from beside the data's (a resume under others is refused)."""
DATA_SEED_KEPT_BEFORE = {("setup", "data_seed"): ("config", "seed")}
"""Where a checkpoint that keeps no data seed (``--data-seed`` not given, or a run from before it) keeps it: its seed."""
ADAPT_ANEW = (
    "remove it, and the later stages' checkpoints beside it, to adapt anew, or give the --adapt options it was written with"
)
"""What a refused resume of an ``--adapt`` stage's checkpoint (written under other ``--adapt`` options) may do instead."""
NOT_NO_RESUME = "--no-resume would remove the main run's checkpoint too and train its reader anew"
"""Why a refused ``--adapt`` stage is not started afresh by ``--no-resume`` (the command line's advice for a refused
resume, :func:`neurosym.cli.main`): its checkpoints lie beside the main run's."""
PAPER_TRANSFORMER = HINT_SEQ2SEQ[("image", "transformer_rel_uni")]
"""The best seq2seq model of HINT's Table 2 (image input), the pipeline's anchor."""


def hint_reader(options: Mapping[str, Any]) -> SymbolClassifier:
    """A fresh reader of HINT's symbols built from ``options``: the ``cnn``, ``classifier_features``,
    ``classifier_width`` and ``stroke_width`` of :data:`READER_BUILT_FROM`, as a run's options or checkpoint give them."""
    return SymbolClassifier(list(HINT_SYMBOLS), options["cnn"], options["classifier_features"],
                            width=options["classifier_width"], stroke_width=options["stroke_width"])  # fmt: skip


def _row(name: str, scores: dict[str, float]) -> list:
    return [name, *(percent(scores[s]) for s in SUBSETS), symbol_cell(scores)]


def run_image(args: HintOptions, out: Path, run_setup: RunSetup) -> dict[str, Any]:
    device = resolve_device(args.device)
    torch.manual_seed(args.seed)

    setup = run_setup.of(READER_OPTIONS)
    classifier = _ensemble(args, lambda: hint_reader(setup), run_setup) if args.ensemble else hint_reader(setup)
    data = load_hint_data(args, image_input=True, fewshot=bool(args.fewshot_scales), test_scale=args.test_scale,
                          progress=args.progress)  # fmt: skip
    bank = data.image_bank()
    if args.adapt is not None:  # before training: an adaptation its data cannot feed would fail only after it
        try:
            check_adaptation_data(len(data.splits["train"]), _adapt_config(args))
        except ValueError as error:
            raise CommandFailed(f"--adapt: {error}") from None
    pipeline = HintPipeline(classifier, HINT_SEMANTICS, abduction_changes=args.abduction_changes)
    config = PipelineConfig(
        steps=args.training_steps(),
        batch_size=args.batch_size,
        learning_rate=args.training_learning_rate(),
        schedule=args.lr_schedule,
        augment_shift=args.augment_shift,
        augment_style=args.augment_style,
        curriculum=Curriculum(args.curriculum),
        learning=args.learning_rule,
        pseudo_labels=args.pseudo_labels,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
    )
    if not args.ensemble:  # (batches are drawn with replacement: a larger one only repeats expressions, at any memory)
        check_batch_fits(len(data.splits["train"]), config.batch_size)
    checkpoint = out / "checkpoint.pt"
    if not args.resume and not args.ensemble:
        checkpoint.unlink(missing_ok=True)
    started, time_limit = time.perf_counter(), minutes_to_seconds(args.time_limit)
    history = [] if args.ensemble else train_pipeline(pipeline, WindowSource(data.splits["train"], bank, "train", args.seed), config,
                                                      device, checkpoint, args.progress, time_limit=time_limit,
                                                      setup=setup)  # fmt: skip
    train_seconds = history[-1]["seconds"] if history else 0.0  # over every call of a resumed run, not this call's

    def left() -> float | None:
        """The seconds of ``--time-limit`` left as a stage starts."""
        return time_left(time_limit, time.perf_counter() - started)

    # every stage trains before anything is scored: a call that a stop ends in a later stage scores nothing
    trained = pipeline if args.adapt is None else _copied(pipeline)  # (the adaptation trains pipeline in place)
    adaptation = None if args.adapt is None else _adapt(args, out, pipeline, config, data.splits["train"], bank, device, left())
    fewshot = fewshot_from_images(args, out, pipeline, data, device, left(), run_setup)

    evaluate = _scorer(args, trained, device)
    # validation chooses, test reports
    splits = {"val": "validation", "test": "test"} if args.score_test else {"val": "validation"}
    model = f"ensemble of {len(args.ensemble)} readers" if args.ensemble and len(args.ensemble) > 1 else "neurosym"
    chosen = {split: data.splits[split] for split in splits}
    scored = evaluate(chosen, bank, None)
    results: dict[str, Any] = {"device": str(device), "data": data.label, "train_seconds": train_seconds, "steps": None if args.ensemble else config.steps,
                               "val": scored["val"], "test": scored.get("test"), "history": history, "ensemble": args.ensemble and [str(run.resolve()) for run in args.ensemble]}  # fmt: skip
    rows = [_row(f"{model}, {name}: {data.label}", scored[split]) for split, name in splits.items()]
    if args.extra_test_bank is not None:  # tested as trained, then with the batch-norm statistics of its unlabelled images
        extra, images = bank_from_option(args.extra_test_bank, args.data_seed_or_seed())
        extra = with_brackets(extra, bank)
        unlabelled = WindowSource(data.splits["train"][: args.adapt_examples], extra, "train", args.data_seed_or_seed() + 1)
        results["extra_test_bank"] = {"images": images}
        plain, restats = evaluate(chosen, extra, None), evaluate(chosen, extra, unlabelled)
        for split, name in splits.items():
            results["extra_test_bank"] |= {split: plain[split], f"{split}_their_batch_statistics": restats[split]}
            rows += [_row(f"same model, {name} images: {images}", plain[split]),
                     _row(f"same weights, {name}, batch-norm statistics of {len(unlabelled)} unlabelled expressions", restats[split])]  # fmt: skip
    if adaptation is not None:
        results["adapt"], adapted_rows = _adapted_scores(args, adaptation, chosen, bank, _scorer(args, pipeline, device))
        rows += adapted_rows
    rows.append([f"Transformer rel. uni. ({published_data('image')})", *(PAPER_TRANSFORMER[s] for s in SUBSETS), None])
    rows.append([f"NSR ({published_data('image')}; average only)", *(None for _ in EVAL_SUBSETS), HINT_NSR_IMAGE_AVERAGE, None])
    trained_as = f"readers of {' '.join(map(str, args.ensemble))}" if args.ensemble else f"{config.steps} steps ({train_seconds:.0f} s on {device})"  # fmt: skip
    shown = list(splits)[-1]  # test, or validation when test is not scored
    print(f"\nHINT image input, {trained_as}; {len(data.splits[shown])} {splits[shown]} "
          "expressions; accuracy % (the grammar, the precedence and HINT's operator table are given; the perception is "
          "learned from results alone)")  # fmt: skip
    print(format_table(["model", *SUBSETS, "symbols % (weakest)"], rows))
    series = {
        f"neurosym (this run, {splits[shown]})": [100 * scored[shown][s] for s in SUBSETS],
        "Transformer rel. uni. (paper)": [PAPER_TRANSFORMER[s] for s in SUBSETS],
    }
    plot_training(history, SUBSETS, series, out / "hint_neurosym.png")
    results["fewshot"] = fewshot
    return results


def _scorer(args: HintOptions, scored: HintPipeline, device: torch.device) -> Evaluate:
    """The :data:`Evaluate` of ``scored`` on ``device``: the records' windows as ``args``' data seed draws them (each run's
    alike), ``--eval-batch-size`` at a time."""

    def evaluate(
        records: Mapping[str, list[HintRecord]], images: SymbolBank, own: WindowSource | None
    ) -> dict[str, dict[str, Any]]:
        sources = {split: WindowSource(chosen, images, split, args.data_seed_or_seed()) for split, chosen in records.items()}
        statistics = None if own is None else own.window_batches()
        return evaluate_pipeline_on_each(scored, sources, device, args.eval_batch_size, statistics, args.progress)

    return evaluate


def _copied(pipeline: HintPipeline) -> HintPipeline:
    """``pipeline`` with a copy of its reader (the same table, brackets and abduction), kept as it is now."""
    return HintPipeline(copy.deepcopy(pipeline.classifier), pipeline.table, pipeline.minimal_brackets, pipeline.abduction_changes)


def _ensemble(args: HintOptions, reader: Callable[[], SymbolClassifier], run_setup: RunSetup) -> ReaderEnsemble:
    """``--ensemble``: the readers its runs trained, loaded (and checked: :func:`_member_record`) before any other work."""
    assert args.ensemble is not None  # run_image calls it only with --ensemble
    try:
        paths = [run / "checkpoint.pt" for run in args.ensemble]
        return readers_from_checkpoints(paths, reader, _member_record(args, run_setup), DATA_SEED_KEPT_BEFORE)
    except ValueError as error:
        raise CommandFailed(f"--ensemble: {error}") from None


def _member_record(args: HintOptions, run_setup: RunSetup) -> dict[str, dict[str, Any]]:
    """What the checkpoint of an ``--ensemble`` member must record to be read under ``args``
    (:func:`~neurosym.perception.saved_reader.load_reader`): the data's options and :data:`READER_BUILT_FROM` as
    ``run_setup`` gives them, and, on generated data (no ``--data``), ``args``' data seed
    (:meth:`~HintOptions.data_seed_or_seed`), which draws the splits and the bank's train/validation/test image pools:
    a member of another data seed trained on images this command scores on. Members may differ in ``--seed``; one that
    kept no data seed (no ``--data-seed``, or trained before it existed) drew its data with its ``--seed``
    (:data:`DATA_SEED_KEPT_BEFORE`)."""
    setup = {name: value for name, value in run_setup.of(READER_BUILT_FROM).items() if name != "data_seed"}
    return {"setup": setup if args.data is not None else setup | {"data_seed": args.data_seed_or_seed()}}


@dataclass(frozen=True)
class NewWriter:
    """What ``--adapt`` trained on: the :class:`~neurosym.pipelines.adapt.Adaptation`, the new writer's ``bank`` (with
    the first bank's brackets) and what its ``images`` are."""

    adaptation: Adaptation
    bank: SymbolBank
    images: str


def _adapt(
    args: HintOptions,
    out: Path,
    pipeline: HintPipeline,
    config: PipelineConfig,
    train: list[HintRecord],
    bank: SymbolBank,
    device: torch.device,
    time_limit: float | None,
) -> NewWriter:
    """``--adapt``: :func:`~neurosym.pipelines.adapt.adapt_to_writer` of ``pipeline`` (in place) with the ``--adapt-*``
    options, on ``train``'s expressions; its stages stop after ``time_limit`` seconds, what is left of ``--time-limit``."""
    assert args.adapt is not None  # run_image calls it only with --adapt
    new, images = bank_from_option(args.adapt, args.data_seed_or_seed())
    new = with_brackets(new, bank)
    try:
        done = adapt_to_writer(pipeline, train, new, bank, config, _adapt_config(args), device, out,
                               args.resume, args.progress, {"new_bank": args.adapt}, time_limit)  # fmt: skip
    except CheckpointMismatch as error:  # (a usage error: another run's adaptation)
        text = str(error).removesuffix(RESUME_ADVICE)  # (no other path can be chosen for it)
        advice = ADAPT_ANEW if text != str(error) else ""
        raise CheckpointMismatch(f"{text}{advice} ({NOT_NO_RESUME})") from None
    except ValueError as error:  # a resumed stage that fitted other data
        raise CommandFailed(f"--adapt: {error}") from None
    return NewWriter(done, new, images)


def _adapted_scores(
    args: HintOptions,
    writer: NewWriter,
    splits: dict[str, list[HintRecord]],
    bank: SymbolBank,
    evaluate: Evaluate,
) -> tuple[dict[str, Any], list[list]]:
    """Both writers' ``splits`` (validation, and test unless ``--no-score-test``) scored by the adapted pipeline's
    ``evaluate``, as adapted and with the batch-norm statistics of their own adaptation images: the results and rows."""
    done = writer.adaptation
    adapted = {"images": writer.images, "examples": done.examples, "replayed": done.replayed, "steps": args.adapt_steps,
               "learning_rate": done.learning_rate, "distill": args.adapt_distill,
               "refit_steps": args.adapt_refit, "routing_steps": args.adapt_route}  # fmt: skip
    rows = []  # each writer's splits as adapted, then with the batch-norm statistics of their own adaptation images (no labels)
    adapted_from = (
        f"adapted from {done.examples} results{', refit' * bool(args.adapt_refit)}{', routed' * bool(args.adapt_route)}"
    )
    for writers, shown, name in (("new_writer", writer.bank, f"{adapted_from}, {writer.images}"),
                                 ("first_bank", bank, "adapted, first bank")):  # fmt: skip
        for suffix, statistics in (("", None), ("_own_statistics", done.sources[writers])):
            for split, scores in evaluate(splits, shown, statistics).items():
                adapted[f"{split}_{writers}{suffix}"] = scores
                rows.append(_row(f"{name}, {split}{' (own batch-norm statistics)' if suffix else ''}", scores))
    return adapted, rows


def _adapt_config(args: HintOptions) -> AdaptConfig:
    """The ``--adapt-*`` options as an :class:`~neurosym.pipelines.adapt.AdaptConfig` (the router: a ``--cnn`` reader)."""
    return AdaptConfig(args.adapt_examples, args.adapt_replay, args.adapt_steps, args.adapt_lr, args.adapt_distill,
                       args.adapt_refit, args.adapt_route, args.cnn, args.augment_shift, args.seed)  # fmt: skip


def fewshot_from_images(
    args: HintOptions,
    out: Path,
    pipeline: HintPipeline,
    data: HintData,
    device: torch.device,
    time_limit: float | None,
    run_setup: RunSetup,
) -> dict[str, Any]:
    """The few-shot stage on image input: each concept's glyph, role and meaning learned by a copy of ``pipeline``,
    each kept with ``run_setup``'s setup."""
    replay = data.splits["train"][: args.fewshot_replay]
    fewshot_bank, label = data.image_bank(), "image input, glyphs learned from the few shots"
    if args.fewshot_bank is not None:
        own, images = bank_from_option(args.fewshot_bank, args.data_seed_or_seed())
        concepts = [s for s in own.symbols if s in args.fewshot_concepts]
        if not concepts:
            raise CommandFailed(f"--fewshot-bank {images} has images of none of the concepts {args.fewshot_concepts}")
        fewshot_bank = merge_banks(
            fewshot_bank.subset([s for s in fewshot_bank.symbols if s not in concepts]), own.subset(concepts)
        )
        label += f"; {', '.join(concepts)} from {images}"
    glyph_steps, abduction_steps = args.fewshot_steps
    config = FewShotConfig(glyph_steps=glyph_steps, abduction_steps=abduction_steps, seed=args.seed, augment_shift=args.augment_shift,
                           augment_style=args.augment_style, only_new_class=args.fewshot_only_new_class)  # fmt: skip

    def learn(
        concept: str, train: list[HintRecord]
    ) -> tuple[str, Callable[[list[HintRecord], str], float], Callable[[Path], None]]:
        learned = learn_concept_from_images(pipeline, concept, train, replay, fewshot_bank, device, config)

        def score(records: list[HintRecord], split: str) -> float:
            source = WindowSource(records, fewshot_bank, split, args.data_seed_or_seed())
            return evaluate_pipeline(learned.pipeline, source, device, args.eval_batch_size)["avg"] if records else 0.0

        def save(path: Path) -> None:  # what trained_hint_pipeline(out, concept) reads back
            reader, meaning = cast(SymbolClassifier, learned.pipeline.classifier), learned.learned  # (a grown copy of it)
            save_checkpoint({"setup": dict(run_setup.of(READER_OPTIONS)), "vocabulary": list(reader.vocabulary),
                             "model": reader.state_dict(), "role": learned.role, "value": meaning.value,
                             "level": meaning.level, "program": saved_program(meaning.program)}, path)  # fmt: skip

        return f"{learned.role}, {learned.learned.meaning}", score, save

    return learn_fewshot(args, out, label, learn, data.fewshot, run_setup, time_limit)
