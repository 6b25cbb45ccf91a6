"""Supervised training of a classifier on in-memory tensors: step-based, resumable, AMP on CUDA.

Batches are drawn epoch by epoch from a seeded permutation, so a run resumed from its checkpoint sees
the same batches as an uninterrupted one. Schedules: ``"cosine"`` (linear warm-up, then cosine decay to
zero, as in the PVR paper) or ``"constant"``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Literal

import torch
from torch import nn
from tqdm.auto import tqdm

from neurosym.training.checkpoint import load_checkpoint, save_checkpoint
from neurosym.training.device import autocast_enabled

Prepare = Callable[[torch.Tensor], torch.Tensor]
"""Turns a batch of stored inputs (already on the device) into model inputs, e.g. uint8 -> float."""


@dataclass(frozen=True)
class TrainConfig:
    """``steps`` optimiser updates of ``batch_size`` examples; ``optimizer`` ``"sgd"`` (with ``momentum``)
    or ``"adam"``; learning rate ``lr`` under ``schedule`` with ``warmup_steps`` of linear warm-up."""

    steps: int
    batch_size: int
    optimizer: Literal["sgd", "adam"] = "sgd"
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 1e-5
    schedule: Literal["cosine", "constant"] = "cosine"
    warmup_steps: int = 0
    checkpoint_every: int = 200
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(f"steps and batch_size must be positive, got {self.steps} and {self.batch_size}")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"unknown optimizer {self.optimizer!r}: use 'sgd' or 'adam'")
        if self.schedule not in ("cosine", "constant"):
            raise ValueError(f"unknown schedule {self.schedule!r}: use 'cosine' or 'constant'")


def learning_rate_factor(step: int, config: TrainConfig) -> float:
    """Multiplier of ``config.lr`` at update ``step`` (0-based)."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return 1.0
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def _make_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":
        return torch.optim.SGD(
            model.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
        )
    return torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)


def identity(batch: torch.Tensor) -> torch.Tensor:
    """The default :data:`Prepare`: use stored inputs as they are."""
    return batch


def fit_classifier(
    model: nn.Module,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    device: torch.device,
    prepare: Prepare = identity,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = True,
) -> dict[str, float]:
    """Train ``model`` with cross-entropy on ``inputs [N, ...]`` and ``labels [N]`` (kept on the CPU;
    batches move to ``device``). With ``checkpoint``, state is saved every ``checkpoint_every`` steps and
    at the end, and an existing checkpoint is resumed. Returns ``{"steps", "final_loss", "train_accuracy"}``
    where the last two are measured over the final 10% of steps (at least one batch)."""
    if len(inputs) != len(labels) or len(inputs) == 0:
        raise ValueError(f"need as many labels as inputs (and at least one): {len(inputs)} vs {len(labels)}")
    model.to(device)
    optimizer = _make_optimizer(model, config)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: learning_rate_factor(step, config))
    start, tail = 0, {"loss": 0.0, "correct": 0.0, "seen": 0.0}
    state = load_checkpoint(checkpoint) if checkpoint is not None else None
    if state is not None:
        if state["config"] != asdict(config):
            raise ValueError(f"checkpoint {checkpoint} was written with another configuration: {state['config']}")
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start, tail = state["step"], state["tail"]
    generator = torch.Generator().manual_seed(config.seed)
    batches_per_epoch = max(1, len(inputs) // config.batch_size)
    order = torch.randperm(len(inputs), generator=generator)
    for _ in range(start // batches_per_epoch):  # replay the permutations of finished epochs
        order = torch.randperm(len(inputs), generator=generator)
    tail_start = config.steps - max(1, config.steps // 10)
    model.train()
    bar = tqdm(range(start, config.steps), initial=start, total=config.steps, disable=not progress, leave=False)
    for step in bar:
        position = step % batches_per_epoch
        if position == 0 and step > start:
            order = torch.randperm(len(inputs), generator=generator)
        index = order[position * config.batch_size : (position + 1) * config.batch_size]
        batch = prepare(inputs[index].to(device, non_blocking=True))
        targets = labels[index].to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast_enabled(device)):
            logits = model(batch)
        loss = nn.functional.cross_entropy(logits.float(), targets)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"the training loss became {loss.item()} at step {step}")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step >= tail_start:
            tail["loss"] += loss.item() * len(targets)
            tail["correct"] += (logits.argmax(-1) == targets).sum().item()
            tail["seen"] += len(targets)
        if checkpoint is not None and ((step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps):
            save_checkpoint(
                {
                    "config": asdict(config),
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "step": step + 1,
                    "tail": tail,
                },
                checkpoint,
            )
        if progress and step % 20 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    return {
        "steps": config.steps,
        "final_loss": tail["loss"] / tail["seen"],
        "train_accuracy": tail["correct"] / tail["seen"],
    }


@torch.no_grad()
def predict(
    model: nn.Module, inputs: torch.Tensor, device: torch.device, prepare: Prepare = identity, batch_size: int = 1024
) -> torch.Tensor:
    """Arg-max class of every input: ``inputs [N, ...]`` -> ``[N]`` long on the CPU (model in eval mode)."""
    model.to(device).eval()
    outputs = []
    for chunk in torch.split(inputs, batch_size):
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast_enabled(device)):
            outputs.append(model(prepare(chunk.to(device))).argmax(-1).cpu())
    return torch.cat(outputs) if outputs else torch.zeros(0, dtype=torch.long)


def accuracy(
    model: nn.Module,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    device: torch.device,
    prepare: Prepare = identity,
    batch_size: int = 1024,
) -> float:
    """Fraction of ``inputs`` whose predicted class equals ``labels``."""
    if len(inputs) == 0:
        raise ValueError("accuracy of an empty set is undefined")
    return (predict(model, inputs, device, prepare, batch_size) == labels).float().mean().item()
