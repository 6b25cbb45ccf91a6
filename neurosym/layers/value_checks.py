"""Where input checks that read tensor values run."""

from __future__ import annotations

import torch


def values_are_readable(tensor: torch.Tensor) -> bool:
    """Whether an input check may read ``tensor``'s values on the host: in eager mode on every device (on an
    accelerator the read waits for the queued kernels, once per checked call), but not on the ``meta``
    device (shapes only, no values) and not while ``torch.compile`` traces (a read would split the
    graph). Where it is False the value checks are skipped; the structural checks (shapes, dtypes) still run."""
    return tensor.device.type != "meta" and not torch.compiler.is_compiling()
