"""Seeding torch's global generators for one block of work, without moving the caller's random stream."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def seeded(seed: int, device: torch.device | str = "cpu") -> Iterator[None]:
    """Within the block torch's global generators (the CPU's, and ``device``'s when it is a CUDA device) start from
    ``seed``; on leaving, the caller's states come back. For library functions that build modules (their
    initialisers draw from the global generator) or train with dropout: reproducible for a seed, whatever the caller
    drew before, and the caller's own stream goes on as if the block had not run. Only the generators that come back
    are seeded: ``torch.manual_seed`` would also seed every other CUDA device's (or, before CUDA starts, queue that
    seed for when it does), and those would keep ``seed`` after the block."""
    device = torch.device(device)
    cuda = [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        torch.default_generator.manual_seed(seed)
        for index in cuda:
            torch.cuda.default_generators[index].manual_seed(seed)
        yield


STEP_SEED_STRIDE = 1_000_003
"""Runs of seeds ``s`` and ``s + 1`` draw their steps' randomness from seeds this far apart (:func:`step_generator`)."""


def step_generator(seed: int, step: int) -> torch.Generator:
    """A new CPU generator for training step ``step`` of a run of ``seed`` (its windows' shifts and styles, its
    picks): seeded with ``seed * STEP_SEED_STRIDE + step``, wrapped below ``2**64`` (torch's seeds), so that any
    seed and step ≥ 0 have one."""
    return torch.Generator().manual_seed((seed * STEP_SEED_STRIDE + step) % 2**64)
