"""``torch.distributed`` set-up for scripts launched by ``torchrun`` (or run as a single process).

``torchrun --nproc_per_node N script.py`` sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``MASTER_ADDR`` and ``MASTER_PORT``; :func:`init_distributed` reads them, joins the process group (NCCL
on CUDA, gloo on CPU) and pins each process to its local GPU. Without those variables it returns a
single-process context and touches nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from neurosym.training.device import resolve_device


@dataclass(frozen=True)
class DistributedContext:
    """Where this process stands: its ``rank`` among ``world_size`` processes and its ``device``."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Rank 0: the only process that writes checkpoints, results and progress bars."""
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        """Whether more than one process trains (``world_size > 1``)."""
        return self.world_size > 1


_DECIMAL_INT = re.compile(r"[+-]?[0-9]+")
"""An int as an environment variable holds it: an optional sign and ASCII digits (``int`` would also take spaces
around it, underscores between digits and digits of other scripts)."""


def _env_int(name: str, default: int, minimum: int = 0) -> int:
    """The environment variable ``name`` as an int of at least ``minimum`` (``default`` when it is unset), else
    ``ValueError`` naming it and its value (which must be :data:`_DECIMAL_INT`)."""
    value = os.environ.get(name)
    if value is None:
        return default
    if not _DECIMAL_INT.fullmatch(value):
        raise ValueError(f"environment variable {name}={value!r} is not an integer (an optional sign and digits 0-9)")
    number = int(value)
    if number < minimum:
        raise ValueError(f"environment variable {name}={value!r} must be at least {minimum}")
    return number


def init_distributed(device: str | torch.device = "auto") -> DistributedContext:
    """Join the process group described by the ``torchrun`` environment, or run alone without it. ``ValueError``
    naming the variable where ``WORLD_SIZE``, ``RANK`` or ``LOCAL_RANK`` is no integer, ``WORLD_SIZE`` is below 1,
    ``RANK`` or ``LOCAL_RANK`` below 0, or ``RANK`` not below ``WORLD_SIZE``."""
    world_size = _env_int("WORLD_SIZE", 1, minimum=1)
    rank = _env_int("RANK", 0)
    local_rank = _env_int("LOCAL_RANK", rank)
    if rank >= world_size:
        raise ValueError(f"RANK={rank} is outside [0, WORLD_SIZE={world_size})")
    base = resolve_device(device)
    if world_size == 1:
        return DistributedContext(0, 1, 0, base)
    if base.type == "cuda":
        base = torch.device("cuda", local_rank)
        torch.cuda.set_device(base)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if base.type == "cuda" else "gloo", rank=rank, world_size=world_size)
    return DistributedContext(rank, world_size, local_rank, base)


def shutdown_distributed() -> None:
    """Leave the process group, if one was joined."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


LAST_BARRIER_TIMEOUT = timedelta(hours=12)
"""How long the ranks of :func:`distributed_process` wait at its end for the others (on gloo): rank 0 may still be
evaluating and writing results, which can outlast the process group's own timeout for collectives."""


@contextmanager
def distributed_process(device: str | torch.device = "auto") -> Iterator[DistributedContext]:
    """:func:`init_distributed` for the block, and :func:`shutdown_distributed` after it. A block that ends
    normally first waits for every rank (:data:`LAST_BARRIER_TIMEOUT` on gloo), so that no process tears its
    connections down while a peer still uses them (gloo aborts the peer then); a block that raises leaves at once."""
    context = init_distributed(device)
    try:
        yield context
        if context.is_distributed:
            if dist.get_backend() == "gloo":
                dist.monitored_barrier(timeout=LAST_BARRIER_TIMEOUT)
            else:
                dist.barrier()
    finally:
        shutdown_distributed()


def broadcast_from_main(value: Any, context: DistributedContext) -> Any:
    """Rank 0's ``value`` on every rank (any picklable object); the value itself when running alone."""
    if not context.is_distributed:
        return value
    holder = [value]
    dist.broadcast_object_list(holder, src=0)
    return holder[0]


@contextmanager
def main_process_first(context: DistributedContext) -> Iterator[None]:
    """Let rank 0 run the block first (e.g. to build an on-disk cache), then the other ranks."""
    if context.is_distributed and not context.is_main:
        dist.barrier()
    yield
    if context.is_distributed and context.is_main:
        dist.barrier()
