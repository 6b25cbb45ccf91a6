"""Symbol windows for batches of HINT records, drawn from a symbol bank resized once to 32x32."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import torch

from neurosym.data.hint import HintImageDataset, HintRecord
from neurosym.data.symbol_images import WINDOW, SymbolBank
from neurosym.pipelines.sentences import example_indices
from neurosym.training.checks import as_int, int_at_least


class WindowSource:
    """The windows of ``records``: which image shows each symbol follows :class:`HintImageDataset`
    (the record's own image paths, else a draw from ``pool`` fixed per ``seed`` and record index);
    a square symbol rendered at height 32 is exactly its 32x32 window, so the bank is resized once.
    """

    def __init__(self, records: Sequence[HintRecord], bank: SymbolBank, pool: str, seed: int = 0):
        self.records = records
        self.dataset = HintImageDataset(records, bank, pool, seed)
        self.images = torch.from_numpy(bank.resized((WINDOW, WINDOW)))
        self._picks: dict[int, np.ndarray] = {}  # image indices per record, drawn once

    def image_indices(self, index: int) -> np.ndarray:
        """Bank indices ``[n]`` of the images showing record ``index``'s symbols (an int in ``[0, len(self))``:
        :func:`record_index`)."""
        index = record_index(index, len(self))
        if index not in self._picks:
            self._picks[index] = np.asarray(self.dataset.image_indices(index, self.records[index]))
        return self._picks[index]

    def __len__(self) -> int:
        return len(self.records)

    def windows(self, index: int) -> torch.Tensor:
        """Record ``index``'s windows, uint8 ``[n, 32, 32]`` (an int in ``[0, len(self))``: :func:`record_index`)."""
        return self.images[torch.from_numpy(self.image_indices(index))]

    def batch(self, indices: Iterable[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows uint8 ``[B, T, 32, 32]`` (black padding) and lengths ``[B]`` of the records at ``indices`` (integers in
        ``[0, len(self))``, else ``ValueError``: :func:`~neurosym.pipelines.sentences.example_indices`)."""
        return stack_windows([self.windows(i) for i in example_indices(indices, len(self)).tolist()])

    def window_batches(self, records_per_batch: int = 64) -> Iterator[torch.Tensor]:
        """Every record's windows, ``records_per_batch`` records at a time: uint8 ``[n, 32, 32]`` per batch
        (no padding), e.g. to re-estimate batch-norm statistics on unlabelled images."""
        for start in range(0, len(self), records_per_batch):
            yield torch.cat([self.windows(i) for i in range(start, min(start + records_per_batch, len(self)))])


def record_index(index: int, size: int) -> int:
    """``index`` as a Python int where it names one of ``size`` records: ``TypeError`` unless an int (numpy's too, not a
    bool, which was read as record 0 or 1), ``IndexError`` outside ``[0, size)`` (``-1`` too, as ``batch`` refuses it:
    a window source counts its records from 0 alone)."""
    number = as_int(index)
    if number is None:
        raise TypeError(f"a record index is an int, got {type(index).__name__} {index!r:.40}")
    if not 0 <= number < size:
        raise IndexError(f"record index {number} is outside [0, {size}): the source holds {size} records")
    return number


EVALUATION_WINDOWS = 4096
"""Windows read at once when evaluating. A batch of HINT's 256 longest test expressions (scale 0.1) holds 15,000: a
width-32 reader's activations for them took 2.6 GB (a routed, adapted reader's 13-18 GB in all); bounded here, the
512 longest read with no growth of the process's peak memory, in 31 s instead of 42 (one CPU thread)."""


def reading_batches(
    lengths: Sequence[int] | np.ndarray, batch_size: int, max_windows: int = EVALUATION_WINDOWS
) -> list[np.ndarray]:
    """Batches of example indices to read without gradients: shortest examples first, each batch at most
    ``batch_size`` examples and ``max_windows`` symbols in all (an example longer than that alone), so that memory
    stays bounded however long the examples grow; ``[b]`` int arrays that partition ``range(len(lengths))``."""
    batch_size = int_at_least(batch_size, "batch_size", 1)  # (2.5 passed; 0 was named with max_windows)
    max_windows = int_at_least(max_windows, "max_windows", 1)
    lengths = np.asarray(lengths)
    batches: list[np.ndarray] = []
    current: list[int] = []
    windows = 0
    for index in np.argsort(lengths, kind="stable").tolist():
        if current and (len(current) == batch_size or windows + lengths[index] > max_windows):
            batches.append(np.array(current))
            current, windows = [], 0
        current.append(index)
        windows += int(lengths[index])
    if current:
        batches.append(np.array(current))
    return batches


def real_positions(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """Which positions of a padded batch hold a symbol: bool ``[B, steps]`` from ``lengths [B]``."""
    return torch.arange(steps, device=lengths.device)[None, :] < lengths[:, None]


def stack_windows(rows: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """``B`` records' windows ``[n_b, 32, 32]`` → windows uint8 ``[B, T, 32, 32]`` (black padding) and lengths ``[B]``."""
    lengths = torch.tensor([len(row) for row in rows], dtype=torch.long)
    windows = torch.zeros(len(rows), int(lengths.max()) if len(rows) else 0, WINDOW, WINDOW, dtype=torch.uint8)
    for index, row in enumerate(rows):
        windows[index, : len(row)] = row
    return windows, lengths


class ConcatWindows:
    """Several window sources as one: ``records`` and indices run through them in order, so a trainer can
    mix expressions drawn from different banks (e.g. a new writer's images and replayed old ones)."""

    def __init__(self, *sources: WindowSource):
        if not sources:
            raise ValueError("ConcatWindows needs at least one source")
        self.sources = sources
        self.records = [record for source in sources for record in source.records]
        self.offsets = np.cumsum([0] + [len(source) for source in sources])

    def __len__(self) -> int:
        return len(self.records)

    def windows(self, index: int) -> torch.Tensor:
        """Record ``index``'s windows, uint8 ``[n, 32, 32]``, from the source that holds it (an int in
        ``[0, len(self))``: :func:`record_index`)."""
        index = record_index(index, len(self))
        which = int(np.searchsorted(self.offsets, index, side="right")) - 1
        return self.sources[which].windows(index - int(self.offsets[which]))

    def batch(self, indices: Iterable[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Windows uint8 ``[B, T, 32, 32]`` (black padding) and lengths ``[B]`` of the records at ``indices`` (integers in
        ``[0, len(self))``, else ``ValueError``: :func:`~neurosym.pipelines.sentences.example_indices`)."""
        return stack_windows([self.windows(i) for i in example_indices(indices, len(self)).tolist()])
