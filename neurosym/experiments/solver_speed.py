"""HINT solver throughput: Lark LALR parse + execute versus the vectorised batch solver.

Both paths solve the same random expressions (the HINT sampling scheme: an operator drawn uniformly
from + − × ÷, i ~ U{0..n−1} of the remaining operators to its left, digits uniform), measured by
:func:`neurosym.benchmarking.solver_speed.measure_solvers` (answers checked against the Lark path first;
fastest of ``--repeats`` interleaved rounds; per wall-clock and per CPU second). The solver is numpy on
the CPU, so there is no ``--device`` option.
"""

from __future__ import annotations

import argparse

import numpy as np

from neurosym.benchmarking.solver_speed import measure_solvers
from neurosym.data.hint import random_sentences
from neurosym.experiments.options import (
    add_preset_option,
    add_run_options,
    apply_threads,
    comma_list,
    non_negative_int,
    positive_int,
)
from neurosym.experiments.report import format_table
from neurosym.plots.speed import plot_solver_throughput
from neurosym.training.checkpoint import save_json


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
    sentences = {n_operators: random_sentences(n_operators, count, rng) for n_operators in args.operators}
    runs = measure_solvers(sentences, lark_count, batch_sizes, args.repeats, args.progress)
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
    plot_solver_throughput(runs, args.out / "solver_speed.png")
    return results
