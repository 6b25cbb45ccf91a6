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

from dataclasses import dataclass
from typing import Any, get_args

import torch

from neurosym.benchmarking.speed_steps import decode_step, time_attention
from neurosym.benchmarking.timing import fastest_of_rounds
from neurosym.experiments.options import (
    TimingOptions,
    comma_list,
    option,
    positive_float,
    positive_int,
)
from neurosym.experiments.report import format_table, report_results
from neurosym.layers.transformer import AttentionKind
from neurosym.plots.speed import plot_times_over_length
from neurosym.training import resolve_device
from neurosym.training.checkpoint import save_json

ATTENTIONS: tuple[AttentionKind, ...] = get_args(AttentionKind)
RELATIVE_NAMES = {"xl": "XL", "xl_clipped": "clipped XL", "shaw": "Shaw"}
DIGITS = 10


@dataclass(frozen=True)
class AttentionSpeedOptions(TimingOptions):
    """The options of ``neurosym attention-speed``."""

    lengths: list[int] = option(
        None,
        "comma-separated sequence lengths to time",
        parse=comma_list(positive_int, what="length", distinct=True),
        factory=lambda: [64, 256, 1024],
    )
    batch_size: int | None = option(None, "sequences per batch (default: 8 CPU, 64 CUDA)", parse=positive_int)
    dim: int = option(256, "model width", parse=positive_int)
    heads: int = option(8, "attention heads", parse=positive_int)
    position_dim: int | None = option(
        None, "sinusoid features of XL attention (default: the head dimension; Transformer-XL uses --dim)", parse=positive_int
    )
    decode_batch: int | None = option(None, "expressions per decoding batch (default: 64 CPU, 1024 CUDA)", parse=positive_int)
    source_length: int = option(40, "source tokens of every decoded expression", parse=positive_int)
    min_time: float = option(0.5, "seconds of measurement per configuration and round", parse=positive_float)
    rounds: int = option(
        3, "interleaved timing rounds; each configuration keeps its fastest (resists load changes)", parse=positive_int
    )


OPTIONS = AttentionSpeedOptions


def run(options: AttentionSpeedOptions) -> dict[str, Any]:
    device = resolve_device(options.device)
    cuda = device.type == "cuda"
    batch = options.batch_size or (64 if cuda else 8)
    decode_batch = options.decode_batch or (1024 if cuda else 64)
    torch.manual_seed(options.seed)
    attention = time_attention(
        ATTENTIONS, options.lengths, batch, options.dim, options.heads, device, options.position_dim,
        rounds=options.rounds, min_time=options.min_time, threads=options.threads, progress=options.progress,
    )  # fmt: skip
    decoders = {
        name: decode_step(name == "cached", decode_batch, options.source_length, options.dim, options.heads, DIGITS, device)
        for name in ("cached", "uncached")
    }
    decoding = fastest_of_rounds(decoders, options.rounds, options.min_time, options.threads, "decoding", options.progress)
    rows = [
        [
            length,
            *(1000 * attention[kind][length] for kind in ATTENTIONS),
            *(attention[kind][length] / attention["vanilla"][length] for kind in RELATIVE_NAMES),
        ]
        for length in options.lengths
    ]
    headers = ["length", "vanilla SDPA (ms)", *(f"relative {name} (ms)" for name in RELATIVE_NAMES.values())]
    headers += [f"{name} / vanilla" for name in RELATIVE_NAMES.values()]
    where = f"{device}, batch {batch}, dim {options.dim}, {options.heads} heads, forward + backward"
    print(f"Self-attention ({where})")
    print(format_table(headers, rows))
    speedup = decoding["uncached"] / decoding["cached"]
    print(
        f"\nGreedy decoding of {DIGITS} digits, relative universal Transformer, {decode_batch} sources of "
        f"{options.source_length} tokens"
    )
    print(format_table(["cache", "time (ms)"], [[name, 1000 * t] for name, t in decoding.items()]))
    print(f"cached decoding takes {1 / speedup:.2f}x the time of uncached decoding ({speedup:.2f}x as fast)")
    result = {
        "device": str(device),
        "threads": options.threads if not cuda else None,
        "batch_size": batch,
        "dim": options.dim,
        "heads": options.heads,
        "position_dim": options.position_dim or options.dim // options.heads,
        "attention_seconds": attention,
        "rounds": options.rounds,
        "decode_batch": decode_batch,
        "decoding_seconds": decoding,
        "decoding_speedup": speedup,
    }
    save_json(result, options.out / "attention_speed.json")
    plot_times_over_length(attention, options.lengths, where, options.out / "attention_speed.png")
    report_results(options.out, "attention_speed.json", "attention_speed.png")
    return result
