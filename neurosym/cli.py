"""The ``neurosym`` console command: one sub-command per benchmark.

Each sub-command lives in a runner module of :mod:`neurosym.experiments` that exposes
``add_arguments(parser)`` and ``run(args)``; runners are imported only when chosen.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "hint-data": (
        "neurosym.experiments.hint_data",
        "HINT dataset: generate the splits in the official format, with statistics (Figure A2)",
    ),
    "solver-speed": (
        "neurosym.experiments.solver_speed",
        "HINT solver throughput: Lark LALR parse + execute versus the batch solver",
    ),
    "arithmetic": ("neurosym.experiments.arithmetic", "neural arithmetic units: the simple function task (Madsen & Johansen)"),
    "layer-speed": (
        "neurosym.experiments.layer_speed",
        "arithmetic units vs nn.Linear: forward+backward time (NAU, NMU, NALU goals)",
    ),
    "mathematics": (
        "neurosym.experiments.mathematics",
        "DeepMind Mathematics: Transformer, attentional LSTM and the symbolic route",
    ),
    "hint": (
        "neurosym.experiments.hint",
        "HINT seq2seq baselines: GRU/LSTM (+attention) and Transformers (vanilla, relative, universal)",
    ),
    "attention-speed": (
        "neurosym.experiments.attention_speed",
        "relative vs SDPA vanilla attention speed; cached vs uncached greedy decoding",
    ),
    "pipeline": (
        "neurosym.experiments.pipeline",
        "the grammar pipeline learned from results on a task: multi-digit MNIST addition, handwritten formulas",
    ),
    "pvr": ("neurosym.experiments.pvr", "Pointer Value Retrieval: vector/visual tasks, holdout shifts, noise sensitivity"),
}


INTERRUPTED = 130
"""Exit status after Ctrl-C outside a training loop: ``128 + SIGINT``, as a shell reports it."""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser; with ``command`` given, only that runner's module is imported."""
    parser = argparse.ArgumentParser(prog="neurosym", description="neurosym benchmarks and pipelines.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        child = sub.add_parser(name, help=summary, description=summary, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        if command in (None, name):
            importlib.import_module(module_name).add_arguments(child)
            child.set_defaults(_runner=module_name)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    args = build_parser(command).parse_args(argv)
    runner = importlib.import_module(args._runner)
    from neurosym.training.stopping import TrainingInterrupted  # after the runner: torch is loaded by now

    try:
        runner.run(args)
    except TrainingInterrupted as stop:
        print(f"neurosym {args.command}: {stop}", file=sys.stderr)
        return stop.exit_status
    except KeyboardInterrupt:  # outside a training loop (data generation, evaluation) or a second Ctrl-C
        print(f"neurosym {args.command}: interrupted; files are written atomically, so run it again to continue", file=sys.stderr)
        return INTERRUPTED
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
