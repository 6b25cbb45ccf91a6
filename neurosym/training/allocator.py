"""Keeping freed CPU memory in the process, so that large per-step buffers do not page-fault.

glibc's ``malloc`` serves blocks above its mmap threshold with fresh pages from the kernel and returns
them on ``free``, and it trims the heap top back to the kernel past its trim threshold. A training step
that allocates and frees a few buffers of several MB (a batched model over 1.28 M inputs, say) then
takes a page fault for every 4 KiB of them, every step: ≈ 2,700 faults and 35 % of a batched NALU step
of the arithmetic benchmark (11.0 → 7.1 ms when kept). Raising both thresholds keeps those pages mapped
and reuses them, as the caching allocators PyTorch's CPU tuning guide suggests (jemalloc, tcmalloc) do.
"""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_MAX = 32 << 20
"""glibc's largest mmap threshold on 64-bit systems: blocks up to 32 MiB then come from the heap."""
TRIM_THRESHOLD = 1 << 30
"""Free memory at the heap top kept before trimming: 1 GiB."""


def retain_freed_memory() -> bool:
    """Raise glibc's mmap threshold to :data:`MMAP_THRESHOLD_MAX` and its trim threshold to
    :data:`TRIM_THRESHOLD` for this process. Returns whether both were set: False off Linux or without
    glibc (musl, macOS, Windows), where nothing changes."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
