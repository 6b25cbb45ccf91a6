"""Forward + backward time of the neural arithmetic units relative to ``nn.Linear`` of the same shape.

Issue 2 sets the goals at batch 128 for the shapes 100→2 and 512→512: NAU ≤ 1.5×, NMU ≤ 3×, NALU ≤ 4×
the time of ``nn.Linear`` (:data:`~neurosym.benchmarking.speed_steps.UNIT_GOALS`). The step timed is
:func:`~neurosym.benchmarking.speed_steps.unit_step`; a layer's time is its fastest of ``--rounds`` interleaved
rounds (:func:`~neurosym.benchmarking.timing.fastest_of_rounds`), CUDA synchronised and with autocast (AMP).
"""

from __future__ import annotations

import argparse

import torch

from neurosym.benchmarking.speed_steps import UNIT_GOALS, UNITS, unit_records, unit_step
from neurosym.benchmarking.timing import fastest_of_rounds
from neurosym.experiments.options import add_run_options, comma_list, positive_float, positive_int
from neurosym.experiments.report import format_table
from neurosym.plots.speed import plot_unit_ratios
from neurosym.training import resolve_device
from neurosym.training.checkpoint import save_json

BASELINE = "Linear"


def _shape(text: str) -> tuple[int, int]:
    try:
        in_features, out_features = (int(part) for part in text.lower().split("x"))
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"shape must look like IN x OUT, e.g. 100x2; got {text!r}") from error
    if in_features < 1 or out_features < 1:
        raise argparse.ArgumentTypeError(f"shape sizes must be positive, got {text!r}")
    return in_features, out_features


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shapes",
        type=comma_list(_shape, what="shape"),
        default=[(100, 2), (512, 512)],
        help="comma-separated layer shapes IN x OUT",
    )
    parser.add_argument(
        "--units", type=comma_list(str, what="unit", choices=[name for name in UNITS if name != BASELINE]),
        default=["NAU", "NMU", "NMU-compiled", "NALU"], help="comma-separated units to time against nn.Linear",
    )  # fmt: skip
    parser.add_argument("--batch-size", type=positive_int, default=128, help="rows per forward/backward step")
    parser.add_argument(
        "--rounds",
        type=positive_int,
        default=20,
        help="interleaved timing rounds; each layer keeps its fastest (many short rounds resist load changes)",
    )
    parser.add_argument("--min-time", type=positive_float, default=0.02, help="seconds of measurement per layer and round")
    add_run_options(parser, out="results/layer_speed", threads=1, trains=False)


def run(args: argparse.Namespace) -> dict:
    device = resolve_device(args.device)
    torch.manual_seed(args.seed)
    names = [BASELINE, *dict.fromkeys(args.units)]
    steps = {(shape, name): unit_step(name, shape, args.batch_size, device) for shape in args.shapes for name in names}
    best = fastest_of_rounds(steps, args.rounds, args.min_time, args.threads, "layer-speed", args.progress)
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
    print(f"device: {device} ({args.threads} threads), batch {args.batch_size}, fastest of {args.rounds} rounds")
    print(table)
    results = {
        "device": str(device),
        "threads": args.threads,
        "batch_size": args.batch_size,
        "rounds": args.rounds,
        "min_time": args.min_time,
        "seed": args.seed,
        "records": records,
        "table": table,
    }
    save_json(results, args.out / "layer_speed.json")
    plot_unit_ratios(records, BASELINE, UNIT_GOALS, args.out / "layer_speed.png")
    return results
