"""retain_freed_memory: large freed buffers stay mapped (no page faults when reused), and a clean no-op
where glibc's mallopt is not available."""

from __future__ import annotations

import ctypes
import sys

import pytest
import torch

from neurosym.training import allocator

resource = pytest.importorskip("resource")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only")
def test_reused_buffers_of_megabytes_no_longer_page_fault() -> None:
    assert allocator.retain_freed_memory()
    for _ in range(2):  # 8 MiB: mapped once (twice: the heap settles on the block it reuses)
        torch.empty(2 << 20).fill_(1.0)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(10):
        torch.empty(2 << 20).fill_(1.0)  # freed and allocated again: 2,048 faults each if returned to the kernel
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 1_000


def test_other_platforms_are_left_alone(monkeypatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not allocator.retain_freed_memory()


def test_a_libc_without_mallopt_is_left_alone(monkeypatch) -> None:
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert not allocator.retain_freed_memory()
