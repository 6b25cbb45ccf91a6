"""HINT seq2seq baselines (Li et al., Tables 2–3): RNNs and Transformers trained end to end.

Every model reads the expression (symbol ids, or one 32×32 image window per symbol) and emits the
result's digits, least significant first, then an end token; accuracy is exact match of the whole
result on each test subset (I, SS, LS, SL, LL) and their unweighted mean. Training uses the shared loop
of :mod:`neurosym.training.loop` (DDP under ``torchrun``, AMP on CUDA, early stopping on validation
exact match, resumable checkpoint). ``--model neurosym`` hands the whole run to
:mod:`neurosym.experiments.hint_pipeline` when that module is installed.
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
from torch.utils.data import Dataset

from neurosym.data.hint import EVAL_SUBSETS, split_datasets
from neurosym.experiments import hint_pipeline
from neurosym.experiments.hint_sources import HintData, add_data_options, load_hint_data
from neurosym.experiments.options import (
    add_compile_option,
    add_run_options,
    apply_threads,
    fraction_up_to_one,
    non_negative_int,
    positive_float,
    positive_int,
    probability_below_one,
)
from neurosym.experiments.report import format_table
from neurosym.metrics.published import HINT_SEQ2SEQ, PUBLISHED_DATA
from neurosym.models.seq2seq import CNN_NAMES, MODEL_NAMES, Seq2Seq
from neurosym.models.seq2seq.factory import RNN_HIDDEN
from neurosym.models.seq2seq.hint_baseline import BASELINE_OPTIONS, build_baseline, default_learning_rate, train_baseline
from neurosym.plots.figure import plot_vs_published
from neurosym.training import TrainConfig, init_distributed, shutdown_distributed
from neurosym.training.checkpoint import save_json
from neurosym.training.compile import compile_for_training
from neurosym.training.distributed import DistributedContext, main_process_first
from neurosym.training.stopping import minutes_to_seconds

SUBSETS_AND_AVERAGE = (*EVAL_SUBSETS, "avg")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", choices=(*MODEL_NAMES, "neurosym"), default="transformer_rel_uni", help="which baseline to train"
    )
    parser.add_argument("--input", choices=("symbol", "image"), default="symbol", help="symbol ids or handwritten images")
    parser.add_argument(
        "--scale", type=fraction_up_to_one, default=1.0, help="fraction of the released split sizes (1 = Table A1)"
    )
    parser.add_argument("--steps", type=positive_int, default=None,
                        help="maximum training steps (default: 100k for the seq2seq models as in HINT, 2,000 for neurosym)")  # fmt: skip
    parser.add_argument("--batch-size", type=positive_int, default=128, help="global batch size (HINT: 128)")
    parser.add_argument(
        "--lr", type=positive_float, default=None, help="Adam learning rate (default: 1e-3 RNNs, 1e-4 Transformers)"
    )
    parser.add_argument("--embedding", type=positive_int, default=128, help="size of the source and target embeddings")
    parser.add_argument("--dim", type=positive_int, default=512,
                        help="Transformer width; embeddings are mapped to it by a linear layer when it differs from --embedding")  # fmt: skip
    parser.add_argument("--hidden", type=positive_int, default=None,
                        help=f"RNN hidden units (default {RNN_HIDDEN}) / Transformer feed-forward size (default 4 × --dim)")  # fmt: skip
    parser.add_argument("--heads", type=positive_int, default=8, help="attention heads of the Transformers")
    parser.add_argument(
        "--norm", choices=("post", "pre"), default="post", help="LayerNorm after (HINT release) or before each sub-layer"
    )
    parser.add_argument(
        "--step-embedding",
        action="store_true",
        help="transformer_rel_uni: add a sinusoidal step embedding before every application of the shared layer "
        "(not in the HINT release)",
    )
    parser.add_argument(
        "--encoder-layers", type=positive_int, default=None, help="encoder depth (default: 3 RNNs, 6 Transformers)"
    )
    parser.add_argument("--decoder-layers", type=positive_int, default=1, help="decoder depth")
    parser.add_argument("--dropout", type=probability_below_one, default=None,
                        help="dropout of every recurrent layer and sub-layer (default: 0.5 RNNs, 0.1 Transformers)")  # fmt: skip
    parser.add_argument(
        "--relative",
        choices=("xl_clipped", "xl", "shaw"),
        default="xl_clipped",
        help="relative position encoding: Transformer-XL with distances clipped at ±15 (the HINT release), "
        "unclipped XL, or Shaw's learned vectors per clipped distance",
    )
    parser.add_argument(
        "--source-boundaries",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="frame every source with learned start and end vectors, as the HINT release's START and END tokens",
    )
    parser.add_argument(
        "--init",
        choices=("release", "torch"),
        default="release",
        help="Transformer initialisation: the HINT release's (Xavier-uniform feed-forward, absolute-attention and "
        "output weights) or PyTorch's defaults",
    )
    parser.add_argument(
        "--attention-bias",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="biases in the Transformers' attention projections (the HINT release has none)",
    )
    parser.add_argument(
        "--embedding-dropout",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="dropout on the Transformers' input embeddings (default: as the HINT release, only in the vanilla "
        "transformer, where it follows the absolute positions)",
    )
    add_compile_option(parser)
    add_data_options(parser)
    parser.add_argument("--cnn", choices=CNN_NAMES, default="resnet18", help="image window encoder (image input)")
    parser.add_argument("--clip", type=positive_float, default=5.0, help="gradient-norm clipping threshold")
    parser.add_argument("--eval-every", type=positive_int, default=1000, help="steps between validation evaluations")
    parser.add_argument(
        "--patience", type=positive_int, default=50, help="evaluations without improvement before stopping (HINT release: 50)"
    )
    parser.add_argument("--eval-batch-size", type=positive_int, default=256, help="batch size of greedy decoding")
    parser.add_argument("--num-workers", type=non_negative_int, default=0, help="data-loading worker processes")
    add_run_options(parser, out="results/hint")
    hint_pipeline.add_arguments(parser)


def _datasets(args: argparse.Namespace, context: DistributedContext) -> tuple[dict[str, Dataset], HintData]:
    with main_process_first(context):
        data = load_hint_data(args, args.input == "image", progress=context.is_main and args.progress)
    return split_datasets(data.splits, data.bank, seed=args.seed), data


DEFAULT_STEPS = {"seq2seq": 100_000, "neurosym": 2_000}
"""Training steps when ``--steps`` is not given: the HINT release's budget, and the pipeline's."""


def run(args: argparse.Namespace) -> dict[str, Any]:
    apply_threads(args.threads)
    if args.steps is None:
        args.steps = DEFAULT_STEPS["neurosym" if args.model == "neurosym" else "seq2seq"]
    if args.ensemble and (args.model, args.input, args.semantics) != ("neurosym", "image", "given"):
        raise SystemExit("neurosym hint: --ensemble reads with trained symbol readers: --model neurosym --input image only")
    if args.model == "neurosym":
        return hint_pipeline.run(args)
    if args.model.startswith("transformer") and args.dim % args.heads:
        raise SystemExit(f"neurosym hint: --dim ({args.dim}) must be a multiple of --heads ({args.heads})")
    context = init_distributed(args.device)
    try:
        return _run_baseline(args, context)
    finally:
        shutdown_distributed()


def build_model(args: argparse.Namespace, source_vocab: int) -> Seq2Seq:
    """The baseline ``args.model`` as the command line configures it (:func:`build_baseline`)."""
    return build_baseline(args.model, args.input, source_vocab, **{name: getattr(args, name) for name in BASELINE_OPTIONS})


def _run_baseline(args: argparse.Namespace, context: DistributedContext) -> dict[str, Any]:
    torch.manual_seed(args.seed)
    image_input = args.input == "image"
    datasets, data = _datasets(args, context)
    symbols = datasets["train"].symbols
    model = build_model(args, source_vocab=len(symbols) + 1)
    if args.compile:
        compile_for_training(model)
    lr = args.lr if args.lr is not None else default_learning_rate(args.model)
    name = f"{args.model}_{args.input}"
    checkpoint = args.out / f"{name}.pt"
    if not args.resume and context.is_main:
        checkpoint.unlink(missing_ok=True)
    config = TrainConfig(
        max_steps=args.steps,
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
        model, datasets, image_input, config, context, args.eval_batch_size, args.num_workers, args.progress
    )
    if not context.is_main:
        return {}
    published = HINT_SEQ2SEQ[(args.input, args.model)]
    rows = [[f"ours: {data.label}", *(round(accuracy[s], 1) for s in SUBSETS_AND_AVERAGE)]]
    rows.append([PUBLISHED_DATA, *(published[s] for s in SUBSETS_AND_AVERAGE)])
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
        "train_seconds_this_call": round(outcome.seconds_this_call, 1),
        "steps_per_second": outcome.steps_per_second,
        "accuracy": accuracy,
        "published": published,
        "history": outcome.history,
        "arguments": {key: str(value) for key, value in vars(args).items() if not key.startswith("_")},
    }
    save_json(result, args.out / f"{name}.json")
    series = {"ours": [accuracy[s] for s in SUBSETS_AND_AVERAGE], "published": [published[s] for s in SUBSETS_AND_AVERAGE]}
    plot_vs_published(
        SUBSETS_AND_AVERAGE, series, "exact match (%)", f"HINT {args.model}, {args.input} input", args.out / f"{name}.png"
    )
    return result
