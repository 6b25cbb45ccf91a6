"""Timing helpers shared by the speed benchmarks (``layer-speed``, ``attention-speed``)."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn
from torch.utils.benchmark import Timer

from neurosym.training.device import autocast_enabled


def median_seconds(step: Callable[[], Any], min_time: float, threads: int) -> float:
    """Median wall time of ``step()`` (CUDA-synchronised) over at least ``min_time`` seconds."""
    step()  # warm-up: kernels, allocator, lazy initialisation
    timer = Timer(stmt="step()", globals={"step": step}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=min_time).median


def forward_backward_step(module: nn.Module, x: torch.Tensor, device: torch.device) -> Callable[[], None]:
    """A closure running one forward and backward pass of ``module`` on ``x`` (AMP on CUDA), synchronised."""

    def step() -> None:
        with torch.autocast(device.type, enabled=autocast_enabled(device)):
            out = module(x)
        out.float().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step
