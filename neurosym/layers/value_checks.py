"""When host-side work on tensor values (an input check, a numpy kernel) is free."""

from __future__ import annotations

import torch


def values_are_readable(tensor: torch.Tensor) -> bool:
    """Whether a check may read ``tensor``'s values on the host: on the CPU in eager mode, where that costs
    nothing. On an accelerator a read waits for every queued kernel (a stall at every call, so the host
    can no longer run ahead of the device), and under ``torch.compile`` it splits the graph; checks that
    read values are skipped there, and the structural checks (shapes, dtypes) still run."""
    return tensor.device.type == "cpu" and not torch.compiler.is_compiling()
