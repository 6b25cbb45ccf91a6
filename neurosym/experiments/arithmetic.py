"""``neurosym arithmetic``: Table 1 of "Measuring Arithmetic Extrapolation Performance" (Madsen &
Johansen 2019) with the NAU and NMU of Madsen & Johansen (2020), and a batched-training speed test.

Each model type is one batched model holding every (operation, seed) run as an ensemble member; a
run is solved when its extrapolation MSE at its best validation step is below the MSE of the
ε-perturbed optimal solution. The table gives the success rate with its Wilson 95 % interval beside the
published rate, and over the solved runs the mean solved-at step and the mean sparsity error, each with its 95 %
profile-likelihood interval (gamma and beta distributions, as the paper reports them).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import torch

from neurosym.benchmarking.arithmetic_results import cached_thresholds, published_operations, results_table, table_cells
from neurosym.benchmarking.arithmetic_speed import measure_models
from neurosym.benchmarking.arithmetic_training import SCHEDULES, GroupConfig, train_groups
from neurosym.data.arithmetic import OPERATIONS, RANGE_PAIRS, SubsetLayout, operation
from neurosym.experiments.options import (
    TrainingOptions,
    apply_threads,
    comma_list,
    fraction_up_to_one,
    integer_in,
    option,
    positive_float,
    positive_int,
    preset_option,
    reject_unused,
    seed_int,
    unit_interval,
)
from neurosym.experiments.report import format_table, report_results
from neurosym.metrics.threshold import perturbed_solution_mse
from neurosym.models.arithmetic import MODEL_LAYERS, PAPER_ITERATIONS
from neurosym.plots.arithmetic import plot_learning_curves, plot_speedups, plot_success_rates
from neurosym.training import resolve_device
from neurosym.training.allocator import retain_freed_memory
from neurosym.training.checkpoint import save_json
from neurosym.training.device import amp_available
from neurosym.training.stopping import StopRequests, TrainingInterrupted, minutes_to_seconds

MODEL_NAMES = {"nac_mul": "NAC•", "nalu": "NALU", "nac_add": "NAC+", "linear": "Linear", "nau": "NAU", "nmu": "NMU"}
"""Command-line name → model name of the table (the table's names are accepted too)."""


@dataclass(frozen=True)
class Budget:
    """A preset's seeds and steps per cell, and its ``cells`` (model → operations; ``None``: every published cell)."""

    seeds: int
    steps: int
    cells: dict[str, tuple[str, ...]] | None


PAPER = Budget(seeds=100, steps=PAPER_ITERATIONS, cells=None)
"""The published budget: every cell of Table 1 (``cells=None``), 100 seeds of 5·10⁶ iterations."""
SMOKE = Budget(seeds=10, steps=50_000, cells={"NAU": ("add", "sub"), "NAC+": ("sub",)})
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
    "smoke": f"{SMOKE.seeds} seeds x {SMOKE.steps:,} steps of the cells that converge early: NAU on "
    "+ and -, NAC+ on - (about 4 minutes on one thread)",
    "paper": "100 seeds x 5e6 steps of every published cell of Table 1 (meant for a GPU)",
}


@dataclass(frozen=True)
class ArithmeticOptions(TrainingOptions):
    """The options of ``neurosym arithmetic``."""

    preset: str = preset_option(PRESET_MEANINGS, "smoke")
    seed: int = option(
        0, "seed of every run's initial weights and training batches (a run's input subsets and its validation and test "
        "data follow its run number whatever the seed)", parse=seed_int,
    )  # fmt: skip
    steps: int | None = option(None, "training steps per run (overrides the preset; 1e5 style accepted)", parse=positive_int)
    seeds: int | None = option(None, "runs (seeds) per model and operation (overrides the preset)", parse=positive_int)
    models: list[str] | None = option(
        None, f"comma-separated models from {', '.join(MODEL_NAMES)} (overrides the preset)",
        parse=comma_list(_model_name, what="model", distinct=True),
    )  # fmt: skip
    operations: list[str] | None = option(
        None, f"comma-separated operations from {', '.join(OPERATIONS)} for every model (default: the preset's; "
        "paper: the published cells of Table 1)", parse=comma_list(_operation_name, what="operation", distinct=True), aliases=["--ops"],
    )  # fmt: skip
    schedule: str = option(
        "published", "regulariser warm-ups at the paper's iterations (NMU 1e6-2e6, NAU 5e3-5e4), or scaled by "
        "steps/5e6 for a short budget", choices=SCHEDULES,
    )  # fmt: skip
    ranges: str = option("[1,2]", "interpolation range (its extrapolation range is the paper's)", choices=sorted(RANGE_PAIRS))
    input_size: int = option(100, "input size d of the task", parse=positive_int)
    subset_ratio: float = option(0.25, "subset size as a fraction s of d (⌊s·d⌋ elements)", parse=fraction_up_to_one)
    overlap_ratio: float = option(0.5, "overlap as a fraction o of the subset (⌊o·subset⌋)", parse=unit_interval)
    eval_every: int = option(1000, "steps between evaluations", parse=positive_int)
    batch_size: int = option(128, "training batch size per run", parse=positive_int)
    learning_rate: float = option(1e-3, "Adam learning rate", parse=positive_float, aliases=["--lr"])
    evaluation_size: int = option(10_000, "size of the fixed validation and test sets per run", parse=positive_int)
    epsilon: float = option(1e-5, "weight perturbation ε of the success threshold", parse=positive_float)
    threshold_samples: int = option(1_000_000, "Monte-Carlo samples per threshold", parse=integer_in(2))
    amp: bool = option(
        False,
        "mixed precision on CUDA, bfloat16 where supported (off by default: half precision cannot reach the 1e-8 thresholds)",
    )
    cuda_graph: bool = option(
        False, "capture each model's whole training step (batch, loss, Adam, clamp) into one CUDA graph and replay it: "
        "one launch per step instead of hundreds (float32, not with --amp; eager on the CPU)",
    )  # fmt: skip
    compile_loss: bool = option(
        False, "with --cuda-graph: compile each model's loss with torch.compile, so that its graph holds fused kernels "
        "(on CUDA several times fewer launches per step; compiling takes ~15 s a model)",
    )  # fmt: skip
    speed: bool = option(
        False, "instead of the table, time batched vs one-seed-at-a-time training of each of --models (on its first operation)"
    )
    speed_seeds: int = option(100, "seeds of the speed test", parse=positive_int)
    speed_steps: int = option(300, "training steps per seed in the speed test", parse=positive_int)

    def __post_init__(self) -> None:
        self.layout()  # its ValueError names the sizes that do not fit
        if self.cuda_graph and self.amp:
            raise ValueError("--cuda-graph runs in float32: choose --cuda-graph or --amp")
        if self.compile_loss and not self.cuda_graph:
            raise ValueError("--compile-loss compiles the loss inside the CUDA-graph step: give --cuda-graph too")
        if self.speed:
            reject_unused(self, TABLE_ONLY, "the table (not --speed)")
        else:
            reject_unused(self, ("speed_seeds", "speed_steps"), "--speed")
            for name in dict.fromkeys(op for ops in self.model_operations().values() for op in ops):  # (refused once
                perturbed_solution_mse(name, self.ranges, self.layout(), self.epsilon, samples=2)  # others' were estimated)

    def layout(self) -> SubsetLayout:
        return SubsetLayout(self.input_size, self.subset_ratio, self.overlap_ratio)

    def budget(self) -> Budget:
        """The ``--preset``'s budget and cells."""
        return PAPER if self.preset == "paper" else SMOKE

    def model_operations(self) -> dict[str, tuple[str, ...]]:
        """The operations each model trains on: ``--models`` (else the preset's cells' models) on ``--operations``
        (else each model's cells of the preset, or its published ones)."""
        cells = self.budget().cells if self.models is None else None  # models of one's own choosing: their published cells
        models = self.models if self.models is not None else list(cells or MODEL_LAYERS)
        return {model: _operations_for(model, self.operations, cells) for model in models}

    def checkpoints(self) -> Path | None:
        """``--out``'s folder of the models' checkpoints; none under ``--speed`` (timed afresh)."""
        return None if self.speed else self.out / CHECKPOINTS


OPTIONS = ArithmeticOptions
CHECKPOINTS = "checkpoints"
"""The folder under ``--out`` that holds a checkpoint per model of the table."""
TABLE_ONLY = (
    "steps", "seeds", "schedule", "ranges", "input_size", "subset_ratio", "overlap_ratio", "eval_every", "batch_size",
    "learning_rate", "evaluation_size", "epsilon", "threshold_samples", "cuda_graph", "compile_loss", "seed", "time_limit",
    "resume",
)  # fmt: skip
"""The options that train Table 1's cells, which ``--speed`` (its own seeds and steps of every model, timed afresh with no
checkpoint) does not read."""
GROUP_OPTIONS = ("eval_every", "batch_size", "learning_rate", "ranges", "evaluation_size", "seed", "input_size",
                 "subset_ratio", "overlap_ratio", "schedule")  # fmt: skip
"""The fields of :class:`GroupConfig` that the options set under the same names."""


def run(options: ArithmeticOptions) -> dict:
    preset, operations = options.budget(), options.model_operations()
    device = resolve_device(options.device)
    apply_threads(options.threads)
    if device.type == "cpu":  # the batched steps' MB-sized buffers would page-fault every step otherwise
        retain_freed_memory()
    amp = options.amp and amp_available(device)
    options.out.mkdir(parents=True, exist_ok=True)
    if options.speed:
        return _run_speed(options, operations, device, amp)
    return _run_table(options, operations, options.steps or preset.steps, options.seeds or preset.seeds, device, amp)


def _run_table(
    options: ArithmeticOptions, operations: dict[str, tuple[str, ...]], steps: int, seeds: int, device: torch.device, amp: bool
) -> dict:
    """Train ``seeds`` seeds of every model on its ``operations`` for ``steps`` steps; evaluate and write the table."""
    layout = options.layout()
    thresholds = cached_thresholds(
        (op for model_operations in operations.values() for op in model_operations),
        options.ranges,
        layout,
        options.epsilon,
        options.threshold_samples,
        options.out / "thresholds.json",
    )
    shared = {name: getattr(options, name) for name in GROUP_OPTIONS}
    configs = [GroupConfig(model, operations[model], tuple(range(seeds)), steps, **shared) for model in operations]
    with StopRequests(minutes_to_seconds(options.time_limit)) as stops:
        runs, pending = train_groups(
            configs,
            device,
            options.out / CHECKPOINTS,
            options.resume,
            stops,
            amp,
            options.progress,
            options.cuda_graph,
            compile_loss=options.compile_loss,
        )
    evaluated = [group for group in runs if group.curves.steps]
    cells = table_cells(evaluated, thresholds, list(operations))
    not_evaluated = [group.config.model for group in runs if not group.curves.steps]
    result = {
        "command": "arithmetic",
        "preset": options.preset if _preset_decides(options) else None,
        "device": str(device),
        "amp": amp,  # (what ran: --amp on a device without it trains in float32)
        "cuda_graph": options.cuda_graph,
        "steps": steps,
        "seeds": seeds,
        "ranges": options.ranges,
        "schedule": options.schedule,
        "layout": {"input_size": layout.input_size, "subset_size": layout.subset_size, "overlap_size": layout.overlap_size},
        "thresholds": thresholds,
        "finished": not pending and all(group.finished for group in runs),
        "not_evaluated": not_evaluated,
        "not_started": pending,
        "training_seconds": {group.config.model: group.seconds for group in runs},
        "cells": cells,
    }
    caption, headers, rows = results_table(cells, seeds, steps, (PAPER.seeds, PAPER.steps))
    print(caption)
    print(format_table(headers, rows))
    save_json(result, options.out / "results.json")
    if cells:
        plot_success_rates(cells, options.out / "success_rates.png")
        plot_learning_curves(evaluated, thresholds, options.out / "learning_curves.png")
    report_results(options.out, "results.json", *(("success_rates.png", "learning_curves.png") if cells else ()))
    ended = [(group, group.stop_reason) for group in runs if group.stop_reason is not None]
    if ended:  # (side by side, the stopped group need not be the last)
        stopped, reason = ended[0]
        waiting = [f"{label}: {', '.join(models)}" for label, models in
                   (("not evaluated yet", not_evaluated), ("not started", pending)) if models]  # fmt: skip
        print(f"{stopped.config.model} stopped at step {stopped.step} of {steps}" + "".join(f"; {part}" for part in waiting))
        raise TrainingInterrupted(stopped.step, steps, reason, options.out / CHECKPOINTS)
    return result


def _preset_decides(options: ArithmeticOptions) -> bool:
    """Whether ``--preset`` chose any of the run's steps, seeds or cells (the other options override it)."""
    return options.steps is None or options.seeds is None or (options.models is None and options.operations is None)


def _operations_for(model: str, chosen: list[str] | None, cells: dict[str, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The operations ``model`` is trained on: ``chosen``, else its operations in ``cells``, else those with a
    published rate (× ÷ + − order)."""
    if chosen is not None:
        return tuple(chosen)
    return cells[model] if cells is not None else published_operations(model)


SPEEDUP_GOAL = 20
"""The batched-seed speed-up the benchmark aims at on a CPU (shown in the speed plot)."""


def _run_speed(options: ArithmeticOptions, operations: dict[str, tuple[str, ...]], device: torch.device, amp: bool) -> dict:
    """Time every model of ``--models`` on its first operation (``--operations`` or the model's default)."""
    first = {model: (operations[model] or ("add",))[0] for model in operations}
    timed = measure_models(first, options.speed_seeds, options.speed_steps, device, amp)
    result = {"command": "arithmetic --speed", "device": str(device), "threads": torch.get_num_threads(),
              "seeds": options.speed_seeds, "steps": options.speed_steps, "models": timed}  # fmt: skip
    rows = [
        [f"{run['model']} ({OPERATIONS[run['operation']].symbol})", mode, options.speed_seeds, options.speed_steps,
         run[f"{key}_seconds"], run[f"{key}_rate"], run["speedup"] if key == "batched" else 1.0]
        for run in timed
        for mode, key in (("batched (one ensemble model)", "batched"), ("one seed at a time", "sequential"))
    ]  # fmt: skip
    print(format_table(["Model", "Mode", "Seeds", "Steps", "Seconds", "Seed-iterations/s", "Speed-up"], rows))
    save_json(result, options.out / "speed.json")
    labels = [f"{run['model']} ({OPERATIONS[run['operation']].symbol})" for run in timed]
    title = f"{options.speed_seeds} seeds batched vs one at a time ({device}, {torch.get_num_threads()} threads)"
    plot_speedups(labels, [run["speedup"] for run in timed], SPEEDUP_GOAL, title, options.out / "speed.png")
    report_results(options.out, "speed.json", "speed.png")
    return result
