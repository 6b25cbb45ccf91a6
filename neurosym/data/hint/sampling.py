"""Vectorised prefix expressions: enumerate or sample them as token-id arrays, and evaluate them.

An expression with ``n_op`` operators is a row of ``2 * n_op + 1`` token ids in prefix order. Ids below
``len(vocabulary.numbers)`` are numbers, the rest operators. Sampling follows the released generator:
the operator is uniform over the vocabulary's operators, ``i ~ U{0..n-1}`` of the remaining operators
go to the left operand and the rest to the right, recursively; numbers are uniform.
Evaluation uses each operator's vectorised rule from the :class:`~neurosym.semantics.OperatorTable`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from neurosym.data.randomness import as_generator
from neurosym.semantics import OperatorTable
from neurosym.semantics.operators import vector_outcome
from neurosym.training.checks import int_at_least

VALUE_CEILING = 2**20
"""Intermediate values are clipped here (the vectorised rules need ``|v| <= 2**30``); anything this
large is far above every split's value limit, so clipping never changes which split an expression joins."""


@dataclass(frozen=True)
class Vocabulary:
    """The symbols expressions are built from, and the table that gives them meaning."""

    numbers: tuple[str, ...]
    operators: tuple[str, ...]
    table: OperatorTable

    def __post_init__(self) -> None:
        unknown = [s for s in self.numbers if s not in self.table.numbers]
        unknown += [s for s in self.operators if s not in self.table.operators]
        if unknown:
            raise ValueError(f"symbols {unknown} are not defined by operator table {self.table.name!r}")
        if not self.numbers:  # (every expression holds one; sampling failed in numpy: "high <= 0")
            raise ValueError(f"a vocabulary needs a number, got numbers {self.numbers}")
        if len(set(self.symbols.tolist())) != len(self.symbols):  # (an id would stand for a symbol another one has)
            raise ValueError(f"a vocabulary names each symbol once, got {self.numbers + self.operators}")
        if len(self.symbols) > 255:
            raise ValueError("a vocabulary holds at most 255 symbols")

    @cached_property
    def symbols(self) -> np.ndarray:
        """Every symbol by id: numbers first, then operators."""
        return np.asarray(self.numbers + self.operators)

    def id_of(self, symbol: str) -> int:
        """The token id of ``symbol``."""
        try:
            return (self.numbers + self.operators).index(symbol)
        except ValueError:
            raise ValueError(f"symbol {symbol!r} is not in the vocabulary {self.numbers + self.operators}") from None

    def to_strings(self, ids: np.ndarray) -> list[str]:
        """Rows of ids ``[count, length]`` → prefix sentences (one character per symbol); ``ValueError`` for an id
        outside the vocabulary (-1 was read as the last symbol)."""
        ids = np.asarray(ids)
        if ids.size and not (ids.min() >= 0 and ids.max() < len(self.symbols)):
            raise ValueError(f"token ids must lie in [0, {len(self.symbols)}), got {ids.min()}..{ids.max()}")
        return ["".join(row) for row in self.symbols[ids].tolist()]


def sample_prefix(n_op: int, count: int, vocabulary: Vocabulary, rng: np.random.Generator | int) -> np.ndarray:
    """``count`` random prefix expressions with ``n_op`` operators: uint8 ``[count, 2 * n_op + 1]``."""
    n_op, count = int_at_least(n_op, "n_op", 0), int_at_least(count, "count", 0)  # (True drew one operator)
    rng = as_generator(rng)
    n_numbers, n_operators = len(vocabulary.numbers), len(vocabulary.operators)
    rows = np.arange(count)
    pending = np.zeros((count, n_op + 2), dtype=np.int64)  # stack of operator counts of subtrees to emit
    pending[:, 0] = n_op
    top = np.ones(count, dtype=np.int64)
    ids = np.empty((count, 2 * n_op + 1), dtype=np.uint8)
    for position in range(2 * n_op + 1):
        top -= 1
        size = pending[rows, top]
        is_operator = size > 0
        left = np.floor(rng.random(count) * size).astype(np.int64)
        pending[rows, top] = np.where(is_operator, size - 1 - left, 0)
        pending[rows, top + 1] = left
        top += 2 * is_operator
        number = rng.integers(n_numbers, size=count)
        operator = n_numbers + rng.integers(n_operators, size=count)
        ids[:, position] = np.where(is_operator, operator, number)
    return ids


def prefix_shapes(n_op: int) -> list[tuple[bool, ...]]:
    """Every prefix operator/number pattern of a binary tree with ``n_op`` operators (True = operator)."""
    if int_at_least(n_op, "n_op", 0) == 0:  # (-1 gave no pattern, which enumerate_prefix failed to concatenate)
        return [(False,)]
    return [
        (True, *left, *right)
        for n_left in range(n_op)
        for left in prefix_shapes(n_left)
        for right in prefix_shapes(n_op - 1 - n_left)
    ]


def enumerate_prefix(n_op: int, vocabulary: Vocabulary) -> np.ndarray:
    """Every prefix expression with ``n_op`` operators: uint8 ``[count, 2 * n_op + 1]`` (small ``n_op`` only)."""
    n_numbers, n_operators = len(vocabulary.numbers), len(vocabulary.operators)
    blocks = []
    for shape in prefix_shapes(n_op):
        choices = [n_numbers + np.arange(n_operators) if is_op else np.arange(n_numbers) for is_op in shape]
        blocks.append(np.asarray(list(itertools.product(*choices)), dtype=np.uint8).reshape(-1, len(shape)))
    return np.concatenate(blocks)


@dataclass(frozen=True)
class PrefixValues:
    """Evaluation of ``[count]`` prefix expressions: the final ``value``, whether it is ``valid`` (no
    division by zero), and ``peak``, the largest number, intermediate or final value (clipped at
    :data:`VALUE_CEILING`)."""

    value: np.ndarray
    valid: np.ndarray
    peak: np.ndarray


def evaluate_prefix(ids: np.ndarray, vocabulary: Vocabulary) -> PrefixValues:
    """Evaluate prefix rows ``[count, length]`` right to left on a per-row value stack.

    Raises ``ValueError`` naming the first row that is not one prefix expression over ``vocabulary``'s ids.
    """
    _check_ids(ids, len(vocabulary.symbols))
    count, length = ids.shape
    n_numbers = len(vocabulary.numbers)
    number_values = np.asarray([vocabulary.table.numbers[s] for s in vocabulary.numbers], dtype=np.int64)
    rules = [(s, rule) for s in vocabulary.operators if (rule := vocabulary.table.operators[s].vectorised) is not None]
    if len(rules) < len(vocabulary.operators):
        raise ValueError(f"operator table {vocabulary.table.name!r} lacks vectorised rules for {vocabulary.operators}")
    rows = np.arange(count)
    stack = np.zeros((count, (length + 1) // 2 + 1), dtype=np.int64)
    top = np.zeros(count, dtype=np.int64)
    valid = np.ones(count, dtype=bool)
    peak = np.zeros(count, dtype=np.int64)
    for position in range(length - 1, -1, -1):
        token = ids[:, position].astype(np.int64)
        is_number = token < n_numbers
        _check_operands(~is_number & (top < 2), position)
        left = stack[rows, np.maximum(top - 1, 0)]
        right = stack[rows, np.maximum(top - 2, 0)]
        result = number_values[np.minimum(token, n_numbers - 1)]
        for index, (symbol, rule) in enumerate(rules):
            mine = token == n_numbers + index
            if mine.any():
                values, ok = vector_outcome(symbol, rule, left[mine], right[mine])
                if ok is None:  # the rule is defined everywhere
                    result[mine] = values
                else:
                    result[mine] = np.where(ok, values, 0)
                    valid[mine] &= ok
        result = np.clip(result, 0, VALUE_CEILING)
        top = np.where(is_number, top, top - 2)
        stack[rows, top] = result
        top += 1
        peak = np.maximum(peak, result)
    if (top != 1).any():
        row = int(np.flatnonzero(top != 1)[0])
        raise ValueError(f"prefix row {row} holds {int(top[row])} separate expressions, not one")
    return PrefixValues(stack[:, 0], valid, peak)


def _check_ids(ids: np.ndarray, n_symbols: int) -> None:
    """Raise unless ``ids`` is a non-empty integer array ``[count, length]`` of ids below ``n_symbols``."""
    if not isinstance(ids, np.ndarray) or ids.ndim != 2 or not np.issubdtype(ids.dtype, np.integer):
        what = f"{ids.dtype} array of shape {ids.shape}" if isinstance(ids, np.ndarray) else type(ids).__name__
        raise ValueError(f"prefix ids must be an integer array [count, length], got a {what}")
    if ids.shape[1] == 0:
        raise ValueError("prefix rows are empty: an expression needs at least one number")
    outside = (ids < 0) | (ids >= n_symbols)
    if outside.any():
        row, position = (int(i) for i in np.argwhere(outside)[0])
        raise ValueError(
            f"prefix row {row} position {position}: id {int(ids[row, position])} is not in the vocabulary's 0..{n_symbols - 1}"
        )


def _check_operands(short: np.ndarray, position: int) -> None:
    """Raise if an operator at ``position`` finds fewer than two operands in some row (``short [count]``)."""
    if short.any():
        row = int(np.flatnonzero(short)[0])
        raise ValueError(f"prefix row {row} position {position}: operator lacks operands")
