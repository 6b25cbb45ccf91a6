"""A reader whose readings are set row by row: each window is read as the row of a table its pixels name."""

from __future__ import annotations

from collections.abc import Sequence

import torch


class TableReader(torch.nn.Module):
    """Reads a window whose pixels are all ``k`` (any shape ``[...]``) as row ``k`` of ``rows [K, V]``, in ``rows``'
    dtype: log-probabilities over ``vocabulary`` set exactly (e.g. in float64, apart below float32's resolution)."""

    def __init__(self, vocabulary: Sequence[str], rows: torch.Tensor):
        super().__init__()
        self.vocabulary = tuple(vocabulary)
        self.rows = rows

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return self.rows[windows.flatten(1)[:, 0].long()]
