"""HINT solver throughput: Lark LALR parse + execute versus the vectorised batch solver.

Both paths solve the same random expressions (the HINT sampling scheme: an operator drawn uniformly
from + − × ÷, i ~ U{0..n−1} of the remaining operators to its left, digits uniform), measured by
:func:`neurosym.benchmarking.solver_speed.measure_solvers` (answers checked against the Lark path first;
fastest of ``--repeats`` interleaved rounds; per wall-clock and per CPU second). The solver is numpy on
the CPU, so there is no ``--device`` option.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neurosym.benchmarking.solver_speed import measure_solvers
from neurosym.data.hint import random_sentences
from neurosym.experiments.options import (
    ThreadOptions,
    apply_threads,
    comma_list,
    non_negative_int,
    option,
    positive_int,
    preset_option,
    seed_int,
)
from neurosym.experiments.report import fixed, format_table, report_results
from neurosym.plots.speed import plot_solver_throughput
from neurosym.training.checkpoint import save_json

DEFAULT_BATCH_SIZES = (1, 16, 256, 4096, 32768)
"""The batch sizes timed where ``--batch-sizes`` is not given (those up to the count)."""
PRESET_COUNTS = {"smoke": (512, 100), "cpu": (32768, 2000)}
"""Each preset's expressions per operator count and those through Lark, where ``--count`` and ``--lark-count`` are not given."""


@dataclass(frozen=True)
class SolverSpeedOptions(ThreadOptions):
    """The options of ``neurosym solver-speed``."""

    threads: int = option(1, "torch CPU threads (0: torch's default, all cores)", parse=non_negative_int)
    seed: int = option(0, "seed of the timed random expressions", parse=seed_int)
    preset: str = preset_option(
        {preset: "{:,} expressions ({:,} through Lark) unless given".format(*counts) for preset, counts in PRESET_COUNTS.items()},
        "cpu",
    )
    operator_counts: list[int] = option(
        None, "comma-separated operator counts n_op of the expressions",
        parse=comma_list(non_negative_int, what="operator count", distinct=True), aliases=["--operators"], factory=lambda: [10],
    )  # fmt: skip
    count: int | None = option(
        None, "expressions sampled per operator count, the largest batch (default: the preset's)", parse=positive_int
    )
    lark_count: int | None = option(
        None, "expressions per operator count for the Lark path (default: the preset's)", parse=positive_int
    )
    batch_sizes: list[int] | None = option(
        None, f"comma-separated batch sizes of the batch solver (default: {','.join(map(str, DEFAULT_BATCH_SIZES))}, those up "
        "to the count)",
        parse=comma_list(positive_int, what="batch size", distinct=True),
    )  # fmt: skip
    rounds: int = option(5, "interleaved timing rounds; the fastest is kept", parse=positive_int, aliases=["--repeats"])

    def writes_as_it_goes(self) -> bool:
        """``False``: the timing writes its results at its end only."""
        return False

    def __post_init__(self) -> None:
        count, lark_count, _ = self.budget()
        budget = "--count" if self.count is not None else f"the --preset {self.preset}'s count"
        if self.batch_sizes is not None and (larger := [size for size in self.batch_sizes if size > count]):
            raise ValueError(f"--batch-sizes {', '.join(map(str, larger))} exceed{'s' * (len(larger) == 1)} {budget} {count}")
        if lark_count > count:
            raise ValueError(f"--lark-count {lark_count} exceeds {budget} {count}")

    def budget(self) -> tuple[int, int, list[int]]:
        """Expressions per operator count, those through Lark, and the batch sizes that fit: the preset's or given."""
        count, lark_count = PRESET_COUNTS[self.preset]
        count, lark_count = self.count or count, self.lark_count or lark_count
        return count, lark_count, [size for size in self.batch_sizes or DEFAULT_BATCH_SIZES if size <= count]


OPTIONS = SolverSpeedOptions


def run(options: SolverSpeedOptions) -> dict:
    apply_threads(options.threads)
    count, lark_count, batch_sizes = options.budget()
    rng = np.random.default_rng(options.seed)
    sentences = {n_operators: random_sentences(n_operators, count, rng) for n_operators in options.operator_counts}
    runs = measure_solvers(sentences, lark_count, batch_sizes, options.rounds, options.progress)
    results = {"machine": "CPU (numpy)", "seed": options.seed, "rounds": options.rounds, "runs": runs}

    headers = ["n_op", "path", "batch", "expressions", "expr/s (wall)", "× Lark", "expr/s (CPU)", "× Lark (CPU)"]
    rows = [
        [
            r["n_operators"],
            r["path"],
            r["batch_size"],
            r["expressions"],
            fixed(r["per_second"], 0),
            fixed(r["speedup"], 1),
            fixed(r["per_cpu_second"], 0),
            fixed(r["cpu_speedup"], 1),
        ]
        for r in runs
    ]
    print(format_table(headers, rows))
    options.out.mkdir(parents=True, exist_ok=True)
    save_json(results, options.out / "solver_speed.json")
    plot_solver_throughput(runs, options.out / "solver_speed.png")
    report_results(options.out, "solver_speed.json", "solver_speed.png")
    return results
