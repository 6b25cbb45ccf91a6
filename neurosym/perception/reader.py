"""The one interface every reader of symbol windows has (classifier, ensemble, routed readers, a user's own)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class Reader(Protocol):
    """Reads windows as symbols: ``vocabulary`` names the output columns, and calling it maps windows
    ``[N, ...]`` (and optionally ``groups`` int64 ``[N]``, the example each window belongs to, which a reader
    may use to read an example's windows alike, or ignore) to log-probabilities ``[N, len(vocabulary)]``."""

    @property
    def vocabulary(self) -> Sequence[str]: ...

    def __call__(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor: ...
