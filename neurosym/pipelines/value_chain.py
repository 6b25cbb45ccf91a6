"""Explanations drawn from the posterior over sentences with a known result, by Gibbs sampling moves that keep the
result: one symbol of a part changes, and the other parts are solved again through the rule's inverse.

Where a result is one value of many symbols (a sum of two 100-digit numbers), the sentences that give it are
countless and any handful found by a search carries one of them almost all the weight: a marginal over them is a
hard label in disguise, noise wherever the result leaves the symbols open. A chain of such moves instead visits the
sentences as often as the reader and the result make them probable together, so the explanations it keeps teach
each position what the result says of it, and little where it says nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
from lark import Token, Tree

from neurosym.pipelines.abduction import checked_log_probs
from neurosym.semantics.tree_semantics import Executor, TreeSemantics, leaves


class ValueChain:
    """Gibbs sampling over the sentences of one shape whose value is a target.

    The moves act at the topmost rule with an inverse (reached from the root through single-child rules that pass
    their child's value up): its children are the parts. A sweep visits each leaf of one part, the parts in turn; at
    a leaf, every symbol of its terminal that the reader allows is tried, the part's new value kept and the other
    children solved for through the inverse (the first solution it offers that renders as symbols without changing a
    fixed position, down through the children's own inverses; a symbol with several that give a value takes the
    first); the symbol is then drawn in proportion to the probability of the whole sentence it gives (never one the
    reader rules out). Each sweep's sentence is one sample. Where every value has one rendering (numbers of fixed
    length), these are exact Gibbs steps on the moving part's symbols.

    Args:
        executor: the grammar and semantics (with inverses at the rule and at the parts solved for).
        index: column of each symbol in the log-probabilities.
        gives: when a value counts as a wanted one (``gives(value, wanted)``: every comparison of values goes through
            it, those of a rule's children too).
        symbols_giving: ``(terminal, value) -> [(symbol, column), ...]``, the symbols of a terminal with a value.
    """

    def __init__(
        self,
        executor: Executor,
        index: dict[str, int],
        gives: Callable[[Any, Any], bool],
        symbols_giving: Callable[[str, Any], list[tuple[str, int]]],
    ):
        self.executor, self.grammar, self.semantics = executor, executor.grammar, executor.semantics
        self.index, self.gives, self.symbols_giving = index, gives, symbols_giving

    def visits(
        self,
        start: str,
        log_probs: np.ndarray,
        target: Any,
        sweeps: int,
        rng: np.random.Generator,
        fixed: Collection[int] = (),
    ) -> Counter[str]:
        """The sentences after each of ``sweeps`` sweeps from ``start`` (a sentence whose value is ``target``) under
        per-window ``log_probs [n, V]``, with how often the chain was at each; empty where the start's shape has no
        rule with an inverse to move at (or where its parts are too deep to solve for within Python's recursion limit:
        the sweeps done by then). Positions in ``fixed`` never change.

        Raises:
            ValueError: ``start`` does not give ``target`` (its value is another, or ``None``: ungrammatical or
                invalid), or ``log_probs`` is not ``[len(start), len(index)]`` or holds NaN or ``+inf``.
        """
        self._check_start(start, target)
        log_probs = checked_log_probs(start, log_probs, self.index)
        tree = self.executor.tree(start)
        fixed = frozenset(fixed)
        moves = None if tree is None else _moves(tree, self.semantics, fixed)
        if moves is None:
            return Counter()
        node, parts = moves
        programs: dict[int, Callable[[str], Any]] = {}
        symbols = list(start)
        visits: Counter[str] = Counter()
        for sweep in range(sweeps):
            which, movable = parts[sweep % len(parts)]
            for leaf in movable:
                values = self._values(node.children, "".join(symbols), programs)
                options: list[tuple[list[str], float]] = []
                for symbol in self.grammar.symbols_of(leaf.type):
                    if not np.isfinite(log_probs[leaf.start_pos, self.index[symbol]]):
                        continue
                    trial = symbols.copy()
                    trial[leaf.start_pos] = symbol
                    try:
                        moved = self._solved(node, target, which, values, trial, programs, fixed)
                    except RecursionError:  # parts deeper than Python's recursion allows to solve for: no move
                        return visits
                    if moved is not None:
                        options.append((moved, self._gain(symbols, moved, log_probs)))
                symbols = self._drawn(options, target, rng) or symbols
            visits["".join(symbols)] += 1
        return visits

    def _check_start(self, start: str, target: Any) -> None:
        """Refuse a ``start`` that does not give ``target``: the chain moves only between sentences that do (a start
        that did not was counted as a visit wherever no move was found)."""
        value = self.executor.value(start)
        if not self.gives(value, target):
            raise ValueError(
                f"the chain's start {start!r:.60} gives {value!r:.40}, not the target {target!r:.40} (a start must be a "
                "sentence whose value is the target; None: ungrammatical or invalid)"
            )

    def _drawn(self, options: list[tuple[list[str], float]], target: Any, rng: np.random.Generator) -> list[str] | None:
        """One of ``options`` (``(symbols, gain)``) drawn in proportion to ``exp(gain)`` among those that give ``target``
        (each checked when drawn: an inverse may offer a solution that is invalid, e.g. ``0/0``); those whose gain is
        not finite (a symbol the reader rules out) are never drawn, and ``None`` where none is left."""
        options = [(symbols, gain) for symbols, gain in options if np.isfinite(gain)]
        while options:
            gains = np.array([gain for _, gain in options])
            weights = np.exp(gains - gains.max())
            pick = rng.choice(len(options), p=weights / weights.sum())
            if self.gives(self.executor.value("".join(options[pick][0])), target):
                return options[pick][0]
            del options[pick]
        return None

    def _solved(
        self, node: Tree, target: Any, which: int, values: tuple, trial: list[str], programs: dict, fixed: frozenset[int]
    ) -> list[str] | None:
        """``trial`` (a leaf of child ``which`` of ``node`` changed) with the other children solved through the rule's
        inverse so that ``node`` gives ``target``, or ``None`` where no solution renders as symbols without changing a
        position in ``fixed``."""
        value = self._value(node.children[which], "".join(trial), programs)
        if value is None:
            return None
        assumed = values[:which] + (value,) + values[which + 1 :]
        for wanted in self.semantics.preimages(str(node.data), target, assumed):
            if not self.gives(value, wanted[which]):
                continue
            rendered = trial.copy()
            if all(
                self._render(child, want, now, rendered, programs, fixed)
                for k, (child, want, now) in enumerate(zip(node.children, wanted, assumed))
                if k != which  # (a child that already gives its wanted value is rendered as it is)
            ):
                return rendered
        return None

    def _render(
        self, node: Tree | Token, wanted: Any, now: Any, symbols: list[str], programs: dict, fixed: frozenset[int]
    ) -> bool:
        """Write into ``symbols`` a reading of ``node`` (value ``now``) whose value is ``wanted``, never at a position in
        ``fixed``; ``False`` where none is found (``symbols`` may then be partly written)."""
        if self.gives(now, wanted):
            return True
        if isinstance(node, Token):
            assert node.start_pos is not None  # the grammar's SymbolLexer places every token
            options = self.symbols_giving(node.type, wanted)
            if not options or node.start_pos in fixed:
                return False
            symbols[node.start_pos] = options[0][0]
            return True
        rule = str(node.data)
        if rule not in self.semantics.inverses:
            return _passes(node, self.semantics) and self._render(node.children[0], wanted, now, symbols, programs, fixed)
        current = self._values(node.children, "".join(symbols), programs)
        for children in self.semantics.preimages(rule, wanted, current):
            attempt = symbols.copy()
            if all(self._render(c, w, n, attempt, programs, fixed) for c, w, n in zip(node.children, children, current)):
                symbols[:] = attempt
                return True
        return False

    def _values(self, children: Sequence[Tree | Token], sentence: str, programs: dict) -> tuple:
        return tuple(self._value(child, sentence, programs) for child in children)

    def _value(self, node: Tree | Token, sentence: str, programs: dict) -> Any:
        """``node``'s value in ``sentence`` (its subtree compiled once per chain)."""
        if isinstance(node, Token):
            assert node.start_pos is not None  # the grammar's SymbolLexer places every token
            return self.semantics.leaf_value(node.type, sentence[node.start_pos], node.start_pos)
        if id(node) not in programs:
            programs[id(node)] = self.semantics.compile(node)
        return programs[id(node)](sentence)

    def _gain(self, symbols: list[str], moved: list[str], log_probs: np.ndarray) -> float:
        changed = [p for p, (a, b) in enumerate(zip(symbols, moved)) if a != b]
        return float(sum(log_probs[p, self.index[moved[p]]] - log_probs[p, self.index[symbols[p]]] for p in changed))


def _moves(tree: Tree | Token, semantics: TreeSemantics, fixed: frozenset[int]) -> tuple[Tree, list] | None:
    """The topmost rule with an inverse (below single-child rules that pass their child's value up) and its parts:
    ``(which child, its leaves that may change)`` for each child with any (a symbol child is its own leaf); ``None``
    for a lone symbol (a sentence the grammar reduces to one token has no rule to move at)."""
    node: Tree | Token = tree
    inverses = semantics.inverses
    while isinstance(node, Tree) and str(node.data) not in inverses and _passes(node, semantics):
        node = node.children[0]
    if not isinstance(node, Tree) or str(node.data) not in inverses:
        return None
    parts = []
    for which, child in enumerate(node.children):
        movable = [leaf for leaf in leaves(child) if leaf.start_pos not in fixed]
        if movable:
            parts.append((which, movable))
    return (node, parts) if parts else None


def _passes(node: Tree, semantics: TreeSemantics) -> bool:
    """Whether ``node`` passes its one child's value up unchanged."""
    return len(node.children) == 1 and semantics.callable_of(str(node.data)) is None
