"""A fast batch solver: HINT sentences in, exact values out, identical to parse + execute.

The sentences of a batch are encoded into one ``[n, length]`` array of token ids. Grammaticality is
checked for all of them at once (which token kinds may follow which, and bracket depth), and the
grammatical ones are evaluated together by a vectorised operator-precedence (shunting-yard) machine
on int64 stacks. Because there are two precedence levels and all operators are left-associative, a
bracket group never holds more than two pending operators, so each token needs at most two
reductions and the machine runs a fixed number of numpy steps per token position.

Exactness: operator rules are applied vectorised only to operands with ``|value| <= 2**30`` (whose
results fit in int64); a sentence whose values grow beyond that is re-solved exactly, with Python
integers, by the reference path (``execute(parse(...))``). Invalid arithmetic (e.g. ÷0) gives
``None``; so does an ungrammatical sentence, unless ``strict=True`` asks for its ``ParseError``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from functools import lru_cache

import numpy as np

from neurosym.semantics.executor import execute
from neurosym.semantics.operators import ScalarRule, Value, VectorRule, rule_value, vector_outcome
from neurosym.semantics.table import HINT_SEMANTICS, OperatorTable
from neurosym.syntax.concepts import NON_CANONICAL, canonical_sentence
from neurosym.syntax.errors import ParseError
from neurosym.syntax.parser import parse
from neurosym.training.checks import check_flags

#: Sentences are solved in chunks of at most this many rows and padded tokens (cache-friendly sizes).
CHUNK_ROWS = 4096
CHUNK_CELLS = 2**20
#: Operands up to this magnitude go through the vectorised rules; larger ones fall back to Python ints.
VECTOR_OPERAND_LIMIT = 2**30

# Token kinds. START only ever appears as the kind "before" the first token.
NUMBER, OPERATOR, OPEN, CLOSE, END, UNKNOWN, START = range(7)
# Fixed token ids; numbers and operators follow from 4 on.
END_ID, UNKNOWN_ID, OPEN_ID, CLOSE_ID = range(4)
_NEVER = 99  # a reduction threshold no operator reaches
_NUMPY_CHOICES = 64  # the most arrays np.choose chooses among

# _FOLLOWS[previous kind, kind]: may ``kind`` come right after ``previous`` in a sentence?
_FOLLOWS = np.zeros((7, 7), dtype=bool)
for _previous in (START, OPERATOR, OPEN):
    _FOLLOWS[_previous, [NUMBER, OPEN]] = True
for _previous in (NUMBER, CLOSE):
    _FOLLOWS[_previous, [OPERATOR, CLOSE, END]] = True
_FOLLOWS[END, END] = True


class BatchSolver:
    """Solves batches of sentences under one operator table (whose numbers must be integers); pickled and copied as
    that table, from which the copy is built again."""

    def __init__(self, table: OperatorTable = HINT_SEMANTICS) -> None:
        if not isinstance(table, OperatorTable):
            raise TypeError(f"BatchSolver takes an OperatorTable (e.g. HINT_SEMANTICS), got {type(table).__name__}")
        bad = [s for s, v in table.numbers.items() if type(v) is not int or abs(v) > 2**62]
        if bad:
            raise ValueError(f"BatchSolver needs integer number values within ±2**62; table {table.name!r} has {bad}")
        self.table = table
        self.concepts = table.concepts
        # Token ids: 0 = end of sentence, 1 = unknown, 2 = "(", 3 = ")", then numbers, then operators.
        numbers, operators = list(table.numbers), list(table.operators)
        first_operator = 4 + len(numbers)
        kind = np.array([END, UNKNOWN, OPEN, CLOSE] + [NUMBER] * len(numbers) + [OPERATOR] * len(operators))
        self._is_number = (kind == NUMBER).astype(np.int64)
        self._stack_change = (kind == OPERATOR).astype(np.int64) + (kind == OPEN) - (kind == CLOSE)
        self._bracket_change = (kind == OPEN).astype(np.int32) - (kind == CLOSE)
        self._value = np.zeros(len(kind), dtype=np.int64)
        self._value[4:first_operator] = [table.numbers[s] for s in numbers]
        # Precedence on the operator stack: an open bracket (also the stack's bottom) is level 0.
        self._level = np.full(len(kind), -1, dtype=np.int64)
        self._level[OPEN_ID] = 0
        self._level[first_operator:] = [table.operators[s].level for s in operators]
        # A token makes the stack reduce while the top operator's level is >= its threshold.
        self._threshold = np.full(len(kind), _NEVER, dtype=np.int64)
        self._threshold[[END_ID, CLOSE_ID]] = 1
        self._threshold[first_operator:] = self._level[first_operator:]
        # Vectorised rules are applied to every reduced row and chosen per row by ``_rule_index``;
        # rows of operators that only have a scalar rule take the first one's result, then overwrite it.
        self._vector_rules: dict[str, VectorRule] = {
            s: rule for s in operators if (rule := table.operators[s].vectorised) is not None
        }
        self._rule_index = np.zeros(len(kind), dtype=np.int64)
        self._rule_index[[first_operator + operators.index(s) for s in self._vector_rules]] = range(len(self._vector_rules))
        self._scalar_rules = [
            (first_operator + i, table.operators[s].apply)
            for i, s in enumerate(operators)
            if table.operators[s].vectorised is None
        ]
        self._big_number = np.abs(self._value) > VECTOR_OPERAND_LIMIT
        self._has_big_numbers = bool(self._big_number.any())
        # Character code -> token id; the last entry stands for every code beyond the table.
        codes = [ord(s) for s in ("(", ")", *numbers, *operators)]
        self._lookup = np.full(max(256, max(codes) + 2), UNKNOWN_ID, dtype=np.int64)
        self._lookup[0] = END_ID
        self._lookup[codes] = np.arange(OPEN_ID, len(kind))
        # Which token may follow which, by token id (row: previous id, or START_ROW before the first).
        self._follows = _FOLLOWS[np.append(kind, START)[:, None], kind[None, :]]

    def __reduce__(self) -> tuple[type[BatchSolver], tuple[OperatorTable]]:
        """Pickled and copied as its table, the solver rebuilt from it: the rules it holds are the table's operators'
        (lambdas for the built-in ones, which pickle only as the :class:`~neurosym.semantics.operators.Operator` they
        belong to)."""
        return type(self), (self.table,)

    def encode(self, sentences: Sequence[str]) -> np.ndarray:
        """Token ids ``[n, length + 1]`` (int64) of ``n`` sentences: whitespace dropped, aliases normalised, 0 after the end
        (``TypeError`` for sentences that are no sequence of str, :func:`_check_sentences`)."""
        return self._encode(_check_sentences(sentences))

    def _encode(self, sentences: Collection[str]) -> np.ndarray:
        """:meth:`encode` of sentences known to be a sequence of str."""
        joined = "".join(sentences)
        if NON_CANONICAL.search(joined):
            sentences = [canonical_sentence(s) for s in sentences]
        width = max(map(len, sentences), default=0) + 1
        padded = "".join([s.ljust(width, "\0") for s in sentences])
        try:
            codes = np.frombuffer(padded.encode("latin-1"), dtype=np.uint8)
        except UnicodeEncodeError:
            # (a lone surrogate, "\ud800", is a code point like any other: no symbol, not a failure of the batch)
            wide = padded.encode("utf-32-le", "surrogatepass")
            codes = np.minimum(np.frombuffer(wide, dtype=np.uint32), len(self._lookup) - 1)
        ids = self._lookup[codes].reshape(len(sentences), width)
        if "\0" in joined:  # NUL is no symbol; it only stands for the padding after a sentence
            ids[[i for i, s in enumerate(sentences) if "\0" in s], 0] = UNKNOWN_ID
        return ids

    def grammatical(self, sentences: Sequence[str]) -> np.ndarray:
        """Boolean mask ``[n]``: which sentences the grammar accepts (exactly when ``parse`` succeeds; ``TypeError`` for
        sentences that are no sequence of str, :func:`_check_sentences`)."""
        return self._grammatical(self.encode(sentences))[0]

    def _grammatical(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(accepted ``[n]``, deepest bracket nesting ``[n]``) for token ids ``[n, length]``."""
        previous = np.empty_like(ids)
        previous[:, 0] = len(self._follows) - 1  # the START row
        previous[:, 1:] = ids[:, :-1]
        accepted = self._follows[previous, ids].all(axis=1)
        depth = np.cumsum(self._bracket_change[ids], axis=1)
        accepted &= (depth.min(axis=1) >= 0) & (depth[:, -1] == 0)
        return accepted, depth.max(axis=1)

    def solve(self, sentences: Sequence[str], strict: bool = False) -> list[Value | None]:
        """The value of each sentence, ``None`` where it is invalid or (unless ``strict``) ungrammatical.

        With ``strict=True`` the first ungrammatical sentence raises its ``ParseError``, with a note naming its index. ``TypeError`` for sentences that
        are one string (each character would be solved as a sentence), no iterable, or hold anything but strings;
        ``ValueError`` for a ``strict`` that is no bool (``"no"`` was read as true).
        """
        check_flags(strict=strict)
        distinct, inverse = _distinct(sentences)
        answers: list[Value | None] = [None] * len(distinct)
        accepted = np.zeros(len(distinct), dtype=bool)
        for chunk in _chunks_by_length(distinct):
            accepted[chunk] = self._solve_chunk([distinct[i] for i in chunk], chunk.tolist(), answers)
        if strict and not accepted.all():
            first = int(np.argmin(accepted))  # (distinct sentences come in the order first seen)
            try:
                parse(distinct[first], self.concepts)
            except ParseError as error:  # (its position is within the sentence: which one of thousands?)
                error.add_note(f"in sentence {inverse.index(first)} of the {len(inverse)} given")
                raise
        return [answers[i] for i in inverse]

    def _solve_chunk(self, sentences: list[str], where: list[int], answers: list[Value | None]) -> np.ndarray:
        """Write the answer of ``sentences[j]`` to ``answers[where[j]]``; returns the grammatical mask."""
        ids = self._encode(sentences)
        accepted, depth = self._grammatical(ids)
        rows = np.flatnonzero(accepted)
        with np.errstate(all="ignore"):  # rows past the limit compute garbage that is never reported
            values, valid, overflow = self._evaluate(ids[rows], int(depth[rows].max(initial=0)))
        for row, value in zip(rows[valid & ~overflow].tolist(), values[valid & ~overflow].tolist()):
            answers[where[row]] = value
        for row in rows[overflow].tolist():
            answers[where[row]] = execute(parse(sentences[row], self.concepts), self.table).value
        return accepted

    def _evaluate(self, ids: np.ndarray, max_depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Run the shunting-yard machine on grammatical rows ``ids`` ``[m, length]``.

        Returns ``(values, valid, overflow)``, each ``[m]``: the results, False where the arithmetic is
        invalid, True where a value exceeded :data:`VECTOR_OPERAND_LIMIT` (to be solved exactly).
        """
        lengths = np.count_nonzero(ids, axis=1)
        order = np.argsort(-lengths, kind="stable")  # longest first: the live rows are always a prefix
        columns = np.ascontiguousarray(ids[order].T)  # [length, m]: one token position per row
        live = np.searchsorted(-lengths[order], -np.arange(len(columns)), side="right")  # rows with length >= t
        thresholds, shifted = self._threshold[columns], self._value[columns]
        numbers, stack_changes = self._is_number[columns], self._stack_change[columns]
        machine = _Machine(len(ids), max_depth)
        if self._has_big_numbers:
            machine.overflow |= self._big_number[columns].any(axis=0)
        may_reduce = (thresholds < _NEVER).any(axis=1).tolist()  # positions holding an operator, ")" or the end
        for position, count in enumerate(live.tolist()):
            if may_reduce[position]:  # a bracket group holds at most two pending operators: reduce at most twice
                threshold = thresholds[position, :count]
                due = np.flatnonzero(self._level[machine.operators[machine.operator_end[:count] - 1]] >= threshold)
                if due.size:
                    self._reduce(due, machine)
                    due = due[self._level[machine.operators[machine.operator_end[due] - 1]] >= threshold[due]]
                    if due.size:
                        self._reduce(due, machine)
            machine.values[machine.value_end[:count]] = shifted[position, :count]  # harmless unless a number
            machine.value_end[:count] += numbers[position, :count]
            machine.operators[machine.operator_end[:count]] = columns[position, :count]
            machine.operator_end[:count] += stack_changes[position, :count]
        result = np.empty((3, len(ids)), dtype=np.int64)
        result[:, order] = machine.values[machine.value_base], machine.valid, machine.overflow
        return result[0], result[1].astype(bool), result[2].astype(bool)

    def _reduce(self, rows: np.ndarray, machine: _Machine) -> None:
        """Apply the top operator of each of ``rows`` to the top two values of the same row."""
        left_at = machine.value_end[rows] - 2
        operator_at = machine.operator_end[rows] - 1
        live = machine.valid[rows] & ~machine.overflow[rows]
        operators, lefts, rights = machine.operators[operator_at], machine.values[left_at], machine.values[left_at + 1]
        result, valid, unfit = self._apply(operators, lefts, rights, live)
        if valid is not None and not valid.all():
            machine.valid[rows[~valid]] = False
        if unfit.any():
            machine.overflow[rows[unfit]] = True
        machine.values[left_at] = result
        machine.value_end[rows] = left_at + 1
        machine.operator_end[rows] = operator_at

    def _apply(
        self, symbol: np.ndarray, left: np.ndarray, right: np.ndarray, live: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """Apply operator token ids ``symbol`` ``[k]`` to operands ``[k]``: (results, valid or None, unfit).

        ``unfit`` marks results beyond :data:`VECTOR_OPERAND_LIMIT` (or not integers), which the exact
        path must recompute; what is stored for them (and for invalid results) is never reported. ``live`` ``[k]``
        marks the rows whose operands are values: only those go through scalar rules, which may fail on the
        placeholders a row holds once it is invalid or left to the exact path (its results there are never read).
        """
        outcomes = [vector_outcome(name, rule, left, right) for name, rule in self._vector_rules.items()]
        outcomes = outcomes or [_placeholder_outcome(left)]
        index = self._rule_index[symbol]
        result = _chosen(index, [values for values, _ in outcomes])
        valids: list[np.ndarray | np.bool_] = [np.True_ if valid is None else valid for _, valid in outcomes]
        valid = None if all(v is np.True_ for v in valids) else _chosen(index, valids)
        unfit = np.abs(result) > VECTOR_OPERAND_LIMIT
        for token_id, rule in self._scalar_rules:
            chosen = np.flatnonzero((symbol == token_id) & live)
            if chosen.size:
                valid = np.ones(len(symbol), dtype=bool) if valid is None else valid
                result[chosen], valid[chosen], unfit[chosen] = _apply_scalar(rule, left[chosen], right[chosen])
        return result, valid, unfit


class _Machine:
    """The stacks of ``m`` sentences, flattened: row ``r``'s value stack starts at ``value_base[r]``
    and ends (one past its top) at ``value_end[r]``; likewise for the operator stack."""

    def __init__(self, m: int, max_depth: int) -> None:
        value_width, operator_width = 2 * max_depth + 5, 3 * max_depth + 6
        self.values = np.zeros(m * value_width, dtype=np.int64)
        self.operators = np.zeros(m * operator_width, dtype=np.int64)
        self.value_base = np.arange(m, dtype=np.int64) * value_width
        self.value_end = self.value_base.copy()
        self.operator_end = np.arange(m, dtype=np.int64) * operator_width
        self.operators[self.operator_end] = OPEN_ID  # an open bracket at the bottom of every stack
        self.operator_end += 1
        self.valid = np.ones(m, dtype=bool)
        self.overflow = np.zeros(m, dtype=bool)


def _check_sentences(sentences: object) -> Collection[str]:
    """``sentences`` when it is a collection (a list, a tuple, a numpy array) of str, else ``TypeError``: for one string
    (each of its characters was read as a sentence), for no collection, and naming the first item that is no str and
    its index."""
    if isinstance(sentences, str):
        raise TypeError("expected a sequence of sentences, not one string (wrap it in a list)")
    if not isinstance(sentences, Collection):
        raise TypeError(f"expected a sequence of sentences (str), got {type(sentences).__name__}")
    for index, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(f"sentence {index} must be a str, got {type(sentence).__name__} {sentence!r:.40}")
    return sentences


def _distinct(sentences: Iterable[str]) -> tuple[list[str], list[int]]:
    """The distinct ``sentences`` in the order first seen, and each sentence's index among them. ``TypeError`` for one
    string, for no iterable, and for an item that is no str (a list of symbols failed as "unhashable type")."""
    if isinstance(sentences, str):
        raise TypeError("solve expects a sequence of sentences, not one string")
    if not isinstance(sentences, Iterable):
        raise TypeError(f"solve expects a sequence of sentences (str), got {type(sentences).__name__}")
    position: dict[str, int] = {}
    try:
        inverse = [position.setdefault(s, len(position)) for s in sentences]
    except TypeError as error:  # an unhashable item
        raise TypeError(f"solve expects strings, got an item of {error}") from None
    distinct = list(position)
    if not all(isinstance(s, str) for s in distinct):
        wrong = next(s for s in distinct if not isinstance(s, str))
        raise TypeError(f"solve expects strings, got {type(wrong).__name__} {wrong!r:.40}")
    return distinct, inverse


def _chunks_by_length(sentences: list[str]) -> list[np.ndarray]:
    """Indices of ``sentences``, shortest first, cut into chunks of at most :data:`CHUNK_ROWS` rows
    and :data:`CHUNK_CELLS` padded tokens (so one long sentence cannot blow up a whole batch)."""
    lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences)) + 1
    order = np.argsort(lengths, kind="stable")
    chunks, start = [], 0
    while start < len(order):
        end = min(start + CHUNK_ROWS, len(order))
        end = min(end, start + max(1, CHUNK_CELLS // int(lengths[order[end - 1]])))
        chunks.append(order[start:end])
        start = end
    return chunks


def _chosen(index: np.ndarray, choices: Sequence[np.ndarray | np.generic]) -> np.ndarray:
    """``choices[index[r]][r]`` for each row ``r`` of ``index [k]`` (each choice ``[k]``, or a scalar for every row):
    ``np.choose`` (faster than indexing a stack of the choices), which takes at most 64, for any number of operators."""
    if len(choices) <= _NUMPY_CHOICES:
        return np.choose(index, choices)
    stacked = np.stack([np.broadcast_to(choice, index.shape) for choice in choices])  # [choices, k]
    return stacked[index, np.arange(len(index))]


def _apply_scalar(rule: ScalarRule, left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A scalar rule over operand arrays ``[k]``: (results, valid, unfit), each ``[k]``; unfit results
    (beyond :data:`VECTOR_OPERAND_LIMIT` or not integers) are stored as 0 and solved exactly later."""
    results = [rule_value(rule, a, b) for a, b in zip(left.tolist(), right.tolist())]
    valid = np.array([r is not None for r in results], dtype=bool)
    unfit = np.array([r is not None and (type(r) is not int or abs(r) > VECTOR_OPERAND_LIMIT) for r in results], dtype=bool)
    fitted = [r if v and not u else 0 for r, v, u in zip(results, valid.tolist(), unfit.tolist())]
    return np.array(fitted, dtype=np.int64), valid, unfit


def _placeholder_outcome(left: np.ndarray) -> tuple[np.ndarray, None]:
    """Stands in when no operator has a vectorised rule (every result then comes from scalar rules)."""
    return np.zeros_like(left), None


@lru_cache(maxsize=8)
def _solver(table: OperatorTable) -> BatchSolver:
    return BatchSolver(table)


def solve_batch(sentences: Sequence[str], table: OperatorTable = HINT_SEMANTICS, strict: bool = False) -> list[Value | None]:
    """``BatchSolver(table).solve(sentences, strict)`` with the solver built once per table."""
    return _solver(table).solve(sentences, strict)
