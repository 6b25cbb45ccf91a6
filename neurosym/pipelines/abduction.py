"""Abduction by top-down back-search ("1-BS", Li et al., ICML 2020): correct a misread sentence so
that it produces the known result, changing as little probability mass as possible.

Given a sentence read by the perception, its per-window log-probabilities and the wanted result,
:class:`Abducer` pushes the wanted value down the parse tree: at an operator node, each child's
wanted values are the set-valued inverse of the operator given the other child's current value
(:mod:`neurosym.semantics.preimage`, intervals because HINT's ``-`` clamps and ``/`` rounds up). At a
number it proposes every number symbol with a wanted value; at an operator every other operator of its
precedence level that gives a wanted value, and at every operator each one of the other level (which changes the
tree). A reading without a value (``6/0+3``) gets every change inside its lowest invalid sub-expressions instead.
The most probable verified proposal wins. When no single change
works, it changes up to ``max_changes - 1`` of the least confident symbols to their next most
probable readings first (a bounded beam), and finally tries other sentence shapes (where the
brackets go) for short sentences. Every returned sentence is checked by executing it (its value alone: it keeps the
reading's brackets, which a changed operator may make redundant, ``(2+3)*4`` corrected to ``(2+3)+4``), and no symbol
the perception rules out (log-probability ``-inf``) is ever proposed.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np

from neurosym.pipelines.decoding import (
    CLOSE_CLASS,
    NUMBER,
    OPEN_CLASS,
    OPERATOR,
    sentence_templates,
)
from neurosym.semantics import HINT_SEMANTICS, OperatorTable, Value, execute
from neurosym.semantics.executor import subexpression_values
from neurosym.semantics.preimage import Interval, admits_negative_values, operand_preimages
from neurosym.syntax import Node, ParseError, infix_layout, parse
from neurosym.syntax.symbol_grammar import check_sentence
from neurosym.training.checks import int_at_least, is_int


@dataclass(frozen=True)
class Correction:
    """An abduced sentence: ``log_prob`` under the perception, ``changes`` symbols differ from the input, and
    ``proposal``, the log-probability of the parts a sampling search drew rather than solved for (0 where it
    drew nothing): the sentence's weight in an importance-sampled marginal is ``exp(log_prob - proposal)``."""

    sentence: str
    log_prob: float
    changes: int
    proposal: float = 0.0


def changed(sentence: str, read: str) -> int:
    """How many symbols of ``sentence`` differ from those of ``read`` (position by position)."""
    return sum(a != b for a, b in zip(sentence, read))


def checked_log_probs(sentence: str, log_probs: np.ndarray, vocabulary: Collection[str]) -> np.ndarray:
    """``log_probs`` of ``sentence`` as float64. ``sentence`` is refused unless a str (``TypeError``) of symbols of
    ``vocabulary`` (``ValueError`` naming the first other and its position: a search failed deep inside on it, as a
    ``KeyError``), and ``log_probs`` (``ValueError``) unless ``[len(sentence), len(vocabulary)]`` and free of
    NaN (a NaN gave every correction the score NaN, and the search an arbitrary choice) and of ``+inf`` (no
    log-probability: a correction through it scored ``+inf``, or the grammar's searches passed over it as ruled out)."""
    check_sentence(sentence)
    log_probs = np.asarray(log_probs, dtype=np.float64)
    if log_probs.shape != (len(sentence), len(vocabulary)):
        raise ValueError(f"log_probs must have shape [{len(sentence)}, {len(vocabulary)}], got {list(log_probs.shape)}")
    if unknown := next(((i, s) for i, s in enumerate(sentence) if s not in vocabulary), None):
        raise ValueError(f"position {unknown[0]}: symbol {unknown[1]!r} of {sentence!r} is not in the vocabulary")
    for held, what in ((np.isnan(log_probs), "NaN"), (np.isposinf(log_probs), "+inf")):
        if held.any():
            raise ValueError(f"log_probs of {sentence!r} hold {what} at position {int(held.any(1).argmax())}")
    return log_probs


@dataclass(frozen=True)
class _Proposal:
    gain: float  # change of log-probability
    position: int
    symbol: str


class Abducer:
    """Top-down back-search over sentences of ``vocabulary`` symbols under ``table``'s semantics.

    Args:
        vocabulary: the perception's classes, in the column order of the log-probabilities.
        table: what numbers and operators mean (symbols it lacks are never proposed).
        max_changes: the most symbols one correction may change.
        beam: how many uncertain symbols (and readings of each) the multi-change search explores.
        max_template_length: sentences up to this length may also switch bracket shape.
        negative_values: whether values under ``table`` may be negative (``None``: as
            :func:`~neurosym.semantics.preimage.admits_negative_values` finds, when first needed); the closed-form
            preimages of HINT's operators hold for non-negative values only, so wanted values are then scanned for.
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        table: OperatorTable = HINT_SEMANTICS,
        max_changes: int = 2,
        beam: int = 3,
        max_template_length: int = 11,
        negative_values: bool | None = None,
    ):
        max_changes, beam = int_at_least(max_changes, "max_changes", 1), int_at_least(beam, "beam", 1)
        max_template_length = int_at_least(max_template_length, "max_template_length", 1)
        self.vocabulary = list(vocabulary)
        self.index = {symbol: i for i, symbol in enumerate(self.vocabulary)}
        self.table = table
        self.concepts = table.concepts
        self.numbers = [s for s in table.numbers if s in self.index]
        self.operators = [s for s in table.operators if s in self.index]
        self.max_changes, self.beam, self.max_template_length = max_changes, beam, max_template_length
        self._negative_values = negative_values
        self._class_members = {
            NUMBER: self.numbers,
            OPERATOR: self.operators,
            OPEN_CLASS: ["("],
            CLOSE_CLASS: [")"],
        }

    # -- public -----------------------------------------------------------------------------------

    def score(self, sentence: str, log_probs: np.ndarray) -> float:
        """Log-probability of ``sentence`` under per-window ``log_probs [n, V]``."""
        return float(log_probs[np.arange(len(sentence)), [self.index[c] for c in sentence]].sum())

    def value(self, sentence: str) -> Value | None:
        """The sentence's value (``None`` when ungrammatical or invalid)."""
        try:
            return execute(parse(sentence, self.concepts), self.table).value
        except ParseError:
            return None

    def abduce(self, sentence: str, log_probs: np.ndarray, target: int) -> Correction | None:
        """The most probable correction of ``sentence`` found that evaluates to ``target``, or ``None``; it changes no
        symbol to one that ``log_probs`` rule out (``-inf``: such a correction is no more probable than none).

        Args:
            sentence: the sentence read by the perception (length ``n``).
            log_probs: ``[n, V]`` per-window log-probabilities, columns in ``vocabulary`` order.
            target: the known result: an int (numpy's too, taken as a Python int so that the preimages' arithmetic is
                exact; a bool, float or str is refused with ``TypeError``).
        """
        log_probs = checked_log_probs(sentence, log_probs, self.vocabulary)
        if not is_int(target):  # a str or None failed deep in the preimages
            raise TypeError(f"target must be an int, got {target!r}")
        target = int(target)  # (an np.int64 wrapped around, or overflowed, in the preimages of a large target)
        if self.value(sentence) == target:
            return Correction(sentence, self.score(sentence, log_probs), 0)
        found = self._search(sentence, log_probs, target)
        if found is None and len(sentence) <= self.max_template_length:
            found = self._search_shapes(sentence, log_probs, target)
        return found

    # -- search -----------------------------------------------------------------------------------

    def _search(self, sentence: str, log_probs: np.ndarray, target: int) -> Correction | None:
        """Single-change back-search, then a beam over the least confident symbols."""
        base = self.score(sentence, log_probs)
        frontier: list[tuple[float, str, frozenset[int]]] = [(0.0, sentence, frozenset())]
        for depth in range(1, self.max_changes + 1):
            best = self._best_single(frontier, log_probs, target)
            if best is not None:
                gain, corrected = best
                return Correction(corrected, base + gain, changed(corrected, sentence))
            if depth < self.max_changes:
                frontier = self._expand(frontier, log_probs)
        return None

    def _best_single(
        self, frontier: list[tuple[float, str, frozenset[int]]], log_probs: np.ndarray, target: int
    ) -> tuple[float, str] | None:
        proposals: list[tuple[float, str]] = []
        for gain, sentence, frozen in frontier:
            for proposal in self._back_search(sentence, log_probs, target):
                if proposal.position not in frozen:
                    corrected = sentence[: proposal.position] + proposal.symbol + sentence[proposal.position + 1 :]
                    proposals.append((gain + proposal.gain, corrected))
        for gain, corrected in sorted(proposals, reverse=True):
            if self.value(corrected) == target:
                return gain, corrected
        return None

    def _expand(
        self, frontier: list[tuple[float, str, frozenset[int]]], log_probs: np.ndarray
    ) -> list[tuple[float, str, frozenset[int]]]:
        """Change one more symbol: the ``beam`` least confident positions, each to its ``beam`` best readings."""
        grown: list[tuple[float, str, frozenset[int]]] = []
        for gain, sentence, frozen in frontier:
            current = log_probs[np.arange(len(sentence)), [self.index[c] for c in sentence]]
            swappable = [p for p in np.argsort(current) if p not in frozen and sentence[p] not in "()"][: self.beam]
            for position in swappable:
                members = self.numbers if sentence[position] in self.table.numbers else self.operators
                readings = sorted(
                    (s for s in members if s != sentence[position] and log_probs[position, self.index[s]] > -np.inf),
                    key=lambda s: -log_probs[position, self.index[s]],
                )[: self.beam]
                for symbol in readings:
                    delta = log_probs[position, self.index[symbol]] - current[position]
                    changed = sentence[:position] + symbol + sentence[position + 1 :]
                    grown.append((gain + delta, changed, frozen | {int(position)}))
        return heapq.nlargest(self.beam * self.beam, grown, key=lambda item: item[0])

    def _search_shapes(self, sentence: str, log_probs: np.ndarray, target: int) -> Correction | None:
        """Re-read the sentence in each other bracket shape (best symbol per class) and search again."""
        current_shape = tuple(self._class_of(c) for c in sentence)
        readings = []
        for shape in sentence_templates(len(sentence)):
            if shape == current_shape:
                continue
            reading = "".join(
                max(self._class_members[cls], key=lambda s: log_probs[p, self.index[s]]) for p, cls in enumerate(shape)
            )
            if np.isfinite(score := self.score(reading, log_probs)):  # (a shape the reader rules out stays ruled out)
                readings.append((score, reading))
        best: Correction | None = None
        for _, reading in heapq.nlargest(self.beam, readings):
            found = Correction(reading, self.score(reading, log_probs), 0) if self.value(reading) == target else None
            found = found or self._search(reading, log_probs, target)
            if found is not None and (best is None or found.log_prob > best.log_prob):
                best = found
        if best is None:
            return None
        return Correction(best.sentence, best.log_prob, changed(best.sentence, sentence))

    def _class_of(self, symbol: str) -> int:
        if symbol == "(":
            return OPEN_CLASS
        if symbol == ")":
            return CLOSE_CLASS
        return NUMBER if symbol in self.table.numbers else OPERATOR

    # -- one back-search pass --------------------------------------------------------------------

    def _back_search(self, sentence: str, log_probs: np.ndarray, target: int) -> list[_Proposal]:
        """Every single-symbol change that the top-down pass finds for ``sentence`` (unverified).

        Complete for one change: an operator of the other precedence level changes the tree, so it is proposed at
        every operator; where the reading has no value, every change inside its lowest invalid sub-expressions is.
        """
        try:
            root = parse(sentence, self.concepts)
        except ParseError:
            return []
        values = self.partial_values(root)
        proposals: list[_Proposal] = []
        for node in root.postorder():
            if node.is_leaf:
                continue
            level = self.table.operators[node.symbol].level
            others = [s for s in self.operators if self.table.operators[s].level != level]
            proposals += self._propose(sentence, log_probs, _span(node.children[0])[1], others)
        if values[id(root)] is None:
            return proposals + self._repairs(sentence, log_probs, root, values)
        stack: list[tuple[Node, Interval]] = [(root, Interval.point(target))]
        while stack:
            node, wanted = stack.pop()
            if node.is_leaf:
                start = _span(node)[0]
                position = start + _leading_brackets(sentence, start)
                fitting = [s for s in self.numbers if self.table.numbers[s] in wanted]
                proposals += self._propose(sentence, log_probs, position, fitting)
                continue
            left, right = node.children
            level = self.table.operators[node.symbol].level
            left_value, right_value = values[id(left)], values[id(right)]
            assert left_value is not None and right_value is not None  # (the root has a value)
            fitting = [
                s
                for s in self.operators
                if self.table.operators[s].level == level and self.table.operators[s].value(left_value, right_value) in wanted
            ]
            proposals += self._propose(sentence, log_probs, _span(left)[1], fitting)
            left_wanted, right_wanted = self.child_targets(node.symbol, wanted, left_value, right_value)
            if left_wanted is not None:
                stack.append((left, left_wanted))
            if right_wanted is not None:
                stack.append((right, right_wanted))
        return proposals

    def _repairs(self, sentence: str, log_probs: np.ndarray, root: Node, values: dict[int, Value | None]) -> list[_Proposal]:
        """Every same-class change inside each lowest invalid sub-expression of ``sentence`` (its operator's operands have
        values, its own is undefined, e.g. ``6/0``): one change can make the reading valid only there (or by changing
        the tree, proposed apart)."""
        proposals: list[_Proposal] = []
        for node in root.postorder():  # (a number always has a value)
            if values[id(node)] is not None or any(values[id(child)] is None for child in node.children):
                continue
            start, end = _span(node)
            for position in range(start, end):
                symbol = sentence[position]
                if symbol in self.table.numbers:
                    proposals += self._propose(sentence, log_probs, position, self.numbers)
                elif symbol in self.table.operators:
                    level = self.table.operators[symbol].level
                    same = [s for s in self.operators if self.table.operators[s].level == level]
                    proposals += self._propose(sentence, log_probs, position, same)
        return proposals

    @property
    def negative_values(self) -> bool:
        """Whether values under the table may be negative (given, or found by probing the table once)."""
        if self._negative_values is None:
            self._negative_values = admits_negative_values(self.table)
        return self._negative_values

    def child_targets(self, symbol: str, wanted: Interval, left: Value, right: Value) -> tuple[Interval | None, Interval | None]:
        """Wanted values of the left child (right fixed) and of the right child (left fixed)."""
        return operand_preimages(self.table.operators[symbol], wanted, left, right, self.negative_values)

    def _propose(self, sentence: str, log_probs: np.ndarray, position: int, symbols: list[str]) -> list[_Proposal]:
        """Replacing the symbol at ``position`` by each of ``symbols`` (other than itself and those ruled out)."""
        current = log_probs[position, self.index[sentence[position]]]
        scored = ((s, log_probs[position, self.index[s]]) for s in symbols if s != sentence[position])
        return [_Proposal(float(score - current), position, s) for s, score in scored if score > -np.inf]

    def node_values(self, root: Node) -> dict[int, Value] | None:
        """Value of every node (by ``id``), ``None`` when the expression is invalid."""
        values = self.partial_values(root)
        return None if values[id(root)] is None else cast(dict[int, Value], values)  # (no None below a valid root)

    def partial_values(self, root: Node) -> dict[int, Value | None]:
        """Value of every node (by ``id``), ``None`` for a sub-expression that is invalid or holds one."""
        layout = infix_layout(root, self.concepts)
        values = subexpression_values(layout, self.table)
        return {id(node): value for node, value in zip(layout.nodes, values) if node is not None}


def _span(node: Node) -> tuple[int, int]:
    assert node.span is not None  # parse spans every node
    return node.span


def _leading_brackets(sentence: str, start: int) -> int:
    count = 0
    while sentence[start + count] == "(":
        count += 1
    return count
