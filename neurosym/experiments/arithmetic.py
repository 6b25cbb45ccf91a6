"""``neurosym arithmetic``: Table 1 of "Measuring Arithmetic Extrapolation Performance" (Madsen &
Johansen 2019) with the NAU and NMU of Madsen & Johansen (2020), and a batched-training speed test.

Each model type is one batched model holding every (operation, seed) run as an ensemble member; a
run is solved when its extrapolation MSE at its best validation step is below the MSE of the
ε-perturbed optimal solution. The table gives the success rate with its Wilson 95 % interval beside the
published rate, the median solved-at step and the mean sparsity error of the solved runs.
"""

from __future__ import annotations

import argparse

import torch

from neurosym.benchmarking.arithmetic_results import cached_thresholds, published_operations, results_table, table_cells
from neurosym.benchmarking.arithmetic_speed import measure_models
from neurosym.benchmarking.arithmetic_training import SCHEDULES, GroupConfig, train_groups
from neurosym.data.arithmetic import OPERATIONS, RANGE_PAIRS, SubsetLayout, operation
from neurosym.experiments.options import (
    add_preset_option,
    add_run_options,
    apply_threads,
    comma_list,
    fraction_up_to_one,
    positive_float,
    positive_int,
    unit_interval,
)
from neurosym.experiments.report import format_table
from neurosym.models.arithmetic import MODEL_LAYERS, PAPER_ITERATIONS
from neurosym.plots.arithmetic import plot_learning_curves, plot_speedups, plot_success_rates
from neurosym.training import resolve_device
from neurosym.training.allocator import retain_freed_memory
from neurosym.training.checkpoint import save_json
from neurosym.training.device import amp_available
from neurosym.training.stopping import StopRequests, TrainingInterrupted, minutes_to_seconds

MODEL_NAMES = {"nac_mul": "NAC•", "nalu": "NALU", "nac_add": "NAC+", "linear": "Linear", "nau": "NAU", "nmu": "NMU"}
"""Command-line name → model name of the table (the table's names are accepted too)."""

PAPER = {"seeds": 100, "steps": PAPER_ITERATIONS, "cells": None}
"""The published budget: every cell of Table 1 (``cells=None``), 100 seeds of 5·10⁶ iterations."""
SMOKE = {"seeds": 10, "steps": 50_000, "cells": {"NAU": ("add", "sub"), "NAC+": ("sub",)}}
"""A CPU smoke test: the cells (model → operations) that converge within 5·10⁴ iterations (NAC+ on + needs about
5·10⁵ and Linear on + about 6·10⁴, so they are left out)."""


def _model_name(text: str) -> str:
    """A model of the table by its command-line name (``nmu``) or its table name (``NMU``), any case."""
    names = {key.lower(): value for key, value in MODEL_NAMES.items()} | {v.lower(): v for v in MODEL_LAYERS}
    if text.lower() not in names:
        raise argparse.ArgumentTypeError(f"unknown model {text!r}: choose from {', '.join(MODEL_NAMES)}")
    return names[text.lower()]


def _operation_name(text: str) -> str:
    try:
        return operation(text).name
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


PRESET_MEANINGS = {
    "smoke": f"{SMOKE['seeds']} seeds x {SMOKE['steps']:.0e} steps of the cells that converge early: NAU on "
    "+ and -, NAC+ on - (about 4 minutes on one thread)",
    "paper": "100 seeds x 5e6 steps of every published cell of Table 1 (meant for a GPU)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_preset_option(parser, PRESET_MEANINGS, default="smoke")
    parser.add_argument("--steps", type=positive_int, help="training steps per run (overrides the preset; 1e5 style accepted)")
    parser.add_argument("--seeds", type=positive_int, help="runs (seeds) per model and operation (overrides the preset)")
    parser.add_argument(
        "--models", type=comma_list(_model_name, what="model"),
        help=f"comma-separated models from {', '.join(MODEL_NAMES)} (overrides the preset)",
    )  # fmt: skip
    parser.add_argument(
        "--ops", type=comma_list(_operation_name, what="operation"),
        help=f"comma-separated operations from {', '.join(OPERATIONS)} for every model (default: the preset's; "
        "paper: the published cells of Table 1)",
    )  # fmt: skip
    parser.add_argument(
        "--schedule", choices=SCHEDULES, default="published",
        help="regulariser warm-ups at the paper's iterations (NMU 1e6-2e6, NAU 5e3-5e4), or scaled by steps/5e6 for a short budget",
    )  # fmt: skip
    parser.add_argument(
        "--ranges",
        choices=sorted(RANGE_PAIRS),
        default="[1,2]",
        help="interpolation range (its extrapolation range is the paper's)",
    )
    parser.add_argument("--input-size", type=positive_int, default=100, help="input size d of the task")
    parser.add_argument(
        "--subset-ratio", type=fraction_up_to_one, default=0.25, help="subset size as a fraction s of d (⌊s·d⌋ elements)"
    )
    parser.add_argument(
        "--overlap-ratio", type=unit_interval, default=0.5, help="overlap as a fraction o of the subset (⌊o·subset⌋)"
    )
    parser.add_argument("--eval-every", type=positive_int, default=1000, help="steps between evaluations")
    parser.add_argument("--batch-size", type=positive_int, default=128, help="training batch size per run")
    parser.add_argument("--lr", type=positive_float, default=1e-3, help="Adam learning rate")
    parser.add_argument(
        "--evaluation-size", type=positive_int, default=10_000, help="size of the fixed validation and test sets per run"
    )
    parser.add_argument("--epsilon", type=positive_float, default=1e-5, help="weight perturbation ε of the success threshold")
    parser.add_argument("--threshold-samples", type=positive_int, default=1_000_000, help="Monte-Carlo samples per threshold")
    parser.add_argument(
        "--amp",
        action="store_true",
        help="mixed precision on CUDA, bfloat16 where supported (off by default: half precision cannot reach the 1e-8 thresholds)",
    )
    add_run_options(parser, out="results/arithmetic")
    parser.add_argument(
        "--speed", action="store_true",
        help="instead of the table, time batched vs one-seed-at-a-time training of each of --models (on its first operation)",
    )  # fmt: skip
    parser.add_argument("--speed-seeds", type=positive_int, default=100, help="seeds of the speed test")
    parser.add_argument("--speed-steps", type=positive_int, default=300, help="training steps per seed in the speed test")


def run(args: argparse.Namespace) -> dict:
    preset = PAPER if args.preset == "paper" else SMOKE
    cells = preset["cells"] if args.models is None else None  # models of one's own choosing get their published cells
    if args.models is None:
        args.models = list(cells or MODEL_LAYERS)
    args.operations = {model: _operations_for(model, args.ops, cells) for model in args.models}
    args.steps, args.seeds = args.steps or preset["steps"], args.seeds or preset["seeds"]
    device = resolve_device(args.device)
    apply_threads(args.threads)
    if device.type == "cpu":  # the batched steps' MB-sized buffers would page-fault every step otherwise
        retain_freed_memory()
    amp = args.amp and amp_available(device)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.speed:
        return _run_speed(args, device, amp)
    return _run_table(args, device, amp)


def _run_table(args: argparse.Namespace, device: torch.device, amp: bool) -> dict:
    steps, seeds = args.steps, args.seeds
    try:
        layout = SubsetLayout(args.input_size, args.subset_ratio, args.overlap_ratio)
    except ValueError as error:
        raise SystemExit(f"neurosym arithmetic: {error}") from None
    operations = (op for model_operations in args.operations.values() for op in model_operations)
    thresholds = cached_thresholds(
        operations, args.ranges, layout, args.epsilon, args.threshold_samples, args.out / "thresholds.json"
    )
    configs = []
    for model in args.models:
        configs.append(GroupConfig(
            model, args.operations[model], tuple(range(seeds)), steps, args.eval_every, args.batch_size, args.lr,
            args.ranges, args.evaluation_size, args.seed, args.input_size, args.subset_ratio, args.overlap_ratio, args.schedule,
        ))  # fmt: skip
    with StopRequests(minutes_to_seconds(args.time_limit)) as stops:
        runs, pending = train_groups(configs, device, args.out / "checkpoints", args.resume, stops, amp, args.progress)
    evaluated = [group for group in runs if group.curves.steps]
    cells = table_cells(evaluated, thresholds, args.models)
    result = {
        "command": "arithmetic",
        "preset": args.preset,
        "device": str(device),
        "steps": steps,
        "seeds": seeds,
        "ranges": args.ranges,
        "schedule": args.schedule,
        "layout": {"input_size": layout.input_size, "subset_size": layout.subset_size, "overlap_size": layout.overlap_size},
        "thresholds": thresholds,
        "finished": not pending and all(group.finished for group in runs),
        "not_evaluated": [group.config.model for group in runs if not group.curves.steps],
        "not_started": pending,
        "training_seconds": {group.config.model: group.seconds for group in runs},
        "cells": cells,
    }
    caption, headers, rows = results_table(cells, seeds, steps, (PAPER["seeds"], PAPER["steps"]))
    print(caption)
    print(format_table(headers, rows))
    save_json(result, args.out / "results.json")
    if cells:
        plot_success_rates(cells, args.out / "success_rates.png")
        plot_learning_curves(evaluated, thresholds, args.out / "learning_curves.png")
    print(f"Wrote {args.out / 'results.json'}" + (f", {args.out / 'success_rates.png'} and learning_curves.png" if cells else ""))
    stopped = runs[-1]
    if stopped.stop_reason is not None:
        waiting = [f"{label}: {', '.join(models)}" for label, models in
                   (("not evaluated yet", result["not_evaluated"]), ("not started", pending)) if models]  # fmt: skip
        print(f"{stopped.config.model} stopped at step {stopped.step} of {steps}" + "".join(f"; {part}" for part in waiting))
        raise TrainingInterrupted(
            stopped.step, steps, stopped.stop_reason, args.out / "checkpoints", resume_with="the same command"
        )
    return result


def _operations_for(model: str, chosen: list[str] | None, cells: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The operations ``model`` is trained on: ``chosen``, else its operations in ``cells``, else those with a
    published rate (× ÷ + − order)."""
    if chosen is not None:
        return tuple(chosen)
    return cells[model] if cells is not None else published_operations(model)


SPEEDUP_GOAL = 20
"""The batched-seed speed-up the benchmark aims at on a CPU (shown in the speed plot)."""


def _run_speed(args: argparse.Namespace, device: torch.device, amp: bool) -> dict:
    """Time every model of ``--models`` on its first operation (``--ops`` or the model's default)."""
    first = {model: (args.operations[model] or ("add",))[0] for model in args.models}
    timed = measure_models(first, args.speed_seeds, args.speed_steps, device, amp)
    result = {"command": "arithmetic --speed", "device": str(device), "threads": torch.get_num_threads(),
              "seeds": args.speed_seeds, "steps": args.speed_steps, "models": timed}  # fmt: skip
    rows = [
        [f"{run['model']} ({OPERATIONS[run['operation']].symbol})", mode, args.speed_seeds, args.speed_steps,
         run[f"{key}_seconds"], run[f"{key}_rate"], run["speedup"] if key == "batched" else 1.0]
        for run in timed
        for mode, key in (("batched (one ensemble model)", "batched"), ("one seed at a time", "sequential"))
    ]  # fmt: skip
    print(format_table(["Model", "Mode", "Seeds", "Steps", "Seconds", "Seed-iterations/s", "Speed-up"], rows))
    save_json(result, args.out / "speed.json")
    labels = [f"{run['model']} ({OPERATIONS[run['operation']].symbol})" for run in timed]
    title = f"{args.speed_seeds} seeds batched vs one at a time ({device}, {torch.get_num_threads()} threads)"
    plot_speedups(labels, [run["speedup"] for run in timed], SPEEDUP_GOAL, title, args.out / "speed.png")
    return result
