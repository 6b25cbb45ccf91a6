"""Train/eval mode for one block of work, restored afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn


@contextmanager
def evaluation_mode(model: nn.Module) -> Iterator[None]:
    """Within the block every module of ``model`` is in evaluation mode (dropout off, batch norm reads its running
    statistics and leaves them alone); on leaving, each module gets its own mode back."""
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield
    finally:
        for module, training in modes:
            module.train(training)
