"""DeepMind Mathematics benchmark (Saxton et al., 2019): Transformer, attentional LSTM, symbolic route.

Data come from DeepMind's generator (run in its own environment, see :mod:`neurosym.data.mathematics`)
or from a released dataset folder (``--data-root``). Models train on the ``train-easy/medium/hard``
files of the chosen modules and are scored by exact match per module on ``interpolate`` and on the
matching ``extrapolate`` modules; the split score is the mean over modules, as in the paper. The
symbolic route (grammar + exact execution, :mod:`neurosym.semantics.mathematics_arithmetic`) answers the
same test questions without training.
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from neurosym.data.mathematics import MathExample
from neurosym.experiments import CommandFailed
from neurosym.experiments.options import (
    COMPILE_HELP,
    TrainingOptions,
    apply_threads,
    comma_list,
    existing_folder,
    option,
    positive_float,
    positive_int,
    preset_option,
    reject_unused,
    setup_value,
)
from neurosym.experiments.report import format_table, report_results
from neurosym.metrics.mathematics import results_table
from neurosym.metrics.published import MATHEMATICS
from neurosym.models.seq2seq import Seq2Seq
from neurosym.models.seq2seq.mathematics_task import (
    CONFIGS,
    DEFAULT_MODULES,
    NEURAL_MODELS,
    TRAIN_REGIMES,
    greedy_answers,
    load_data,
    score,
    train_model,
)
from neurosym.plots.mathematics import plot_module_accuracies
from neurosym.semantics.mathematics_arithmetic import ARITHMETIC_MODULES, symbolic_answers
from neurosym.training import resolve_device
from neurosym.training.checkpoint import Setup, save_json
from neurosym.training.stopping import minutes_to_seconds, time_left

MODELS = ("symbolic", *NEURAL_MODELS)


QUESTIONS_PER_MODULE = {"smoke": (30, 10), "cpu": (30_000, 500), "paper": (30_000, 500)}
"""Each preset's training and test questions per module, where ``--train-per-module`` and ``--test-per-module`` are not
given."""
PRESET_MEANINGS = {
    "smoke": "tiny models, {} training and {} test questions per module: checks that everything runs (a minute)".format(
        *QUESTIONS_PER_MODULE["smoke"]
    ),
    "cpu": "d_model 128, 2 + 2 layers, 1,200 steps of batch 64: about ten minutes per model on 2 cores",
    "paper": "the paper's d_model 512, batch 1024, 500k steps (meant for GPUs)",
}


@dataclass(frozen=True)
class MathematicsOptions(TrainingOptions):
    """The options of ``neurosym mathematics``."""

    models: list[str] = option(
        None, f"comma-separated models to evaluate from {', '.join(MODELS)}",
        parse=comma_list(str, what="model", choices=MODELS, distinct=True), factory=lambda: list(MODELS),
    )  # fmt: skip
    modules: list[str] = option(
        None, "comma-separated training/interpolation modules (file stems)", parse=comma_list(str, what="module", distinct=True),
        factory=lambda: list(DEFAULT_MODULES),
    )  # fmt: skip
    preset: str = preset_option(PRESET_MEANINGS, "cpu")
    steps: int | None = option(None, "training steps (default: the config's)", parse=positive_int)
    batch_size: int | None = option(None, "batch size (default: the config's)", parse=positive_int)
    learning_rate: float = option(6e-4, "Adam learning rate (paper: 6e-4)", parse=positive_float, aliases=["--lr"])
    clip: float = option(0.1, "absolute gradient-value clipping (paper: 0.1)", parse=positive_float)
    train_per_module: int | None = option(
        None, "training questions per module, a third (rounded down) each of easy/medium/hard (default: {:,}; the smoke preset's {:,})".format(
            QUESTIONS_PER_MODULE["cpu"][0], QUESTIONS_PER_MODULE["smoke"][0]
        ), parse=positive_int,
    )  # fmt: skip
    test_per_module: int | None = option(
        None, "test questions per interpolation/extrapolation module (default: {:,}; the smoke preset's {:,})".format(
            QUESTIONS_PER_MODULE["cpu"][1], QUESTIONS_PER_MODULE["smoke"][1]
        ), parse=positive_int,
    )  # fmt: skip
    data: Path | None = option(
        None, "a released dataset folder to read instead of generating", parse=existing_folder, aliases=["--data-root"]
    )
    eval_batch_size: int = option(256, "questions per greedy-decoding batch", parse=positive_int)
    checkpoint_every: int = option(250, "steps between checkpoints", parse=positive_int)
    compile: bool = option(False, COMPILE_HELP)

    def __post_init__(self) -> None:
        if set(self.models) <= {"symbolic"}:  # the symbolic route trains nothing
            reject_unused(self, NEURAL_ONLY, "the neural models (--models other than symbolic)")
        if self.train_per_module is not None and self.train_per_module < len(TRAIN_REGIMES):  # (none read; blamed on the tests)
            raise ValueError(f"--train-per-module is split over easy/medium/hard: at least 3, got {self.train_per_module}")

    def checkpoints(self) -> Path | None:
        """``--out``, where the neural models' checkpoints lie; none where only the symbolic route runs (it trains
        nothing)."""
        return None if set(self.models) <= {"symbolic"} else self.out


NEURAL_ONLY = (
    "steps", "batch_size", "learning_rate", "clip", "train_per_module", "eval_batch_size", "checkpoint_every", "compile",
    "time_limit", "resume",
)  # fmt: skip
"""The options that only the neural models read: their training and greedy decoding."""


OPTIONS = MathematicsOptions


def run(options: MathematicsOptions) -> dict:
    config = CONFIGS[options.preset]
    steps = options.steps if options.steps is not None else config.steps
    batch_size = options.batch_size if options.batch_size is not None else config.batch_size
    train_count, test_count = QUESTIONS_PER_MODULE[options.preset]
    train_count, test_count = options.train_per_module or train_count, options.test_per_module or test_count
    device = resolve_device(options.device)
    apply_threads(options.threads)
    neural = [name for name in options.models if name != "symbolic"]
    try:  # an unknown module or an unreadable --data-root: the message names it
        data = load_data(options.modules, train_count if neural else 0, test_count, options.seed, options.data, options.progress)
    except (RuntimeError, ValueError, FileNotFoundError) as error:
        raise CommandFailed(str(error)) from None
    if neural and not data["train"]:
        raise CommandFailed("no training questions left for the neural models (all of them occur in the test sets)")

    results: dict = {
        "config": {**asdict(config), "steps": steps, "batch_size": batch_size, "lr": options.learning_rate, "clip": options.clip},
        "device": str(device),
        "threads": torch.get_num_threads(),
        "train_questions": len(data["train"]),
        "test_questions_per_module": test_count,
        "modules": {regime: sorted({e.module for e in data[regime]}) for regime in ("interpolate", "extrapolate")},
        "published": MATHEMATICS,
        "models": {},
    }
    data_setup = Setup(  # the test counts too: training questions that occur in a test set are dropped
        {"modules": options.modules, "train_per_module": train_count, "test_per_module": test_count,
         "data": setup_value(options.data, options.out)},
        {"test_per_module": QUESTIONS_PER_MODULE[options.preset][1]},  # (a checkpoint from before it was kept)
    )  # fmt: skip
    trained = _train_models(options, neural, data["train"], steps, batch_size, device, data_setup)
    for name in options.models:  # scored once every model has trained: a stopped call scores none of them
        started = time.perf_counter()
        if name == "symbolic":  # scored only on the modules whose question language it covers
            answer = symbolic_answers
            extra: dict = {}
            tests = {r: [e for e in data[r] if e.module in ARITHMETIC_MODULES[r]] for r in ("interpolate", "extrapolate")}
            training = 0.0
        else:
            model, extra, training = trained[name]
            answer = functools.partial(
                greedy_answers, model, device=device, batch_size=options.eval_batch_size, progress=options.progress
            )
            tests = data
        scores = {regime: score(answer, tests[regime]) for regime in ("interpolate", "extrapolate")}
        results["models"][name] = {**scores, **extra, "seconds": training + time.perf_counter() - started}

    print(format_table(*results_table(results)))
    options.out.mkdir(parents=True, exist_ok=True)
    save_json(results, options.out / "results.json")
    plot_module_accuracies(results, MATHEMATICS["transformer"], options.out / "accuracy.png")
    report_results(options.out, "results.json", "accuracy.png")
    return results


def _train_models(
    options: MathematicsOptions,
    names: list[str],
    train: list[MathExample],
    steps: int,
    batch_size: int,
    device: torch.device,
    data_setup: Setup,
) -> dict[str, tuple[Seq2Seq, dict, float]]:
    """Train (or resume) each neural model of ``names`` on ``train`` in turn, each within what is left of
    ``--time-limit``: by name, the model (in eval mode), its record (:func:`train_model`) and the seconds of this call
    its training took. A stop request ends the model in training with
    :class:`~neurosym.training.stopping.TrainingInterrupted`; the models after it wait for the next call."""
    limit, began = minutes_to_seconds(options.time_limit), time.perf_counter()
    trained: dict[str, tuple[Seq2Seq, dict, float]] = {}
    for name in names:
        started = time.perf_counter()
        model, extra = train_model(
            name, CONFIGS[options.preset], train, steps, batch_size, device, options.out / name, lr=options.learning_rate,
            clip=options.clip, seed=options.seed, checkpoint_every=options.checkpoint_every, resume=options.resume,
            compile=options.compile, progress=options.progress, time_limit=time_left(limit, started - began), data=data_setup,
        )  # fmt: skip
        print(f"trained {name} ({extra['parameters']:,} parameters) for {extra['steps']} steps")
        trained[name] = model, extra, time.perf_counter() - started
    return trained
