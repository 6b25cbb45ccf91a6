"""Speed of relative attention against SDPA vanilla attention, and of cached against uncached decoding.

Part 1 times one forward and backward pass of self-attention (``[B, T, D]``) at several sequence
lengths for :class:`~neurosym.layers.MultiheadAttention` (fused ``scaled_dot_product_attention``) and
:class:`~neurosym.layers.RelativeMultiheadAttention` in its encodings (XL, XL with clipped distances,
Shaw); the goal is relative
attention within 2× of vanilla. Part 2 times greedy decoding of 10 result digits by a relative
universal Transformer with and without the key/value cache. Times are medians of
:class:`torch.utils.benchmark.Timer` runs (CUDA is synchronised; CPU runs use ``--threads``).
"""

from __future__ import annotations

import argparse
from typing import Any

import torch

from neurosym.benchmarking.speed_steps import decode_step, time_attention
from neurosym.benchmarking.timing import fastest_of_rounds
from neurosym.experiments.options import add_run_options, comma_list, positive_float, positive_int
from neurosym.experiments.report import format_table
from neurosym.plots.speed import plot_times_over_length
from neurosym.training import resolve_device
from neurosym.training.checkpoint import save_json

ATTENTIONS = ("vanilla", "xl", "xl_clipped", "shaw")
RELATIVE_NAMES = {"xl": "XL", "xl_clipped": "clipped XL", "shaw": "Shaw"}
DIGITS = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lengths",
        type=comma_list(positive_int, what="length"),
        default=[64, 256, 1024],
        help="comma-separated sequence lengths to time",
    )
    parser.add_argument("--batch-size", type=positive_int, default=None, help="sequences per batch (default: 8 CPU, 64 CUDA)")
    parser.add_argument("--dim", type=positive_int, default=256, help="model width")
    parser.add_argument("--heads", type=positive_int, default=8, help="attention heads")
    parser.add_argument(
        "--position-dim",
        type=positive_int,
        default=None,
        help="sinusoid features of XL attention (default: the head dimension; Transformer-XL uses --dim)",
    )
    parser.add_argument(
        "--decode-batch", type=positive_int, default=None, help="expressions per decoding batch (default: 64 CPU, 1024 CUDA)"
    )
    parser.add_argument("--source-length", type=positive_int, default=40, help="source tokens of every decoded expression")
    parser.add_argument("--min-time", type=positive_float, default=0.5, help="seconds of measurement per configuration and round")
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=3,
        help="interleaved timing rounds; each configuration keeps its fastest (resists load changes)",
    )
    add_run_options(parser, out="results/attention_speed", threads=1, trains=False)


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = resolve_device(args.device)
    cuda = device.type == "cuda"
    batch = args.batch_size or (64 if cuda else 8)
    decode_batch = args.decode_batch or (1024 if cuda else 64)
    torch.manual_seed(args.seed)
    attention = time_attention(
        ATTENTIONS, args.lengths, batch, args.dim, args.heads, device, args.position_dim,
        rounds=args.rounds, min_time=args.min_time, threads=args.threads, progress=args.progress,
    )  # fmt: skip
    decoders = {
        name: decode_step(name == "cached", decode_batch, args.source_length, args.dim, args.heads, DIGITS, device)
        for name in ("cached", "uncached")
    }
    decoding = fastest_of_rounds(decoders, args.rounds, args.min_time, args.threads, "decoding", args.progress)
    rows = [
        [
            length,
            *(1000 * attention[kind][length] for kind in ATTENTIONS),
            *(attention[kind][length] / attention["vanilla"][length] for kind in RELATIVE_NAMES),
        ]
        for length in args.lengths
    ]
    headers = ["length", "vanilla SDPA (ms)", *(f"relative {name} (ms)" for name in RELATIVE_NAMES.values())]
    headers += [f"{name} / vanilla" for name in RELATIVE_NAMES.values()]
    where = f"{device}, batch {batch}, dim {args.dim}, {args.heads} heads, forward + backward"
    print(f"Self-attention ({where})")
    print(format_table(headers, rows))
    speedup = decoding["uncached"] / decoding["cached"]
    print(
        f"\nGreedy decoding of {DIGITS} digits, relative universal Transformer, {decode_batch} sources of "
        f"{args.source_length} tokens"
    )
    print(format_table(["cache", "time (ms)"], [[name, 1000 * t] for name, t in decoding.items()]))
    print(f"cached decoding is {speedup:.2f}x faster")
    result = {
        "device": str(device),
        "threads": args.threads if not cuda else None,
        "batch_size": batch,
        "dim": args.dim,
        "heads": args.heads,
        "position_dim": args.position_dim or args.dim // args.heads,
        "attention_seconds": attention,
        "rounds": args.rounds,
        "decode_batch": decode_batch,
        "decoding_seconds": decoding,
        "decoding_speedup": speedup,
    }
    save_json(result, args.out / "attention_speed.json")
    plot_times_over_length(attention, args.lengths, where, args.out / "attention_speed.png")
    return result
