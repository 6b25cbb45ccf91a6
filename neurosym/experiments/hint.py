"""HINT seq2seq baselines (Li et al., Tables 2–3): RNNs and Transformers trained end to end.

Every model reads the expression (symbol ids, or one 32×32 image window per symbol) and emits the
result's digits, least significant first, then an end token; accuracy is exact match of the whole
result on each test subset (I, SS, LS, SL, LL) and over the whole test set (HINT's Avg.). Training uses the shared loop
of :mod:`neurosym.training.loop` (DDP under ``torchrun``, AMP on CUDA, early stopping on validation
exact match, resumable checkpoint). ``--model neurosym`` hands the whole run to
:mod:`neurosym.experiments.hint_pipeline`. The options: :mod:`neurosym.experiments.hint_options`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import torch

from neurosym.data.hint import EVAL_SUBSETS, HintSymbolDataset, split_datasets
from neurosym.data.hint.torch_data import DEFAULT_SYMBOLS
from neurosym.experiments import hint_pipeline
from neurosym.experiments.hint_options import HintOptions, RunSetup
from neurosym.experiments.hint_sources import HintData, load_hint_data
from neurosym.experiments.options import apply_threads, options_as_json
from neurosym.experiments.report import format_table, report_results
from neurosym.metrics.published import HINT_SEQ2SEQ, published_data
from neurosym.models.seq2seq import Seq2Seq
from neurosym.models.seq2seq.hint_baseline import (
    BASELINE_OPTIONS,
    build_baseline,
    release_defaults,
    train_baseline,
)
from neurosym.paths import user_path
from neurosym.plots.figure import plot_vs_published
from neurosym.training import TrainConfig, distributed_process
from neurosym.training.checkpoint import (
    MAPPING,
    NUMBER,
    load_checkpoint,
    load_model_state,
    require_entries,
    require_kinds,
    save_json,
)
from neurosym.training.compile import compile_for_training
from neurosym.training.distributed import DistributedContext, main_process_first
from neurosym.training.loop import patience_ran_out
from neurosym.training.stopping import minutes_to_seconds

SUBSETS_AND_AVERAGE = (*EVAL_SUBSETS, "avg")


OPTIONS = HintOptions


def _datasets(args: HintOptions, context: DistributedContext) -> tuple[dict[str, HintSymbolDataset], HintData]:
    with main_process_first(context):
        data = load_hint_data(args, args.input == "image", progress=context.is_main and args.progress)
    # the data seed: the baseline learns from a fixed dataset (each record's images drawn once, shown every epoch), so
    # runs of one --data-seed see the same images and differ in --seed's initial weights and batch order alone
    return split_datasets(data.splits, data.bank, seed=args.data_seed_or_seed()), data


def run(args: HintOptions) -> dict[str, Any]:
    apply_threads(args.threads)
    if args.model == "neurosym":  # (its stages take their budgets from training_steps())
        return hint_pipeline.run(args)
    args = replace(args, steps=args.training_steps())
    with distributed_process(args.device) as context:
        return _run_baseline(args, context)


def build_model(args: HintOptions, source_vocab: int) -> Seq2Seq:
    """The baseline ``args.model`` as the command line configures it (:func:`build_baseline`)."""
    return build_baseline(args.model, args.input, source_vocab, **{name: getattr(args, name) for name in BASELINE_OPTIONS})


def trained_baseline(run: str | os.PathLike, model: str, input: Literal["symbol", "image"] = "symbol") -> Seq2Seq:
    """The seq2seq baseline that a finished ``neurosym hint --model MODEL --input INPUT`` run trained (``run``: its
    ``--out`` folder): rebuilt from the options its checkpoint keeps, with the weights that scored best on validation
    (those its table reports), in evaluation mode; :func:`~neurosym.models.seq2seq.hint_task.answer_expressions`
    answers expressions with a symbol-input one. ``ValueError`` names what is missing or does not fit, and refuses a
    run that has not finished (stopped before its last step by a time limit or a signal: the same command continues
    it)."""
    checkpoint = user_path(run) / f"{model}_{input}.pt"
    saved = load_checkpoint(checkpoint)
    if saved is None:
        raise ValueError(f"{run} holds no {checkpoint.name}: give the --out folder of a neurosym hint --model {model} run")
    setup = saved.get("setup") or {}
    if (setup.get("model"), setup.get("input")) != (model, input) or not set(BASELINE_OPTIONS) <= set(setup):
        raise ValueError(f"{checkpoint} is not the checkpoint of a neurosym hint --model {model} --input {input} run")
    built = build_baseline(model, input, len(DEFAULT_SYMBOLS) + 1, **{name: setup[name] for name in BASELINE_OPTIONS})
    load_model_state(built, _best_weights(saved, checkpoint), str(checkpoint))
    return built.eval()


def _best_weights(saved: dict[str, Any], checkpoint: Path) -> dict[str, torch.Tensor]:
    """The weights that scored best on validation in the checkpoint ``saved`` of a finished run: one at its last step,
    or one whose patience ran out (as many evaluations without improvement as its ``--patience``); ``ValueError``
    for any other (its best weights so far are not those the finished run reports), and naming the entries of
    :data:`RUN_ENTRIES` it lacks."""
    _check_run_entries(saved, checkpoint)
    loop, step, config = saved["loop"], saved["step"], saved["config"]
    if loop["best_model"] is None or not (step >= config["max_steps"] or patience_ran_out(loop, config["patience"])):
        raise ValueError(
            f"{checkpoint} is of an unfinished run, stopped after step {step} of {config['max_steps']}: rerun the command that "
            "trained it to continue it"
        )
    return loop["best_model"]


RUN_ENTRIES = {"loop": ("best_model", "bad_evaluations"), "config": ("max_steps", "patience"), "step": ()}
"""The entries of a run's checkpoint that :func:`trained_baseline` reads, with those it reads inside each."""
RUN_KINDS = {"loop": MAPPING, "config": MAPPING, "step": NUMBER}
"""What each entry of :data:`RUN_ENTRIES` holds."""


def _check_run_entries(saved: Mapping[str, Any], checkpoint: Path) -> None:
    """Refuse (``ValueError`` naming ``checkpoint`` and what it lacks) the checkpoint ``saved`` without an entry of
    :data:`RUN_ENTRIES`, with one of another kind than :data:`RUN_KINDS` says (a loop that was no mapping was said to
    lack every entry inside it), or without one inside it."""
    what = "a neurosym hint run"
    require_entries(saved, RUN_ENTRIES, checkpoint, what)
    require_kinds(saved, RUN_KINDS, checkpoint, what)
    for name, inner in RUN_ENTRIES.items():
        require_entries(saved[name] if inner else {}, inner, checkpoint, f"{what} (its {name})")


def _run_baseline(args: HintOptions, context: DistributedContext) -> dict[str, Any]:
    torch.manual_seed(args.seed)
    image_input = args.input == "image"
    datasets, data = _datasets(args, context)
    symbols = datasets["train"].symbols
    model = build_model(args, source_vocab=len(symbols) + 1)
    if args.compile:
        compile_for_training(model)
    lr = args.training_learning_rate()
    name = f"{args.model}_{args.input}"
    checkpoint = args.checkpoints()
    assert checkpoint is not None  # (a baseline keeps one: --ensemble is the pipeline's)
    if not args.resume and context.is_main:
        checkpoint.unlink(missing_ok=True)
    config = TrainConfig(
        max_steps=args.training_steps(),
        batch_size=args.batch_size,
        lr=lr,
        clip_norm=args.clip,
        eval_every=args.eval_every,
        patience=args.patience,
        checkpoint=checkpoint,
        seed=args.seed,
        num_workers=args.num_workers,
        progress=args.progress,
        time_limit=minutes_to_seconds(args.time_limit),
    )
    outcome, accuracy = train_baseline(
        model, datasets, image_input, config, context, args.eval_batch_size, args.num_workers, args.progress,
        setup=RunSetup(args).of(BASELINE_OPTIONS, release_defaults(args.model, args.dim)),
    )  # fmt: skip
    if not context.is_main:
        return {}
    published = HINT_SEQ2SEQ[(args.input, args.model)]
    rows = [[f"ours: {data.label}", *(round(accuracy[s], 1) for s in SUBSETS_AND_AVERAGE)]]
    rows.append([published_data(args.input), *(published[s] for s in SUBSETS_AND_AVERAGE)])
    table = format_table(["", *SUBSETS_AND_AVERAGE], rows)
    rate = "" if outcome.steps_per_second is None else f", {outcome.steps_per_second:.2f} steps/s in this call"
    print(f"HINT {args.model} ({args.input} input, scale {args.scale:g}, {outcome.steps} steps{rate}, {context.device})")
    print(table)
    result = {
        "model": args.model,
        "input": args.input,
        "data": data.label,
        "device": str(context.device),
        "world_size": context.world_size,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_size": len(datasets["train"]),
        "test_size": len(datasets["test"]),
        "steps": outcome.steps,
        "best_val_exact_match": outcome.best_score,
        "best_step": outcome.best_step,
        "stopped_early": outcome.stopped_early,
        "steps_this_call": outcome.steps_this_call,
        "train_seconds": round(outcome.seconds, 1),
        "train_seconds_this_call": round(outcome.seconds_this_call, 1),
        "steps_per_second": outcome.steps_per_second,
        "accuracy": accuracy,
        "published": published,
        "history": outcome.history,
        "arguments": options_as_json(args),
    }
    save_json(result, args.out / f"{name}.json")
    series = {"ours": [accuracy[s] for s in SUBSETS_AND_AVERAGE], "published": [published[s] for s in SUBSETS_AND_AVERAGE]}
    plot_vs_published(
        SUBSETS_AND_AVERAGE, series, "exact match (%)", f"HINT {args.model}, {args.input} input", args.out / f"{name}.png"
    )
    report_results(args.out, f"{name}.json", f"{name}.png")
    return result
