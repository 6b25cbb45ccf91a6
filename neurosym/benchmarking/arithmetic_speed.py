"""Throughput of batched-seed training versus training the same runs one at a time.

Both modes run the same training step (:func:`train_step`) on the same data generator and model type;
the batched mode trains all ``S`` seeds as one ensemble model, the sequential mode trains each seed
as a plain model without an ensemble dimension. Set-up (building data and models) is not timed.
The two modes are interleaved in :data:`ROUNDS` rounds: each round trains a tenth of the seeds one at a
time and then the batched model for a tenth of its steps, so both accumulate their time over the same
span of wall-clock time and a drift in the machine's speed (on a shared machine, a third within
minutes) affects them alike; the rounds are long enough (tens of batched steps) that re-warming the
batched model's caches after the one-seed runs costs little.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch

from neurosym.benchmarking.arithmetic_training import GraphedStep, GroupConfig, build, check_step_options, train_step
from neurosym.training.update import adam

ROUNDS = 10
"""Rounds of the interleaved measurement (fewer when there are fewer seeds)."""


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _seconds(device: torch.device, steps: int, step: Callable[[], None]) -> float:
    """Wall-clock seconds of ``steps`` calls of ``step``, the device's queued work included."""
    _synchronize(device)
    started = time.perf_counter()
    for _ in range(steps):
        step()
    _synchronize(device)
    return time.perf_counter() - started


def _timed(advance: Callable[[int], float], steps: int, min_seconds: float) -> tuple[int, float]:
    """``advance(count)`` (the seconds of ``count`` steps) for ``steps`` steps, then for as many more as the rate so
    far says fill ``min_seconds``: returns the steps timed and their seconds."""
    seconds = advance(steps)
    if seconds < min_seconds:
        more = math.ceil(steps * (min_seconds - seconds) / seconds)
        seconds, steps = seconds + advance(more), steps + more
    return steps, seconds


class _TimedRun:
    """The group's model (batched over its seeds, or a plain model for a one-seed group) with its
    optimiser and data; :meth:`advance` trains it for some steps and returns the seconds they took.
    ``cuda_graph`` (batched only) takes every step as one :class:`GraphedStep`."""

    def __init__(
        self,
        config: GroupConfig,
        device: torch.device,
        batched: bool,
        amp: bool,
        cuda_graph: bool = False,
        compile_loss: bool = False,
    ):
        check_step_options(cuda_graph, amp, compile_loss)
        if cuda_graph and not batched:
            raise ValueError("a CUDA-graph step is timed for a batched group")
        self.data, self.model = build(config, device, batched=batched)
        self.optimizer = adam(self.model.parameters(), config.learning_rate, capturable=cuda_graph and device.type == "cuda")
        self.config, self.device, self.batched, self.amp = config, device, batched, amp
        self.graphed = GraphedStep(self.model, self.optimizer, self.data, config.batch_size, compile_loss) if cuda_graph else None
        self.step = 0

    def advance(self, steps: int) -> float:
        return _seconds(self.device, steps, self._train_one_step)

    def _train_one_step(self) -> None:
        if self.graphed is not None:
            self.graphed(self.step)
            self.step += 1
            return
        x, target = self.data.training_batch(self.config.batch_size)
        if not self.batched:
            x, target = x[0], target[0]
        train_step(self.model, self.optimizer, x, target, self.step, self.amp)
        self.step += 1


def measure_speed(
    model: str, operation: str, seeds: int, steps: int, device: torch.device, amp: bool = False
) -> dict[str, float]:
    """Seed-iterations per second of ``seeds`` runs of ``steps`` steps, batched and one seed at a time
    (interleaved, see the module docstring).

    Returns ``{"batched_seconds", "sequential_seconds", "batched_rate", "sequential_rate", "speedup"}``.
    """
    if seeds < 1 or steps < 1:
        raise ValueError(f"seeds and steps must be positive, got {seeds} and {steps}")
    config = GroupConfig(model, (operation,), tuple(range(seeds)), steps=steps, evaluation_size=1)
    batched_run = _TimedRun(config, device, batched=True, amp=amp)
    rounds = min(ROUNDS, seeds)
    seed_groups = np.array_split(np.asarray(config.seeds), rounds)
    batched_shares = [len(part) for part in np.array_split(np.arange(steps), rounds)]
    batched = sequential = 0.0
    for group, share in zip(seed_groups, batched_shares):
        for seed in group.tolist():
            sequential += _TimedRun(replace(config, seeds=(seed,)), device, batched=False, amp=amp).advance(steps)
        batched += batched_run.advance(share)
    work = seeds * steps
    return {
        "batched_seconds": batched,
        "sequential_seconds": sequential,
        "batched_rate": work / batched,
        "sequential_rate": work / sequential,
        "speedup": sequential / batched,
    }


def measure_models(operations: dict[str, str], seeds: int, steps: int, device: torch.device, amp: bool = False) -> list[dict]:
    """:func:`measure_speed` of every model on its operation (``operations``: model -> operation): one record
    each, ``{"model", "operation", ...}`` with the times, rates and speed-up."""
    return [
        {"model": model, "operation": name, **measure_speed(model, name, seeds, steps, device, amp)}
        for model, name in operations.items()
    ]


def batched_rate(
    config: GroupConfig,
    device: torch.device,
    steps: int,
    warmup: int = 20,
    amp: bool = False,
    cuda_graph: bool = False,
    min_seconds: float = 0.0,
    compile_loss: bool = False,
) -> dict[str, float]:
    """Seed-iterations per second of ``config``'s whole group (every operation × seed) trained as one batched
    model for ``steps`` steps after ``warmup`` untimed ones (kernels compiled, caches warm, the CUDA graph
    captured), each step a :class:`GraphedStep` with ``cuda_graph`` (its loss compiled with ``compile_loss``).
    When ``steps`` took less than
    ``min_seconds``, more steps are timed, as many as the rate so far says fill the rest.

    Returns ``{"runs", "steps", "seconds", "rate"}`` (``rate``: runs × steps / seconds)."""
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be positive and warmup at least 0, got {steps} and {warmup}")
    run = _TimedRun(config, device, batched=True, amp=amp, cuda_graph=cuda_graph, compile_loss=compile_loss)
    run.advance(warmup)
    steps, seconds = _timed(run.advance, steps, min_seconds)
    runs = len(config.operations) * len(config.seeds)
    return {"runs": runs, "steps": steps, "seconds": seconds, "rate": runs * steps / seconds}


def concurrent_rate(
    configs: list[GroupConfig],
    device: torch.device,
    steps: int,
    warmup: int = 20,
    min_seconds: float = 0.0,
    compile_loss: bool = False,
) -> dict[str, float]:
    """Seed-iterations per second of several groups trained side by side, each step of each a
    :class:`GraphedStep` replayed on a CUDA stream of the group's own, so that the GPU runs the groups' small
    kernels at once (on the CPU the groups take their steps in turn), each loss compiled with ``compile_loss``.
    Timed as :func:`batched_rate`.

    Returns ``{"runs", "steps", "seconds", "rate"}`` (``runs``: over every group)."""
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be positive and warmup at least 0, got {steps} and {warmup}")
    runs = [_TimedRun(config, device, batched=True, amp=False, cuda_graph=True, compile_loss=compile_loss) for config in configs]
    streams = [torch.cuda.Stream(device) if device.type == "cuda" else None for _ in runs]

    def step() -> None:
        for run, stream in zip(runs, streams):
            with torch.cuda.stream(stream):  # None: the current stream
                run._train_one_step()

    _seconds(device, warmup, step)
    steps, seconds = _timed(lambda count: _seconds(device, count, step), steps, min_seconds)
    members = sum(len(config.operations) * len(config.seeds) for config in configs)
    return {"runs": members, "steps": steps, "seconds": seconds, "rate": members * steps / seconds}
