"""Keeping freed CPU memory in the process, so that large per-step buffers do not page-fault.

glibc's ``malloc`` serves blocks above its mmap threshold with fresh pages from the kernel and returns
them on ``free``, and it trims the heap top back to the kernel past its trim threshold. A training step
that allocates and frees a few buffers of several MB (a batched model over 1.28 M inputs, say) then
takes a page fault for every 4 KiB of them, every step: ≈ 2,700 faults and 35 % of a batched NALU step
of the arithmetic benchmark (11.0 → 7.1 ms when kept). Raising both thresholds keeps those pages mapped
and reuses them, as the caching allocators PyTorch's CPU tuning guide suggests (jemalloc, tcmalloc) do.
Blocks above 32 MiB (a reader CNN's activations over a batch of a few thousand windows) still come from mmap
unless ``large_blocks``: a stroke-normalised HINT reader's training step spent a quarter of its CPU time
faulting them in (0.97 → 0.72 s of CPU time a step, ``docs/performance.md``).
"""

from __future__ import annotations

import ctypes
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the stubs' type of a function looked up on a CDLL (no such name at run time)
    from ctypes import _NamedFuncPointer

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_MMAP_MAX = -4
MMAP_THRESHOLD_MAX = 32 << 20
"""glibc's largest mmap threshold on 64-bit systems: blocks up to 32 MiB then come from the heap."""
TRIM_THRESHOLD = 1 << 30
"""Free memory at the heap top kept before trimming: 1 GiB."""


def _libc_function(name: str) -> _NamedFuncPointer | None:
    """glibc's function ``name``, or None off Linux or without glibc (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL("libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def release_free_memory() -> bool:
    """Give the free pages inside the heap back to the kernel (glibc's ``malloc_trim(0)``); returns whether
    it could. Freed blocks between live ones are otherwise kept by the process for good: a long run that
    alternates training steps with large evaluation batches grew by gigabytes that way (the arithmetic
    benchmark's 20 seeds reached 14 GB by 7·10⁵ steps). Call it after an evaluation, not every step."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    trim(0)
    return True


def retain_freed_memory(large_blocks: bool = False) -> bool:
    """Raise glibc's mmap threshold to :data:`MMAP_THRESHOLD_MAX` and its trim threshold to
    :data:`TRIM_THRESHOLD` for this process; with ``large_blocks`` serve every block from the heap (no mmap at
    all), so that blocks above the threshold are reused too. Returns whether every setting was made: False off
    Linux or without glibc (musl, macOS, Windows), where nothing changes."""
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = [(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX), (M_TRIM_THRESHOLD, TRIM_THRESHOLD)]
    made = [bool(mallopt(name, value)) for name, value in settings + [(M_MMAP_MAX, 0)] * large_blocks]
    return all(made)
