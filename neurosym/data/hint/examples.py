"""HINT examples: one record as the release stores it, and a compact column store for generated splits."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import overload

import numpy as np
from tqdm.auto import tqdm

from neurosym.data.hint.sampling import Vocabulary
from neurosym.paths import user_path
from neurosym.semantics import HINT_SEMANTICS, OperatorTable
from neurosym.semantics.executor import subexpression_values
from neurosym.syntax import from_prefix, infix_layout
from neurosym.training import atomic_path


@dataclass(frozen=True)
class HintRecord:
    """One example in the release's fields.

    ``expr`` is the infix sentence (ASCII ``+ - * /``, minimal parentheses), ``head`` the parent token
    index per symbol (−1 for the root), ``res`` the result, ``res_all`` the value each symbol heads (−1
    for brackets), ``eval`` the test subset (``I``, ``SS``, ``LS``, ``SL``, ``LL``; ``None`` in train) and
    ``img_paths`` one ``"<class>/<file>"`` per symbol when images were assigned.
    """

    id: str
    expr: str
    head: tuple[int, ...]
    res: int
    res_all: tuple[int, ...]
    eval: str | None = None
    img_paths: tuple[str, ...] | None = None

    @property
    def symbols(self) -> list[str]:
        """The sentence's symbols, one per character."""
        return list(self.expr)


def symbol_count_problem(expr: str, head: Sequence[int], res_all: Sequence[int]) -> str | None:
    """What is wrong when ``head`` and ``res_all`` do not give one entry per symbol of ``expr``; ``None`` when they do."""
    if len(head) == len(res_all) == len(expr):
        return None
    return f"expr {expr!r} has {len(expr)} symbols but head {len(head)} and res_all {len(res_all)}"


@dataclass
class HintSplit(Sequence[HintRecord]):
    """A generated split stored by columns: ``prefix``/``expr`` sentences, ``res`` int64 ``[N]``,
    ``n_op`` int64 ``[N]``, ``eval`` ``[N]`` (``""`` for training items), and every record's ``head`` and
    ``res_all`` concatenated: int64 ``[T]`` with ``T`` the total number of symbols. ``split[i]`` is a
    :class:`HintRecord`, ``split[i:j]`` a list of them."""

    prefix: list[str]
    expr: list[str]
    res: np.ndarray
    n_op: np.ndarray
    eval: np.ndarray
    head: np.ndarray
    res_all: np.ndarray
    table: OperatorTable = HINT_SEMANTICS
    offsets: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        columns = {"prefix": len(self.prefix), "res": len(self.res), "n_op": len(self.n_op), "eval": len(self.eval)}
        if short := {name: size for name, size in columns.items() if size != len(self.expr)}:  # (indexing failed late)
            raise ValueError(f"every column needs one entry per expression ({len(self.expr)}), got {short}")
        self.offsets = np.cumsum([0] + [len(e) for e in self.expr])
        if not len(self.head) == len(self.res_all) == self.offsets[-1]:
            raise ValueError(f"head and res_all need {self.offsets[-1]} entries, got {len(self.head)} and {len(self.res_all)}")

    def __len__(self) -> int:
        return len(self.expr)

    @overload
    def __getitem__(self, index: int) -> HintRecord: ...

    @overload
    def __getitem__(self, index: slice) -> list[HintRecord]: ...

    def __getitem__(self, index: int | slice) -> HintRecord | list[HintRecord]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if isinstance(index, bool) or not isinstance(index, int | np.integer):
            raise TypeError(f"a split is indexed by an int or a slice, got {type(index).__name__}")
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a split of {len(self)}")
        index %= len(self)
        start, stop = self.offsets[index], self.offsets[index + 1]
        return HintRecord(
            str(index),
            self.expr[index],
            tuple(self.head[start:stop].tolist()),
            int(self.res[index]),
            tuple(self.res_all[start:stop].tolist()),
            str(self.eval[index]) or None,
        )

    @classmethod
    def from_prefix_rows(
        cls,
        parts: Sequence[tuple[str, np.ndarray, np.ndarray, int]],
        vocabulary: Vocabulary,
        description: str | None = None,
    ) -> HintSplit:
        """Build a split from ``(subset, prefix id rows, values, n_op)`` parts (subset ``""`` for train).

        Each distinct expression is laid out once (infix sentence and heads) and executed once
        (``res_all``); with a ``description``, a progress bar of that name follows this work."""
        prefix: list[str] = []
        for _, rows, _, _ in parts:
            prefix.extend(vocabulary.to_strings(rows))
        concepts, table = vocabulary.table.concepts, vocabulary.table
        layouts = {}
        for sentence in tqdm(set(prefix), desc=description, unit="expr", disable=description is None):
            layout = infix_layout(from_prefix(list(sentence), concepts), concepts)
            res_all = subexpression_values(layout, table)  # (what execute gives, on the layout already made)
            if res_all[layout.preorder[0]] is None:
                raise ValueError(
                    f"prefix expression {sentence!r} is invalid under {table.name!r} (a split holds valid ones only)"
                )
            layouts[sentence] = ("".join(layout.tokens), layout.heads, res_all)
        records = [layouts[p] for p in prefix]
        total = sum(len(infix) for infix, _, _ in records)

        def column(per_record: Iterable[Iterable[object]]) -> np.ndarray:
            return np.fromiter(itertools.chain.from_iterable(per_record), np.int64, count=total)

        sizes = [len(values) for _, _, values, _ in parts]
        return cls(
            prefix,
            [infix for infix, _, _ in records],
            np.concatenate([np.zeros(0, np.int64)] + [np.asarray(values, np.int64) for _, _, values, _ in parts]),
            np.repeat([n_op for *_, n_op in parts], sizes).astype(np.int64),
            np.repeat([subset for subset, *_ in parts], sizes).astype("<U2"),
            column(head for _, head, _ in records),
            column(res_all for _, _, res_all in records),
            table,
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Store the columns in one ``.npz`` (written atomically)."""
        columns = {name: getattr(self, name) for name in ("res", "n_op", "eval", "head", "res_all")}
        with atomic_path(path, suffix=".npz") as partial:
            np.savez_compressed(partial, prefix=_pack(self.prefix), expr=_pack(self.expr), **columns)
        return user_path(path)

    @classmethod
    def load(cls, path: str | os.PathLike, table: OperatorTable = HINT_SEMANTICS) -> HintSplit:
        """The split :meth:`save` wrote to the ``.npz`` at ``path``, with ``table`` as its semantics; ``ValueError``
        naming a member that is no array (numpy gives a member not written as ``.npy`` data as its bytes)."""
        with np.load(user_path(path)) as archive:
            names = ("prefix", "expr", "res", "n_op", "eval", "head", "res_all")
            arrays = {name: archive[name] for name in names}
        if odd := [name for name, array in arrays.items() if not isinstance(array, np.ndarray)]:  # (an AttributeError,
            raise ValueError(f"{path}: {odd} are no arrays")  # which no cache reader took for a damaged cache)
        prefix, expr, res, n_op, evals, head, res_all = arrays.values()
        return cls(_unpack(prefix), _unpack(expr), res, n_op, evals, head, res_all, table)


def _pack(sentences: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(sentences).encode(), dtype=np.uint8)


def _unpack(packed: np.ndarray) -> list[str]:
    text = packed.tobytes().decode()
    return text.split("\n") if text else []
