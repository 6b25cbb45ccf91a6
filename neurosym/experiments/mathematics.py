"""DeepMind Mathematics benchmark (Saxton et al., 2019): Transformer, attentional LSTM, symbolic route.

Data come from DeepMind's generator (run in its own environment, see :mod:`neurosym.data.mathematics`)
or from a released dataset folder (``--data-root``). Models train on the ``train-easy/medium/hard``
files of the chosen modules and are scored by exact match per module on ``interpolate`` and on the
matching ``extrapolate`` modules; the split score is the mean over modules, as in the paper. The
symbolic route (grammar + exact execution, :mod:`neurosym.semantics.mathematics_arithmetic`) answers the
same test questions without training.
"""

from __future__ import annotations

import argparse
import functools
import time
from dataclasses import asdict

import torch

from neurosym.experiments.options import (
    add_compile_option,
    add_preset_option,
    add_run_options,
    apply_threads,
    comma_list,
    existing_folder,
    positive_float,
    positive_int,
)
from neurosym.experiments.report import format_table
from neurosym.metrics.mathematics import results_table
from neurosym.metrics.published import MATHEMATICS
from neurosym.models.seq2seq.mathematics_task import (
    CONFIGS,
    DEFAULT_MODULES,
    NEURAL_MODELS,
    greedy_answers,
    load_data,
    score,
    train_model,
)
from neurosym.plots.mathematics import plot_module_accuracies
from neurosym.semantics.mathematics_arithmetic import ARITHMETIC_MODULES, symbolic_answers
from neurosym.training import resolve_device
from neurosym.training.checkpoint import save_json
from neurosym.training.stopping import minutes_to_seconds

MODELS = ("symbolic", *NEURAL_MODELS)


PRESET_MEANINGS = {
    "smoke": "tiny models, 30 training and 10 test questions per module: checks that everything runs (a minute)",
    "cpu": "d_model 128, 2 + 2 layers, 1,200 steps of batch 64: about ten minutes per model on 2 cores",
    "paper": "the paper's d_model 512, batch 1024, 500k steps (meant for GPUs)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models", type=comma_list(str, what="model", choices=MODELS), default=list(MODELS),
        help=f"comma-separated models to evaluate from {', '.join(MODELS)}",
    )  # fmt: skip
    parser.add_argument(
        "--modules", type=comma_list(str, what="module"), default=list(DEFAULT_MODULES),
        help="comma-separated training/interpolation modules (file stems)",
    )  # fmt: skip
    add_preset_option(parser, PRESET_MEANINGS, default="cpu")
    parser.add_argument("--steps", type=positive_int, default=None, help="training steps (default: the config's)")
    parser.add_argument("--batch-size", type=positive_int, default=None, help="batch size (default: the config's)")
    parser.add_argument("--lr", type=positive_float, default=6e-4, help="Adam learning rate (paper: 6e-4)")
    parser.add_argument("--clip", type=positive_float, default=0.1, help="absolute gradient-value clipping (paper: 0.1)")
    parser.add_argument(
        "--train-per-module",
        type=positive_int,
        default=30_000,
        help="training questions per module (split over easy/medium/hard)",
    )
    parser.add_argument(
        "--test-per-module", type=positive_int, default=500, help="test questions per interpolation/extrapolation module"
    )
    parser.add_argument(
        "--data-root", type=existing_folder, default=None, help="a released dataset folder to read instead of generating"
    )
    parser.add_argument("--eval-batch-size", type=positive_int, default=256, help="questions per greedy-decoding batch")
    parser.add_argument("--checkpoint-every", type=positive_int, default=250, help="steps between checkpoints")
    add_compile_option(parser)
    add_run_options(parser, out="results/mathematics")


def run(args: argparse.Namespace) -> dict:
    config = CONFIGS[args.preset]
    steps = args.steps if args.steps is not None else config.steps
    batch_size = args.batch_size if args.batch_size is not None else config.batch_size
    train_count = 30 if args.preset == "smoke" else args.train_per_module
    test_count = 10 if args.preset == "smoke" else args.test_per_module
    device = resolve_device(args.device)
    apply_threads(args.threads)
    neural = [name for name in args.models if name != "symbolic"]
    try:  # an unknown module or an unreadable --data-root: the message names it
        data = load_data(args.modules, train_count if neural else 0, test_count, args.seed, args.data_root, args.progress)
    except (RuntimeError, ValueError, FileNotFoundError) as error:
        raise SystemExit(f"neurosym mathematics: {error}") from None
    if neural and not data["train"]:
        raise SystemExit(
            "neurosym mathematics: no training questions left for the neural models (all of them occur in the test sets)"
        )

    results: dict = {
        "config": {**asdict(config), "steps": steps, "batch_size": batch_size, "lr": args.lr, "clip": args.clip},
        "device": str(device),
        "threads": torch.get_num_threads(),
        "train_questions": len(data["train"]),
        "test_questions_per_module": test_count,
        "modules": {regime: sorted({e.module for e in data[regime]}) for regime in ("interpolate", "extrapolate")},
        "published": MATHEMATICS,
        "models": {},
    }
    for name in args.models:
        started = time.perf_counter()
        if name == "symbolic":  # scored only on the modules whose question language it covers
            answer = symbolic_answers
            extra: dict = {}
            tests = {r: [e for e in data[r] if e.module in ARITHMETIC_MODULES[r]] for r in ("interpolate", "extrapolate")}
        else:
            model, extra = train_model(
                name, config, data["train"], steps, batch_size, device, args.out / name, lr=args.lr, clip=args.clip,
                seed=args.seed, checkpoint_every=args.checkpoint_every, resume=args.resume, compile=args.compile,
                progress=args.progress, time_limit=minutes_to_seconds(args.time_limit),
            )  # fmt: skip
            print(f"trained {name} ({extra['parameters']:,} parameters) for {extra['steps']} steps")
            answer = functools.partial(
                greedy_answers, model, device=device, batch_size=args.eval_batch_size, progress=args.progress
            )
            tests = data
        scores = {regime: score(answer, tests[regime]) for regime in ("interpolate", "extrapolate")}
        results["models"][name] = {**scores, **extra, "seconds": time.perf_counter() - started}

    print(format_table(*results_table(results)))
    args.out.mkdir(parents=True, exist_ok=True)
    save_json(results, args.out / "results.json")
    plot_module_accuracies(results, MATHEMATICS["transformer"], args.out / "accuracy.png")
    return results
