"""Throughput of batched-seed training versus training the same runs one at a time.

Both modes run the same training step (:func:`train_step`) on the same data generator and model type;
the batched mode trains all ``S`` seeds as one ensemble model, the sequential mode trains each seed
as a plain model without an ensemble dimension. Set-up (building data and models) is not timed.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from neurosym.experiments.arithmetic.training import GroupConfig, build, train_step


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed_training(config: GroupConfig, device: torch.device, batched: bool, amp: bool) -> float:
    """Seconds spent on ``config.steps`` training steps of the group's model (batched or a plain model)."""
    data, model = build(config, device, batched=batched)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    _synchronize(device)
    started = time.perf_counter()
    for step in range(config.steps):
        x, target = data.training_batch(config.batch_size)
        if not batched:
            x, target = x[0], target[0]
        train_step(model, optimizer, x, target, step, amp)
    _synchronize(device)
    return time.perf_counter() - started


def measure_speed(
    model: str, operation: str, seeds: int, steps: int, device: torch.device, amp: bool = False
) -> dict[str, float]:
    """Seed-iterations per second of ``seeds`` runs of ``steps`` steps, batched and one seed at a time.

    Returns ``{"batched_seconds", "sequential_seconds", "batched_rate", "sequential_rate", "speedup"}``.
    """
    if seeds < 1 or steps < 1:
        raise ValueError(f"seeds and steps must be positive, got {seeds} and {steps}")
    config = GroupConfig(model, (operation,), tuple(range(seeds)), steps=steps, evaluation_size=1)
    batched = _timed_training(config, device, batched=True, amp=amp)
    sequential = sum(
        _timed_training(replace(config, seeds=(seed,)), device, batched=False, amp=amp) for seed in config.seeds
    )
    work = seeds * steps
    return {
        "batched_seconds": batched,
        "sequential_seconds": sequential,
        "batched_rate": work / batched,
        "sequential_rate": work / sequential,
        "speedup": sequential / batched,
    }
