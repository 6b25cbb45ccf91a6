"""One optimiser update from a loss: the part of a training step every loop of the library shares."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch
from torch import nn

from neurosym.training.checks import positive_number
from neurosym.training.device import autocast_dtype

FUSED_ADAM_DEVICES = ("cpu", "cuda")
"""Device types where Adam runs fused: one kernel updates every parameter (3.7 ms against 19.5 ms per
update of the 7.6M parameters of the released HINT ``transformer_rel_uni`` on two CPU threads,
``benchmarks/RESULTS.md``)."""


def adam(
    parameters: Iterable[nn.Parameter],
    learning_rate: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    capturable: bool = False,
) -> torch.optim.Adam:
    """The library's Adam (every trainer builds it here): fused where :data:`FUSED_ADAM_DEVICES` allows and
    every parameter is floating point (the same update, in one kernel), else the per-parameter loop.
    ``capturable`` keeps its step counts on the parameters' device, so that a CUDA graph can capture the update.
    ``ValueError`` where nothing would train: no parameters (torch's "optimizer got an empty parameter list"), or none
    that requires gradients (every one frozen)."""
    parameters = list(parameters)
    if not any(parameter.requires_grad for parameter in parameters):
        held = (
            "holds no parameters" if not parameters else f"holds {len(parameters)} parameters, all frozen (requires_grad=False)"
        )
        raise ValueError(f"nothing to train: the model {held}")
    fused = all(p.device.type in FUSED_ADAM_DEVICES and p.is_floating_point() for p in parameters)
    return torch.optim.Adam(
        parameters, lr=learning_rate, betas=betas, eps=eps, weight_decay=weight_decay, fused=fused, capturable=capturable
    )


def grad_scaler(device: torch.device, amp: bool = True) -> torch.amp.GradScaler:
    """The loss scaler of mixed precision on ``device``: enabled only where ``amp`` runs in float16
    (:func:`~neurosym.training.device.autocast_dtype`); bfloat16 has float32's range and needs none."""
    return torch.amp.GradScaler(device.type, enabled=amp and autocast_dtype(device) == torch.float16)


def check_clips(clip_norm: float | None, clip_value: float | None) -> None:
    """``ValueError`` naming ``clip_norm`` or ``clip_value`` where it is neither None (no clipping) nor a number above 0
    (infinity allowed): a negative norm reversed the gradients (training ascended the loss), a value of 0 zeroed them,
    and NaN made them NaN."""
    for name, clip in (("clip_norm", clip_norm), ("clip_value", clip_value)):
        if clip is not None:
            positive_number(clip, f"{name} (None: no clipping)", infinity=True)


SCHEDULE_FIRST = r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"
"""Torch's warning when the schedule steps before the optimizer has: what ``update(None)`` does by design."""


@dataclass
class Update:
    """``update(loss)``, one training step: zero the gradients, back-propagate the scalar ``loss`` (scaled
    by ``scaler``), clip the gradients by value (``clip_value``) and/or global norm (``clip_norm``; each None or a
    number above 0, else ``ValueError`` here: :func:`check_clips`), step ``optimizer`` and run ``after`` (e.g. a
    model's weight clamp); then step ``scheduler``. ``update(None)``, a batch without training signal, leaves the
    weights alone (``after`` is not run) but still steps ``scheduler``: the learning rate follows steps, not updates.
    """

    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
    scaler: torch.amp.GradScaler = field(default_factory=lambda: torch.amp.GradScaler("cpu", enabled=False))
    clip_norm: float | None = None
    clip_value: float | None = None
    after: Callable[[], object] | None = None

    def __post_init__(self) -> None:
        check_clips(self.clip_norm, self.clip_value)
        self.parameters = [p for group in self.optimizer.param_groups for p in group["params"]]
        self.clips = self.clip_norm is not None or self.clip_value is not None

    def __call__(self, loss: torch.Tensor | None) -> None:
        if loss is not None:
            self._apply(loss)
        if self.scheduler is None:
            return
        if loss is not None:
            self.scheduler.step()
            return
        with warnings.catch_warnings():  # a batch without signal steps the schedule, on purpose, maybe before Adam has
            warnings.filterwarnings("ignore", message=SCHEDULE_FIRST, category=UserWarning)
            self.scheduler.step()

    def _apply(self, loss: torch.Tensor) -> None:
        if not loss.requires_grad:  # (autograd's "element 0 of tensors does not require grad")
            raise ValueError(
                "the loss carries no gradient: the model's output was detached or computed under torch.no_grad(), "
                "so nothing can be trained"
            )
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        if self.clips:
            self.scaler.unscale_(self.optimizer)
            if self.clip_value is not None:
                nn.utils.clip_grad_value_(self.parameters, self.clip_value)
            if self.clip_norm is not None:
                nn.utils.clip_grad_norm_(self.parameters, self.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        if self.after is not None:
            self.after()
