"""HINT examples: one record as the release stores it, and a compact column store for generated splits."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from neurosym.data.hint.sampling import Vocabulary
from neurosym.semantics import HINT_SEMANTICS, OperatorTable, execute
from neurosym.syntax import from_prefix, infix_layout, to_infix


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


@dataclass
class HintSplit(Sequence[HintRecord]):
    """A generated split stored by columns: ``prefix``/``expr`` sentences, ``res`` int64 ``[N]``,
    ``n_op`` int64 ``[N]`` and ``eval`` ``[N]`` (``""`` for training items). Records are built on access."""

    prefix: list[str]
    expr: list[str]
    res: np.ndarray
    n_op: np.ndarray
    eval: np.ndarray
    table: OperatorTable = HINT_SEMANTICS

    def __len__(self) -> int:
        return len(self.expr)

    def __getitem__(self, index: int) -> HintRecord:  # type: ignore[override]
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} out of range for a split of {len(self)}")
        concepts = self.table.concepts
        node = from_prefix(list(self.prefix[index]), concepts)
        layout = infix_layout(node, concepts)
        execution = execute(node, self.table)
        subset = str(self.eval[index]) or None
        return HintRecord(
            str(index % len(self)), "".join(layout.tokens), tuple(layout.heads), int(self.res[index]),
            tuple(int(v) for v in execution.res_all), subset,
        )

    @classmethod
    def from_prefix_rows(
        cls,
        parts: Sequence[tuple[str, np.ndarray, np.ndarray, int]],
        vocabulary: Vocabulary,
        description: str | None = None,
    ) -> "HintSplit":
        """Build a split from ``(subset, prefix id rows, values, n_op)`` parts (subset ``""`` for train);
        with a ``description``, a progress bar of that name follows the printing of infix sentences."""
        prefix: list[str] = []
        for _, rows, _, _ in parts:
            prefix.extend(vocabulary.to_strings(rows))
        concepts = vocabulary.table.concepts
        distinct = tqdm(set(prefix), desc=description, unit="expr", disable=description is None)
        infix = {p: to_infix(from_prefix(list(p), concepts), concepts) for p in distinct}
        return cls(
            prefix,
            [infix[p] for p in prefix],
            np.concatenate([values for _, _, values, _ in parts]).astype(np.int64) if parts else np.zeros(0, np.int64),
            np.concatenate([np.full(len(v), n, np.int64) for _, _, v, n in parts]) if parts else np.zeros(0, np.int64),
            np.concatenate([np.full(len(v), s, "<U2") for s, _, v, _ in parts]) if parts else np.zeros(0, "<U2"),
            vocabulary.table,
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Store the columns in one ``.npz`` (written atomically)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial.npz")
        np.savez_compressed(
            partial, prefix=_pack(self.prefix), expr=_pack(self.expr), res=self.res, n_op=self.n_op, eval=self.eval
        )
        os.replace(partial, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, table: OperatorTable = HINT_SEMANTICS) -> "HintSplit":
        with np.load(path) as archive:
            return cls(
                _unpack(archive["prefix"]), _unpack(archive["expr"]), archive["res"], archive["n_op"], archive["eval"], table
            )


def _pack(sentences: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(sentences).encode(), dtype=np.uint8)


def _unpack(packed: np.ndarray) -> list[str]:
    text = packed.tobytes().decode()
    return text.split("\n") if text else []
