"""HINT solver throughput: Lark LALR parse + execute versus the vectorised batch solver.

Both paths solve the same random expressions (the HINT sampling scheme: an operator drawn uniformly
from + − × ÷, i ~ U{0..n−1} of the remaining operators to its left, digits uniform). The batch solver's
answers are checked against the Lark path on every expression the Lark path solved, and the run
fails if any differs. Throughput is wall-clock expressions per second, best of ``--repeats``.
The solver is numpy on the CPU, so there is no ``--device`` option.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from neurosym.experiments.report import format_table, pyplot, save_json
from neurosym.semantics import HINT_SEMANTICS, BatchSolver, execute
from neurosym.syntax import Node, lark_parser, parse, to_infix

OPERATORS = "+-*/"


def random_expression(n_operators: int, rng: random.Random) -> Node:
    """A random tree with ``n_operators`` operators, sampled as the HINT generator does."""
    if n_operators == 0:
        return Node(str(rng.randrange(10)))
    left = rng.randrange(n_operators)
    return Node(
        rng.choice(OPERATORS),
        (random_expression(left, rng), random_expression(n_operators - 1 - left, rng)),
    )


def best_seconds(work: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock timings of ``work()``."""
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        timings.append(time.perf_counter() - started)
    return min(timings)


def lark_answers(sentences: list[str]) -> list[int | None]:
    """The reference path: Lark LALR parse, then the tree executor."""
    return [execute(parse(s), HINT_SEMANTICS).value for s in sentences]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--operators", type=int, nargs="+", default=[10], help="operator counts n_op of the expressions"
    )
    parser.add_argument(
        "--count", type=int, default=32768, help="expressions sampled per operator count (the largest batch)"
    )
    parser.add_argument("--lark-count", type=int, default=2000, help="expressions per operator count for the Lark path")
    parser.add_argument(
        "--batch-sizes", type=int, nargs="+", default=[1, 16, 256, 4096, 32768], help="batch sizes of the batch solver"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timings per measurement; the fastest is kept")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random expressions")
    parser.add_argument("--quick", action="store_true", help="smoke test: few expressions, small batches")
    parser.add_argument("--out", type=Path, default=Path("results/solver-speed"), help="output folder")


def run(args: argparse.Namespace) -> dict:
    count, lark_count = (512, 100) if args.quick else (args.count, args.lark_count)
    batch_sizes = [b for b in args.batch_sizes if b <= count]
    if not batch_sizes or lark_count > count:
        raise ValueError("--batch-sizes needs a size <= --count, and --lark-count must not exceed --count")
    rng = random.Random(args.seed)
    solver = BatchSolver(HINT_SEMANTICS)
    lark_parser()  # build the parser before timing
    results: dict = {"machine": "CPU (numpy)", "seed": args.seed, "runs": []}
    steps = [(n, size) for n in args.operators for size in [0, *batch_sizes]]
    sentences_by_n = {n: [to_infix(random_expression(n, rng)) for _ in range(count)] for n in args.operators}
    for n_operators, size in tqdm(steps, desc="solver-speed"):
        sentences = sentences_by_n[n_operators]
        if size == 0:  # the Lark path
            seconds = best_seconds(lambda: lark_answers(sentences[:lark_count]), args.repeats)
            expected = lark_answers(sentences[:lark_count])
            agree = solver.solve(sentences[:lark_count]) == expected
            if not agree:
                raise AssertionError(f"the batch solver disagrees with Lark on n_op={n_operators} expressions")
            results["runs"].append(
                {
                    "n_operators": n_operators,
                    "path": "lark",
                    "batch_size": 1,
                    "expressions": lark_count,
                    "seconds": seconds,
                    "per_second": lark_count / seconds,
                    "agrees_with_lark": agree,
                    "invalid": sum(v is None for v in expected),
                }
            )
            continue
        solved = max(size, lark_count)  # at least as many expressions as the Lark path
        batches = [sentences[i : min(i + size, solved)] for i in range(0, solved, size)]
        seconds = best_seconds(lambda: [solver.solve(batch) for batch in batches], args.repeats)
        results["runs"].append(
            {
                "n_operators": n_operators,
                "path": "batch",
                "batch_size": size,
                "expressions": solved,
                "seconds": seconds,
                "per_second": solved / seconds,
            }
        )
    lark_rate = {r["n_operators"]: r["per_second"] for r in results["runs"] if r["path"] == "lark"}
    for entry in results["runs"]:
        entry["speedup"] = entry["per_second"] / lark_rate[entry["n_operators"]]

    headers = ["n_op", "path", "batch", "expressions", "expr/s", "× Lark"]
    rows = [
        [r["n_operators"], r["path"], r["batch_size"], r["expressions"], round(r["per_second"]), f"{r['speedup']:.1f}"]
        for r in results["runs"]
    ]
    print(format_table(headers, rows))
    args.out.mkdir(parents=True, exist_ok=True)
    save_json(results, args.out / "solver_speed.json")
    plot(results, args.out / "solver_speed.png")
    return results


def plot(results: dict, path: Path) -> None:
    """Throughput against batch size (log–log), one line per operator count, Lark dashed."""
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
    axes.set_ylabel("expressions per second")
    axes.set_title("HINT solver throughput")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
