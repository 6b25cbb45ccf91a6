"""Program induction: find the meaning of an unknown binary operator from input/output examples.

Programs are expressions over the operands ``i`` and ``j`` in a small typed DSL — rational ``+ - * /``,
``max``, ``min``, ``ceil``, ``floor`` and the constants ``0 1 2`` — whose value must be a non-negative
integer. :func:`induce_operator` enumerates programs bottom-up by size, keeping one program per
distinct vector of outputs on the examples (observational equivalence), all vectorised with numpy,
and returns the smallest program that explains at least ``min_agreement`` of the examples (abduced
examples may be noisy). Candidates found with floating point are re-checked with exact fractions; a value of
:data:`EXAMPLE_LIMIT` or more in magnitude, which float64 may have rounded, is *unknown* (``inf``): it may match any
output, so the program is checked exactly, and it is never pruned as equal to another. With
many examples the enumeration runs on a subset of them; at agreement 1.0, when a candidate explains the
subset but not every example, one example it gets wrong joins the subset and the search runs again.

Sizes count DSL nodes: ``max(i, j)`` has size 3, ``ceil((i + j) / 2)`` size 6 and
``ceil(2 * i * j / (i + j))`` size 10.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from neurosym.semantics.operators import Value
from neurosym.training.checks import int_at_least, is_int, is_real

# A program is a nested tuple: ("i",), ("j",), ("const", c), (op, a) for ceil/floor, (op, a, b) otherwise.
Expr = tuple
BINARY = ("+", "-", "*", "/", "max", "min")
UNARY = ("ceil", "floor")
CONSTANTS = (0, 1, 2)
_COMMUTATIVE = {"+", "*", "max", "min"}
_NEAR_INTEGER = 1e-9
EXAMPLE_LIMIT = 2**53
"""The largest integer an example may hold: the search computes in float64, exact for integers up to ``2**53`` (beyond
it, examples were misread and no program found; beyond float range, the search overflowed). A program's value of this
magnitude or more on an example (``i + j`` of ``2**53 + 1`` is rounded to ``2**53``) is unknown to the search: it is
taken as ``inf``, and ``ceil((i + j) / 2)`` is still found for ``(2**53, 1, 2**52 + 1)``."""
MAX_SEARCH_EXAMPLES = 64
"""The most distinct examples the enumeration of :func:`induce_operator` runs on by default."""
_UNKNOWN = np.inf
"""A value the search does not know exactly (see :data:`EXAMPLE_LIMIT`); NaN is a value that is undefined."""
_MIX = ((np.uint64(30), np.uint64(0xBF58476D1CE4E5B9)), (np.uint64(27), np.uint64(0x94D049BB133111EB)))
Examples = Sequence[tuple[int, int, int]] | np.ndarray | torch.Tensor
"""``(i, j, v)`` triples of non-negative integers: a sequence of them, or an ``[N, 3]`` array or tensor."""


def _size(expr: Expr) -> int:
    return 1 + sum(_size(child) for child in expr[1:] if isinstance(child, tuple))


@dataclass(frozen=True)
class Program:
    """An induced operator: call it as ``program(i, j)`` (``None`` when it divides by zero or goes negative)."""

    expr: Expr

    @property
    def size(self) -> int:
        return _size(self.expr)

    def __call__(self, i: Value, j: Value) -> int | None:
        value = _exact(self.expr, Fraction(i), Fraction(j))
        if value is None or value.denominator != 1 or value < 0:
            return None
        return int(value)

    def __str__(self) -> str:
        return _show(self.expr)


def _show(expr: Expr) -> str:
    head = expr[0]
    if head in ("i", "j"):
        return head
    if head == "const":
        return str(expr[1])
    if head in UNARY or head in ("max", "min"):
        return f"{head}({', '.join(_show(c) for c in expr[1:])})"
    return f"({_show(expr[1])} {head} {_show(expr[2])})"


def _exact(expr: Expr, i: Fraction, j: Fraction) -> Fraction | None:
    head = expr[0]
    if head == "i":
        return i
    if head == "j":
        return j
    if head == "const":
        return Fraction(expr[1])
    args: list[Fraction] = []
    for child in expr[1:]:
        value = _exact(child, i, j)
        if value is None:
            return None
        args.append(value)
    if head == "ceil":
        return Fraction(-(-args[0].numerator // args[0].denominator))
    if head == "floor":
        return Fraction(args[0].numerator // args[0].denominator)
    a, b = args
    if head == "/":
        return None if b == 0 else a / b
    return {"+": a + b, "-": a - b, "*": a * b, "max": max(a, b), "min": min(a, b)}[head]


def _snap(values: np.ndarray, where: np.ndarray | bool = True) -> np.ndarray:
    """Round values within floating-point noise of an integer to that integer, only ``where`` (a mask broadcast to
    ``values``) holds (in place; returns ``values``)."""
    rounded = np.rint(values)
    with np.errstate(invalid="ignore"):  # (inf - inf of an unknown value: NaN, never near an integer)
        np.copyto(values, rounded, where=(np.abs(values - rounded) < _NEAR_INTEGER) & where)
    return values


def _exact_integers(values: np.ndarray) -> np.ndarray:
    """Which ``values`` are integers that float64 holds exactly (up to :data:`EXAMPLE_LIMIT` in magnitude)."""
    return (values == np.rint(values)) & (np.abs(values) <= EXAMPLE_LIMIT)


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a [Na, 1, E] / b [1, Nb, E]`` -> ``[Na, Nb, E]`` (NaN where ``b`` is 0).

    The quotient of two integers up to :data:`EXAMPLE_LIMIT` is correctly rounded: exact when it is an integer, and
    never rounded onto one when it is not, so it is not snapped (``(10**10 + 1) / 10**10`` was snapped to 1, and
    ``ceil(i / j)`` missed examples with divisors beyond 10^9). Quotients of other values are."""
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = np.where(b == 0, np.nan, a / np.where(b == 0, 1.0, b))
    return _snap(quotient, where=~(_exact_integers(a) & _exact_integers(b)))


def _reach(op: str, left: _Bank, right: _Bank) -> float:
    """A bound on the magnitude of ``x op y`` in float64 for ``x`` a value of ``left`` and ``y`` one of ``right``
    (rounding is monotone: the bound computed from the banks' largest and least magnitudes bounds each result)."""
    if op in ("+", "-"):
        return left.magnitude + right.magnitude
    if op == "*":
        return left.magnitude * right.magnitude
    if op == "/":
        return left.magnitude / right.least if right.least > 0 else np.inf
    return max(left.magnitude, right.magnitude)


def _mark_unknown(out: np.ndarray, a: np.ndarray, b: np.ndarray, divides: bool) -> bool:
    """Make ``out``, the results of an operator on ``a`` and ``b`` (broadcast to ``out [Na, Nb, E]``), unknown (``inf``)
    where their magnitude is :data:`EXAMPLE_LIMIT` or more (float64 may have rounded them: ``2**53 + 1`` is ``2**53``)
    or an operand is unknown and none undefined (IEEE arithmetic gave ``inf - inf`` NaN, ``1 / inf`` 0); a division by
    zero stays undefined. In place; whether ``out`` holds an unknown value."""
    with np.errstate(invalid="ignore"):
        np.copyto(out, _UNKNOWN, where=np.abs(out) >= EXAMPLE_LIMIT)
    unknown_a, unknown_b = np.isinf(a), np.isinf(b)
    if unknown_a.any() or unknown_b.any():
        defined = ~(np.isnan(a) | np.isnan(b) | (b == 0)) if divides else ~(np.isnan(a) | np.isnan(b))
        np.copyto(out, _UNKNOWN, where=(unknown_a | unknown_b) & defined)
    return bool(np.isinf(out).any())


def _apply_binary(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a [Na, 1, E]`` op ``b [1, Nb, E]`` -> ``[Na, Nb, E]`` in float64 (NaN where undefined)."""
    if op == "/":
        return _divide(a, b)
    with np.errstate(invalid="ignore"):
        if op == "+":
            out = a + b
        elif op == "-":
            out = a - b
        elif op == "*":
            out = a * b
        elif op == "max":
            out = np.maximum(a, b)
        else:
            out = np.minimum(a, b)
    return _snap(out)


Build = Callable[[np.ndarray], list[Expr]]
"""The programs of some rows of a chunk of candidates, built only for the rows asked for: ``indices [n]`` ->
``n`` programs (most candidates are pruned, so most are never built)."""


@dataclass
class _Bank:
    """Programs of one size with their output vectors ``values [N, E]``, and the largest magnitude among those values
    (``inf`` where one is unknown; 0 for none) and the least but 0 (``inf`` for none; NaN, undefined, is neither)."""

    values: np.ndarray
    exprs: list[Expr]

    @functools.cached_property
    def magnitude(self) -> float:
        """(Computed when first asked for, from the largest and smallest value: no pass over ``|values|``.)"""
        top = float(np.fmax.reduce(self.values, axis=None, initial=-np.inf))  # (fmax and fmin pass over NaN)
        bottom = float(np.fmin.reduce(self.values, axis=None, initial=np.inf))
        return max(abs(top), abs(bottom)) if top >= bottom else 0.0

    @functools.cached_property
    def least(self) -> float:
        """(Computed when first asked for: only a division's reach needs it.)"""
        magnitudes = np.abs(self.values)
        return float(np.fmin.reduce(np.where(magnitudes == 0, np.inf, magnitudes), axis=None, initial=np.inf))


class _Enumerator:
    """Bottom-up enumeration by size with observational-equivalence pruning.

    Output vectors are compared by a 64-bit hash of their bytes (each value's bits mixed by a bijection, then a
    random linear map modulo 2^64; NaN read as +inf): two different vectors share a hash with probability about
    2^-64, so a program is wrongly pruned with probability below 10^-7 over a whole search of millions of programs.
    (Unmixed, the trailing zero bits of small integers as floats left about 17 bits for vectors of integers below 50.)
    A vector holding an unknown value (``inf``, :data:`EXAMPLE_LIMIT`) is never pruned, nor prunes another: programs
    equal on the search's floats may differ there."""

    def __init__(self, inputs_i: np.ndarray, inputs_j: np.ndarray, chunk: int = 200_000):
        self.examples = len(inputs_i)
        self.banks: dict[int, _Bank] = {}
        self.seen = np.zeros(0, dtype=np.uint64)  # sorted hashes of the output vectors kept so far
        self.chunk = chunk
        self.partial: set[int] = set()  # the sizes whose banks hold only some of their candidates
        self.unknown = False  # whether a value unknown to the search (inf) has come up: every chunk is then checked for one
        self.multipliers = np.random.default_rng(0).integers(1, 2**63, size=self.examples, dtype=np.uint64) * np.uint64(
            2
        ) + np.uint64(1)
        leaves = [("i",), ("j",)] + [("const", c) for c in CONSTANTS]
        values = np.stack([inputs_i, inputs_j] + [np.full(self.examples, float(c)) for c in CONSTANTS])
        self.banks[1] = self._dedupe(values, lambda rows: [leaves[k] for k in rows])

    def _hashes(self, values: np.ndarray) -> np.ndarray:
        """``values [N, E]`` -> ``[N]`` uint64 hashes of the rows' bytes (NaN read as +inf: only vectors holding an
        unknown value, which are never pruned, hold it)."""
        bits = np.nan_to_num(values, nan=np.inf).view(np.uint64)
        for shift, factor in _MIX:  # splitmix64's finaliser: every input bit reaches the low bits the map multiplies
            bits = (bits ^ (bits >> shift)) * factor
        return ((bits ^ (bits >> np.uint64(31))) * self.multipliers).sum(axis=1, dtype=np.uint64)

    def _dedupe(self, values: np.ndarray, build: Build) -> _Bank:
        """The rows of ``values`` whose output vector is new (first occurrence, not seen at a smaller size, not
        undefined everywhere) or holds an unknown value, in their order, with their programs."""
        hashes = self._hashes(values)
        _, first = np.unique(hashes, return_index=True)
        first.sort()
        unknown = np.isinf(values).any(axis=1) if self.unknown else None  # (None: no value is unknown so far)
        if unknown is not None:
            first = first[~unknown[first]]
        first = first[~np.isnan(values[first]).all(axis=1)]
        if len(self.seen):
            place = np.minimum(np.searchsorted(self.seen, hashes[first]), len(self.seen) - 1)
            first = first[self.seen[place] != hashes[first]]
        self.seen = np.union1d(self.seen, hashes[first])
        kept = first if unknown is None else np.union1d(first, np.flatnonzero(unknown))
        return _Bank(values[kept].reshape(-1, self.examples), build(kept))

    def candidates(self, size: int) -> Iterator[tuple[np.ndarray, Build]]:
        """Every program of ``size`` as chunks of ``(values [N, E], build)``; not yet deduplicated."""
        yield from self._rounded(size)
        for left_size in range(1, size - 1):
            right_size = size - 1 - left_size
            left, right = self.banks.get(left_size), self.banks.get(right_size)
            if left is None or right is None or not len(left.exprs) or not len(right.exprs):
                continue
            width = len(right.exprs)
            step = max(1, self.chunk // max(1, width))
            for start in range(0, len(left.exprs), step):
                block = left.values[start : start + step]
                for op in BINARY:
                    if op in _COMMUTATIVE and left_size > right_size:
                        continue
                    values = _apply_binary(op, block[:, None, :], right.values[None, :, :])
                    if _reach(op, left, right) >= EXAMPLE_LIMIT:
                        self.unknown |= _mark_unknown(values, block[:, None, :], right.values[None, :, :], op == "/")

                    def build(
                        rows: np.ndarray,
                        op: str = op,
                        start: int = start,
                        lefts: list[Expr] = left.exprs,
                        rights: list[Expr] = right.exprs,
                        width: int = width,
                    ) -> list[Expr]:
                        return [(op, lefts[start + k // width], rights[k % width]) for k in rows.tolist()]

                    yield values.reshape(-1, self.examples), build

    def _rounded(self, size: int) -> Iterator[tuple[np.ndarray, Build]]:
        """``ceil`` and ``floor`` of every program of ``size - 1`` as chunks of ``(values [N, E], build)``: of that size's
        bank, or of its candidates enumerated again where :meth:`grow` kept only some of them."""
        inner = self.banks.get(size - 1)
        if size - 1 in self.partial:
            sources: Iterable[tuple[np.ndarray, Build]] = self.candidates(size - 1)
        elif inner is not None and len(inner.exprs):
            sources = [(inner.values, lambda rows: [inner.exprs[k] for k in rows])]
        else:
            sources = []
        for values, build in sources:
            for op in UNARY:

                def build_rounded(rows: np.ndarray, op: str = op, build: Build = build) -> list[Expr]:
                    return [(op, expr) for expr in build(rows)]

                yield (np.ceil(values) if op == "ceil" else np.floor(values)), build_rounded

    def grow(self, size: int, chunks: list[tuple[np.ndarray, Build]], partial: bool = False) -> None:
        """Keep the programs of ``chunks`` (of ``size``) whose outputs are new as that size's bank; ``partial``: the
        chunks hold only some of the candidates of ``size``."""
        if partial:
            self.partial.add(size)
        if chunks:
            values = np.concatenate([c[0] for c in chunks])
            offsets = np.cumsum([0] + [len(c[0]) for c in chunks])

            def build(rows: np.ndarray) -> list[Expr]:  # rows ascending: each chunk's rows are one run, in order
                part = np.searchsorted(offsets, rows, side="right") - 1
                return [expr for p in np.unique(part).tolist() for expr in chunks[p][1](rows[part == p] - offsets[p])]

            self.banks[size] = self._dedupe(values, build)


def induce_operator(
    examples: Examples,
    max_size: int = 10,
    min_agreement: float = 1.0,
    max_bank: int = 400_000,
    max_search_examples: int = MAX_SEARCH_EXAMPLES,
) -> Program | None:
    """The smallest DSL program ``p`` with ``p(i, j) == v`` on at least ``min_agreement`` of ``examples``.

    Args:
        examples: ``(i, j, v)`` triples of non-negative integers up to :data:`EXAMPLE_LIMIT` (a sequence, or an
            ``[N, 3]`` array or tensor).
        max_size: largest program size (nodes) to try.
        min_agreement: fraction of examples the program must explain (1.0: all).
        max_bank: stop growing the program banks beyond this many programs per size (memory bound). Up to one node
            more than the first bank cut short every program is still tried (``ceil`` and ``floor`` of all programs of
            its size are enumerated again); beyond, those built from programs left out are not, and a ``UserWarning``
            says when that may change the result: ``None``, or a program more than two nodes larger than that bank's.
        max_search_examples: the enumeration runs on at most this many distinct examples (a fixed
            random subset); every candidate is then checked exactly on all ``examples``. At
            ``min_agreement`` 1.0 a candidate that explains the subset but not every example adds an
            example it gets wrong to the subset, and the search runs again, until no such candidate
            comes before the program returned: so it is the smallest that explains every example (a
            program pruned as equal to another on the subset alone is not missed). Below 1.0 the
            agreement is read on the subset, so a program that explains enough of all examples but too
            little of the subset can be missed.

    Returns:
        The program, or ``None`` when no program up to ``max_size`` explains enough examples (of those tried: see
        ``max_bank``).
    """
    return induce_operators(examples, max_size, (min_agreement,), max_bank, max_search_examples)[0]


def induce_operators(
    examples: Examples,
    max_size: int = 10,
    agreements: Sequence[float] = (1.0,),
    max_bank: int = 400_000,
    max_search_examples: int = MAX_SEARCH_EXAMPLES,
) -> list[Program | None]:
    """:func:`induce_operator` at each of ``agreements`` (the same programs), from one enumeration: it runs until the
    strictest agreement is met or ``max_size`` is passed, where one call per agreement enumerates again each time (an
    agreement of 1.0 that meets a counterexample enumerates again, on its own, with the counterexamples)."""
    triples, counts = _distinct_examples(examples)
    max_size = int_at_least(max_size, "max_size", 1)  # (0 gave None, 2.5 failed in range())
    max_bank = int_at_least(max_bank, "max_bank", 1)
    max_search_examples = int_at_least(max_search_examples, "max_search_examples", 1)
    if not agreements or not all(is_real(agreement) and 0.0 < agreement <= 1.0 for agreement in agreements):
        raise ValueError(f"min_agreement must be in (0, 1], got {list(agreements)}")
    subset = _searched_subset(len(triples), max_search_examples)
    found, counterexamples = _search(triples, counts, subset, list(agreements), max_size, max_bank)
    exact = [level for level, agreement in enumerate(agreements) if agreement == 1.0]
    while counterexamples:  # each round adds examples outside the subset: at most one round per distinct example
        subset = np.union1d(subset, counterexamples)
        (program,), counterexamples = _search(triples, counts, subset, [1.0], max_size, max_bank)
        for level in exact:
            found[level] = program
    return found


def _searched_subset(distinct: int, max_search_examples: int) -> np.ndarray:
    """The indices ``[S]`` of the ``distinct`` examples the enumeration runs on: all of them, or a fixed random sorted
    subset of ``max_search_examples`` of them."""
    if distinct <= max_search_examples:
        return np.arange(distinct)
    return np.sort(np.random.default_rng(0).choice(distinct, max_search_examples, replace=False))


def _required_counts(agreement: float, searched: int, total: int) -> tuple[int, int]:
    """How many examples a program must explain at ``agreement``: of the ``searched`` examples of the subset the
    enumeration runs on (counted as often as they occur), all of them at 1.0, else the share rounded down (a share of
    a subset may be wrong by chance); of all ``total`` examples, the share rounded up (within float noise)."""
    needed = searched if agreement == 1.0 else math.floor(agreement * searched)
    return needed, math.ceil(agreement * total - 1e-9)


def _distinct_examples(examples: Examples) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """The distinct triples of ``examples`` in sorted order, as Python ints, and how often each occurs ``[D]``;
    ``ValueError`` naming the first example that is no triple of non-negative integers up to :data:`EXAMPLE_LIMIT`."""
    listed = examples.tolist() if isinstance(examples, np.ndarray | torch.Tensor) else list(examples)
    if not listed:
        raise ValueError("induce_operator needs at least one (i, j, value) example")
    occurrences: Counter[tuple[int, int, int]] = Counter()
    for index, example in enumerate(listed):
        triple = tuple(example) if isinstance(example, Iterable) and not isinstance(example, str) else (example,)
        if len(triple) != 3 or not all(is_int(value) and value >= 0 for value in triple):  # 1.5 was truncated, NaN taken
            raise ValueError(f"examples must be (i, j, value) triples of non-negative integers, got {example!r} at {index}")
        if max(triple) > EXAMPLE_LIMIT:
            raise ValueError(
                f"example {index} {example!r} holds an integer beyond 2**53, the largest the search (in float64) holds exactly"
            )
        occurrences[(int(triple[0]), int(triple[1]), int(triple[2]))] += 1
    distinct = sorted(occurrences)
    return distinct, np.array([occurrences[triple] for triple in distinct], dtype=np.int64)


def _search(
    triples: list[tuple[int, int, int]],
    counts: np.ndarray,
    subset: np.ndarray,
    agreements: list[float],
    max_size: int,
    max_bank: int,
) -> tuple[list[Program | None], list[int]]:
    """One enumeration on the distinct examples ``triples[subset]`` for each of ``agreements``; candidates that explain
    enough of the subset are checked exactly on all triples (``counts`` times each).

    Returns the programs and counterexamples: when an agreement of 1.0 has no program at a size where candidates
    explained the subset but not every example, pruning on the subset may have hidden one that does; that agreement
    stops there (``None``) and each such candidate names one triple outside ``subset`` that it gets wrong.
    """
    inputs, weights = np.array([triples[k] for k in subset], dtype=np.float64), counts[subset]
    target = inputs[:, 2]
    # Distinct examples count as often as they occur: noise is mostly distinct, right examples repeat, so an
    # unweighted share of distinct examples would understate the agreement. On the searched subset a share
    # may be wrong by chance: round the threshold down there.
    required = [_required_counts(agreement, int(weights.sum()), int(counts.sum())) for agreement in agreements]
    needed, needed_all = [n for n, _ in required], [n for _, n in required]
    outside = np.ones(len(triples), dtype=bool)
    outside[subset] = False
    found: list[Program | None] = [None] * len(agreements)
    counterexamples: list[int] = []
    open_levels = list(range(len(agreements)))  # the agreements still without a program
    cut: int | None = None  # the first size whose bank max_bank cut short
    enumerator = _Enumerator(inputs[:, 0], inputs[:, 1])
    leaves = enumerator.banks[1]
    for size in range(1, max_size + 1):
        chunks = [(leaves.values, lambda rows: [leaves.exprs[k] for k in rows])] if size == 1 else enumerator.candidates(size)
        kept: list[tuple[np.ndarray, Build]] = []
        partial = False  # whether max_bank left candidates of this size out of its bank
        best: dict[int, tuple[int, Program]] = {}  # per open agreement, this size's best program
        missed: set[int] = set()  # triples outside the subset that candidates explaining all of it get wrong
        for values, build in chunks:
            matches = values == target[None, :]
            if enumerator.unknown:  # an unknown value may match
                matches |= np.isinf(values)
            hits = matches.astype(np.int64) @ weights
            scored: dict[int, tuple[int, Program, np.ndarray]] = {}  # exact checks of this chunk's candidates
            for level in open_levels:
                enough = np.flatnonzero(hits >= needed[level])
                for index in enough[np.argsort(-hits[enough], kind="stable")].tolist():
                    if index not in scored:
                        program = Program(build(np.array([index]))[0])
                        right = np.array([program(i, j) == v for i, j, v in triples])
                        scored[index] = (int(counts[right].sum()), program, right)
                    score, program, right = scored[index]
                    if score >= needed_all[level]:  # the first in order of hits: the best of this chunk
                        if level not in best or score > best[level][0]:
                            best[level] = (score, program)
                        break
                    if agreements[level] == 1.0:
                        missed.update(np.flatnonzero(~right & outside)[:1].tolist())
            if size > 1 and size < max_size:
                if sum(len(k[0]) for k in kept) < max_bank:
                    kept.append((values, build))
                else:
                    partial = True
        for level, (_, program) in best.items():
            found[level] = program
        open_levels = [level for level in open_levels if level not in best]
        if missed and any(agreements[level] == 1.0 for level in open_levels):
            counterexamples = sorted(missed)
            open_levels = [level for level in open_levels if agreements[level] != 1.0]
        if not open_levels:
            break
        if size > 1:
            enumerator.grow(size, kept, partial)
            cut = size if cut is None and partial else cut
    deferred = {level for level, agreement in enumerate(agreements) if counterexamples and agreement == 1.0}
    _warn_of_cut(cut, [program for level, program in enumerate(found) if level not in deferred], max_size, max_bank)
    return found, counterexamples


def _warn_of_cut(cut: int | None, programs: list[Program | None], max_size: int, max_bank: int) -> None:
    """Warn when the bank of size ``cut`` was cut short at ``max_bank`` candidates and one of ``programs`` may be wrong
    for it. Up to size ``cut + 1`` every program was tried (``ceil`` and ``floor`` of the programs of a cut bank are
    enumerated again); from ``cut + 2`` on, those built from programs left out were not, so a program there may have
    been missed: one of ``programs`` is ``None`` where ``max_size`` reaches ``cut + 2``, or larger than ``cut + 2``."""
    if cut is None:
        return
    missed_from = cut + 2
    if any(max_size >= missed_from if program is None else program.size > missed_from for program in programs):
        warnings.warn(
            f"the program bank of size {cut} was cut short at max_bank={max_bank} candidates: programs of size {missed_from} "
            "and larger built from those left out were not tried, so a smaller program than the one found, or one where "
            "none was found, may explain the examples",
            stacklevel=4,
        )


def induce_noisy_operator(
    examples: Sequence[tuple[int, int, int]], max_size: int, highest: float, lowest: float, step: float = 0.05
) -> Program | None:
    """:func:`induce_operator` on noisy ``examples``: the smallest program explaining ``highest`` of them;
    failing that, the agreement is lowered by ``step`` at a time down to ``lowest``, and the first program
    found wins. So the program kept explains within ``step`` of the most any program explains: a small
    program that explains a little more than ``lowest`` (the constant ``0`` explains more than half of
    ``max(0, i - j)`` on digits) cannot win over the right one read through noise. ``None``: nothing
    explains ``lowest``.

    Of agreements that require the same numbers of examples explained only the first is searched
    (:func:`_agreement_levels`; the program found is the same): at most ``2 * len(examples) + 3`` of them, however
    fine ``step`` is (a ``step`` of 1e-12 built 10^12 agreements and ran out of memory). ``ValueError`` when
    ``highest``, ``lowest`` or ``step`` is no number, when not ``0 < lowest <= highest <= 1`` and ``step > 0``, or
    when ``(highest - lowest) / step`` overflows a float."""
    for name, value in (("highest", highest), ("lowest", lowest), ("step", step)):
        if not is_real(value):  # (a str or bool failed comparing with "'<=' not supported")
            raise ValueError(f"{name} must be a real number, got {value!r}")
    if not (0.0 < lowest <= highest <= 1.0 and step > 0):  # (a NaN step failed in numpy)
        raise ValueError(f"need 0 < lowest <= highest <= 1 and step > 0, got {lowest}, {highest}, {step}")
    triples, counts = _distinct_examples(examples)
    searched = int(counts[_searched_subset(len(triples), MAX_SEARCH_EXAMPLES)].sum())
    total = int(counts.sum())
    agreements = _agreement_levels(
        highest, lowest, step, lambda agreement: (agreement == 1.0, *_required_counts(agreement, searched, total))
    )
    return next((program for program in induce_operators(examples, max_size, agreements) if program is not None), None)


def _agreement_levels(highest: float, lowest: float, step: float, requires: Callable[[float], Hashable]) -> list[float]:
    """The agreements ``highest``, then ``highest - k * step`` for ``k`` from 1 to ``floor((highest - lowest) / step
    + 1e-9)``, then ``lowest``, each kept only when it is the first to require what it ``requires`` (``[L]``, in that
    order). :func:`_search` reads an agreement only as whether it is 1.0 and as the counts of :func:`_required_counts`
    (on a subset fixed by the examples alone), each agreement on its own: two agreements that require the same get the
    same program, so the first program found over all agreements is the first found over these.

    What an agreement requires never grows as ``k`` grows (``highest - k * step`` in floats does not grow with ``k``,
    and the counts are rounded products that do not grow as the agreement is lowered): so the ``k`` that require alike
    are runs, whose ends are found by bisection, and no list of ``(highest - lowest) / step`` agreements is built.
    ``ValueError`` when that quotient overflows a float (a ``step`` of about 1e-308 or less).
    """
    quotient = (highest - lowest) / step
    if math.isinf(quotient):
        raise ValueError(
            f"step {step} is too small for the agreements from {highest} to {lowest}: (highest - lowest) / step overflows"
        )
    count = math.floor(quotient + 1e-9)

    def agreement(k: int) -> float:
        if k == 0:  # (not highest - 0 * inf, NaN, for an infinite step)
            return highest
        return max(lowest, highest - k * step)  # (0.03 - 2 * 0.01 is 0.009999999999999998, below a lowest of 0.01)

    levels: list[float] = []
    seen: set[Hashable] = set()
    k = 0
    while k <= count:
        required = requires(agreement(k))  # (new: what is required only lessens with k)
        levels.append(agreement(k))
        seen.add(required)
        low, high = k + 1, count + 1  # the first k after this one that requires otherwise
        while low < high:
            middle = (low + high) // 2
            low, high = (middle + 1, high) if requires(agreement(middle)) == required else (low, middle)
        k = low
    return levels if requires(lowest) in seen else [*levels, lowest]
