"""Timing helpers of the speed benchmarks: the median time of a step, interleaved rounds, a forward-backward step."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

import torch
from torch import nn
from torch.utils.benchmark import Timer
from tqdm.auto import tqdm

from neurosym.training.checks import int_at_least, positive_number
from neurosym.training.device import mixed_precision

K = TypeVar("K", bound=Hashable)


def median_seconds(step: Callable[[], Any], min_time: float, threads: int) -> float:
    """Median wall time of ``step()`` (CUDA-synchronised) over at least ``min_time`` seconds, on ``threads`` threads
    (0: torch's current number)."""
    _check_timing(min_time, threads)
    step()  # warm-up: kernels, allocator, lazy initialisation
    timer = Timer(stmt="step()", globals={"step": step}, num_threads=threads or torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_time).median


def fastest_of_rounds(
    steps: Mapping[K, Callable[[], Any]], rounds: int, min_time: float, threads: int, desc: str, progress: bool = False
) -> dict[K, float]:
    """The fastest :func:`median_seconds` of every step over ``rounds`` rounds that time all the steps in
    turn: a load change on a shared machine then slows every step of a round alike, and a ratio of two
    steps compares times taken seconds apart. The warm-up steps run with ``threads`` threads too."""
    int_at_least(rounds, "rounds", 1)  # none left every time at inf
    _check_timing(min_time, threads)
    best = dict.fromkeys(steps, float("inf"))
    previous = torch.get_num_threads()
    threads = threads or previous
    torch.set_num_threads(threads)
    try:
        with tqdm(total=rounds * len(steps), desc=desc, unit="timing", disable=not progress) as bar:
            for _ in range(rounds):
                for key, step in steps.items():
                    best[key] = min(best[key], median_seconds(step, min_time, threads))
                    bar.update()
    finally:
        torch.set_num_threads(previous)
    return best


def _check_timing(min_time: float, threads: int) -> None:
    """Refuse a ``min_time`` that is no finite positive number (NaN or infinity timed forever) and ``threads`` below 0."""
    positive_number(min_time, "min_time (seconds)")
    int_at_least(threads, "threads (0: torch's current number)", 0)


def forward_backward_step(module: nn.Module, x: torch.Tensor, device: torch.device) -> Callable[[], None]:
    """A closure running one forward and backward pass of ``module`` on ``x`` (AMP on CUDA), synchronised."""

    def step() -> None:
        with mixed_precision(device):
            out = module(x)
        out.float().sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step
