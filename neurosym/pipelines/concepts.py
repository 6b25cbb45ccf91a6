"""Learning semantics from results: a new number's value, an operator's meaning and its precedence.

* :func:`learn_number` abduces the value of a new number symbol: the value under which the most
  training sentences evaluate to their results.
* :func:`learn_operator` induces an operator's meaning. For each precedence level (with ``+ -`` or
  with ``* /``) it parses the sentences that use the operator once, pushes each result down the tree
  to the operator's node through the known operators' set-valued inverses (the abduction machinery),
  reads off ``(left operand, right operand) -> value`` examples, induces the smallest DSL program
  (:func:`neurosym.semantics.induction.induce_operator`) and keeps the level whose grammar extension
  explains more training sentences.
* :func:`learn_concept` dispatches on the concept's role (``"number"`` or ``"operator"``), and
  :func:`placeholder_table` gives a concept its role before its meaning is known.
* :func:`induced_table` gives the four built-in operators meanings induced from one-operator
  sentences (the syntax, and so the precedence of built-ins, is the grammar's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neurosym.pipelines.abduction import Abducer
from neurosym.semantics import BatchSolver, Operator, OperatorTable, Value
from neurosym.semantics.induction import Expr, Program, induce_operator, induce_operators
from neurosym.semantics.preimage import Interval
from neurosym.syntax import (
    ADDITIVE,
    BUILTIN_OPERATORS,
    MULTIPLICATIVE,
    Node,
    ParseError,
    canonical_sentence,
    parse,
)
from neurosym.training.checks import is_int

Example = tuple[str, int]  # (sentence, result)
ROLES = ("number", "operator")
"""The grammatical roles a new concept can take."""


class ConceptNotLearned(ValueError):
    """The examples do not determine a meaning (no program of the searched sizes explains enough of
    them, or the new symbol was never found)."""


@dataclass(frozen=True)
class LearnedConcept:
    """What was learned about ``symbol``: a number ``value`` or an operator ``program`` at ``level``;
    ``explained`` is the fraction of the training sentences the extended ``table`` gets right."""

    symbol: str
    table: OperatorTable
    explained: float
    value: int | None = None
    level: int | None = None
    program: Program | None = None

    @property
    def meaning(self) -> str:
        """The meaning for a table: ``"= 11"`` for a number, ``"level 1: max(i, j)"`` for an operator."""
        return f"= {self.value}" if self.value is not None else f"level {self.level}: {self.program}"


def concept_table(
    table: OperatorTable, symbol: str, value: Value | None = None, level: int | None = None, program: Program | None = None
) -> OperatorTable:
    """``table`` extended by the concept ``symbol``: the number ``value``, or the operator ``program`` at precedence
    ``level`` (as :class:`LearnedConcept` holds them)."""
    if value is not None:
        return table.extend({symbol: value})
    if level is None or program is None:
        raise ValueError(f"concept {symbol!r} needs a value, or a precedence level and a program")
    return table.extend(operators={symbol: Operator(level, program, None, str(program))})


def explained_fraction(table: OperatorTable, examples: Sequence[Example]) -> float:
    """Fraction of ``examples`` whose sentence evaluates to its result under ``table``."""
    if not examples:
        raise ValueError("explained_fraction needs at least one example: the fraction of none is undefined")
    values = BatchSolver(table).solve([sentence for sentence, _ in examples])
    return float(np.mean([v == result for v, (_, result) in zip(values, examples)]))


def learn_number(
    symbol: str, examples: Sequence[Example], table: OperatorTable, candidates: Sequence[int] = range(101)
) -> LearnedConcept:
    """Abduce the value of the number ``symbol`` among ``candidates``: the one explaining most examples (the smallest of
    a tie); :class:`ConceptNotLearned` when none explains any."""
    _check_new_concept(symbol, "number", examples, table)
    if not candidates:
        raise ValueError(f"no candidate value for the number {symbol!r}")
    scored = [(explained_fraction(concept_table(table, symbol, value=v), examples), v) for v in candidates]
    explained, value = max(scored, key=lambda item: (item[0], -item[1]))
    if explained == 0:  # (was learned as the first candidate, explaining nothing)
        raise ConceptNotLearned(f"none of the {len(candidates)} candidate values explains an example of the number {symbol!r}")
    return LearnedConcept(symbol, concept_table(table, symbol, value=value), explained, value=value)


def operator_examples(symbol: str, examples: Sequence[Example], hypothesis: OperatorTable) -> list[tuple[int, int, int]]:
    """``(left, right, value)`` triples for ``symbol`` read off sentences that use it once.

    ``hypothesis`` holds ``symbol`` (with any placeholder meaning) at the precedence level being
    tried; a triple is kept when the result pushed down to the operator's node is a single value and
    all three are non-negative integers (the induced programs are over those: an operand that another operator
    made a fraction, or negative, is no example of them, nor is a negative value wanted of the operator). Sentences are read as the solver reads them (whitespace
    dropped, typeset operators in ASCII), so ``"3 a 4"`` gives the triple of ``"3a4"``. A result is an int (numpy's
    too, taken as a Python int: :class:`~neurosym.semantics.preimage.Interval`), or ``None`` for an example without
    one, which gives no triple.
    """
    vocabulary = [*hypothesis.numbers, *hypothesis.operators, "(", ")"]
    abducer = Abducer(vocabulary, hypothesis)
    triples: list[tuple[int, int, int]] = []
    for text, result in examples:
        sentence = canonical_sentence(text)  # the operator's character index is then its token index in the spans
        if result is None or sentence.count(symbol) != 1:  # (a sentence without a value pins nothing down)
            continue
        try:
            node = parse(sentence, hypothesis.concepts)
        except ParseError:
            continue
        values = abducer.node_values(node)
        if values is None:
            continue
        position = sentence.index(symbol)
        wanted: Interval | None = Interval.point(result)
        while wanted is not None and not (node.symbol == symbol and _covers(node, position)):
            left, right = node.children
            targets = abducer.child_targets(node.symbol, wanted, values[id(left)], values[id(right)])
            side = 0 if _covers(left, position) else 1
            node, wanted = node.children[side], targets[side]
        if wanted is not None and wanted.hi == wanted.lo:
            left, right = node.children
            triple = _integer_triple(values[id(left)], values[id(right)], wanted.lo)
            if triple is not None and min(triple) >= 0:  # (a negative one failed the whole search)
                triples.append(triple)
    return triples


def _covers(node: Node, position: int) -> bool:
    """Whether ``node``'s sub-expression holds the token at ``position``."""
    assert node.span is not None  # parse spans every node
    return node.span[0] <= position < node.span[1]


def _integer_triple(left: Value, right: Value, value: Value) -> tuple[int, int, int] | None:
    """``(left, right, value)`` as ints, or ``None`` when one is a proper fraction."""
    if left.denominator != 1 or right.denominator != 1 or value.denominator != 1:
        return None
    return int(left), int(right), int(value)


def learn_operator(
    symbol: str, examples: Sequence[Example], table: OperatorTable, max_size: int = 10, min_agreement: float = 0.95
) -> LearnedConcept:
    """Induce the precedence level and meaning of the operator ``symbol`` from sentences and results."""
    learned = learn_operator_at(symbol, examples, table, (min_agreement,), max_size)[0]
    if learned is None:
        raise ConceptNotLearned(f"no program up to size {max_size} explains the examples of operator {symbol!r}")
    return learned


def learn_operator_at(
    symbol: str, examples: Sequence[Example], table: OperatorTable, agreements: Sequence[float], max_size: int = 10
) -> list[LearnedConcept | None]:
    """:func:`learn_operator` at each of ``agreements`` (``None`` where no program explains so many), from one program
    search per precedence level (:func:`~neurosym.semantics.induction.induce_operators`)."""
    _check_new_concept(symbol, "operator", examples, table)
    searched = []  # per level, its program at each agreement
    for level in (ADDITIVE, MULTIPLICATIVE):
        hypothesis = table.extend(operators={symbol: Operator(level, lambda a, b: 1)})
        triples = operator_examples(symbol, examples, hypothesis)
        searched.append((level, induce_operators(triples, max_size, agreements) if triples else [None] * len(agreements)))
    concepts: dict[tuple[int, Expr], LearnedConcept] = {}  # a program found at several agreements is judged once

    def concept(level: int, program: Program) -> LearnedConcept:
        if (level, program.expr) not in concepts:
            learned_table = concept_table(table, symbol, level=level, program=program)
            concepts[level, program.expr] = LearnedConcept(
                symbol, learned_table, explained_fraction(learned_table, examples), level=level, program=program
            )
        return concepts[level, program.expr]

    learned: list[LearnedConcept | None] = []
    for k in range(len(agreements)):
        candidates = [concept(level, program) for level, programs in searched if (program := programs[k]) is not None]
        learned.append(max(candidates, key=lambda c: c.explained) if candidates else None)  # ties: the additive level
    return learned


def learn_concept(
    symbol: str, role: str, examples: Sequence[Example], table: OperatorTable, min_agreement: float = 0.95
) -> LearnedConcept:
    """Learn ``symbol`` in ``role``: a number's value (:func:`learn_number`) or an operator's precedence
    and meaning (:func:`learn_operator`, whose program must agree with ``min_agreement`` of the
    examples pushed down to it)."""
    if role == "number":
        return learn_number(symbol, examples, table)
    if role == "operator":
        return learn_operator(symbol, examples, table, min_agreement=min_agreement)
    raise ValueError(f"unknown role {role!r}: choose one of {ROLES}")


def placeholder_table(table: OperatorTable, symbol: str, role: str) -> OperatorTable:
    """``table`` with ``symbol`` in ``role`` and a meaning still unknown (the number 0, or an additive
    operator that always gives 0): enough to read and parse sentences that use it."""
    _check_unknown(symbol, table)
    if role == "number":
        return table.extend({symbol: 0})
    if role == "operator":
        return table.extend(operators={symbol: Operator(ADDITIVE, lambda a, b: 0, None, "unknown")})
    raise ValueError(f"unknown role {role!r}: choose one of {ROLES}")


def _check_unknown(symbol: str, table: OperatorTable) -> None:
    """Raise ``ValueError`` when ``table`` already gives ``symbol`` a meaning (a concept learned under it would replace it)."""
    if symbol in table.numbers or symbol in table.operators:
        role = "a number" if symbol in table.numbers else "an operator"
        raise ValueError(f"{symbol!r} is already {role} of the table {table.name!r}: a new concept needs a new symbol")


def _check_new_concept(symbol: str, role: str, examples: Sequence[Example], table: OperatorTable) -> None:
    """Raise ``ValueError`` for a ``symbol`` that ``table`` knows or no example, ``TypeError`` for an example that is no
    ``(sentence, result)`` pair or a result that is no int (or None), and :class:`ConceptNotLearned` when no example's sentence uses ``symbol`` (any meaning would explain
    them all alike)."""
    _check_unknown(symbol, table)
    if not examples:
        raise ValueError(f"no training sentence for the {role} {symbol!r}")
    for index, example in enumerate(examples):  # a float failed deep in the program search, a str explained nothing
        if not (isinstance(example, tuple | list) and len(example) == 2 and isinstance(example[0], str)):
            raise TypeError(
                f"example {index} of the {role} {symbol!r} is {example!r}: examples are (sentence, result) pairs"
            )  # (a bare sentence failed in unpacking, "too many values to unpack")
        result = example[1]
        if result is not None and not is_int(result):
            raise TypeError(f"example {index} of the {role} {symbol!r} has the result {result!r}: results are ints (or None)")
    if not any(symbol in sentence for sentence, _ in examples):
        raise ConceptNotLearned(f"none of the {len(examples)} training sentences uses the {role} {symbol!r}")


def induced_table(
    examples: Sequence[Example], known: OperatorTable, max_size: int = 8
) -> tuple[OperatorTable, dict[str, Program]]:
    """Meanings of ``+ - * /`` induced from the one-operator sentences among ``examples`` (read as the solver reads
    them: ``"3 × 4"`` is ``"3*4"``; an example without a result, ``None``, is skipped).

    ``known`` supplies the number values (and is otherwise only a template); returns the table with
    the induced operators and the programs by symbol.
    """
    programs: dict[str, Program] = {}
    # as the solver reads them (whitespace, typeset operators); a sentence without a value (÷ 0) pins nothing down
    examples = [(canonical_sentence(sentence), result) for sentence, result in examples if result is not None]
    unknown = next(((s, n) for s, _ in examples if len(s) == 3 for n in s[::2] if n not in known.numbers), None)
    if unknown is not None:
        raise ValueError(f"sentence {unknown[0]!r} uses {unknown[1]!r}, which is no number of the table {known.name!r}")
    for symbol in BUILTIN_OPERATORS:
        found = (
            _integer_triple(known.numbers[s[0]], known.numbers[s[2]], result)
            for s, result in examples
            if len(s) == 3 and s[1] == symbol
        )
        triples = [triple for triple in found if triple is not None]
        if not triples:
            raise ValueError(f"no one-operator sentence uses {symbol!r}: its meaning cannot be induced")
        program = induce_operator(triples, max_size)
        if program is None:
            raise ConceptNotLearned(f"no program up to size {max_size} explains every example of {symbol!r}")
        programs[symbol] = program
    operators = {s: Operator(BUILTIN_OPERATORS[s], p, None, str(p)) for s, p in programs.items()}
    return known.extend(operators=operators, name="induced"), programs
