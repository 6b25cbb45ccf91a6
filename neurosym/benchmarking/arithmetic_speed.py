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

from neurosym.benchmarking.arithmetic_training import GraphedStep, GroupConfig, build, group_loss, train_step
from neurosym.training.update import Update, adam

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


class _TimedRun:
    """The group's model (batched over its seeds, or a plain model for a one-seed group) with its
    optimiser and data; :meth:`advance` trains it for some steps and returns the seconds they took.
    ``cuda_graph`` (batched only) takes every step as one :class:`GraphedStep`."""

    def __init__(self, config: GroupConfig, device: torch.device, batched: bool, amp: bool, cuda_graph: bool = False):
        if cuda_graph and (amp or not batched):
            raise ValueError("a CUDA-graph step is timed for a batched group in float32 (no amp)")
        self.data, self.model = build(config, device, batched=batched)
        self.optimizer = adam(self.model.parameters(), config.learning_rate, capturable=cuda_graph and device.type == "cuda")
        self.config, self.device, self.batched, self.amp = config, device, batched, amp
        self.graphed = GraphedStep(self.model, self.optimizer, self.data, config.batch_size) if cuda_graph else None
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
) -> dict[str, float]:
    """Seed-iterations per second of ``config``'s whole group (every operation × seed) trained as one batched
    model for ``steps`` steps after ``warmup`` untimed ones (kernels compiled, caches warm, the CUDA graph
    captured), each step a :class:`GraphedStep` with ``cuda_graph``. When ``steps`` took less than
    ``min_seconds``, more steps are timed, as many as the rate so far says fill the rest.

    Returns ``{"runs", "steps", "seconds", "rate"}`` (``rate``: runs × steps / seconds)."""
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be positive and warmup at least 0, got {steps} and {warmup}")
    run = _TimedRun(config, device, batched=True, amp=amp, cuda_graph=cuda_graph)
    run.advance(warmup)
    seconds = run.advance(steps)
    if seconds < min_seconds:
        more = math.ceil(steps * (min_seconds - seconds) / seconds)
        seconds, steps = seconds + run.advance(more), steps + more
    runs = len(config.operations) * len(config.seeds)
    return {"runs": runs, "steps": steps, "seconds": seconds, "rate": runs * steps / seconds}


def step_costs(
    config: GroupConfig, device: torch.device, steps: int, warmup: int = 20, compile_mode: str = "reduce-overhead"
) -> dict[str, float]:
    """Seed-iterations per second of ``config``'s batched training step taken apart, to see what bounds it:
    ``"drawn"`` (each step draws its batch, as training does), ``"fixed"`` (one batch drawn once: the step
    without the input drawing) and ``"compiled"`` (the fixed batch, with the loss's forward and backward
    through ``torch.compile(mode=compile_mode)``: CUDA graphs on a GPU under ``"reduce-overhead"``; the
    optimiser step and the clamp stay eager). Each is timed for ``steps`` steps after ``warmup`` untimed ones.

    The loss is taken at one step of the regulariser schedule (the middle of the run), so one graph serves
    every call; its weights are those of :func:`train_step`. Raises ``RuntimeError`` when the compiled loss
    differs from eager mode's.
    """
    if steps < 1 or warmup < 0:
        raise ValueError(f"steps must be positive and warmup at least 0, got {steps} and {warmup}")
    runs = len(config.operations) * len(config.seeds)
    drawn = _TimedRun(config, device, batched=True, amp=False)
    drawn.advance(warmup)
    rates = {"drawn": runs * steps / drawn.advance(steps)}
    x, target = drawn.data.training_batch(config.batch_size)
    at_step = config.steps // 2

    def eager() -> torch.Tensor:
        return group_loss(drawn.model, x, target, at_step, amp=False)

    compiled_loss = torch.compile(eager, mode=compile_mode)

    def compiled() -> torch.Tensor:
        torch.compiler.cudagraph_mark_step_begin()  # the previous step's graph outputs are no longer read
        return compiled_loss()

    with torch.no_grad():
        expected, got = eager(), compiled().clone()
    if not torch.allclose(got, expected, rtol=1e-5, atol=1e-6):
        raise RuntimeError(f"the compiled loss is {got.item()}, eager mode's {expected.item()}: not the same step")
    update = Update(drawn.optimizer, after=drawn.model.clamp_weights_)
    for name, loss in (("fixed", eager), ("compiled", compiled)):
        step = lambda loss=loss: update(loss())
        _seconds(device, warmup, step)
        rates[name] = runs * steps / _seconds(device, steps, step)
    return rates
