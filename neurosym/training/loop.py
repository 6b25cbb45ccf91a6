"""The training loop shared by the benchmarks: single process or DistributedDataParallel under torchrun.

It samples shards with :class:`~torch.utils.data.distributed.DistributedSampler` (one shard when alone),
runs mixed precision on CUDA, clips gradients, evaluates every ``eval_every`` steps on rank 0, keeps the
best weights, stops early after ``patience`` evaluations without improvement, and writes an atomic
checkpoint (rank 0 only) from which an interrupted run resumes at the same step and data order, with
torch's random generators (dropout masks) where they were, so that a single-process run resumed
equals an uninterrupted one (a distributed run restores rank 0's generators on every rank). At
SIGINT, SIGTERM or ``time_limit`` it finishes the step, checkpoints and raises
:class:`~neurosym.training.stopping.TrainingInterrupted` (all processes stop at the same step).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from tqdm.auto import tqdm

from neurosym.training.checkpoint import load_checkpoint, save_checkpoint
from neurosym.training.device import autocast_dtype, mixed_precision
from neurosym.training.distributed import DistributedContext, broadcast_from_main
from neurosym.training.stopping import TIME_LIMIT, StopRequests, TrainingInterrupted, checked_time_limit

LossFunction = Callable[[nn.Module, Any], torch.Tensor]
"""``loss_fn(model, batch) -> scalar loss``; ``model`` may be DDP-wrapped, ``batch`` is on the device."""
Evaluator = Callable[[nn.Module], float]
"""``evaluate(model) -> score`` (higher is better), called on rank 0 with the unwrapped model."""


CUDA_SYNC_EVERY = 50
"""Steps between host reads of the loss on CUDA when :attr:`TrainConfig.sync_every` is ``None``."""

SCHEDULES = ("constant", "cosine")
"""Learning-rate schedules of :func:`schedule_factor`."""


@dataclass
class TrainConfig:
    """How to train.

    ``batch_size`` is the global batch: each of ``world_size`` processes takes ``batch_size / world_size``.
    ``optimizer`` is ``"adam"`` (with ``betas`` and ``eps``) or ``"sgd"`` (with ``momentum``), both with
    ``weight_decay``; the learning rate ``lr`` follows ``schedule`` (``"constant"`` or ``"cosine"``
    decay to zero at ``max_steps``) after ``warmup_steps`` of linear warm-up. Gradients are clipped by
    global norm (``clip_norm``) and/or element-wise by value (``clip_value``); ``None`` turns either off.
    ``time_limit`` (seconds, ``None``: none) ends this call's training early, as SIGINT and SIGTERM do:
    checkpoint, then :class:`~neurosym.training.stopping.TrainingInterrupted`. ``sync_every`` is the number
    of steps between the loop's reads of the loss on the host (progress bar, non-finite check); ``None``:
    every step on the CPU, every :data:`CUDA_SYNC_EVERY` on CUDA, where each read would stall the queue of
    kernels. Evaluation and checkpoint steps always read it.
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
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        checked_time_limit(self.time_limit)
        if self.sync_every is not None and self.sync_every < 1:
            raise ValueError(f"sync_every must be None or at least 1, got {self.sync_every}")


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


RESUMABLE_CHANGES = (
    "max_steps", "eval_every", "patience", "checkpoint", "progress", "num_workers", "time_limit", "sync_every"
)
"""Fields of :class:`TrainConfig` that may differ when a run is resumed (a larger ``max_steps`` continues it)."""


def _field_defaults(config: Any) -> dict[str, Any]:
    """The defaults of the dataclass ``config``'s fields that have one, as ``asdict`` would give them."""
    defaults = {}
    for spec in fields(config):
        if spec.default is not MISSING:
            defaults[spec.name] = spec.default
        elif spec.default_factory is not MISSING:
            value = spec.default_factory()
            defaults[spec.name] = asdict(value) if is_dataclass(value) else value
    return defaults


def check_resumable(saved: dict[str, Any], config: Any, may_change: Collection[str], path: Any) -> None:
    """Refuse to resume the checkpoint at ``path`` whose ``saved`` configuration (``asdict`` of a
    dataclass config such as :class:`TrainConfig`) differs from ``config`` in a field outside
    ``may_change``. A field the checkpoint lacks (added to the config after it was written) counts as
    its default, which reproduces the behaviour before the field existed."""
    current = asdict(config)
    saved = {**_field_defaults(config), **saved}
    differing = sorted(key for key in current if key not in may_change and saved.get(key) != current[key])
    if differing:
        raise ValueError(
            f"checkpoint {path} was written with another configuration ({', '.join(differing)} differ): {saved}; "
            "remove it or choose another checkpoint path"
        )


def learning_rate_factor(step: int, config: TrainConfig) -> float:
    """Multiplier of ``config.lr`` at update ``step`` (0-based): linear warm-up, then the schedule."""
    return schedule_factor(step, config.max_steps, config.schedule, config.warmup_steps)


FUSED_ADAM_DEVICES = ("cpu", "cuda")
"""Device types where Adam runs fused: one kernel updates every parameter (3.7 ms against 19.5 ms per
update of the 7.6M parameters of the released HINT ``transformer_rel_uni`` on two CPU threads,
``benchmarks/RESULTS.md``)."""


def make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """The optimiser that ``config`` names, over ``model``'s parameters (Adam fused where
    :data:`FUSED_ADAM_DEVICES` allows: the same update, in one kernel)."""
    if config.optimizer == "sgd":
        return torch.optim.SGD(
            model.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
        )
    parameters = list(model.parameters())
    fused = all(p.device.type in FUSED_ADAM_DEVICES and p.is_floating_point() for p in parameters)
    return torch.optim.Adam(
        parameters, lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay, fused=fused
    )


@dataclass
class TrainResult:
    """What happened: steps run, the best validation score and its step, and every evaluation; and of
    this call alone (a resumed run continues earlier calls), the steps it took and their wall-clock
    seconds, evaluations and checkpoints included."""

    steps: int
    best_score: float | None
    best_step: int | None
    stopped_early: bool
    history: list[dict[str, float]] = field(default_factory=list)
    steps_this_call: int = 0
    seconds_this_call: float = 0.0

    @property
    def steps_per_second(self) -> float | None:
        """Training throughput of this call (``None`` when it took no step)."""
        return self.steps_this_call / self.seconds_this_call if self.steps_this_call else None


def random_state(device: torch.device) -> dict[str, torch.Tensor]:
    """Torch's global generator states that training draws from (dropout masks and the like): the CPU
    generator's, and the current CUDA device's when ``device`` is a GPU."""
    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def restore_random_state(state: dict[str, torch.Tensor], device: torch.device) -> None:
    """Set the generators saved by :func:`random_state` (states loaded onto any device are moved back)."""
    torch.set_rng_state(state["cpu"].cpu())
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"].cpu(), device)


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
    if config.max_steps < 1 or config.eval_every < 1:
        raise ValueError(f"max_steps and eval_every must be positive, got {config.max_steps}, {config.eval_every}")
    if config.batch_size % context.world_size:
        raise ValueError(f"batch_size {config.batch_size} is not divisible by the {context.world_size} processes")
    if dataset_size < config.batch_size:
        raise ValueError(f"the training set ({dataset_size} examples) is smaller than one batch ({config.batch_size})")
    return config.batch_size // context.world_size


STOP_REASONS = (None, TIME_LIMIT, "SIGTERM", "SIGINT")
"""Stop reasons in rising precedence: the processes of a distributed run stop for the highest any of them has."""


def _agreed_stop(reason: str | None, context: DistributedContext) -> str | None:
    """The stop reason every process acts on (one all-reduce per step when distributed)."""
    if not context.is_distributed:
        return reason
    code = torch.tensor([STOP_REASONS.index(reason)], device=context.device)
    dist.all_reduce(code, op=dist.ReduceOp.MAX)
    return STOP_REASONS[int(code.item())]


def _batches(loader: DataLoader, sampler: DistributedSampler, start_step: int) -> Iterator[Any]:
    """Batches forever, epoch after epoch, starting where step ``start_step`` left off."""
    per_epoch = len(loader)
    first_epoch, skip = divmod(start_step, per_epoch)
    for epoch in itertools.count(first_epoch):
        sampler.set_epoch(epoch)
        yield from itertools.islice(loader, skip, None)
        skip = 0


def train(
    model: nn.Module,
    dataset: Dataset,
    loss_fn: LossFunction,
    config: TrainConfig,
    context: DistributedContext,
    *,
    evaluate: Evaluator | None = None,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    resume_may_change: Collection[str] = RESUMABLE_CHANGES,
) -> TrainResult:
    """Train ``model`` (in place, on ``context.device``) as ``config`` says; returns a :class:`TrainResult`.

    On return the model holds the best weights seen by ``evaluate`` (the last weights without one).
    With ``config.checkpoint`` set, an existing checkpoint there is resumed from; one written with a
    configuration that differs outside ``resume_may_change`` raises ``ValueError``. A stop request (SIGINT,
    SIGTERM, ``config.time_limit``) ends the step under way, writes the checkpoint and raises
    :class:`~neurosym.training.stopping.TrainingInterrupted`; the model then holds that step's weights.
    """
    per_rank = _check(config, context, len(dataset))
    device = context.device
    model.to(device)
    wrapped: nn.Module = model
    if context.is_distributed:
        wrapped = DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = make_optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: learning_rate_factor(step, config))
    scaler = torch.amp.GradScaler(device.type, enabled=autocast_dtype(device) == torch.float16)
    state = {"step": 0, "best_score": None, "best_step": None, "bad_evaluations": 0, "history": [], "best_model": None}
    saved = load_checkpoint(config.checkpoint, map_location=device) if config.checkpoint else None
    if saved is not None:
        check_resumable(saved["config"], config, resume_may_change, config.checkpoint)
        try:
            model.load_state_dict(saved["model"])
        except RuntimeError as error:
            raise ValueError(
                f"the checkpoint {config.checkpoint} holds another model (other sizes or options): "
                f"{' '.join(str(error).split())}; train it with the options it was written with, or start afresh"
            ) from None
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        if saved["scaler"]:  # empty when written without AMP (on the CPU): a CPU run continues on a GPU afresh here
            scaler.load_state_dict(saved["scaler"])
        if "random" in saved:  # absent from checkpoints written before it was saved
            restore_random_state(saved["random"], device)
        state = saved["loop"]
    sampler = DistributedSampler(
        dataset, num_replicas=context.world_size, rank=context.rank, shuffle=True, seed=config.seed, drop_last=True
    )
    loader = DataLoader(
        dataset,
        batch_size=per_rank,
        sampler=sampler,
        collate_fn=collate_fn,
        drop_last=True,
        num_workers=config.num_workers,
        pin_memory=device.type == "cuda",
        generator=torch.Generator().manual_seed(config.seed),  # its per-epoch draw leaves the global generator alone
    )
    batches = _batches(loader, sampler, state["step"])

    def save() -> None:
        if context.is_main and config.checkpoint:
            checkpoint = {
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "scaler": scaler.state_dict(),
                "random": random_state(device),
            }
            save_checkpoint({**checkpoint, "loop": state, "config": asdict(config)}, config.checkpoint)

    stopped_early = False
    first_step, started = state["step"], time.perf_counter()
    progress = config.progress and context.is_main
    sync_every = config.sync_every or (1 if device.type == "cpu" else CUDA_SYNC_EVERY)
    nonfinite = _NonFiniteLoss(device)
    with StopRequests(config.time_limit) as stops, tqdm(total=config.max_steps, initial=state["step"], disable=not progress) as bar:
        while state["step"] < config.max_steps and not stopped_early:
            wrapped.train()
            batch = move_to(next(batches), device)
            with mixed_precision(device):
                loss = loss_fn(wrapped, batch)
            step = state["step"] + 1
            nonfinite.record(loss, step)
            checkpointed = step % config.eval_every == 0 or step == config.max_steps
            if checkpointed or step % sync_every == 0:
                nonfinite.check()  # before the update: a loss found here never reaches the weights
                loss_value = loss.item()
                bar.set_postfix(loss=f"{loss_value:.4f}")
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if config.clip_norm is not None or config.clip_value is not None:
                scaler.unscale_(optimizer)
            if config.clip_value is not None:
                nn.utils.clip_grad_value_(model.parameters(), config.clip_value)
            if config.clip_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            state["step"] += 1
            bar.update(1)
            if checkpointed:
                stopped_early = _evaluate(model, evaluate, config, context, state, loss_value)
                save()
            reason = _agreed_stop(stops.reason(), context)
            if reason is not None and state["step"] < config.max_steps and not stopped_early:
                if not checkpointed:
                    nonfinite.check()  # no checkpoint of weights that a non-finite loss has updated
                    save()
                if context.is_distributed:
                    dist.barrier()  # no process exits (and gets its peers killed by torchrun) before rank 0 has saved
                raise TrainingInterrupted(state["step"], config.max_steps, reason, config.checkpoint)
    if state["best_model"] is not None:
        model.load_state_dict(state["best_model"])
    return TrainResult(
        state["step"],
        state["best_score"],
        state["best_step"],
        stopped_early,
        state["history"],
        steps_this_call=state["step"] - first_step,
        seconds_this_call=time.perf_counter() - started,
    )


class _NonFiniteLoss:
    """The first step whose loss was not finite, kept on the device so that recording it never waits for
    the device; :meth:`check` reads it (one sync) and raises ``FloatingPointError`` naming that step."""

    def __init__(self, device: torch.device) -> None:
        self.step = torch.zeros((), dtype=torch.long, device=device)  # 0: every loss so far was finite
        self.value = torch.zeros((), device=device)

    def record(self, loss: torch.Tensor, step: int) -> None:
        first = (self.step == 0) & ~torch.isfinite(loss.detach())
        self.step = torch.where(first, step, self.step)
        self.value = torch.where(first, loss.detach().float(), self.value)

    def check(self) -> None:
        step = int(self.step.item())
        if step:
            raise FloatingPointError(f"the training loss became {self.value.item()} at step {step}")


def _evaluate(
    model: nn.Module,
    evaluate: Evaluator | None,
    config: TrainConfig,
    context: DistributedContext,
    state: dict[str, Any],
    loss: float,
) -> bool:
    """Score on rank 0, share it, update the best weights; ``True`` when patience has run out."""
    if evaluate is None:
        state["history"].append({"step": state["step"], "loss": loss})
        return False
    score = None
    if context.is_main:
        model.eval()
        with torch.no_grad():
            score = float(evaluate(model))
    score = broadcast_from_main(score, context)
    state["history"].append({"step": state["step"], "loss": loss, "score": score})
    if state["best_score"] is None or score > state["best_score"]:
        state.update(best_score=score, best_step=state["step"], bad_evaluations=0)
        state["best_model"] = {key: value.detach().to("cpu", copy=True) for key, value in model.state_dict().items()}
        return False
    state["bad_evaluations"] += 1
    return config.patience is not None and state["bad_evaluations"] >= config.patience
