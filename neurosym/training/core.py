"""The one training loop of the library. Every trainer runs its steps through :func:`run_training`:
:func:`neurosym.training.train` (a dataset, DistributedDataParallel, best weights and patience),
:func:`neurosym.pipelines.train_pipeline` (curriculum batches, abduction or REINFORCE), the few-shot
glyph training of :func:`neurosym.pipelines.learn_concept_from_images` and the arithmetic benchmark's
batched ensembles (:func:`neurosym.experiments.arithmetic.training.train_group`).

The caller supplies what differs between them: a step function ``step(index) -> (loss, logs)`` that
draws the batch of 0-based step ``index`` and returns its scalar loss (``None`` when the batch gives no
training signal) and a dict of values to log; an :class:`~neurosym.training.update.Update` (optimiser,
learning-rate scheduler, loss scaler, clipping, a hook after each update such as a weight clamp); an
optional evaluation hook; and, in :class:`Checkpointing`, its configuration and its own state.

The loop owns the rest: the step counter, the update, the progress bar, the check that the loss is
finite, evaluation steps, atomic checkpoints at a fixed interval with the global random generators (torch's, numpy's, Python's), the
resume (one resumability check, :func:`~neurosym.training.checkpoint.check_resumable`), and stop
requests: at SIGINT, SIGTERM or the time limit it finishes the step, checkpoints and raises
:class:`~neurosym.training.stopping.TrainingInterrupted`, so that resuming repeats an uninterrupted run.

A checkpoint holds ``config``, ``step``, ``model``, ``optimizer``, ``scheduler`` (with one), ``scaler``,
``random``, ``history`` (the logged steps) and ``seconds`` (of training so far, over every call of a resumed run:
steps, evaluations and checkpoints), beside the caller's own entries. Every logged step carries ``seconds`` too.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from tqdm.auto import tqdm

from neurosym.training.allocator import release_free_memory
from neurosym.training.checkpoint import (
    CheckpointMismatch,
    check_model_state,
    check_optimizer_state,
    check_resumable,
    check_setup,
    load_checkpoint,
    load_model_state,
    one_line,
    require_entries,
    save_checkpoint,
    writable_file,
)
from neurosym.training.checks import int_at_least, is_int
from neurosym.training.clock import TrainingClock
from neurosym.training.distributed import DistributedContext
from neurosym.training.stopping import TIME_LIMIT, StopRequests, TrainingInterrupted
from neurosym.training.update import Update

StepFunction = Callable[[int], tuple[torch.Tensor | None, Mapping[str, Any]]]
"""``step(index) -> (loss, logs)``: the scalar loss of 0-based step ``index`` (``None``: nothing to learn
from this batch; the step still counts) and the values to log for it (``{}``: none; else host values,
kept in the history and shown on the progress bar)."""
EvaluationHook = Callable[[int, "float | None"], "bool | None"]
"""``evaluate(steps_done, loss) -> stop``: called after the update of every evaluation step, with the loss
of that step read on the host (``None`` when the step had none); a true result ends training early."""

CUDA_SYNC_EVERY = 50
"""Steps between host reads of the loss off the CPU when ``sync_every`` is ``None``."""
CHECKPOINT_KEYS = frozenset(
    {"config", "step", "model", "optimizer", "scheduler", "scaler", "random", "history", "seconds", "setup"}
)
"""The loop's entries of a checkpoint; a caller's own state takes other names."""
STOP_REASONS = (None, TIME_LIMIT, "SIGTERM", "SIGINT")
"""Stop reasons in rising precedence: the processes of a distributed run stop for the highest any of them has."""


class StopSource(Protocol):
    """Anything that says whether and why to stop, as :meth:`StopRequests.reason` does."""

    def reason(self) -> str | None: ...


@dataclass(frozen=True)
class Checkpointing:
    """Where and when the loop checkpoints, and what a resume must agree with.

    Checkpoints go to ``path`` every ``every`` steps, at the last step (also one where the evaluation hook ended
    training early) and at a stop request. ``config``
    (a dataclass) is saved; resuming under a configuration that differs outside ``may_change`` raises
    ``ValueError``. ``save_extra() -> dict`` adds the caller's own entries (names outside
    :data:`CHECKPOINT_KEYS`); ``load_extra(checkpoint)`` gets the whole checkpoint back on resume, after
    the loop has restored its own state. ``resume=False`` starts afresh over an existing checkpoint. ``setup`` (JSON-like
    values: what the model and data were built from) is saved too, and resuming under another setup raises
    :class:`~neurosym.training.checkpoint.CheckpointMismatch` (a checkpoint written without one is accepted).
    ``check_extra(checkpoint)`` refuses a checkpoint by the caller's own entries (it raises) as the configuration and
    setup are checked: before anything of it is restored, so that a refused checkpoint leaves the model, the optimiser
    and the global random generators as they were.
    """

    path: str | Path
    config: Any
    every: int
    may_change: Collection[str] = ()
    save_extra: Callable[[], dict[str, Any]] | None = None
    load_extra: Callable[[dict[str, Any]], None] | None = None
    resume: bool = True
    setup: Mapping[str, Any] | None = None
    check_extra: Callable[[dict[str, Any]], None] | None = None

    def __post_init__(self) -> None:
        if not is_int(self.every) or self.every < 1:
            raise ValueError(f"checkpoints need a positive interval (an int), got every={self.every!r}")
        if not is_dataclass(self.config) or isinstance(self.config, type):  # asdict would fail at the first checkpoint
            raise TypeError(f"Checkpointing's config must be a dataclass instance, got {type(self.config).__name__}")
        writable_file(self.path, "checkpoint path")  # before training, not at the first checkpoint


@dataclass
class LoopResult:
    """Steps done and ``seconds`` of training (both over every call of a resumed run), the logged ``history``
    (one dict per step that logged values: ``step``, the values and ``seconds``), whether the evaluation hook
    ended training early, and of this call alone the steps it took and their wall-clock seconds (evaluations
    and checkpoints included)."""

    step: int
    history: list[dict[str, Any]] = field(default_factory=list)
    stopped_early: bool = False
    steps_this_call: int = 0
    seconds_this_call: float = 0.0
    seconds: float = 0.0


def random_state(device: torch.device) -> dict[str, Any]:
    """The global generator states that training draws from (dropout masks, a data set's augmentations and the
    like): torch's CPU generator's, the current CUDA device's when ``device`` is a GPU, numpy's and Python's, all as
    tensors and Python numbers, so that a checkpoint still loads with ``torch.load(..., weights_only=True)``."""
    numpy_state = np.random.get_state(
        legacy=False
    )  # {"bit_generator", "state": {"key" [624] uint32, "pos"}, "has_gauss", "gauss"}
    numpy_state["state"] = numpy_state["state"] | {"key": torch.from_numpy(numpy_state["state"]["key"].astype(np.int64))}
    state: dict[str, Any] = {"cpu": torch.get_rng_state(), "numpy": numpy_state, "python": random.getstate()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_random_state(state: dict[str, Any], device: torch.device) -> None:
    """Set the generators saved by :func:`random_state` (states loaded onto any device are moved back; numpy's and
    Python's are absent from checkpoints written before they were saved)."""
    torch.set_rng_state(state["cpu"].cpu())
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"].cpu(), device)
    if "numpy" in state:
        numpy_state = state["numpy"]
        key = numpy_state["state"]["key"].cpu().numpy().astype(np.uint32)
        np.random.set_state(numpy_state | {"state": numpy_state["state"] | {"key": key}})
    if "python" in state:
        random.setstate(state["python"])


@contextlib.contextmanager
def kept_random_state(device: torch.device) -> Iterator[None]:
    """Within the block, draws from the global generators of :func:`random_state` (torch's CPU generator, ``device``'s
    when it is a GPU, numpy's and Python's) leave them as they were: on leaving, their states come back."""
    state = random_state(device)
    try:
        yield
    finally:
        restore_random_state(state, device)


class _NonFiniteLoss:
    """The first step whose loss was not finite, kept on the loss's device so that recording it never waits
    for the device; :meth:`check` reads it (one sync) and raises ``FloatingPointError`` naming that step."""

    def __init__(self) -> None:
        self.step: torch.Tensor | None = None  # 0: every loss so far was finite
        self.value: torch.Tensor | None = None

    def record(self, loss: torch.Tensor, step: int) -> None:
        loss = loss.detach()
        if self.step is None or self.value is None:  # both are set together, at the first record
            self.step = torch.zeros((), dtype=torch.long, device=loss.device)
            self.value = torch.zeros((), device=loss.device)
        first = (self.step == 0) & ~torch.isfinite(loss)
        self.step = torch.where(first, step, self.step)
        self.value = torch.where(first, loss.float(), self.value)

    def check(self) -> None:
        if self.step is not None and self.value is not None and (step := int(self.step.item())):
            raise FloatingPointError(f"the training loss became {self.value.item()} at step {step}")


def _agreed_stop(reason: str | None, context: DistributedContext | None) -> str | None:
    """The stop reason every process acts on (one all-reduce per step when distributed)."""
    if context is None or not context.is_distributed:
        return reason
    code = torch.tensor([STOP_REASONS.index(reason)], device=context.device)
    dist.all_reduce(code, op=dist.ReduceOp.MAX)
    return STOP_REASONS[int(code.item())]


def _due(step: int, every: int | None, max_steps: int) -> bool:
    """Whether 1-based ``step`` is one of every ``every`` steps or the last (never when ``every`` is None)."""
    return every is not None and (step % every == 0 or step == max_steps)


def _check_entries(saved: dict[str, Any], path: str | Path, update: Update) -> None:
    """Refuse (``ValueError`` naming ``path``) a checkpoint that lacks the loop's entries (the ``scheduler`` too where
    ``update`` has one: :func:`~neurosym.training.checkpoint.require_entries`) or holds one of another kind:
    a ``config``, ``model`` or ``optimizer`` that is no mapping (a file of another program that saved the objects
    themselves failed with a ``TypeError`` or ``AttributeError`` naming no file), a ``step`` that is no int of at least
    0 (a tensor or a negative one trained on from it), ``random`` generator states without the CPU generator's."""
    expected = ["config", "step", "model", "optimizer"]
    if update.scheduler is not None:
        expected.append("scheduler")
    require_entries(saved, expected, path)
    entries = ("config", "model", "optimizer")
    odd = [f"its {name} is a {type(saved[name]).__name__}" for name in entries if not isinstance(saved[name], Mapping)]
    if not is_int(saved["step"]) or saved["step"] < 0:
        odd.append(f"its step is {saved['step']!r:.40}, not a count of steps")
    if "random" in saved and not (isinstance(saved["random"], Mapping) and isinstance(saved["random"].get("cpu"), torch.Tensor)):
        odd.append("its random holds no state of the CPU generator")
    if odd:
        raise ValueError(f"{path} is not a checkpoint of this training loop ({'; '.join(odd)}); remove it")


def _resume(
    saved: dict[str, Any], model: nn.Module, update: Update, checkpoint: Checkpointing, device: torch.device
) -> tuple[int, list[dict[str, Any]], float]:
    """Restore the loop's state (and the caller's) from ``saved``, once all of it has been checked (configuration,
    setup, the caller's entries, the model's and the optimiser's states: a refused checkpoint restores nothing);
    returns the steps done, the history and the seconds of training so far."""
    _check_entries(saved, checkpoint.path, update)
    check_resumable(saved["config"], checkpoint.config, checkpoint.may_change, checkpoint.path)
    if checkpoint.setup is not None:
        check_setup(saved.get("setup"), checkpoint.setup, checkpoint.path)
    if checkpoint.check_extra is not None:
        checkpoint.check_extra(saved)
    source = f"the checkpoint {checkpoint.path}"
    check_model_state(model, saved["model"], source)
    check_optimizer_state(update.optimizer, saved["optimizer"], source)
    with _all_or_nothing(update, source):
        update.optimizer.load_state_dict(saved["optimizer"])
        if update.scheduler is not None:
            update.scheduler.load_state_dict(saved["scheduler"])
        if saved.get("scaler"):  # empty when written without a float16 loss scale: a CPU run continues on a GPU afresh
            update.scaler.load_state_dict(saved["scaler"])
        load_model_state(model, saved["model"], source)  # (last: its weights are not put back)
    if "random" in saved:  # absent from checkpoints written before it was saved
        restore_random_state(saved["random"], device)
    if checkpoint.load_extra is not None:
        checkpoint.load_extra(saved)
    history = list(saved.get("history", []))
    seconds = saved.get("seconds", history[-1].get("seconds", 0.0) if history else 0.0)  # older: in the history only
    return int(saved["step"]), history, float(seconds)


@contextlib.contextmanager
def _all_or_nothing(update: Update, source: str) -> Iterator[None]:
    """Within the block the state of the checkpoint ``source`` is loaded into ``update``'s optimiser, scheduler and
    loss scaler (and then the model, checked beforehand); an error there puts back the states they had (a
    :class:`~neurosym.training.checkpoint.CheckpointMismatch`, or any other error raised as one naming ``source``),
    so that a refused checkpoint leaves no half-restored optimiser behind."""
    parts: list[Any] = [part for part in (update.optimizer, update.scheduler, update.scaler) if part is not None]
    before = [part.state_dict() for part in parts]
    try:
        yield
    except Exception as error:
        for part, state in zip(parts, before):
            part.load_state_dict(state)
        if isinstance(error, CheckpointMismatch):
            raise
        raise CheckpointMismatch(f"{source} cannot be restored here ({type(error).__name__}: {one_line(error)})") from None


def run_training(
    model: nn.Module,
    step: StepFunction,
    update: Update,
    max_steps: int,
    *,
    device: torch.device,
    evaluate: EvaluationHook | None = None,
    eval_every: int | None = None,
    checkpoint: Checkpointing | None = None,
    context: DistributedContext | None = None,
    stops: StopSource | None = None,
    time_limit: float | None = None,
    progress: bool = False,
    description: str | None = None,
    sync_every: int | None = None,
    check_finite: bool = True,
    finished: Callable[[], bool] | None = None,
) -> LoopResult:
    """Run steps ``step(i)`` for ``i`` from the resumed step (0 afresh) up to ``max_steps``, each followed
    by ``update(loss)``; returns a :class:`LoopResult`.

    ``evaluate`` runs after every ``eval_every`` steps and the last; ``checkpoint`` resumes from an existing
    checkpoint and writes one as it says; ``finished()``, asked after a resume, says whether the resumed run had already
    ended early (its evaluation hook stopped it), and then no step is taken. Stop requests come from ``stops`` (opened by the caller) or,
    without it, from a :class:`StopRequests` of ``time_limit`` seconds opened here; at one, the loop
    finishes the step, checkpoints and raises :class:`TrainingInterrupted` (after the last step it just
    returns). ``check_finite`` raises ``FloatingPointError`` at the first read of the loss (every
    ``sync_every`` steps, default every step on the CPU and :data:`CUDA_SYNC_EVERY` elsewhere, and at
    evaluation and checkpoint steps and the last) after a non-finite one, before that read's update and before any
    checkpoint holds its weights. ``device`` is where the model trains (checkpoints are loaded there);
    ``context`` makes a distributed run agree on stops and checkpoint and show progress on rank 0 only.
    """
    if not is_int(max_steps) or max_steps < 1 or (eval_every is not None and (not is_int(eval_every) or eval_every < 1)):
        raise ValueError(
            f"max_steps and eval_every must be positive ints (eval_every may be None), got {max_steps!r}, {eval_every!r}"
        )
    if sync_every is not None:
        int_at_least(sync_every, "sync_every (None: the device's default)", 1)
    if evaluate is not None and eval_every is None:
        raise ValueError("an evaluation hook needs eval_every")
    main = context is None or context.is_main
    done, before = 0, 0.0
    history: list[dict[str, Any]] = []
    stopped_early = False
    if checkpoint is not None and checkpoint.resume:
        saved = load_checkpoint(checkpoint.path, map_location=device)
        if saved is not None:
            done, history, before = _resume(saved, model, update, checkpoint, device)
            stopped_early = finished is not None and finished()  # (a rerun trained on past its early stop)
            if done > max_steps:  # (its weights are those of a longer run than the one asked for)
                raise ValueError(
                    f"the checkpoint {checkpoint.path} is at step {done}, past max_steps {max_steps}: ask for at least "
                    f"{done} steps to continue it, or remove it to train {max_steps} steps afresh"
                )

    def save() -> None:
        if checkpoint is None or not main:
            return
        state = {"config": asdict(checkpoint.config), "step": done, "model": model.state_dict()}
        state.update(optimizer=update.optimizer.state_dict(), scaler=update.scaler.state_dict(), history=history)
        state["seconds"] = clock()
        if checkpoint.setup is not None:
            state["setup"] = dict(checkpoint.setup)
        state["random"] = random_state(device)
        if update.scheduler is not None:
            state["scheduler"] = update.scheduler.state_dict()
        extra = checkpoint.save_extra() if checkpoint.save_extra is not None else {}
        if clashing := sorted(CHECKPOINT_KEYS & extra.keys()):
            raise ValueError(f"the caller's checkpoint entries {clashing} clash with the loop's own")
        save_checkpoint({**state, **extra}, checkpoint.path)

    first, clock = done, TrainingClock(before)
    show = progress and main
    sync_every = sync_every or (1 if device.type == "cpu" else CUDA_SYNC_EVERY)
    read_often = check_finite or show
    nonfinite = _NonFiniteLoss()
    opened = StopRequests(time_limit) if stops is None else contextlib.nullcontext(stops)
    with opened as requests, tqdm(total=max_steps, initial=done, disable=not show, desc=description) as bar:
        while done < max_steps and not stopped_early:
            loss, logs = step(done)
            number = done + 1
            evaluating = evaluate is not None and _due(number, eval_every, max_steps)
            checkpointed = checkpoint is not None and _due(number, checkpoint.every, max_steps)
            reading = evaluating or checkpointed or number == max_steps or (read_often and number % sync_every == 0)
            loss_value = None
            if loss is not None:
                _check_loss(loss, number)
                if check_finite:
                    nonfinite.record(loss, number)
            if reading:
                nonfinite.check()  # before the update: a loss found here never reaches the weights
                loss_value = None if loss is None else loss.item()
            update(loss)
            done = number
            if logs:
                history.append({"step": done, **logs, "seconds": clock()})
            if show:
                shown = {} if loss_value is None else {"loss": f"{loss_value:.4g}"}
                bar.set_postfix({**shown, **{key: _shown(value) for key, value in logs.items()}}, refresh=False)
                bar.update(1)
            if evaluating:
                assert evaluate is not None  # evaluating implies it
                stopped_early = bool(evaluate(done, loss_value))
            checkpointed = checkpointed or (checkpoint is not None and stopped_early)  # (the run's last step)
            if checkpointed:
                save()
            reason = _agreed_stop(requests.reason(), context)
            if reason is not None and done < max_steps and not stopped_early:
                if not checkpointed:
                    nonfinite.check()  # no checkpoint of weights that a non-finite loss has updated
                    save()
                if context is not None and context.is_distributed:
                    dist.barrier()  # no process exits (and gets its peers killed by torchrun) before rank 0 has saved
                path = None if checkpoint is None else checkpoint.path
                raise TrainingInterrupted(done, max_steps, reason, path, seconds=clock())
    release_free_memory()  # (the steps' freed buffers, kept for reuse, would stay with the process through what follows)
    return LoopResult(done, history, stopped_early, done - first, clock.this_call(), clock())


def _check_loss(loss: object, step: int) -> None:
    """Refuse a step's ``loss`` that is no tensor of one element (shape only: nothing is read off the device)."""
    if not isinstance(loss, torch.Tensor):
        raise TypeError(f"step {step} returned a loss of type {type(loss).__name__}: return a scalar tensor (or None)")
    if loss.numel() != 1:
        raise ValueError(f"step {step} returned a loss of shape {list(loss.shape)}: return a scalar tensor (or None)")


def _shown(value: Any) -> str:
    """A logged value as the progress bar shows it."""
    return f"{value:.4g}" if isinstance(value, float) else str(value)
