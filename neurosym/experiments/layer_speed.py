"""Forward + backward time of the neural arithmetic units relative to ``nn.Linear`` of the same shape.

Issue 2 sets the goals at batch 128 for the shapes 100→2 and 512→512: NAU ≤ 1.5×, NMU ≤ 3×,
NALU ≤ 4× the time of ``nn.Linear``. One step is ``unit(x).sum().backward()`` with ``x`` requiring a
gradient (as in a hidden layer), ``x ~ U[0.5, 1.5]``. ``NMU-compiled`` is ``NMU(compiled=True)``; its
kernels are compiled before timing starts. Timing is interleaved to be fair under a
fluctuating machine load: in each of ``--rounds`` rounds every layer is timed by
:func:`~neurosym.training.speed.median_seconds` (median of ``Timer`` blocked runs); a
layer's time is its fastest round. CUDA is synchronised after every step and uses autocast (AMP), as training would.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
from torch import nn

from neurosym.experiments.options import add_run_options, comma_list, positive_float, positive_int
from neurosym.experiments.report import format_table, pyplot, save_json
from neurosym.layers import arithmetic
from neurosym.training import resolve_device
from neurosym.training.speed import fastest_of_rounds, forward_backward_step

UNITS: dict[str, type[nn.Module]] = {
    "Linear": nn.Linear,
    "NAC": arithmetic.NAC,
    "NACMul": arithmetic.NACMul,
    "NALU": arithmetic.NALU,
    "NAU": arithmetic.NAU,
    "NMU": arithmetic.NMU,
    "NMU-compiled": partial(arithmetic.NMU, compiled=True),
    "iNALU": arithmetic.iNALU,
    "NPU": arithmetic.NPU,
    "RealNPU": arithmetic.RealNPU,
    "GatedNAUNMU": arithmetic.GatedNAUNMU,
}
GOALS = {"NAU": 1.5, "NMU": 3.0, "NMU-compiled": 3.0, "NALU": 4.0}
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


def _step(name: str, shape: tuple[int, int], batch: int, device: torch.device) -> Callable[[], None]:
    module = UNITS[name](*shape).to(device)
    x = (torch.rand(batch, shape[0], device=device) + 0.5).requires_grad_(True)
    return forward_backward_step(module, x, device)


def run(args: argparse.Namespace) -> dict:
    device = resolve_device(args.device)
    torch.manual_seed(args.seed)
    names = [BASELINE, *dict.fromkeys(args.units)]
    steps = {(shape, name): _step(name, shape, args.batch_size, device) for shape in args.shapes for name in names}
    best = fastest_of_rounds(steps, args.rounds, args.min_time, args.threads, "layer-speed", args.progress)
    records = []
    for (shape, name), seconds in best.items():
        ratio = seconds / best[(shape, BASELINE)]
        goal = GOALS.get(name)
        records.append(
            {
                "shape": f"{shape[0]}→{shape[1]}",
                "unit": name,
                "microseconds": seconds * 1e6,
                "ratio_to_linear": ratio,
                "goal": goal,
                "meets_goal": None if goal is None else ratio <= goal,
            }
        )
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
    plot(records, args.out / "layer_speed.png")
    return results


def plot(records: list[dict], path: Path) -> None:
    """Grouped bars of the time relative to ``nn.Linear`` per shape, with the goals as tick marks."""
    plt = pyplot()
    shapes = list(dict.fromkeys(r["shape"] for r in records))
    units = [u for u in dict.fromkeys(r["unit"] for r in records) if u != BASELINE]
    width = 0.8 / max(1, len(units))
    figure, axis = plt.subplots(figsize=(2 + 2 * len(shapes), 4))
    for offset, unit in enumerate(units):
        ratios = {r["shape"]: r for r in records if r["unit"] == unit}
        xs = [index + (offset - (len(units) - 1) / 2) * width for index in range(len(shapes))]
        axis.bar(xs, [ratios[s]["ratio_to_linear"] for s in shapes], width, label=unit)
        if unit in GOALS:
            axis.scatter(xs, [GOALS[unit]] * len(xs), marker="_", s=400, color="black", zorder=3)
    axis.axhline(1.0, color="grey", linewidth=0.8)
    axis.set_xticks(range(len(shapes)), shapes)
    axis.set_yscale("log")
    axis.set_ylabel("forward+backward time / nn.Linear (log)")
    axis.set_title("Arithmetic units vs nn.Linear (black ticks: goals)")
    axis.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    plt.close(figure)
