"""HINT solver throughput: Lark LALR parse + execute versus the vectorised batch solver.

Both paths solve the same random expressions (the HINT sampling scheme: an operator drawn uniformly
from + − × ÷, i ~ U{0..n−1} of the remaining operators to its left, digits uniform). The batch solver's
answers are checked against the Lark path on every expression the Lark path solved, and the run
fails if any differs. Measurements are interleaved: each of ``--repeats`` rounds times every path
once, and the fastest round of each path is kept, so a burst of load from other processes cannot
favour one path. Throughput is reported per wall-clock second and per CPU second of this process.
The solver is numpy on the CPU, so there is no ``--device`` option.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

from neurosym.data.hint import random_sentences
from neurosym.experiments.options import (
    add_preset_option,
    add_run_options,
    apply_threads,
    comma_list,
    non_negative_int,
    positive_int,
)
from neurosym.experiments.report import format_table, pyplot, save_json
from neurosym.semantics import HINT_SEMANTICS, BatchSolver, execute
from neurosym.syntax import lark_parser, parse


def timed(work: Callable[[], object]) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds of this process) of one call of ``work()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def lark_answers(sentences: list[str]) -> list[int | None]:
    """The reference path: Lark LALR parse, then the tree executor."""
    return [execute(parse(s), HINT_SEMANTICS).value for s in sentences]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--operators", type=comma_list(non_negative_int, what="operator count"), default=[10],
        help="comma-separated operator counts n_op of the expressions",
    )  # fmt: skip
    parser.add_argument(
        "--count", type=positive_int, default=32768, help="expressions sampled per operator count (the largest batch)"
    )
    parser.add_argument("--lark-count", type=positive_int, default=2000, help="expressions per operator count for the Lark path")
    parser.add_argument(
        "--batch-sizes", type=comma_list(positive_int, what="batch size"), default=[1, 16, 256, 4096, 32768],
        help="comma-separated batch sizes of the batch solver",
    )  # fmt: skip
    parser.add_argument("--repeats", type=positive_int, default=5, help="interleaved timing rounds; the fastest is kept")
    add_preset_option(
        parser, {"smoke": "512 expressions (100 through Lark), small batches", "cpu": "--count and --lark-count as given"}, "cpu"
    )
    add_run_options(parser, out="results/solver-speed", threads=1, trains=False)


def run(args: argparse.Namespace) -> dict:
    apply_threads(args.threads)
    count, lark_count = (512, 100) if args.preset == "smoke" else (args.count, args.lark_count)
    batch_sizes = [b for b in args.batch_sizes if b <= count]
    if not batch_sizes or lark_count > count:
        raise SystemExit("neurosym solver-speed: --batch-sizes needs a size <= --count, and --lark-count must not exceed --count")
    rng = np.random.default_rng(args.seed)
    solver = BatchSolver(HINT_SEMANTICS)
    lark_parser()  # build the parser before timing
    runs = []
    for n_operators in args.operators:
        sentences = random_sentences(n_operators, count, rng)
        expected = lark_answers(sentences[:lark_count])
        if solver.solve(sentences[:lark_count]) != expected:
            raise AssertionError(f"the batch solver disagrees with Lark on n_op={n_operators} expressions")
        lark_sentences = sentences[:lark_count]
        runs.append(
            {
                "n_operators": n_operators,
                "path": "lark",
                "batch_size": 1,
                "expressions": lark_count,
                "work": lambda s=lark_sentences: lark_answers(s),
                "agrees_with_lark": True,
                "invalid": sum(v is None for v in expected),
            }
        )
        for size in batch_sizes:
            solved = max(size, lark_count)  # at least as many expressions as the Lark path
            batches = [sentences[i : min(i + size, solved)] for i in range(0, solved, size)]
            runs.append(
                {
                    "n_operators": n_operators,
                    "path": "batch",
                    "batch_size": size,
                    "expressions": solved,
                    "work": lambda b=batches: [solver.solve(batch) for batch in b],
                }
            )
    for _ in tqdm(range(args.repeats), desc="solver-speed rounds"):
        for entry in runs:
            wall, cpu = timed(entry["work"])
            entry["seconds"] = min(entry.get("seconds", wall), wall)
            entry["cpu_seconds"] = min(entry.get("cpu_seconds", cpu), cpu)
    for entry in runs:
        del entry["work"]
        entry["per_second"] = entry["expressions"] / entry["seconds"]
        entry["per_cpu_second"] = entry["expressions"] / entry["cpu_seconds"]
    lark = {r["n_operators"]: r for r in runs if r["path"] == "lark"}
    for entry in runs:
        entry["speedup"] = entry["per_second"] / lark[entry["n_operators"]]["per_second"]
        entry["cpu_speedup"] = entry["per_cpu_second"] / lark[entry["n_operators"]]["per_cpu_second"]
    results = {"machine": "CPU (numpy)", "seed": args.seed, "repeats": args.repeats, "runs": runs}

    headers = ["n_op", "path", "batch", "expressions", "expr/s (wall)", "× Lark", "expr/s (CPU)", "× Lark (CPU)"]
    rows = [
        [
            r["n_operators"],
            r["path"],
            r["batch_size"],
            r["expressions"],
            round(r["per_second"]),
            f"{r['speedup']:.1f}",
            round(r["per_cpu_second"]),
            f"{r['cpu_speedup']:.1f}",
        ]
        for r in runs
    ]
    print(format_table(headers, rows))
    args.out.mkdir(parents=True, exist_ok=True)
    save_json(results, args.out / "solver_speed.json")
    plot(results, args.out / "solver_speed.png")
    return results


def plot(results: dict, path: Path) -> None:
    """Wall-clock throughput against batch size (log–log), one line per operator count, Lark dashed."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(6, 4))
    for n_operators in sorted({r["n_operators"] for r in results["runs"]}):
        runs = [r for r in results["runs"] if r["n_operators"] == n_operators]
        batch = [r for r in runs if r["path"] == "batch"]
        line = axes.plot(
            [r["batch_size"] for r in batch],
            [r["per_second"] for r in batch],
            "o-",
            label=f"batch solver, n_op={n_operators}",
        )
        lark = next(r for r in runs if r["path"] == "lark")
        axes.axhline(
            lark["per_second"],
            linestyle="--",
            color=line[0].get_color(),
            label=f"Lark LALR + execute, n_op={n_operators}",
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("batch size (sentences per call)")
    axes.set_ylabel("expressions per second (wall clock)")
    axes.set_title("HINT solver throughput")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
