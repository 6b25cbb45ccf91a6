"""Symbol windows for batches of HINT records, drawn from a symbol bank resized once to 32x32."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from neurosym.data.hint import HintImageDataset, HintRecord
from neurosym.data.symbol_images import WINDOW, SymbolBank, resize_images


class WindowSource:
    """The windows of ``records``: which image shows each symbol follows :class:`HintImageDataset`
    (the record's own image paths, else a draw from ``pool`` fixed per ``seed`` and record index);
    a square symbol rendered at height 32 is exactly its 32x32 window, so the bank is resized once.
    """

    def __init__(self, records: Sequence[HintRecord], bank: SymbolBank, pool: str, seed: int = 0):
        self.records = records
        self.dataset = HintImageDataset(records, bank, pool, seed)
        self.images = torch.from_numpy(resize_images(bank.images, (WINDOW, WINDOW)))
        self._picks: dict[int, np.ndarray] = {}  # image indices per record, drawn once

    def image_indices(self, index: int) -> np.ndarray:
        """Bank indices ``[n]`` of the images showing record ``index``'s symbols."""
        if index not in self._picks:
            self._picks[index] = np.asarray(self.dataset.image_indices(index, self.records[index]))
        return self._picks[index]

    def __len__(self) -> int:
        return len(self.records)

    def batch(self, indices: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows uint8 ``[B, T, 32, 32]`` (black padding) and lengths ``[B]`` of the records at ``indices``."""
        picks = [self.image_indices(int(i)) for i in indices]
        lengths = torch.tensor([len(p) for p in picks], dtype=torch.long)
        windows = torch.zeros(len(picks), int(lengths.max()), WINDOW, WINDOW, dtype=torch.uint8)
        for row, pick in enumerate(picks):
            windows[row, : len(pick)] = self.images[torch.from_numpy(pick)]
        return windows, lengths
