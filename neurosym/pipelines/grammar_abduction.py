"""Abduction for any grammar and semantics: the most probable grammatical sentence, within a change
budget, whose value is the known result.

Two searches, both verified by executing every candidate (:class:`~neurosym.semantics.tree_semantics.Executor`):

* **top-down back-search** (Li et al.'s 1-BS, generalised), where the semantics give inverses: the
  wanted value is pushed from the root down the parse tree of the sentence read; at a rule, each tuple
  of children values its inverse offers is pursued into every child whose value must change (the
  ``beam`` most probable ways each); at a symbol, every symbol of the same terminal with the wanted
  value is proposed. One pass may change many symbols (a whole number, when its value must change);
* **best-first enumeration** of the sentences that differ from the one read in at most ``max_changes``
  positions, in decreasing probability (each position's ``alternatives`` most probable other symbols),
  until ``max_candidates`` were run or none left can beat a correction already found. It needs no
  inverse, and switches between sentence shapes as easily as between symbols.

The most probable verified correction wins; ``None`` says that nothing within the budget gives the result.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Collection, Iterator
from typing import Any

import numpy as np
from lark import Token, Tree

from neurosym.pipelines.abduction import Correction
from neurosym.semantics.tree_semantics import Executor
from neurosym.syntax.errors import ParseError

Edits = tuple[tuple[int, str], ...]


class GrammarAbducer:
    """Corrections of read sentences towards known results.

    Args:
        executor: the grammar and semantics (its grammar's symbols order the log-probability columns).
        max_changes: the most symbols a correction may change.
        max_candidates: the most sentences the enumeration runs per abduction.
        alternatives: other symbols tried per position by the enumeration.
        beam: ways kept per node of the top-down search.
        equal: when a value counts as the result (default ``==``; e.g. a tolerance for real values).
    """

    def __init__(
        self,
        executor: Executor,
        max_changes: int = 2,
        max_candidates: int = 256,
        alternatives: int = 4,
        beam: int = 4,
        equal: Callable[[Any, Any], bool] | None = None,
    ):
        if max_changes < 1 or max_candidates < 1 or alternatives < 1 or beam < 1:
            raise ValueError("max_changes, max_candidates, alternatives and beam must be at least 1")
        self.executor, self.grammar, self.semantics = executor, executor.grammar, executor.semantics
        self.max_changes, self.max_candidates, self.alternatives, self.beam = max_changes, max_candidates, alternatives, beam
        self.equal = equal or (lambda value, target: value == target)
        self.index = {symbol: i for i, symbol in enumerate(self.grammar.symbols)}

    def gives(self, value: Any, target: Any) -> bool:
        return value is not None and bool(self.equal(value, target))

    def score(self, sentence: str, log_probs: np.ndarray) -> float:
        """Log-probability of ``sentence`` under per-window ``log_probs [n, V]``."""
        return float(log_probs[np.arange(len(sentence)), [self.index[c] for c in sentence]].sum())

    def abduce(self, sentence: str, log_probs: np.ndarray, target: Any, fixed: Collection[int] = ()) -> Correction | None:
        """The most probable correction found of ``sentence`` whose value is ``target`` (or ``None``).

        Args:
            sentence: the sentence read (``n`` symbols).
            log_probs: ``[n, V]`` per-window log-probabilities over the grammar's symbols (``-inf``: never).
            target: the known result.
            fixed: positions that may not change (symbols given rather than read).
        """
        log_probs = np.asarray(log_probs, dtype=np.float64)
        if log_probs.shape != (len(sentence), len(self.index)):
            raise ValueError(f"log_probs must have shape [{len(sentence)}, {len(self.index)}], got {list(log_probs.shape)}")
        base = self.score(sentence, log_probs)
        if self.gives(self.executor.value(sentence), target):
            return Correction(sentence, base, 0)
        best: tuple[float, str] | None = None
        for gain, edits in self._top_down(sentence, log_probs, target, frozenset(fixed)):
            candidate = _apply(sentence, edits)
            if len(edits) <= self.max_changes and self.gives(self.executor.value(candidate), target):
                best = (gain, candidate)
                break
        found = self._enumerate(sentence, log_probs, target, frozenset(fixed), -np.inf if best is None else best[0])
        best = found if found is not None else best
        if best is None:
            return None
        gain, corrected = best
        return Correction(corrected, base + gain, sum(a != b for a, b in zip(corrected, sentence)))

    # -- top-down --------------------------------------------------------------------------------

    def _top_down(self, sentence: str, log_probs: np.ndarray, target: Any, fixed: frozenset[int]) -> list[tuple[float, Edits]]:
        """Candidate edits, most probable first (unverified)."""
        if not self.semantics.inverses:
            return []
        try:
            tree = self.grammar.parse(sentence)
        except ParseError:
            return []
        values = self.semantics.node_values(tree)
        if values is None:
            return []
        found = self._descend(tree, target, values, sentence, log_probs, fixed)
        return sorted((item for item in found if item[1]), key=lambda item: -item[0])

    def _descend(
        self, node: Tree | Token, wanted: Any, values: dict[int, Any], sentence: str, log_probs: np.ndarray, fixed: frozenset[int]
    ) -> list[tuple[float, Edits]]:
        """The ``beam`` most probable ways (gain, edits) to make ``node``'s value ``wanted``."""
        if self.gives(values[id(node)], wanted):
            return [(0.0, ())]
        if isinstance(node, Token):
            position = node.start_pos
            if position in fixed:
                return []
            current = log_probs[position, self.index[sentence[position]]]
            options = [
                (float(log_probs[position, self.index[s]] - current), ((position, s),))
                for s in self.grammar.symbols_of(node.type)
                if np.isfinite(log_probs[position, self.index[s]]) and self.gives(self.semantics.leaf_value(node.type, s), wanted)
            ]
            return heapq.nlargest(self.beam, options, key=lambda item: item[0])
        inverse = self.semantics.inverses.get(str(node.data))
        if inverse is None:
            if len(node.children) == 1:  # a pass-through rule
                return self._descend(node.children[0], wanted, values, sentence, log_probs, fixed)
            return []
        current = tuple(values[id(child)] for child in node.children)
        ways: list[tuple[float, Edits]] = []
        for wanted_children in itertools.islice(inverse(wanted, current), 4 * self.beam):
            combined: list[tuple[float, Edits]] = [(0.0, ())]
            for child, value, now in zip(node.children, wanted_children, current):
                if value == now:
                    continue
                options = self._descend(child, value, values, sentence, log_probs, fixed)
                combined = heapq.nlargest(
                    self.beam,
                    ((g + h, e + f) for (g, e), (h, f) in itertools.product(combined, options)),
                    key=lambda item: item[0],
                )
                if not combined:
                    break
            ways += combined
        return heapq.nlargest(self.beam, ways, key=lambda item: item[0])

    # -- enumeration -----------------------------------------------------------------------------

    def _enumerate(
        self, sentence: str, log_probs: np.ndarray, target: Any, fixed: frozenset[int], floor: float
    ) -> tuple[float, str] | None:
        """The first sentence, in decreasing probability, that gives ``target`` (gain above ``floor``)."""
        batch: list[tuple[float, str]] = []
        for gain, candidate in itertools.islice(self._ranked(sentence, log_probs, fixed), self.max_candidates):
            if gain <= floor:
                break
            batch.append((gain, candidate))
        for gain, candidate in batch:  # in decreasing probability: the first that fits is the best
            if self.gives(self.executor.value(candidate), target):
                return gain, candidate
        return None

    def _ranked(self, sentence: str, log_probs: np.ndarray, fixed: frozenset[int]) -> Iterator[tuple[float, str]]:
        """Sentences with 1..``max_changes`` changed symbols, in decreasing probability (lazy k-best: each
        change set has one parent, so none is produced twice)."""
        current = log_probs[np.arange(len(sentence)), [self.index[c] for c in sentence]]
        options: list[tuple[int, list[tuple[float, str]]]] = []
        for position in range(len(sentence)):
            if position in fixed:
                continue
            others = [
                (float(log_probs[position, i] - current[position]), symbol)
                for symbol, i in self.index.items()
                if symbol != sentence[position] and np.isfinite(log_probs[position, i])
            ]
            if others:
                options.append((position, heapq.nlargest(self.alternatives, others)))
        options.sort(key=lambda item: -item[1][0][0])  # most promising position first
        if not options:
            return

        def gain(changes: tuple[tuple[int, int], ...]) -> float:
            return sum(options[j][1][r][0] for j, r in changes)

        heap: list[tuple[float, tuple[tuple[int, int], ...]]] = [(-gain(((0, 0),)), ((0, 0),))]
        while heap:
            negative, changes = heapq.heappop(heap)
            edited = list(sentence)
            for j, r in changes:
                edited[options[j][0]] = options[j][1][r][1]
            yield -negative, "".join(edited)
            j, r = changes[-1]
            successors = []
            if r + 1 < len(options[j][1]):
                successors.append(changes[:-1] + ((j, r + 1),))
            if j + 1 < len(options):
                if len(changes) < self.max_changes:
                    successors.append(changes + ((j + 1, 0),))
                if r == 0:
                    successors.append(changes[:-1] + ((j + 1, 0),))
            for successor in successors:
                heapq.heappush(heap, (-gain(successor), successor))


def _apply(sentence: str, edits: Edits) -> str:
    edited = list(sentence)
    for position, symbol in edits:
        edited[position] = symbol
    return "".join(edited)
