"""HINT seq2seq baselines (Li et al., Tables 2–3): RNNs and Transformers trained end to end.

Every model reads the expression (symbol ids, or one 32×32 image window per symbol) and emits the
result's digits, least significant first, then an end token; accuracy is exact match of the whole
result on each test subset (I, SS, LS, SL, LL) and their unweighted mean. Training uses the shared loop
of :mod:`neurosym.training.loop` (DDP under ``torchrun``, AMP on CUDA, early stopping on validation
exact match, resumable checkpoint). ``--model neurosym`` hands the whole run to
:mod:`neurosym.experiments.hint_neurosym` when that module is installed.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

from neurosym.data.hint import (
    EVAL_SUBSETS,
    IGNORE_INDEX,
    HintImageDataset,
    HintSymbolDataset,
    collate_hint,
    main_split,
)
from neurosym.data.symbol_images import default_bank, load_npz_bank
from neurosym.experiments.options import (
    add_compile_option,
    existing_file,
    fraction_up_to_one,
    non_negative_int,
    positive_float,
    positive_int,
    probability_below_one,
    time_limit_minutes,
)
from neurosym.experiments.report import format_table, pyplot, save_json
from neurosym.metrics import sequence_matches
from neurosym.models.seq2seq import CNN_NAMES, MODEL_NAMES, Seq2Seq, build_front_end, build_seq2seq
from neurosym.models.seq2seq.factory import RNN_HIDDEN
from neurosym.models.seq2seq.targets import align_for_exact_match, teacher_forcing_pair
from neurosym.training import TrainConfig, init_distributed, shutdown_distributed, train
from neurosym.training.compile import compile_for_training
from neurosym.training.device import mixed_precision
from neurosym.training.distributed import DistributedContext, main_process_first
from neurosym.training.stopping import minutes_to_seconds

BOS, EOS = 10, 11
"""Target ids: the digits 0–9 are their own ids, then begin and end of sequence."""
TARGET_VOCAB = 12
SUBSETS_AND_AVERAGE = (*EVAL_SUBSETS, "avg")
NEUROSYM_RUNNER = "neurosym.experiments.hint_neurosym"

PUBLISHED: dict[tuple[str, str], dict[str, float]] = {
    ("symbol", "gru"): dict(I=74.9, SS=68.1, LS=42.1, SL=10.5, LL=14.0, avg=41.3),
    ("symbol", "gru_att"): dict(I=76.2, SS=69.5, LS=42.8, SL=10.5, LL=15.1, avg=42.5),
    ("symbol", "lstm"): dict(I=84.3, SS=79.6, LS=63.7, SL=11.7, LL=22.1, avg=52.3),
    ("symbol", "lstm_att"): dict(I=92.9, SS=90.9, LS=74.9, SL=12.1, LL=24.3, avg=58.9),
    ("symbol", "transformer"): dict(I=93.9, SS=91.0, LS=33.2, SL=11.5, LL=11.5, avg=47.4),
    ("symbol", "transformer_rel"): dict(I=96.6, SS=95.1, LS=72.1, SL=11.8, LL=22.3, avg=59.4),
    ("symbol", "transformer_rel_uni"): dict(I=98.0, SS=96.8, LS=78.2, SL=11.7, LL=22.4, avg=61.5),
    ("image", "gru"): dict(I=61.3, SS=53.3, LS=30.5, SL=9.2, LL=11.9, avg=33.2),
    ("image", "gru_att"): dict(I=66.7, SS=58.7, LS=33.1, SL=9.4, LL=12.8, avg=35.9),
    ("image", "lstm"): dict(I=80.0, SS=76.2, LS=55.7, SL=10.9, LL=19.8, avg=48.6),
    ("image", "lstm_att"): dict(I=83.9, SS=79.7, LS=62.0, SL=11.2, LL=21.0, avg=51.5),
    ("image", "transformer"): dict(I=20.9, SS=9.3, LS=5.7, SL=1.5, LL=2.9, avg=8.3),
    ("image", "transformer_rel"): dict(I=86.2, SS=83.1, LS=60.1, SL=10.9, LL=19.4, avg=51.7),
    ("image", "transformer_rel_uni"): dict(I=88.4, SS=86.0, LS=62.5, SL=10.9, LL=19.0, avg=53.1),
}
"""Medians of 5 runs in the HINT paper (Table 3: symbol input, Table 2: image input with ResNet-18)."""


def _neurosym_runner() -> ModuleType | None:
    """The neuro-symbolic pipeline's runner, when that module is part of this installation."""
    if importlib.util.find_spec(NEUROSYM_RUNNER) is None:
        return None
    return importlib.import_module(NEUROSYM_RUNNER)


def _bank(text: str) -> str:
    """``--bank``: ``default`` or the path of an existing ``.npz`` archive."""
    if text != "default":
        existing_file(text)
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    runner = _neurosym_runner()
    models = (*MODEL_NAMES, "neurosym") if runner is not None else MODEL_NAMES
    parser.add_argument("--model", choices=models, default="transformer_rel_uni", help="which baseline to train")
    parser.add_argument("--input", choices=("symbol", "image"), default="symbol", help="symbol ids or handwritten images")
    parser.add_argument("--scale", type=fraction_up_to_one, default=1.0, help="fraction of the released split sizes (1 = Table A1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data generation, initialisation and shuffling")
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        help="maximum training steps (default: 100k for the seq2seq models as in HINT, 2,000 for neurosym)",
    )
    parser.add_argument("--batch-size", type=positive_int, default=128, help="global batch size (HINT: 128)")
    parser.add_argument("--lr", type=positive_float, default=None, help="Adam learning rate (default: 1e-3 RNNs, 1e-4 Transformers)")
    parser.add_argument("--embedding", type=positive_int, default=128, help="size of the source and target embeddings")
    parser.add_argument(
        "--dim",
        type=positive_int,
        default=512,
        help="Transformer width; embeddings are mapped to it by a linear layer when it differs from --embedding",
    )
    parser.add_argument(
        "--hidden",
        type=positive_int,
        default=None,
        help=f"RNN hidden units (default {RNN_HIDDEN}) / Transformer feed-forward size (default 4 × --dim)",
    )
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
    parser.add_argument("--encoder-layers", type=positive_int, default=None, help="encoder depth (default: 3 RNNs, 6 Transformers)")
    parser.add_argument("--decoder-layers", type=positive_int, default=1, help="decoder depth")
    parser.add_argument(
        "--dropout",
        type=probability_below_one,
        default=None,
        help="dropout of every recurrent layer and sub-layer (default: 0.5 RNNs, 0.1 Transformers)",
    )
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
    parser.add_argument(
        "--bank", type=_bank, default="default", help="symbol images: 'default' (MNIST + drawn symbols) or an .npz archive"
    )
    parser.add_argument("--cnn", choices=CNN_NAMES, default="resnet18", help="image window encoder (image input)")
    parser.add_argument("--clip", type=positive_float, default=5.0, help="gradient-norm clipping threshold")
    parser.add_argument("--eval-every", type=positive_int, default=1000, help="steps between validation evaluations")
    parser.add_argument(
        "--patience", type=positive_int, default=50, help="evaluations without improvement before stopping (HINT release: 50)"
    )
    parser.add_argument("--eval-batch-size", type=positive_int, default=256, help="batch size of greedy decoding")
    parser.add_argument("--num-workers", type=non_negative_int, default=0, help="data-loading worker processes")
    parser.add_argument("--device", default="auto", help="'auto' (CUDA when present), 'cpu' or 'cuda[:N]'")
    parser.add_argument("--out", type=Path, default=Path("results/hint"), help="output folder")
    parser.add_argument("--no-resume", action="store_true", help="start afresh even if a checkpoint exists")
    parser.add_argument(
        "--time-limit",
        type=time_limit_minutes, metavar="MINUTES",
        default=None,
        help="minutes of training in this call: then checkpoint and exit with status 75; the same command continues "
        "(Ctrl-C and SIGTERM stop the same way, with status 130 and 143)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    if runner is not None:
        runner.add_arguments(parser)


def hint_batch(batch: dict[str, Any], image_input: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(src, src_mask, tgt_in, tgt_out)`` of a :func:`collate_hint` batch (``src_mask`` True = padding)."""
    src = batch["images"] if image_input else batch["tokens"]
    tgt_in, tgt_out = teacher_forcing_pair(batch["res_digits"], BOS, EOS, IGNORE_INDEX)
    return src, ~batch["mask"], tgt_in, tgt_out


def sequence_loss(model: nn.Module, batch: dict[str, Any], image_input: bool) -> torch.Tensor:
    """Mean cross-entropy of the next target token under teacher forcing."""
    src, src_mask, tgt_in, tgt_out = hint_batch(batch, image_input)
    logits = model(src, src_mask, tgt_in)
    return F.cross_entropy(logits.flatten(0, 1).float(), tgt_out.flatten(), ignore_index=IGNORE_INDEX)


def exact_match_by_subset(
    model: Seq2Seq, batches: Iterable[dict[str, Any]], image_input: bool, device: torch.device
) -> dict[str, float]:
    """Greedy-decoding exact match (in %) per ``eval`` subset, plus ``"all"`` over every example."""
    correct: dict[str, list[torch.Tensor]] = defaultdict(list)
    for batch in batches:
        src, src_mask, _, tgt_out = (t.to(device) for t in hint_batch(batch, image_input))
        with mixed_precision(device):
            decoded = model.greedy_decode(src, src_mask, tgt_out.shape[1], BOS, EOS)
        matches = sequence_matches(*align_for_exact_match(decoded, tgt_out, EOS, IGNORE_INDEX)).cpu()
        correct["all"].append(matches)
        for subset in set(batch["eval"]) - {""}:
            rows = torch.tensor([name == subset for name in batch["eval"]])
            correct[subset].append(matches[rows])
    return {name: 100.0 * float(torch.cat(parts).float().mean()) for name, parts in correct.items()}


def _datasets(args: argparse.Namespace, context: DistributedContext) -> dict[str, Dataset]:
    with main_process_first(context):
        splits = main_split(scale=args.scale, seed=args.seed, progress=context.is_main and not args.quiet)
    if args.input == "symbol":
        return {name: HintSymbolDataset(split) for name, split in splits.items()}
    with main_process_first(context):
        bank = default_bank(seed=args.seed) if args.bank == "default" else load_npz_bank(args.bank, seed=args.seed)
    return {name: HintImageDataset(split, bank, pool=name, seed=args.seed) for name, split in splits.items()}


def _loader(dataset: Dataset, args: argparse.Namespace) -> DataLoader:
    return DataLoader(dataset, batch_size=args.eval_batch_size, collate_fn=collate_hint, num_workers=args.num_workers)


DEFAULT_STEPS = {"seq2seq": 100_000, "neurosym": 2_000}
"""Training steps when ``--steps`` is not given: the HINT release's budget, and the pipeline's."""


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.steps is None:
        args.steps = DEFAULT_STEPS["neurosym" if args.model == "neurosym" else "seq2seq"]
    if args.model == "neurosym":
        return importlib.import_module(NEUROSYM_RUNNER).run(args)
    if args.model.startswith("transformer") and args.dim % args.heads:
        raise SystemExit(f"neurosym hint: --dim ({args.dim}) must be a multiple of --heads ({args.heads})")
    context = init_distributed(args.device)
    try:
        return _run_baseline(args, context)
    finally:
        shutdown_distributed()


def build_model(args: argparse.Namespace, source_vocab: int) -> Seq2Seq:
    """The baseline ``args.model`` as the command line configures it (defaults: the HINT release,
    ``sweeps/transformer.yaml`` and ``rnn.yaml``: embeddings of 128; Transformers of width 512, 8 heads,
    feed-forward 2,048, post-norm, dropout 0.1, the release's initialisation, attention projections
    without biases, no embedding dropout in the relative models; RNNs of 512 units, dropout 0.5; every
    source framed by start and end vectors)."""
    is_rnn = args.model.startswith(("gru", "lstm"))
    front_end = build_front_end(
        args.input, args.embedding, vocab_size=source_vocab, cnn=args.cnn, boundaries=args.source_boundaries
    )
    return build_seq2seq(
        args.model,
        front_end,
        TARGET_VOCAB,
        dim=args.dim,
        hidden=args.hidden,
        heads=args.heads,
        encoder_layers=args.encoder_layers,
        decoder_layers=args.decoder_layers,
        dropout=args.dropout if args.dropout is not None else (0.5 if is_rnn else 0.1),
        relative=args.relative,
        pre_norm=args.norm == "pre",
        step_embedding=args.step_embedding,
        attention_bias=args.attention_bias,
        embedding_dropout=args.model == "transformer" if args.embedding_dropout is None else args.embedding_dropout,
        init=args.init,
    )


def _run_baseline(args: argparse.Namespace, context: DistributedContext) -> dict[str, Any]:
    torch.manual_seed(args.seed)
    image_input = args.input == "image"
    datasets = _datasets(args, context)
    symbols = datasets["train"].symbols
    model = build_model(args, source_vocab=len(symbols) + 1)
    if args.compile:
        compile_for_training(model)
    is_rnn = args.model.startswith(("gru", "lstm"))
    lr = args.lr if args.lr is not None else (1e-3 if is_rnn else 1e-4)
    name = f"{args.model}_{args.input}"
    checkpoint = args.out / f"{name}.pt"
    if args.no_resume and context.is_main:
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
        progress=not args.quiet,
        time_limit=minutes_to_seconds(args.time_limit),
    )
    val_loader = _loader(datasets["val"], args)

    def validate(trained: nn.Module) -> float:
        return exact_match_by_subset(trained, val_loader, image_input, context.device)["all"]

    outcome = train(
        model,
        datasets["train"],
        lambda m, batch: sequence_loss(m, batch, image_input),
        config,
        context,
        evaluate=validate,
        collate_fn=collate_hint,
    )
    if not context.is_main:
        return {}
    model.eval()
    test_batches = tqdm(_loader(datasets["test"], args), desc="test", disable=args.quiet)
    scores = exact_match_by_subset(model, test_batches, image_input, context.device)
    accuracy = {subset: scores.get(subset, float("nan")) for subset in EVAL_SUBSETS}
    accuracy["avg"] = sum(accuracy.values()) / len(EVAL_SUBSETS)
    published = PUBLISHED[(args.input, args.model)]
    rows = [["ours", *(round(accuracy[s], 1) for s in SUBSETS_AND_AVERAGE)]]
    rows.append(["published", *(published[s] for s in SUBSETS_AND_AVERAGE)])
    table = format_table(["", *SUBSETS_AND_AVERAGE], rows)
    rate = "" if outcome.steps_per_second is None else f", {outcome.steps_per_second:.2f} steps/s in this call"
    print(f"HINT {args.model} ({args.input} input, scale {args.scale:g}, {outcome.steps} steps{rate}, {context.device})")
    print(table)
    result = {
        "model": args.model,
        "input": args.input,
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
    _plot(accuracy, published, f"HINT {args.model}, {args.input} input", args.out / f"{name}.png")
    return result


def _plot(ours: dict[str, float], published: dict[str, float], title: str, path: Path) -> None:
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 3.5))
    positions = torch.arange(len(SUBSETS_AND_AVERAGE)).numpy()
    axis.bar(positions - 0.2, [ours[s] for s in SUBSETS_AND_AVERAGE], width=0.4, label="ours")
    axis.bar(positions + 0.2, [published[s] for s in SUBSETS_AND_AVERAGE], width=0.4, label="published")
    axis.set_xticks(positions, SUBSETS_AND_AVERAGE)
    axis.set_ylabel("exact match (%)")
    axis.set_ylim(0, 100)
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
