"""PyTorch datasets over HINT records: symbol input or rendered image input, with a padding collate.

Every item is a dict: ``tokens`` int64 ``[n]`` (symbol ids, 0 is padding), ``head`` int64 ``[n]``,
``res_all`` int64 ``[n]``, ``res`` int64 scalar, ``res_digits`` int64 ``[k]`` (the result's decimal digits,
least significant first, as seq2seq decoders emit them), ``length`` and ``eval`` (subset name, ``""`` in
train); image datasets add ``images`` float ``[n, 1, 32, 32]`` (white ink on black, one window per symbol).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from neurosym.data.hint.examples import HintRecord, symbol_count_problem
from neurosym.data.symbol_images import FEWSHOT_CONCEPTS, HINT_SYMBOLS, SymbolBank, render_windows
from neurosym.semantics.numerals import decimal_text
from neurosym.training.checks import as_int, int_at_least

PAD_ID = 0
"""Token id of padding; symbol ids start at 1."""
IGNORE_INDEX = -100
"""Padding of target sequences (``head``, ``res_all``, ``res_digits``): the loss functions' ignore index."""
DEFAULT_SYMBOLS: tuple[str, ...] = HINT_SYMBOLS + FEWSHOT_CONCEPTS


def result_digits(result: int) -> list[int]:
    """The decimal digits of a non-negative int ``result`` (numpy's too, of any length), least significant first:
    ``120`` → ``[0, 2, 1]``. ``TypeError`` for a result that is no int (``2.0`` failed as "invalid literal for int()
    with base 10: '.'", ``True`` on its ``'e'``), ``ValueError`` for a negative one; a result of more than 4,300
    digits failed in ``str`` (:mod:`~neurosym.semantics.numerals`)."""
    number = as_int(result)
    if number is None:
        raise TypeError(f"a HINT result is an int, got {type(result).__name__} {result!r:.40}")
    if number < 0:
        raise ValueError(f"HINT results are non-negative, got {number}")
    return [int(d) for d in reversed(decimal_text(number))]


class HintSymbolDataset(Dataset):
    """Records with symbol input. ``symbols`` fixes the id of each symbol (id = position + 1)."""

    def __init__(self, records: Sequence[HintRecord], symbols: Sequence[str] = DEFAULT_SYMBOLS):
        self.records = records
        self.symbols = tuple(symbols)
        self.ids = {symbol: index + 1 for index, symbol in enumerate(self.symbols)}

    def __len__(self) -> int:
        return len(self.records)

    def encode(self, sentence: str) -> torch.Tensor:
        """Symbol ids ``[n]`` of a sentence; an unknown symbol raises naming it and its position."""
        try:
            return torch.tensor([self.ids[c] for c in sentence], dtype=torch.long)
        except KeyError:
            position = next(i for i, c in enumerate(sentence) if c not in self.ids)
            raise ValueError(
                f"symbol {sentence[position]!r} at position {position} of {sentence!r} is not in the vocabulary {self.symbols}"
            ) from None

    def __getitem__(self, index: int) -> dict:
        """One item (the module's fields); ``ValueError`` naming the record when its ``head`` or ``res_all`` do not
        hold one entry per symbol, which would shift them against ``tokens`` once padded, or when a value does not fit
        the int64 tensors (torch's "Overflow when unpacking long" named no record)."""
        record = self.records[index]
        if problem := symbol_count_problem(record.expr, record.head, record.res_all):
            raise ValueError(f"record {index} (id {record.id!r}): {problem}")
        if not all(-(2**63) <= value < 2**63 for value in (record.res, *record.res_all)):
            raise ValueError(f"record {index} (id {record.id!r}): a value of {record.expr!r} does not fit an int64 tensor")
        return {
            "tokens": self.encode(record.expr),
            "head": torch.tensor(record.head, dtype=torch.long),
            "res_all": torch.tensor(record.res_all, dtype=torch.long),
            "res": torch.tensor(record.res, dtype=torch.long),
            "res_digits": torch.tensor(result_digits(record.res), dtype=torch.long),
            "length": len(record.expr),
            "eval": record.eval or "",
        }


class HintImageDataset(HintSymbolDataset):
    """Records with image input rendered from ``bank``.

    A record with ``img_paths`` (the official release's) shows those images: each must be in the bank (else the
    bank's ``KeyError``) and show its symbol (else ``ValueError`` naming the record); a record without them gets each
    symbol's image drawn from the bank's ``pool`` (train/val/test), reproducibly per ``seed`` (an int of at least 0,
    else ``ValueError``) and item index.
    """

    def __init__(
        self,
        records: Sequence[HintRecord],
        bank: SymbolBank,
        pool: str,
        seed: int = 0,
        symbols: Sequence[str] = DEFAULT_SYMBOLS,
    ):
        super().__init__(records, symbols)
        # (-1 failed at the first item, in numpy's seeding; "1" drew as 1)
        self.bank, self.pool, self.seed = bank, pool, int_at_least(seed, "seed", 0)
        if not bank.symbols:  # (an IndexError)
            raise ValueError("the bank holds no symbol: its images cannot show any expression")
        bank.pool_indices(bank.symbols[0], pool)  # validates the pool name now

    def image_indices(self, index: int, record: HintRecord) -> np.ndarray:
        """One bank index per symbol of ``record``: ``[len(expr)]``."""
        if record.img_paths is not None:
            return self._listed_images(index, record, record.img_paths)
        return self.bank.sample(list(record.expr), self.pool, np.random.default_rng([self.seed, index]))

    def _listed_images(self, index: int, record: HintRecord, paths: Sequence[str]) -> np.ndarray:
        """The bank indices of a record's own ``img_paths``, refused unless each shows the symbol it stands for."""
        where = f"record {index} (id {record.id!r})"
        if len(paths) != len(record.expr):
            raise ValueError(f"{where}: {len(paths)} img_paths for the {len(record.expr)} symbols of {record.expr!r}")
        indices = np.asarray([self.bank.index_of(path) for path in paths], dtype=np.int64)
        for position, (symbol, label) in enumerate(zip(record.expr, self.bank.labels[indices].tolist())):
            if label != symbol:
                raise ValueError(f"{where}: img_paths[{position}] {paths[position]!r} shows {label!r}, not {symbol!r}")
        return indices

    def __getitem__(self, index: int) -> dict:
        """The item of record ``index`` with its ``images``; a negative index counts from the end, as for the records
        (it seeded the images' draw with itself, which numpy refuses, instead of the record's position)."""
        index = range(len(self))[index]
        item = super().__getitem__(index)
        record = self.records[index]
        item["images"] = render_windows(self.bank.images[self.image_indices(index, record)])
        return item


def split_datasets(
    splits: Mapping[str, Sequence[HintRecord]], bank: SymbolBank | None = None, seed: int = 0
) -> dict[str, HintSymbolDataset]:
    """A dataset per split: symbol input without a ``bank``, else image input drawn from the split's own pool
    of ``bank`` (the split's name: train/val/test)."""
    if bank is None:
        return {name: HintSymbolDataset(split) for name, split in splits.items()}
    return {name: HintImageDataset(split, bank, pool=name, seed=seed) for name, split in splits.items()}


def collate_hint(batch: Sequence[dict]) -> dict[str, Any]:
    """Stack items, padding ``tokens`` with :data:`PAD_ID`, targets with :data:`IGNORE_INDEX` and images
    with black windows: ``tokens`` ``[B, T]``, ``mask`` bool ``[B, T]``, ``res_digits`` ``[B, K]``,
    ``res`` ``[B]``, ``lengths`` ``[B]``, ``images`` ``[B, T, 1, 32, 32]`` when present."""
    if not batch:
        raise ValueError("cannot collate an empty batch")
    pad = torch.nn.utils.rnn.pad_sequence
    lengths = torch.tensor([item["length"] for item in batch], dtype=torch.long)
    out: dict[str, Any] = {
        "tokens": pad([item["tokens"] for item in batch], batch_first=True, padding_value=PAD_ID),
        "head": pad([item["head"] for item in batch], batch_first=True, padding_value=IGNORE_INDEX),
        "res_all": pad([item["res_all"] for item in batch], batch_first=True, padding_value=IGNORE_INDEX),
        "res_digits": pad([item["res_digits"] for item in batch], batch_first=True, padding_value=IGNORE_INDEX),
        "res": torch.stack([item["res"] for item in batch]),
        "lengths": lengths,
        "eval": [item["eval"] for item in batch],
    }
    out["mask"] = torch.arange(out["tokens"].shape[1])[None] < lengths[:, None]
    if "images" in batch[0]:
        out["images"] = pad([item["images"] for item in batch], batch_first=True, padding_value=0.0)
    return out
