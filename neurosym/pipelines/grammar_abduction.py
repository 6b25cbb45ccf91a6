"""Abduction for any grammar and semantics: the most probable grammatical sentence, within a change
budget, whose value is the known result.

Two searches, both verified by executing every candidate (:class:`~neurosym.semantics.tree_semantics.Executor`):

* **top-down back-search** (Li et al.'s 1-BS, generalised), where the semantics give inverses: the
  wanted value is pushed from the root down the parse tree of the sentence read; at a rule, each tuple
  of children values its inverse offers is pursued into every child whose value must change (the
  ``beam`` most probable ways each); at a symbol, every symbol of the same terminal with the wanted
  value is proposed. One pass may change many symbols (a whole number, when its value must change). A part
  may also be kept at other readings, its most probable ones or ones drawn from the reader
  (:attr:`AbductionBudget.sample_readings`: explanations then carry the probability of what was drawn, so that a
  marginal over them is an importance-sampled likelihood);
* **best-first enumeration** of the grammatical sentences that differ from the one read in at most
  ``max_changes`` positions, in decreasing probability (each position's ``alternatives`` most probable other
  symbols among those some sentence of its length has there,
  :meth:`~neurosym.syntax.symbol_grammar.SymbolGrammar.position_symbols`), until ``max_candidates`` were run or
  none left can beat a correction already found. Parsing sees only terminals, so edits are ranked by terminal
  pattern first and the ungrammatical ones are never enumerated. It needs no inverse, and switches between
  sentence shapes as easily as between symbols.

The most probable verified correction wins; ``None`` says that nothing within the budget gives the result.
"""

from __future__ import annotations

import heapq
import itertools
import operator
import zlib
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from lark import Token, Tree

from neurosym.pipelines.abduction import Correction, changed, checked_log_probs
from neurosym.pipelines.value_chain import ValueChain
from neurosym.semantics.tree_semantics import Executor
from neurosym.semantics.tree_semantics import leaves as tree_leaves
from neurosym.training.checks import is_int

Edits = tuple[tuple[int, str], ...]
PATTERN_LIST_LIMIT = 3000
"""Candidate terminal patterns up to which a sentence's grammatical ones are listed once (HINT: up to 9 symbols within
three changes; a list costs one parse per candidate, remembered by the grammar) instead of searched for each time."""
PATTERN_LISTS = 1000
"""Terminal sequences whose pattern lists are remembered."""


@dataclass(frozen=True)
class AbductionBudget:
    """How hard abduction searches.

    Args:
        max_changes: the most symbols a correction may change.
        max_candidates: the most (grammatical) sentences the enumeration runs per abduction.
        max_patterns: the most ungrammatical terminal patterns the enumeration passes over per abduction before it
            stops (a bound on its work where the reader prefers edits the grammar rejects: on a long sentence their
            combinations are countless).
        alternatives: other symbols tried per position by the enumeration.
        beam: ways kept per node of the top-down search.
        readings: at a rule with an inverse, each part is also assumed kept at each of its ``readings`` most
            probable other readings (the other parts solved through the inverse): the top-down search then
            weighs whole readings of one part against the others, not only the part as read.
        sample_readings: draw those ``readings`` from the reader's distribution (each symbol as probable as the
            reader makes it; the draws are seeded by the example's log-probabilities, so a search is a function of
            its inputs) instead of taking the most probable ones, and assume each part kept only at its draws.
            Each explanation then carries the probability of its drawn parts (:attr:`Correction.proposal`), and
            a marginal over the explanations weighs each by the probability of what was solved for: an
            importance-sampled estimate of the result's likelihood. The most probable readings of a part differ
            in a symbol or two, so the parts solved for them are alike however little the reader knows, and the
            reader learns its own guesses back; draws spread the explanations over what the result leaves open.
            Keep ``beam`` at least the number of draws a rule makes, so that the explanations are not cut back.
        chain_sweeps: where at least 1, the explanations are instead the sentences of a Gibbs chain of this many
            sweeps (:class:`~neurosym.pipelines.value_chain.ValueChain`: one symbol changed at a time, the other parts
            solved through the inverse) started at the weightiest explanation the searches found, each weighed by
            how often the chain was there: samples of the posterior over the sentences that give the result, where
            a handful of searched ones would give one of them all the weight.
        max_nodes: the most (node, wanted value) pairs the top-down search expands per abduction (a bound on its
            work where inverses offer many values for each part: under HINT's semantics each division of a chain
            offers up to eight dividends, multiplied at every level). Past it the search expands nothing more and
            keeps the ways it found, the enumeration's answer standing alone where it found none. The tasks' searches
            expand far fewer (confident and uncertain simulated readings: HINT's expressions to 65 symbols at most
            342, mnist-add at 100 digits 1,314).
    """

    max_changes: int = 2
    max_candidates: int = 256
    max_patterns: int = 1024
    alternatives: int = 4
    beam: int = 4
    readings: int = 0
    sample_readings: bool = False
    chain_sweeps: int = 0
    max_nodes: int = 10_000

    def __post_init__(self) -> None:
        counts = (self.max_changes, self.max_candidates, self.max_patterns, self.alternatives, self.beam, self.max_nodes)
        if (
            not all(is_int(count) for count in (*counts, self.readings, self.chain_sweeps))
            or min(counts) < 1
            or min(self.readings, self.chain_sweeps) < 0
        ):
            raise ValueError(
                "max_changes, max_candidates, max_patterns, alternatives, beam and max_nodes must be ints of at least 1, "
                f"readings and chain_sweeps ints of at least 0: {self}"
            )


class _Way(NamedTuple):
    """One way of the top-down search: the change of log-probability against the sentence read, the edits, and
    the log-probability of the parts drawn rather than solved (less the log of how often they were drawn)."""

    gain: float
    edits: Edits
    proposal: float = 0.0

    @property
    def weight(self) -> float:
        """The way's log-weight in an importance-sampled marginal (its gain where nothing was drawn)."""
        return self.gain - self.proposal


@dataclass
class _Search:
    """One top-down search's inputs (node values by ``id``, the sentence read, its ``log_probs``, the fixed
    positions), the expansions it has left, and its memory of the ways found per ``(id(node), type of the wanted value,
    wanted value)`` (values of other types that Python counts as one, ``True``, ``1`` and ``1.0``, need not be one under
    a type-strict ``equal``)."""

    values: dict[int, Any]
    sentence: str
    log_probs: np.ndarray
    fixed: frozenset[int]
    nodes_left: int
    rng: np.random.Generator | None = None
    memo: dict[tuple[int, type, Any], list[_Way]] = field(default_factory=dict)

    def expand(self) -> bool:
        """Spend one expansion: ``False`` where none is left."""
        if self.nodes_left < 1:
            return False
        self.nodes_left -= 1
        return True


class GrammarAbducer:
    """Corrections of read sentences towards known results.

    Args:
        executor: the grammar and semantics (its grammar's symbols order the log-probability columns).
        budget: how hard to search (default: :class:`AbductionBudget`'s).
        equal: when a value counts as the result (default ``==``; e.g. a tolerance for real values, or
            ``numpy.array_equal`` for arrays, whose ``==`` compares elementwise). The searches compare every value
            with a wanted one through it, a part's value too (``equal(value, wanted)``), so it must take every value
            the semantics give, a symbol's included.
    """

    def __init__(
        self, executor: Executor, budget: AbductionBudget = AbductionBudget(), equal: Callable[[Any, Any], bool] | None = None
    ):
        budget = budget or AbductionBudget()
        self.executor, self.grammar, self.semantics = executor, executor.grammar, executor.semantics
        self.max_changes, self.max_candidates, self.alternatives = budget.max_changes, budget.max_candidates, budget.alternatives
        self.max_patterns = budget.max_patterns
        self.beam, self.readings, self.sample_readings = budget.beam, budget.readings, budget.sample_readings
        self.chain_sweeps, self.max_nodes = budget.chain_sweeps, budget.max_nodes
        self.custom_equal = equal is not None
        self.equal = equal or operator.eq  # (a lambda here kept a pipeline from pickling)
        self.index = {symbol: i for i, symbol in enumerate(self.grammar.symbols)}
        self._leaf_values: dict[str, list[tuple[str, int, Any]]] = {}
        self._terminal_index = {terminal: i for i, terminal in enumerate(sorted(set(self.grammar.terminal_of.values())))}
        self._listed: OrderedDict[tuple, tuple[list[tuple[tuple[int, str], ...]], np.ndarray] | None] = OrderedDict()
        self.chain = ValueChain(executor, self.index, self.gives, self._symbols_giving)

    def gives(self, value: Any, target: Any) -> bool:
        """Whether ``value`` counts as ``target`` (``equal``; an invalid value, ``None``, never does)."""
        return value is not None and bool(self.equal(value, target))

    def check_target(self, target: Any) -> None:
        """Refuse a ``target`` no sentence can give: ``None`` (the value of an invalid sentence) with ``TypeError``; and
        under the default ``equal`` (``==``) a target that ``==`` does not compare to a bool (a numpy array or a
        tensor, elementwise: abduction failed deep inside on "the truth value of an array is ambiguous"; a 0-d tensor
        named as one, to give as a Python value) with ``TypeError``, or one not equal to itself (NaN) with ``ValueError``."""
        if target is None:
            raise TypeError("target is None: no sentence's value is None (None marks an invalid sentence)")
        if self.custom_equal:
            return
        try:
            same = target == target  # noqa: PLR0124 (what == gives, and NaN)
        except Exception as error:  # (whatever ``==`` of a user's type raises)
            raise TypeError(f"target {target!r:.60} cannot be compared with == ({error}): pass an `equal`") from error
        if not isinstance(same, bool | np.bool_) and getattr(target, "ndim", None) == 0:
            raise TypeError(
                f"target {target!r:.60} is a 0-d {type(target).__name__}, whose == gives a {type(same).__name__}, not a "
                "bool: give the targets as Python values (a tensor's .tolist())"
            )
        if not isinstance(same, bool | np.bool_):
            raise TypeError(
                f"target {type(target).__name__} {target!r:.60} compares with == elementwise (to a "
                f"{type(same).__name__}, not a bool): pass an `equal` for such values (e.g. numpy.array_equal)"
            )
        if not same:
            raise ValueError(f"target {target!r} is not equal to itself under ==, so no value is: pass an `equal`")

    def score(self, sentence: str, log_probs: np.ndarray) -> float:
        """Log-probability of ``sentence`` under per-window ``log_probs [n, V]``."""
        return float(log_probs[np.arange(len(sentence)), [self.index[c] for c in sentence]].sum())

    def abduce(self, sentence: str, log_probs: np.ndarray, target: Any, fixed: Collection[int] = ()) -> Correction | None:
        """The most probable correction found of ``sentence`` whose value is ``target`` (or ``None``); ``sentence``
        itself, unchanged, when its value already is ``target`` (the pipeline's sentences are the most probable
        grammatical ones, so none can beat it; :meth:`explanations` lists the others).

        Args:
            sentence: the sentence read: a str of ``n`` symbols of the grammar's vocabulary (another symbol is refused,
                naming its position).
            log_probs: ``[n, V]`` per-window log-probabilities over the grammar's symbols (``-inf``: never; NaN and
                ``+inf`` are refused, naming the position).
            target: the known result, a value of the semantics' kind (refused: ``None``, and under the default
                ``equal`` a target that ``==`` does not compare to a bool, or NaN: :meth:`check_target`).
            fixed: positions that may not change (symbols given rather than read).
        """
        self.check_target(target)
        log_probs = checked_log_probs(sentence, log_probs, self.index)
        base = self.score(sentence, log_probs)
        if self.gives(self.executor.value(sentence), target):
            return Correction(sentence, base, 0)
        best: tuple[float, str] | None = None
        tree = self.executor.tree(sentence)
        for gain, edits, _ in self._top_down(tree, sentence, log_probs, target, frozenset(fixed)):
            candidate = _apply(sentence, edits)
            if len(edits) <= self.max_changes and self.gives(self.executor.value(candidate), target):
                best = (gain, candidate)
                break
        found = self._enumerate(sentence, log_probs, target, frozenset(fixed), -np.inf if best is None else best[0])
        best = found if found is not None else best
        if best is None:
            return None
        gain, corrected = best
        return Correction(corrected, base + gain, changed(corrected, sentence))

    def explanations(self, sentence: str, log_probs: np.ndarray, target: Any, fixed: Collection[int] = ()) -> list[Correction]:
        """Every sentence whose value is ``target`` that the budget's searches reach (the one read, the top-down
        search's, the ``max_candidates`` first of the enumeration), most probable first; empty when none does.
        Their probabilities approximate the likelihood of the result (a marginal over explanations). Arguments
        as :meth:`abduce`'s; its correction, where it finds one, is among them. With ``sample_readings`` the
        explanations are the top-down search's draws alone (the enumeration only where none of those gives ``target``),
        each with its :attr:`Correction.proposal`, one sentence reached by several draws once with their sum. With
        ``chain_sweeps`` they are the sentences a :class:`~neurosym.pipelines.value_chain.ValueChain` visits from the
        weightiest one found, each with the proposal that weighs it by its visits."""
        self.check_target(target)
        log_probs = checked_log_probs(sentence, log_probs, self.index)
        fixed = frozenset(fixed)
        ways: dict[str, _Way] = {}
        tree = self.executor.tree(sentence)
        searched = [way for way in self._top_down(tree, sentence, log_probs, target, fixed) if len(way.edits) <= self.max_changes]
        self._verify(sentence, itertools.chain([_Way(0.0, ())], searched), target, ways)
        if not (self.sample_readings and searched and ways):
            ranked = self._grammatical(sentence, log_probs, self._options(sentence, fixed), self.max_changes)
            self._verify(sentence, (_Way(*item) for item in itertools.islice(ranked, self.max_candidates)), target, ways)
        base = self.score(sentence, log_probs)
        found = [Correction(c, base + way.gain, changed(c, sentence), way.proposal) for c, way in ways.items()]
        if self.chain_sweeps and found:
            found = self._chained(sentence, log_probs, target, fixed, found) or found
        return sorted(found, key=lambda correction: -correction.log_prob)

    def _verify(self, sentence: str, candidates: Iterable[_Way], target: Any, ways: dict[str, _Way]) -> None:
        """Add to ``ways`` (sentence -> way) each of ``candidates`` whose sentence's value is ``target``; with
        ``sample_readings`` the proposals of draws that reach one sentence add up."""
        for way in candidates:
            candidate = _apply(sentence, way.edits)
            if candidate in ways:
                if self.sample_readings:
                    ways[candidate] = ways[candidate]._replace(proposal=-np.logaddexp(-ways[candidate].proposal, -way.proposal))
            elif self.gives(self.executor.value(candidate), target):
                ways[candidate] = way

    def _chained(
        self, sentence: str, log_probs: np.ndarray, target: Any, fixed: frozenset[int], found: list[Correction]
    ) -> list[Correction]:
        """The sentences a :class:`ValueChain` of ``chain_sweeps`` visits from the weightiest of ``found``, each with the
        proposal that weighs it by its visits (empty where the chain cannot move)."""
        start = max(found, key=lambda correction: correction.log_prob - correction.proposal).sentence
        rng = np.random.default_rng(zlib.crc32(log_probs.tobytes()))
        visits = self.chain.visits(start, log_probs, target, self.chain_sweeps, rng, fixed)
        scores = {visited: self.score(visited, log_probs) for visited in visits}
        return [
            Correction(visited, scores[visited], changed(visited, sentence), scores[visited] - float(np.log(count)))
            for visited, count in visits.items()
        ]

    # -- top-down --------------------------------------------------------------------------------

    def _top_down(
        self, tree: Tree | Token | None, sentence: str, log_probs: np.ndarray, target: Any, fixed: frozenset[int]
    ) -> list[_Way]:
        """Candidate ways from ``sentence``'s parse ``tree``, most probable first (unverified)."""
        if not self.semantics.inverses or tree is None:
            return []
        values = self.semantics.node_values(tree)
        if values is None:
            return []
        rng = np.random.default_rng(zlib.crc32(log_probs.tobytes())) if self.sample_readings else None
        found = self._descend(tree, target, _Search(values, sentence, log_probs, fixed, self.max_nodes, rng))
        return sorted((way for way in found if way.edits), key=lambda way: -way.gain)

    def _descend(self, node: Tree | Token, wanted: Any, search: _Search) -> list[_Way]:
        """The ``beam`` most probable (or weighty, where parts were drawn) ways to make ``node``'s value ``wanted``,
        remembered per node and wanted value (and its type) for the rest of the ``search`` (other assumptions about a
        sibling ask for the same again); none once the search has spent its ``max_nodes`` expansions, nor below where
        the tree is deeper than Python's recursion allows (the levels above it keep their ways)."""
        try:
            return _remembered(
                search.memo,
                (id(node), type(wanted), wanted),
                lambda: self._descend_anew(node, wanted, search) if search.expand() else [],
            )
        except RecursionError:
            return []

    def _descend_anew(self, node: Tree | Token, wanted: Any, search: _Search) -> list[_Way]:
        values, sentence, log_probs, fixed = search.values, search.sentence, search.log_probs, search.fixed
        if self.gives(values[id(node)], wanted):
            return [_Way(0.0, ())]
        if isinstance(node, Token):
            position = _position(node)
            if position in fixed:
                return []
            read = log_probs[position, self.index[sentence[position]]]
            options = [
                _Way(float(log_probs[position, column] - read), ((position, s),))
                for s, column in self._symbols_giving(node.type, wanted)
                if np.isfinite(log_probs[position, column])
            ]
            return heapq.nlargest(self.beam, options, key=lambda way: way.gain)
        rule = str(node.data)
        if rule not in self.semantics.inverses:
            if len(node.children) == 1:  # a pass-through rule
                return self._descend(node.children[0], wanted, search)
            return []
        current = tuple(values[id(child)] for child in node.children)
        # Each child as read, or kept at one of its ``readings`` most probable other readings (or only at its draws).
        assumptions: list[tuple[int, _Way, tuple[Any, ...]]] = []
        for which, child in enumerate(node.children):
            if isinstance(child, Token):  # a symbol's other readings are what the descent proposes anyway
                continue
            for way, value in self._readings(child, search):
                assumptions.append((which, way, current[:which] + (value,) + current[which + 1 :]))
        if search.rng is None or not assumptions:
            assumptions.insert(0, (-1, _Way(0.0, ()), current))
        # (the child whose drawn or other reading a way keeps, -1 where it keeps none; the way): one route counts once in
        # an importance-sampled marginal and takes one place in the beam, reached by both preimages (where the assumed
        # values already give ``wanted``: a draw counted twice) or from each draw of a child the inverse then changes
        routes: dict[tuple[int, _Way], None] = {}
        for which, kept, assumed in assumptions:
            for wanted_children in itertools.islice(self.semantics.preimages(rule, wanted, assumed), 4 * self.beam):
                combined, keeps = [kept], which
                for position, (child, value, now) in enumerate(zip(node.children, wanted_children, assumed)):
                    if self.gives(now, value):  # kept (``==`` failed on arrays, and ignored a tolerance)
                        continue
                    if position == which:  # the inverse changed the kept child too: search it from its reading
                        combined = [
                            _Way(w.gain - kept.gain, tuple(e for e in w.edits if e not in kept.edits), w.proposal - kept.proposal)
                            for w in combined
                        ]
                        keeps = -1  # (one way, whichever reading of the child was kept)
                    options = self._descend(child, value, search)
                    joined = [
                        _Way(a.gain + b.gain, a.edits + b.edits, a.proposal + b.proposal)
                        for a, b in itertools.product(combined, options)
                    ]
                    combined = joined if len(joined) <= self.beam else heapq.nlargest(self.beam, joined, key=_weight)
                    if not combined:
                        break
                routes.update(dict.fromkeys((keeps, way) for way in combined))
        return heapq.nlargest(self.beam, (way for _, way in routes), key=_weight)

    def _symbols_giving(self, terminal: str, wanted: Any) -> list[tuple[str, int]]:
        """``(symbol, column)`` of every symbol of ``terminal`` whose value is ``wanted``. The symbols' values are
        remembered per terminal, not the answers per wanted value: searches ask for countless values no symbol has."""
        if terminal not in self._leaf_values:
            symbols = self.grammar.symbols_of(terminal)
            self._leaf_values[terminal] = [(s, self.index[s], self.semantics.leaf_value(terminal, s)) for s in symbols]
        return [(s, column) for s, column, value in self._leaf_values[terminal] if self.gives(value, wanted)]

    def _readings(self, node: Tree, search: _Search) -> list[tuple[_Way, Any]]:
        """The ``readings`` most probable other readings of ``node``'s symbols (each symbol among those of its
        terminal; with ``sample_readings`` the distinct ones among ``readings`` draws, the one read included)
        that have a valid value: ``(way, value)``."""
        if not self.readings:
            return []
        leaves = [leaf for leaf in tree_leaves(node) if leaf.start_pos not in search.fixed]
        if search.rng is not None:
            proposals: Iterable[_Way] = self._drawn(leaves, search, search.rng)
        else:
            options = {
                _position(leaf): [s for s in self.grammar.symbols_of(leaf.type) if s != search.sentence[_position(leaf)]]
                for leaf in leaves
            }
            ranked = self._ranked(search.sentence, search.log_probs, options, len(options))
            proposals = (_Way(*item) for item in itertools.islice(ranked, 4 * self.readings))
        found = []
        for way in proposals:
            value = self.semantics.evaluate(node, dict(way.edits))
            if value is not None:
                found.append((way, value))
                if len(found) == self.readings:
                    break
        return found

    def _drawn(self, leaves: list[Token], search: _Search, rng: np.random.Generator) -> list[_Way]:
        """The distinct readings of ``leaves`` among ``readings`` draws, each symbol drawn from the reader's
        distribution over its terminal's symbols (Gumbel-max over ``[draws, leaves, symbols]``); a reading's
        proposal is its log-probability less the log of how often it was drawn."""
        if not leaves:
            return []
        choices = [self.grammar.symbols_of(leaf.type) for leaf in leaves]
        positions = [_position(leaf) for leaf in leaves]
        scores = np.full((len(leaves), max(map(len, choices))), -np.inf)  # [P, S]
        for row, (position, symbols) in enumerate(zip(positions, choices)):
            scores[row, : len(symbols)] = search.log_probs[position, [self.index[s] for s in symbols]]
        drawn = np.argmax(scores + rng.gumbel(size=(self.readings, *scores.shape)), axis=-1)  # [R, P]
        read = np.array([search.log_probs[position, self.index[search.sentence[position]]] for position in positions])
        # Distinct rows counted in Python: numpy's unique(axis=0) turned a RecursionError near the limit into a TypeError.
        ways = []
        for reading, count in sorted(Counter(map(tuple, drawn.tolist())).items()):
            picked = scores[np.arange(len(leaves)), list(reading)]
            if not np.isfinite(picked).all():  # a leaf none of whose symbols the reader can read
                continue
            edits = tuple(
                (position, choices[k][j])
                for k, (position, j) in enumerate(zip(positions, reading, strict=True))
                if choices[k][j] != search.sentence[position]
            )
            ways.append(_Way(float((picked - read).sum()), edits, float(picked.sum() - np.log(count))))
        return ways

    # -- enumeration -----------------------------------------------------------------------------

    def _enumerate(
        self, sentence: str, log_probs: np.ndarray, target: Any, fixed: frozenset[int], floor: float
    ) -> tuple[float, str] | None:
        """The first sentence, in decreasing probability, that gives ``target`` (gain above ``floor``)."""
        ranked = self._grammatical(sentence, log_probs, self._options(sentence, fixed), self.max_changes)
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
        decreasing probability, over each position's ``alternatives`` most probable symbols
        (:func:`_best_first`: exact also where a symbol is more probable than the one read, as the grammar's
        best sentence need not be each position's best symbol)."""
        return _best_first(self._alternatives(sentence, log_probs, options), max_changes)

    def _grammatical(
        self, sentence: str, log_probs: np.ndarray, options: dict[int, list[str]], max_changes: int
    ) -> Iterator[tuple[float, Edits]]:
        """The grammatical sentences among :meth:`_ranked`'s, in the same decreasing probability, without
        enumerating the others: parsing sees only terminals, so the edits are first ranked by *pattern* (which
        positions change, and to which terminal; a pattern's bound is its positions' best symbols of those
        terminals), and each grammatical pattern's symbols are then enumerated from that bound down, merged with
        the other patterns' while no pattern still to come can beat them; after ``max_patterns`` ungrammatical
        patterns it stops."""
        per_position = []
        for position, symbols in self._alternatives(sentence, log_probs, options):
            by_terminal: dict[str, list[tuple[float, str]]] = {}
            for gain, symbol in symbols:  # already in decreasing gain
                by_terminal.setdefault(self.grammar.terminal_of[symbol], []).append((gain, symbol))
            groups = [(group[0][0], (terminal, tuple(group))) for terminal, group in by_terminal.items()]
            per_position.append((position, sorted(groups, key=lambda item: -item[0])))
        per_position.sort(key=lambda item: -item[1][0][0])
        patterns = self._patterns(sentence, per_position, max_changes)
        pending = next(patterns, None)
        read = self.grammar.terminals(sentence)
        # (-gain, tiebreak, pattern, each position's rank in its group, the last position whose rank is not 0)
        heap: list[tuple[float, int, tuple[tuple[int, tuple[tuple[float, str], ...]], ...], tuple[int, ...], int]] = []
        tiebreak = itertools.count()
        rejected = 0
        while True:
            while pending is not None and (not heap or pending[0] >= -heap[0][0]):
                bound, changes = pending
                terminals = list(read)
                for position, (terminal, _) in changes:
                    terminals[position] = terminal
                if self.grammar.accepts_terminals(tuple(terminals)):
                    pattern = tuple((position, group) for position, (_, group) in changes)
                    heapq.heappush(heap, (-bound, next(tiebreak), pattern, (0,) * len(pattern), 0))
                else:
                    rejected += 1
                    if rejected > self.max_patterns:
                        return
                pending = next(patterns, None)
            if not heap:
                return
            negative, _, pattern, ranks, last = heapq.heappop(heap)
            yield -negative, tuple((p, group[r][1]) for (p, group), r in zip(pattern, ranks))
            for i in range(last, len(ranks)):  # each rank vector's parent lowers its last non-zero rank: no repeats
                if ranks[i] + 1 < len(pattern[i][1]):
                    step = ranks[:i] + (ranks[i] + 1,) + ranks[i + 1 :]
                    gain = sum(group[r][0] for (_, group), r in zip(pattern, step))  # summed in the pattern's order
                    heapq.heappush(heap, (-gain, next(tiebreak), pattern, step, i))

    def _patterns(
        self, sentence: str, per_position: list[tuple[int, list[tuple[float, Any]]]], max_changes: int
    ) -> Iterator[tuple[float, tuple[tuple[int, Any], ...]]]:
        """Terminal patterns of 1..``max_changes`` changes, ``(bound, ((position, (terminal, group)), ...))`` in
        decreasing bound, from ``per_position`` (``(position, [(best gain, (terminal, group)), ...])``): where the
        sentence's terminal sequence has a list of its grammatical patterns (:meth:`_listed_patterns`) only those,
        else every pattern (:func:`_best_first`), the grammar asked of each as the search reaches it."""
        listed = self._listed_patterns(sentence, max_changes)
        if listed is None:
            return _best_first(per_position, max_changes)
        patterns, slots = listed
        width = len(self._terminal_index)
        best = np.full(len(sentence) * width + 1, -np.inf)  # per (position, terminal) slot; the last pads: 0
        best[-1] = 0.0
        items: dict[int, Any] = {}
        for position, choices in per_position:
            for gain, item in choices:
                slot = position * width + self._terminal_index[item[0]]
                best[slot], items[slot] = gain, item
        bounds = best[slots].sum(axis=1)  # [P], summed in each pattern's order
        order = np.flatnonzero(np.isfinite(bounds))
        order = order[np.argsort(-bounds[order], kind="stable")].tolist()
        return ((float(bounds[k]), tuple((p, items[slot]) for (p, _), slot in zip(patterns[k], slots[k]))) for k in order)

    def _listed_patterns(self, sentence: str, max_changes: int) -> tuple[list[tuple[tuple[int, str], ...]], np.ndarray] | None:
        """Every grammatical terminal pattern (``((position, terminal), ...)``, positions ascending; a terminal may be
        the one read: another symbol of it) of 1..``max_changes`` changes to ``sentence``'s terminal sequence, with
        its (position, terminal) slots ``[P, max_changes]`` (padded with the last slot), found once per sequence by
        asking the grammar of each candidate; ``None`` where there are more than :data:`PATTERN_LIST_LIMIT` candidates
        (a long sentence: the search then asks as it goes). Remembered for the :data:`PATTERN_LISTS` sequences used
        last."""
        key = (self.grammar.terminals(sentence), max_changes)
        if key in self._listed:
            self._listed.move_to_end(key)
            return self._listed[key]
        read = list(key[0])
        choices = [sorted({self.grammar.terminal_of[s] for s in symbols}) for symbols in self.grammar.position_symbols(len(read))]
        counts = [1] + [0] * max_changes  # candidate patterns of each size: elementary symmetric sums of the choices
        for terminals in choices:
            for size in range(max_changes, 0, -1):
                counts[size] += counts[size - 1] * len(terminals)
        listed = None
        if sum(counts[1:]) <= PATTERN_LIST_LIMIT:
            width, pad = len(self._terminal_index), len(read) * len(self._terminal_index)
            patterns, slots = [], []
            for size in range(1, max_changes + 1):
                for positions in itertools.combinations(range(len(read)), size):
                    for picked in itertools.product(*(choices[p] for p in positions)):
                        candidate = list(read)
                        for position, terminal in zip(positions, picked):
                            candidate[position] = terminal
                        if self.grammar.accepts_terminals(tuple(candidate)):
                            patterns.append(tuple(zip(positions, picked)))
                            indices = [p * width + self._terminal_index[t] for p, t in zip(positions, picked)]
                            slots.append(indices + [pad] * (max_changes - size))
            listed = (patterns, np.array(slots, dtype=np.int64).reshape(len(slots), max_changes))
        self._listed[key] = listed
        if len(self._listed) > PATTERN_LISTS:
            self._listed.popitem(last=False)
        return listed

    def _alternatives(
        self, sentence: str, log_probs: np.ndarray, options: dict[int, list[str]]
    ) -> list[tuple[int, list[tuple[float, str]]]]:
        """Per position of ``options`` its ``alternatives`` most probable symbols as ``(gain, symbol)`` against the
        symbol read, in decreasing gain (symbols the reader rules out left out), most promising position first."""
        ranked: list[tuple[int, list[tuple[float, str]]]] = []
        for position, symbols in options.items():
            values = log_probs[position, [self.index[s] for s in symbols]]
            gains = (values - log_probs[position, self.index[sentence[position]]]).tolist()
            others = [(gain, s) for gain, s, finite in zip(gains, symbols, np.isfinite(values).tolist()) if finite]
            if others:
                ranked.append((position, heapq.nlargest(self.alternatives, others)))
        ranked.sort(key=lambda item: -item[1][0][0])
        return ranked


def _best_first(ranked: list[tuple[int, list[tuple[float, Any]]]], max_changes: int) -> Iterator[tuple[float, tuple]]:
    """Choices of one item at each of 1..``max_changes`` positions of ``ranked`` (``(position, [(gain, item), ...])``,
    each list in decreasing gain, the lists in decreasing first gain), as ``(summed gain, ((position, item), ...))``
    in decreasing summed gain: a best-first search from the best choice of each size, each step either trading an
    item for the next one at its position or moving a choice at its best item to the next position. No step raises
    the gain, so the order is exact."""

    def gain(changes: tuple[tuple[int, int], ...]) -> float:
        return sum(ranked[j][1][r][0] for j, r in changes)

    starts = [tuple((j, 0) for j in range(size)) for size in range(1, min(max_changes, len(ranked)) + 1)]
    heap = [(-gain(changes), changes) for changes in starts]
    heapq.heapify(heap)
    seen = set(starts)
    while heap:
        negative, changes = heapq.heappop(heap)
        yield -negative, tuple((ranked[j][0], ranked[j][1][r][1]) for j, r in changes)
        for i, (j, r) in enumerate(changes):
            steps = [(j, r + 1)] if r + 1 < len(ranked[j][1]) else []
            if r == 0 and j + 1 < len(ranked) and (i + 1 == len(changes) or changes[i + 1][0] != j + 1):
                steps.append((j + 1, 0))  # the next position, unless an edit is there already
            for step in steps:
                successor = changes[:i] + (step,) + changes[i + 1 :]
                if successor not in seen:
                    seen.add(successor)
                    heapq.heappush(heap, (-gain(successor), successor))


def _remembered(memory: dict, key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, remembered in ``memory`` under ``key`` (not where the key holds an unhashable value)."""
    try:
        hash(key)
    except TypeError:
        return compute()
    if key not in memory:
        memory[key] = compute()
    return memory[key]


def _weight(way: _Way) -> float:
    return way.weight


def _position(token: Token) -> int:
    assert token.start_pos is not None  # the grammar's SymbolLexer places every token
    return token.start_pos


def _apply(sentence: str, edits: Edits) -> str:
    edited = list(sentence)
    for position, symbol in edits:
        edited[position] = symbol
    return "".join(edited)
