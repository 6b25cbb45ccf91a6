"""Training on a dataset, single process or DistributedDataParallel under torchrun: a layer over the
library's one loop (:func:`neurosym.training.core.run_training`).

It samples shards with :class:`~torch.utils.data.distributed.DistributedSampler` (one shard when alone),
runs mixed precision on CUDA, clips gradients, evaluates every ``eval_every`` steps on rank 0, keeps the
best weights, stops early after ``patience`` evaluations without improvement, and writes an atomic
checkpoint (rank 0 only) from which an interrupted run resumes at the same step and data order, with
the global random generators (dropout masks, augmentations) and the loader's worker seeds where they were,
so that a single-process run resumed equals an uninterrupted one (a distributed run restores rank 0's
generators on every rank). At
SIGINT, SIGTERM or ``time_limit`` it finishes the step, checkpoints and raises
:class:`~neurosym.training.stopping.TrainingInterrupted` (all processes stop at the same step); its data-loading
workers leave those signals to it (:class:`~neurosym.training.workers.StopSafeLoader`: a Ctrl-C in a terminal reaches
every process of the group).
"""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

from neurosym.training.checkpoint import MAPPING, require_entries, require_kinds
from neurosym.training.checks import (
    check_batch_fits,
    check_flags,
    fraction,
    ignored_option,
    int_at_least,
    is_real,
    positive_number,
)
from neurosym.training.core import Checkpointing, kept_random_state, run_training
from neurosym.training.device import mixed_precision
from neurosym.training.distributed import DistributedContext, broadcast_from_main
from neurosym.training.modes import training_modes
from neurosym.training.stopping import checked_time_limit
from neurosym.training.update import Update, adam, check_clips, grad_scaler
from neurosym.training.workers import StopSafeLoader

LossFunction = Callable[[nn.Module, Any], torch.Tensor]
"""``loss_fn(model, batch) -> scalar loss``; ``model`` may be DDP-wrapped, ``batch`` is on the device."""
Evaluator = Callable[[nn.Module], float]
"""``evaluate(model) -> score`` (higher is better), called on rank 0 with the unwrapped model; where it raises, or
returns no number, every rank raises."""

SCHEDULES = ("constant", "cosine")
"""Learning-rate schedules of :func:`schedule_factor`."""
MAX_SEED = 2**63 - 1
"""The largest seed of a :class:`TrainConfig`: epoch ``e`` seeds the sampler's and the loader's generators with
``seed + e``, which torch takes below ``2**64``."""


@dataclass
class TrainConfig:
    """How to train.

    ``batch_size`` is the global batch: each of ``world_size`` processes takes ``batch_size / world_size``.
    ``optimizer`` is ``"adam"`` (with ``betas`` and ``eps``) or ``"sgd"`` (with ``momentum`` in ``[0, 1)``), both with
    ``weight_decay``; the learning rate ``lr`` follows ``schedule`` (``"constant"`` or ``"cosine"``
    decay to zero at ``max_steps``) after ``warmup_steps`` of linear warm-up (fewer than ``max_steps`` under the cosine
    schedule; a constant one may outlast them, as a run continued to more steps does). Gradients are clipped by
    global norm (``clip_norm``) and/or element-wise by value (``clip_value``); ``None`` turns either off.
    ``time_limit`` (seconds, ``None``: none) ends this call's training early, as SIGINT and SIGTERM do:
    checkpoint, then :class:`~neurosym.training.stopping.TrainingInterrupted`. ``sync_every`` is the number
    of steps between the loop's reads of the loss on the host (progress bar, non-finite check); ``None``:
    every step on the CPU, every :data:`~neurosym.training.core.CUDA_SYNC_EVERY` on CUDA, where each read would stall the queue of
    kernels. Evaluation and checkpoint steps and the last always read it.
    """

    max_steps: int
    batch_size: int
    lr: float = 1e-3
    optimizer: Literal["adam", "sgd"] = "adam"
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.9
    weight_decay: float = 0.0
    schedule: Literal["constant", "cosine"] = "constant"
    warmup_steps: int = 0
    clip_norm: float | None = 5.0
    clip_value: float | None = None
    eval_every: int = 500
    patience: int | None = None
    checkpoint: str | Path | None = None
    seed: int = 0
    num_workers: int = 0
    progress: bool = False
    time_limit: float | None = None
    sync_every: int | None = None

    def __post_init__(self) -> None:
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}: use 'adam' or 'sgd'")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}: use one of {SCHEDULES}")
        for name in ("warmup_steps", "seed", "num_workers"):  # a seed of 1.5 failed in torch.manual_seed
            setattr(self, name, int_at_least(getattr(self, name), name, 0))
        if self.seed > MAX_SEED:  # torch's generators take seeds below 2**64: it failed at the first step or a later epoch
            raise ValueError(f"seed must be at most 2**63 - 1 (epoch e seeds its data order with seed + e), got {self.seed}")
        checked_time_limit(self.time_limit)
        check_flags(progress=self.progress)  # "no" or 0.0 was read by its truth: "no" showed the bar
        for name in ("max_steps", "batch_size", "eval_every") + ("sync_every",) * (self.sync_every is not None):
            setattr(self, name, int_at_least(getattr(self, name), name, 1))  # numpy's as Python ints (torch refused them)
        if self.schedule == "cosine" and self.warmup_steps >= self.max_steps:  # lr reached at the last step or never
            raise ValueError(
                f"warmup_steps must be below max_steps under the cosine schedule (its decay follows the warm-up and ends "
                f"at max_steps), got warmup_steps={self.warmup_steps} of max_steps={self.max_steps}"
            )
        if self.patience is not None:  # 0 or less stopped at the first evaluation without improvement, as 1 does
            self.patience = int_at_least(self.patience, "patience (None: no early stopping)", 1)
        positive_number(self.lr, "lr", zero=True)
        positive_number(self.eps, "eps")  # Adam divides by sqrt(v) + eps: 0 gives 0/0 for a parameter without gradient
        positive_number(self.weight_decay, "weight_decay", zero=True)
        fraction(self.momentum, "momentum", below_one=True)  # SGD's steps grew without bound from a momentum of 1
        betas = tuple(self.betas) if isinstance(self.betas, tuple | list) else ()
        if len(betas) != 2 or not all(is_real(beta) and 0 <= beta < 1 for beta in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        check_clips(self.clip_norm, self.clip_value)


def schedule_factor(step: int, max_steps: int, schedule: str, warmup_steps: int = 0) -> float:
    """Learning-rate multiplier at update ``step`` (0-based) of ``max_steps``: linear warm-up over
    ``warmup_steps``, then ``"constant"`` 1 or ``"cosine"`` decay from 1 to 0 at ``max_steps``."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}: use one of {SCHEDULES}")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    progress = (step - warmup_steps) / max(1, max_steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def _one_number(value: Any, step: int) -> float:
    """An evaluation's score as a float; ``ValueError`` naming the step for anything that is not one number (None, a
    tensor of several elements: ``float()`` failed with a message that named neither)."""
    if (isinstance(value, torch.Tensor) and value.numel() == 1) or (isinstance(value, np.ndarray) and value.size == 1):
        value = value.item()
    if not is_real(value):
        raise ValueError(f"evaluate returned {value!r:.60} after step {step}: a score must be one number, higher is better")
    return float(value)


def _evaluation_failure(kind: str, message: str, step: int) -> Exception:
    """What the other ranks of a distributed run raise when rank 0's evaluation after ``step`` raised an exception of
    class ``kind`` with ``message``: a ``ValueError`` (a score that is no number) as it is, else a ``RuntimeError``
    naming it."""
    if kind == ValueError.__name__:
        return ValueError(message)
    return RuntimeError(f"evaluate raised {kind} on rank 0 after step {step}: {message}")


RUN_TIME_FIELDS = ("checkpoint", "progress", "num_workers", "time_limit", "sync_every")
"""Fields of :class:`TrainConfig` that say how this call runs, not what it trains: any resume may change them."""
RESUMABLE_CHANGES = ("max_steps", "eval_every", "patience", *RUN_TIME_FIELDS)
"""Fields of :class:`TrainConfig` that may differ when a run is resumed (a larger ``max_steps`` continues it under the
constant schedule; the cosine schedule's decay ends at ``max_steps``, so there it may not change; more ``patience``
continues a run that stopped early)."""


def learning_rate_factor(step: int, config: TrainConfig) -> float:
    """Multiplier of ``config.lr`` at update ``step`` (0-based): linear warm-up, then the schedule."""
    return schedule_factor(step, config.max_steps, config.schedule, config.warmup_steps)


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """The optimiser that ``config`` names, over ``model``'s parameters (Adam: :func:`~neurosym.training.update.adam`)."""
    if config.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay)
    return adam(model.parameters(), config.lr, config.betas, config.eps, config.weight_decay)


@dataclass
class TrainResult:
    """What happened: steps run, the best validation score and its step, every evaluation, the ``seconds`` of
    training over every call of a resumed run; and of this call alone the steps it took and their wall-clock
    seconds (evaluations and checkpoints included, as in ``seconds``)."""

    steps: int
    best_score: float | None
    best_step: int | None
    stopped_early: bool
    history: list[dict[str, float]] = field(default_factory=list)
    steps_this_call: int = 0
    seconds_this_call: float = 0.0
    seconds: float = 0.0

    @property
    def steps_per_second(self) -> float | None:
        """Training throughput of this call (``None`` when it took no step)."""
        return self.steps_this_call / self.seconds_this_call if self.steps_this_call else None


def move_to(batch: Any, device: torch.device) -> Any:
    """``batch`` with every tensor inside (nested tuples, lists and dicts) moved to ``device``."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {key: move_to(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(move_to(value, device) for value in batch)
    return batch


def _check(config: TrainConfig, context: DistributedContext, dataset_size: int) -> int:
    """The per-process batch size, after checking that ``dataset_size`` examples fill a global batch."""
    if config.batch_size % context.world_size:
        raise ValueError(f"batch_size {config.batch_size} is not divisible by the {context.world_size} processes")
    check_batch_fits(dataset_size, config.batch_size)
    return config.batch_size // context.world_size


def _batches(loader: DataLoader, sampler: DistributedSampler, seed: int, start_step: int, device: torch.device) -> Iterator[Any]:
    """Batches forever, epoch after epoch, starting where step ``start_step`` left off.

    What an epoch reads depends on ``seed`` and the epoch alone, as in an uninterrupted run: its order (``sampler``)
    and its workers' seeds (drawn from ``loader.generator``, reseeded each epoch); and the batches a resumed epoch
    skips leave the global generators alone (torch's, ``device``'s, numpy's and Python's:
    :func:`~neurosym.training.core.kept_random_state`), where a data set's augmentations of the next batch draw."""
    assert loader.generator is not None  # (train gives it one)
    per_epoch = len(loader)
    first_epoch, skip = divmod(start_step, per_epoch)
    for epoch in itertools.count(first_epoch):
        sampler.set_epoch(epoch)
        loader.generator.manual_seed(seed + epoch)
        batches = iter(loader)
        with kept_random_state(device):
            collections.deque(itertools.islice(batches, skip), maxlen=0)
        skip = 0
        yield from batches


def train(
    model: nn.Module,
    dataset: Dataset[Any] | Sequence[Any],
    loss_fn: LossFunction,
    config: TrainConfig,
    context: DistributedContext,
    *,
    evaluate: Evaluator | None = None,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    resume_may_change: Collection[str] = RESUMABLE_CHANGES,
    setup: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Train ``model`` (in place, on ``context.device``) as ``config`` says; returns a :class:`TrainResult`.

    On return the model holds the best weights seen by ``evaluate`` (higher is better; of equal scores the first; the
    last weights without one; early stopping, ``config.patience``, needs one: ``ValueError`` without it).
    Each step runs in the train/eval modes the model came with (a frozen part stays frozen; a model in evaluation mode
    as a whole trains in training mode: :func:`~neurosym.training.modes.training_modes`).
    With ``config.checkpoint`` set, an existing checkpoint there is resumed from; one written with a
    configuration that differs outside ``resume_may_change``, or under another ``setup`` (what the model and data were
    built from; :class:`~neurosym.training.core.Checkpointing`), raises ``ValueError``. A stop request (SIGINT,
    SIGTERM, ``config.time_limit``) ends the step under way, writes the checkpoint and raises
    :class:`~neurosym.training.stopping.TrainingInterrupted`; the model then holds that step's weights. The
    ``config.num_workers`` data-loading processes ignore SIGINT and SIGTERM sent to the whole process group, and leave
    the stop to this one (:class:`~neurosym.training.workers.StopSafeLoader`).
    """
    if not isinstance(dataset, Sized):
        raise TypeError(f"train takes a map-style dataset (one with a length), got {type(dataset).__name__}")
    if config.patience is not None and evaluate is None:  # (nothing scored: every step was trained)
        raise ignored_option("patience", config.patience, "training with an evaluate function", "train without one")
    per_rank = _check(config, context, len(dataset))
    device = context.device
    model.to(device)
    wrapped: nn.Module = model
    if context.is_distributed:
        wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    in_training_mode = training_modes(model)
    optimizer = make_optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: learning_rate_factor(step, config))
    update = Update(optimizer, scheduler, grad_scaler(device), config.clip_norm, config.clip_value)
    best = _BestWeights(model, evaluate, config.patience, context)
    examples = cast(Dataset[Any], dataset)  # (the sampler and loader index a sequence alike)
    sampler: DistributedSampler[int] = DistributedSampler(
        examples, num_replicas=context.world_size, rank=context.rank, shuffle=True, seed=config.seed, drop_last=True
    )
    loader = StopSafeLoader(
        examples,
        batch_size=per_rank,
        sampler=sampler,
        collate_fn=collate_fn,
        drop_last=True,
        num_workers=config.num_workers,
        pin_memory=device.type == "cuda",
        generator=torch.Generator(),  # seeded each epoch (_batches)
    )
    batches: Iterator[Any] | None = None

    def step(index: int) -> tuple[torch.Tensor, dict[str, Any]]:
        nonlocal batches
        if batches is None:  # the first step of this call: 0, or where the checkpoint left off
            batches = _batches(loader, sampler, config.seed, index, device)
        in_training_mode()
        batch = move_to(next(batches), device)
        with mixed_precision(device):
            return loss_fn(wrapped, batch), {}

    checkpoint = None
    if config.checkpoint:
        may_change = resume_may_change
        if config.schedule != "constant":  # a cosine schedule decays to zero at max_steps: a larger one jumped back up
            may_change = [name for name in resume_may_change if name != "max_steps"]
        checkpoint = Checkpointing(
            config.checkpoint,
            config,
            config.eval_every,
            may_change,
            lambda: {"loop": best.state},
            best.load,
            setup=setup,
            check_extra=lambda saved: _check_loop_state(saved, config.checkpoint),
        )
    result = run_training(
        model,
        step,
        update,
        config.max_steps,
        device=device,
        evaluate=best.evaluate,
        eval_every=config.eval_every,
        checkpoint=checkpoint,
        context=context,
        time_limit=config.time_limit,
        progress=config.progress,
        sync_every=config.sync_every,
        finished=best.exhausted,
    )
    state = best.state
    if state["best_model"] is not None:
        model.load_state_dict(state["best_model"])
    return TrainResult(
        result.step,
        state["best_score"],
        state["best_step"],
        result.stopped_early,
        state["history"],
        steps_this_call=result.steps_this_call,
        seconds_this_call=result.seconds_this_call,
        seconds=result.seconds,
    )


def patience_ran_out(loop_state: Mapping[str, Any], patience: int | None) -> bool:
    """Whether the evaluations since the best one (``loop_state``: the ``"loop"`` entry of a :func:`train`
    checkpoint) have used up ``patience`` (``None``: no early stopping)."""
    return patience is not None and loop_state["bad_evaluations"] >= patience


LOOP_STATE = ("best_score", "best_step", "bad_evaluations", "history", "best_model")
"""The entries of the ``"loop"`` state that a :func:`train` checkpoint holds beside the loop's own
(:class:`_BestWeights`)."""


def _check_loop_state(saved: Mapping[str, Any], path: str | Path | None) -> None:
    """Refuse (``ValueError`` naming ``path`` and the entries it lacks) a checkpoint ``saved`` without the ``"loop"``
    state of :func:`train`, with one that is no mapping (it was said to lack every entry of :data:`LOOP_STATE`), or
    with one that lacks any of them."""
    require_entries(saved, ["loop"], path, "train")
    require_kinds(saved, {"loop": MAPPING}, path, "train")
    require_entries(saved["loop"], LOOP_STATE, path, "train (its loop state)")


class _BestWeights:
    """The evaluation hook of :func:`train`: scores on rank 0, shares the score, keeps the best weights and
    counts evaluations without improvement; its :attr:`state` (``best_score``, ``best_step``,
    ``bad_evaluations``, ``history``: one dict per evaluation, ``best_model``) goes into the checkpoint."""

    def __init__(self, model: nn.Module, evaluate: Evaluator | None, patience: int | None, context: DistributedContext) -> None:
        self.model, self.score, self.patience, self.context = model, evaluate, patience, context
        self.state: dict[str, Any] = {
            "best_score": None,
            "best_step": None,
            "bad_evaluations": 0,
            "history": [],
            "best_model": None,
        }

    def load(self, checkpoint: dict[str, Any]) -> None:
        """Take the state of a checkpoint read onto the training device, its best weights back to the CPU (where
        :meth:`evaluate` keeps them: on a GPU they held a second copy of the model there for the rest of the run)."""
        state = checkpoint["loop"]
        if state["best_model"] is not None:
            state["best_model"] = {key: value.cpu() for key, value in state["best_model"].items()}
        self.state = state

    def evaluate(self, step: int, loss: float | None) -> bool:
        """Record the evaluation after ``step``; ``True`` when patience has run out."""
        state = self.state
        if self.score is None:
            state["history"].append({"step": step, "loss": loss})
            return False
        score = self._shared_score(step)
        if math.isnan(score):  # NaN is never better: a first NaN score would have kept the first weights for good
            raise ValueError(f"evaluate returned a NaN score after step {step}: a score must be a number, higher is better")
        state["history"].append({"step": step, "loss": loss, "score": score})
        if state["best_score"] is None or score > state["best_score"]:
            state.update(best_score=score, best_step=step, bad_evaluations=0)
            state["best_model"] = {key: value.detach().to("cpu", copy=True) for key, value in self.model.state_dict().items()}
            return False
        state["bad_evaluations"] += 1
        return self.exhausted()

    def _shared_score(self, step: int) -> float:
        """Rank 0's score after ``step`` on every rank. An evaluation that raises on rank 0 (a score that is no number,
        or the evaluate function's own error) raises on every rank (:func:`_evaluation_failure`): the other ranks
        waited for rank 0 in the next collective until the group's timeout."""
        outcome: float | tuple[str, str] | None = None
        failure: Exception | None = None
        if self.context.is_main:
            try:
                outcome = self._scored(step)
            except Exception as error:  # noqa: BLE001 — any failure is shared first, then raised on every rank
                failure, outcome = error, (type(error).__name__, str(error))
        outcome = broadcast_from_main(outcome, self.context)
        if failure is not None:
            raise failure
        if isinstance(outcome, tuple):
            raise _evaluation_failure(*outcome, step)
        assert outcome is not None  # rank 0 sent a score or a failure
        return outcome

    def _scored(self, step: int) -> float:
        """The evaluate function's score of the model after ``step`` (rank 0, no gradients, eval mode)."""
        assert self.score is not None  # (evaluate() returns before without one)
        self.model.eval()
        with torch.no_grad():
            return _one_number(self.score(self.model), step)

    def exhausted(self) -> bool:
        """Whether the evaluations since the best one have used up the patience (also of a resumed run: one that
        stopped early is finished, unless resumed with more patience)."""
        return patience_ran_out(self.state, self.patience)
