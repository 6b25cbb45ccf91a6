"""Abduction for any grammar and semantics: the most probable grammatical sentence, within a change
budget, whose value is the known result.

Two searches, both verified by executing every candidate (:class:`~neurosym.semantics.tree_semantics.Executor`):

* **top-down back-search** (Li et al.'s 1-BS, generalised), where the semantics give inverses: the
  wanted value is pushed from the root down the parse tree of the sentence read; at a rule, each tuple
  of children values its inverse offers is pursued into every child whose value must change (the
  ``beam`` most probable ways each); at a symbol, every symbol of the same terminal with the wanted
  value is proposed. One pass may change many symbols (a whole number, when its value must change);
* **best-first enumeration** of the sentences that differ from the one read in at most ``max_changes``
  positions, in decreasing probability (each position's ``alternatives`` most probable other symbols among
  those some sentence of its length has there, :meth:`~neurosym.syntax.symbol_grammar.SymbolGrammar.position_symbols`),
  until ``max_candidates`` were run or none left can beat a correction already found. It needs no
  inverse, and switches between sentence shapes as easily as between symbols.

The most probable verified correction wins; ``None`` says that nothing within the budget gives the result.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lark import Token, Tree

from neurosym.pipelines.abduction import Correction
from neurosym.semantics.tree_semantics import Executor
from neurosym.syntax.errors import ParseError

Edits = tuple[tuple[int, str], ...]


@dataclass(frozen=True)
class AbductionBudget:
    """How hard abduction searches.

    Args:
        max_changes: the most symbols a correction may change.
        max_candidates: the most sentences the enumeration runs per abduction.
        alternatives: other symbols tried per position by the enumeration.
        beam: ways kept per node of the top-down search.
        readings: at a rule with an inverse, each part is also assumed kept at each of its ``readings`` most
            probable other readings (the other parts solved through the inverse): the top-down search then
            weighs whole readings of one part against the others, not only the part as read.
    """

    max_changes: int = 2
    max_candidates: int = 256
    alternatives: int = 4
    beam: int = 4
    readings: int = 0

    def __post_init__(self) -> None:
        if min(self.max_changes, self.max_candidates, self.alternatives, self.beam) < 1 or self.readings < 0:
            raise ValueError(
                f"max_changes, max_candidates, alternatives and beam must be at least 1, readings at least 0: {self}"
            )


@dataclass
class _Search:
    """One top-down search's inputs (node values by ``id``, the sentence read, its ``log_probs``, the fixed
    positions) and its memory of the ways found per ``(id(node), wanted value)``."""

    values: dict[int, Any]
    sentence: str
    log_probs: np.ndarray
    fixed: frozenset[int]
    memo: dict[tuple[int, Any], list[tuple[float, Edits]]] = field(default_factory=dict)


class GrammarAbducer:
    """Corrections of read sentences towards known results.

    Args:
        executor: the grammar and semantics (its grammar's symbols order the log-probability columns).
        budget: how hard to search (default: :class:`AbductionBudget`'s).
        equal: when a value counts as the result (default ``==``; e.g. a tolerance for real values).
    """

    def __init__(
        self, executor: Executor, budget: AbductionBudget = AbductionBudget(), equal: Callable[[Any, Any], bool] | None = None
    ):
        budget = budget or AbductionBudget()
        self.executor, self.grammar, self.semantics = executor, executor.grammar, executor.semantics
        self.max_changes, self.max_candidates, self.alternatives = budget.max_changes, budget.max_candidates, budget.alternatives
        self.beam, self.readings = budget.beam, budget.readings
        self.equal = equal or (lambda value, target: value == target)
        self.index = {symbol: i for i, symbol in enumerate(self.grammar.symbols)}
        self._leaves: dict[str, list[tuple[str, Any]]] = {}

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
        log_probs = self._checked(sentence, log_probs)
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

    def explanations(self, sentence: str, log_probs: np.ndarray, target: Any, fixed: Collection[int] = ()) -> list[Correction]:
        """Every sentence whose value is ``target`` that the budget's searches reach (the one read, the top-down
        search's, the ``max_candidates`` first of the enumeration), most probable first; empty when none does.
        Their probabilities approximate the likelihood of the result (a marginal over explanations). Arguments
        as :meth:`abduce`'s; its correction, where it finds one, is among them."""
        log_probs = self._checked(sentence, log_probs)
        fixed = frozenset(fixed)
        gains: dict[str, float] = {}
        candidates = [(0.0, ())] + [
            item for item in self._top_down(sentence, log_probs, target, fixed) if len(item[1]) <= self.max_changes
        ]
        ranked = self._ranked(sentence, log_probs, self._options(sentence, fixed), self.max_changes)
        for gain, edits in itertools.chain(candidates, itertools.islice(ranked, self.max_candidates)):
            candidate = _apply(sentence, edits)
            if candidate not in gains and self.gives(self.executor.value(candidate), target):
                gains[candidate] = gain
        base = self.score(sentence, log_probs)
        found = [Correction(c, base + g, sum(a != b for a, b in zip(c, sentence))) for c, g in gains.items()]
        return sorted(found, key=lambda correction: -correction.log_prob)

    def _checked(self, sentence: str, log_probs: np.ndarray) -> np.ndarray:
        log_probs = np.asarray(log_probs, dtype=np.float64)
        if log_probs.shape != (len(sentence), len(self.index)):
            raise ValueError(f"log_probs must have shape [{len(sentence)}, {len(self.index)}], got {list(log_probs.shape)}")
        return log_probs

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
        found = self._descend(tree, target, _Search(values, sentence, log_probs, fixed))
        return sorted((item for item in found if item[1]), key=lambda item: -item[0])

    def _descend(self, node: Tree | Token, wanted: Any, search: _Search) -> list[tuple[float, Edits]]:
        """The ``beam`` most probable ways (gain, edits) to make ``node``'s value ``wanted``, remembered per node and
        wanted value for the rest of the ``search`` (other assumptions about a sibling ask for the same again)."""
        try:
            key = (id(node), wanted)
            hash(key)
        except TypeError:  # an unhashable value: not remembered
            return self._descend_anew(node, wanted, search)
        if key not in search.memo:
            search.memo[key] = self._descend_anew(node, wanted, search)
        return search.memo[key]

    def _descend_anew(self, node: Tree | Token, wanted: Any, search: _Search) -> list[tuple[float, Edits]]:
        values, sentence, log_probs, fixed = search.values, search.sentence, search.log_probs, search.fixed
        if self.gives(values[id(node)], wanted):
            return [(0.0, ())]
        if isinstance(node, Token):
            position = node.start_pos
            if position in fixed:
                return []
            current = log_probs[position, self.index[sentence[position]]]
            options = [
                (float(log_probs[position, self.index[s]] - current), ((position, s),))
                for s, value in self._leaf_values(node.type)
                if np.isfinite(log_probs[position, self.index[s]]) and self.gives(value, wanted)
            ]
            return heapq.nlargest(self.beam, options, key=lambda item: item[0])
        inverse = self.semantics.inverses.get(str(node.data))
        if inverse is None:
            if len(node.children) == 1:  # a pass-through rule
                return self._descend(node.children[0], wanted, search)
            return []
        current = tuple(values[id(child)] for child in node.children)
        # Each child as read, or kept at one of its ``readings`` most probable other readings.
        assumptions: list[tuple[int, float, Edits, tuple[Any, ...]]] = [(-1, 0.0, (), current)]
        for which, child in enumerate(node.children):
            if isinstance(child, Token):  # a symbol's other readings are what the descent proposes anyway
                continue
            for gain, edits, value in self._readings(child, sentence, log_probs, fixed):
                assumptions.append((which, gain, edits, current[:which] + (value,) + current[which + 1 :]))
        ways: list[tuple[float, Edits]] = []
        for which, gain, edits, assumed in assumptions:
            for wanted_children in itertools.islice(inverse(wanted, assumed), 4 * self.beam):
                combined: list[tuple[float, Edits]] = [(gain, edits)]
                for position, (child, value, now) in enumerate(zip(node.children, wanted_children, assumed)):
                    if value == now:
                        continue
                    if position == which:  # the inverse changed the kept child too: search it from its reading
                        combined = [(g - gain, tuple(e for e in edit if e not in edits)) for g, edit in combined]
                    options = self._descend(child, value, search)
                    combined = heapq.nlargest(
                        self.beam,
                        ((g + h, e + f) for (g, e), (h, f) in itertools.product(combined, options)),
                        key=lambda item: item[0],
                    )
                    if not combined:
                        break
                ways += combined
        return heapq.nlargest(self.beam, ways, key=lambda item: item[0])

    def _leaf_values(self, terminal: str) -> list[tuple[str, Any]]:
        """``(symbol, value)`` of every symbol of ``terminal`` (computed once)."""
        if terminal not in self._leaves:
            self._leaves[terminal] = [(s, self.semantics.leaf_value(terminal, s)) for s in self.grammar.symbols_of(terminal)]
        return self._leaves[terminal]

    def _readings(
        self, node: Tree, sentence: str, log_probs: np.ndarray, fixed: frozenset[int]
    ) -> list[tuple[float, Edits, Any]]:
        """The ``readings`` most probable other readings of ``node``'s symbols (each symbol among those of its
        terminal) with a valid value: ``(gain, edits, value)``."""
        if not self.readings:
            return []
        leaves = list(node.scan_values(lambda item: isinstance(item, Token)))
        options = {
            leaf.start_pos: [s for s in self.grammar.symbols_of(leaf.type) if s != sentence[leaf.start_pos]]
            for leaf in leaves
            if leaf.start_pos not in fixed
        }
        found = []
        for gain, edits in itertools.islice(self._ranked(sentence, log_probs, options, len(options)), 4 * self.readings):
            value = self.semantics.evaluate(_rebuilt(node, dict(edits)))
            if value is not None:
                found.append((gain, edits, value))
                if len(found) == self.readings:
                    break
        return found

    # -- enumeration -----------------------------------------------------------------------------

    def _enumerate(
        self, sentence: str, log_probs: np.ndarray, target: Any, fixed: frozenset[int], floor: float
    ) -> tuple[float, str] | None:
        """The first sentence, in decreasing probability, that gives ``target`` (gain above ``floor``)."""
        ranked = self._ranked(sentence, log_probs, self._options(sentence, fixed), self.max_changes)
        for gain, edits in itertools.islice(ranked, self.max_candidates):
            if gain <= floor:
                break
            candidate = _apply(sentence, edits)
            if self.gives(self.executor.value(candidate), target):  # in decreasing probability: the first is the best
                return gain, candidate
        return None

    def _options(self, sentence: str, fixed: frozenset[int]) -> dict[int, list[str]]:
        """Per position that may change, the symbols an edit may put there: those some sentence of its length has."""
        allowed = self.grammar.position_symbols(len(sentence))
        return {p: [s for s in allowed[p] if s != sentence[p]] for p in range(len(sentence)) if p not in fixed}

    def _ranked(
        self, sentence: str, log_probs: np.ndarray, options: dict[int, list[str]], max_changes: int
    ) -> Iterator[tuple[float, Edits]]:
        """Edits of 1..``max_changes`` positions of ``options`` (position -> symbols it may become), in
        decreasing probability (lazy k-best over each position's ``alternatives`` best symbols: each edit set
        has one parent, so none is produced twice)."""
        ranked: list[tuple[int, list[tuple[float, str]]]] = []
        for position, symbols in options.items():
            now = log_probs[position, self.index[sentence[position]]]
            others = [
                (float(log_probs[position, self.index[s]] - now), s)
                for s in symbols
                if np.isfinite(log_probs[position, self.index[s]])
            ]
            if others:
                ranked.append((position, heapq.nlargest(self.alternatives, others)))
        ranked.sort(key=lambda item: -item[1][0][0])  # most promising position first
        if not ranked or max_changes < 1:
            return

        def gain(changes: tuple[tuple[int, int], ...]) -> float:
            return sum(ranked[j][1][r][0] for j, r in changes)

        heap: list[tuple[float, tuple[tuple[int, int], ...]]] = [(-gain(((0, 0),)), ((0, 0),))]
        while heap:
            negative, changes = heapq.heappop(heap)
            yield -negative, tuple((ranked[j][0], ranked[j][1][r][1]) for j, r in changes)
            j, r = changes[-1]
            successors = []
            if r + 1 < len(ranked[j][1]):
                successors.append(changes[:-1] + ((j, r + 1),))
            if j + 1 < len(ranked):
                if len(changes) < max_changes:
                    successors.append(changes + ((j + 1, 0),))
                if r == 0:
                    successors.append(changes[:-1] + ((j + 1, 0),))
            for successor in successors:
                heapq.heappush(heap, (-gain(successor), successor))


def _rebuilt(node: Tree, edits: dict[int, str]) -> Tree:
    """``node`` with the symbols at the positions of ``edits`` replaced."""
    children = [
        (child.update(value=edits[child.start_pos]) if child.start_pos in edits else child)
        if isinstance(child, Token)
        else _rebuilt(child, edits)
        for child in node.children
    ]
    return Tree(node.data, children, node.meta)


def _apply(sentence: str, edits: Edits) -> str:
    edited = list(sentence)
    for position, symbol in edits:
        edited[position] = symbol
    return "".join(edited)
