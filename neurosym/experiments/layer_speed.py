"""Forward + backward time of the neural arithmetic units relative to ``nn.Linear`` of the same shape.

Issue 2 sets the goals at batch 128 for the shapes 100→2 and 512→512: NAU ≤ 1.5×, NMU ≤ 3×, NALU ≤ 4×
the time of ``nn.Linear`` (:data:`~neurosym.benchmarking.speed_steps.UNIT_GOALS`). The step timed is
:func:`~neurosym.benchmarking.speed_steps.unit_step`; a layer's time is its fastest of ``--rounds`` interleaved
rounds (:func:`~neurosym.benchmarking.timing.fastest_of_rounds`), CUDA synchronised and with autocast (AMP).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import torch

from neurosym.benchmarking.speed_steps import UNIT_GOALS, UNITS, unit_records, unit_step
from neurosym.benchmarking.timing import fastest_of_rounds
from neurosym.experiments.options import (
    TimingOptions,
    any_case,
    comma_list,
    option,
    positive_float,
    positive_int,
)
from neurosym.experiments.report import format_table, report_results
from neurosym.plots.speed import plot_unit_ratios
from neurosym.training import resolve_device
from neurosym.training.checkpoint import save_json

BASELINE = "Linear"


def _shape(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"shape must look like IN x OUT, e.g. 100x2; got {text!r}")
    try:
        in_features, out_features = (positive_int(part) for part in parts)
    except argparse.ArgumentTypeError as error:
        raise argparse.ArgumentTypeError(
            f"shape sizes must be positive integers, IN x OUT, e.g. 100x2; in {text!r}: {error}"
        ) from None
    return in_features, out_features


@dataclass(frozen=True)
class LayerSpeedOptions(TimingOptions):
    """The options of ``neurosym layer-speed``."""

    shapes: list[tuple[int, int]] = option(
        None,
        "comma-separated layer shapes IN x OUT",
        parse=comma_list(_shape, what="shape", distinct=True),
        factory=lambda: [(100, 2), (512, 512)],
        shown=lambda shapes: ",".join(f"{in_features}x{out_features}" for in_features, out_features in shapes),
    )
    units: list[str] = option(
        None, "comma-separated units to time against nn.Linear (any case: nmu for NMU)",
        parse=comma_list(any_case([name for name in UNITS if name != BASELINE], "unit"), what="unit", distinct=True),
        factory=lambda: ["NAU", "NMU", "NMU-compiled", "NALU"],
    )  # fmt: skip
    batch_size: int = option(128, "rows per forward/backward step", parse=positive_int)
    rounds: int = option(
        20, "interleaved timing rounds; each layer keeps its fastest (many short rounds resist load changes)", parse=positive_int
    )
    min_time: float = option(0.02, "seconds of measurement per layer and round", parse=positive_float)


OPTIONS = LayerSpeedOptions


def run(options: LayerSpeedOptions) -> dict:
    device = resolve_device(options.device)
    torch.manual_seed(options.seed)
    names = [BASELINE, *options.units]
    steps = {(shape, name): unit_step(name, shape, options.batch_size, device) for shape in options.shapes for name in names}
    best = fastest_of_rounds(steps, options.rounds, options.min_time, options.threads, "layer-speed", options.progress)
    records = unit_records(best, BASELINE)
    headers = ["shape", "unit", "fwd+bwd µs", "× Linear", "goal", "meets goal"]
    rows = [
        [
            r["shape"],
            r["unit"],
            round(r["microseconds"], 1),
            round(r["ratio_to_linear"], 2),
            "—" if r["goal"] is None else f"≤ {r['goal']}×",
            "—" if r["meets_goal"] is None else ("yes" if r["meets_goal"] else "no"),
        ]
        for r in records
    ]
    table = format_table(headers, rows)
    print(f"device: {device} ({options.threads} threads), batch {options.batch_size}, fastest of {options.rounds} rounds")
    print(table)
    results = {
        "device": str(device),
        "threads": options.threads,
        "batch_size": options.batch_size,
        "rounds": options.rounds,
        "min_time": options.min_time,
        "seed": options.seed,
        "records": records,
        "table": table,
    }
    save_json(results, options.out / "layer_speed.json")
    plot_unit_ratios(records, BASELINE, UNIT_GOALS, options.out / "layer_speed.png")
    report_results(options.out, "layer_speed.json", "layer_speed.png")
    return results
