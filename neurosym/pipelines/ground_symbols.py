"""Learning a grounding from sentences of anonymous class ids and their results, given only the
grammar's shape: numbers are single tokens, binary operators are left-associative at two precedence
levels, round brackets group.

:func:`learn_grounding` runs four steps (each a majority vote, so a few misread sentences do no harm):

1. **Roles.** A one-token sentence is a number; a three-token sentence is ``number operator number``
   (brackets need two operators). Each class takes the role most of its occurrences there vote for.
   The classes left (never seen in short sentences) get the bracket roles, or any role, in the
   assignment under which the most sentences are grammatical.
2. **Values.** A number class's value is the most common result of its one-token sentences.
3. **Programs.** Each operator class's program is induced (:func:`~neurosym.semantics.induction.induce_operator`)
   from its three-token sentences ``i op j -> result``.
4. **Precedence.** Every assignment of the operators to the two levels is tried on the sentences with
   two or more operators; the one that explains the most results is kept.

:func:`anonymise` maps symbol sentences to class ids under a permutation, so that a test can check
that nothing depends on the symbols; :func:`accuracy_by_subset` scores a grounding per test subset.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neurosym.data.randomness import as_generator
from neurosym.pipelines.concepts import ConceptNotLearned
from neurosym.pipelines.grounding import Grounding
from neurosym.pipelines.subsets import subset_scores
from neurosym.semantics.induction import Program, induce_noisy_operator
from neurosym.syntax import ADDITIVE, MULTIPLICATIVE
from neurosym.training.checks import is_int

Sentence = Sequence[int]
#: The HINT symbols in a fixed order: class ``permutation[i]`` shows ``HINT_ALPHABET[i]``.
HINT_ALPHABET = "0123456789+-*/()"
_ROLE_ORDER = ("number", "operator", "open", "close")
# Token kinds of :func:`grammatical`, in the order of _ROLE_ORDER.
_NUMBER, _OPERATOR, _OPEN, _CLOSE = range(4)


@dataclass(frozen=True)
class GroundingConfig:
    """Settings of :func:`learn_grounding`: programs up to ``max_program_size`` DSL nodes that explain at
    least ``min_agreement`` of their examples (with ``lowest_agreement``, noisy readings: an operator no
    program explains so well gets the one :func:`~neurosym.semantics.induction.induce_noisy_operator`
    finds, lowering the agreement down to it); at most ``precedence_sentences`` sentences (the first
    ones with two or more operators) score each level assignment; up to ``max_free_classes`` classes
    unseen in short sentences get their roles by search."""

    max_program_size: int = 8
    min_agreement: float = 1.0
    precedence_sentences: int = 2000
    max_free_classes: int = 4
    lowest_agreement: float | None = None

    def __post_init__(self) -> None:
        if self.max_program_size < 1 or self.precedence_sentences < 1 or self.max_free_classes < 0:
            raise ValueError("max_program_size and precedence_sentences must be positive, max_free_classes >= 0")
        if not 0 < self.min_agreement <= 1:
            raise ValueError(f"min_agreement must be in (0, 1], got {self.min_agreement}")
        if self.lowest_agreement is not None and not 0 < self.lowest_agreement <= self.min_agreement:
            raise ValueError(f"lowest_agreement must be in (0, min_agreement], got {self.lowest_agreement}")


def random_permutation(size: int, seed: int) -> list[int]:
    """A random permutation of ``0 .. size-1`` (class ids for the symbols of an alphabet)."""
    return as_generator(seed).permutation(size).tolist()


def anonymise(sentences: Sequence[str], permutation: Sequence[int], alphabet: str = HINT_ALPHABET) -> list[tuple[int, ...]]:
    """Each sentence's symbols as class ids: symbol ``alphabet[i]`` becomes ``permutation[i]``."""
    if sorted(permutation) != list(range(len(alphabet))):
        raise ValueError(f"permutation must reorder 0..{len(alphabet) - 1}, got {list(permutation)}")
    index = {symbol: permutation[i] for i, symbol in enumerate(alphabet)}
    try:
        return [tuple(index[s] for s in sentence) for sentence in sentences]
    except KeyError as error:
        raise ValueError(f"symbol {error.args[0]!r} is not in the alphabet {alphabet!r}") from None


def class_symbols(permutation: Sequence[int], alphabet: str = HINT_ALPHABET) -> list[str]:
    """The true symbol of each class under ``permutation`` (for reports only)."""
    symbols = [""] * len(permutation)
    for i, c in enumerate(permutation):
        symbols[c] = alphabet[i]
    return symbols


def shown_as(sentence: str, permutation: Sequence[int], grounding: Grounding, alphabet: str = HINT_ALPHABET) -> str:
    """``sentence`` in ``grounding``'s display symbols: symbol ``alphabet[i]`` becomes the symbol shown for
    class ``permutation[i]``; a symbol outside ``alphabet`` (a new concept, e.g. HINT's few-shot ``x``)
    stays as it is, so it must not be one of the display symbols."""
    shown = {symbol: grounding.symbols[permutation[i]] for i, symbol in enumerate(alphabet)}
    clash = sorted({s for s in sentence if s not in shown and s in grounding.symbols})
    if clash:
        raise ValueError(f"new symbol(s) {clash} of {sentence!r} are display symbols of the grounding {grounding.symbols}")
    return "".join(shown.get(s, s) for s in sentence)


def grammatical(kinds: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Which sentences of token kinds ``[N, T]`` (0 number, 1 operator, 2 open, 3 close; padding past
    ``lengths [N]`` ignored; any other kind is never accepted) the grammar accepts -> bool ``[N]``."""
    n, steps = kinds.shape
    live = np.arange(steps)[None, :] < lengths[:, None]
    operand = np.isin(kinds, (_NUMBER, _OPEN))
    # Expecting an operand before token t: at the start and after an operator or an open bracket.
    expecting = np.ones((n, steps), dtype=bool)
    expecting[:, 1:] = np.isin(kinds[:, :-1], (_OPERATOR, _OPEN))
    depth = np.cumsum(np.where(live, (kinds == _OPEN).astype(int) - (kinds == _CLOSE), 0), axis=1)
    moves_ok = np.where(live, (operand == expecting) & (kinds >= 0), True).all(axis=1)
    last = kinds[np.arange(n), np.maximum(lengths - 1, 0)]
    return moves_ok & (depth >= 0).all(axis=1) & (depth[:, -1] == 0) & np.isin(last, (_NUMBER, _CLOSE)) & (lengths > 0)


def _votes(sentences: Sequence[Sentence], size: int) -> np.ndarray:
    """Role votes ``[size, 2]`` (number, operator) from one- and three-token sentences."""
    votes = np.zeros((size, 2), dtype=np.int64)
    for sentence in sentences:
        if len(sentence) == 1:
            votes[sentence[0], 0] += 1
        elif len(sentence) == 3:
            votes[sentence[0], 0] += 1
            votes[sentence[2], 0] += 1
            votes[sentence[1], 1] += 1
    return votes


def learn_roles(sentences: Sequence[Sentence], size: int, max_free_classes: int = 4) -> tuple[str, ...]:
    """The role of each of ``size`` classes (step 1 of :func:`learn_grounding`)."""
    votes = _votes(sentences, size)
    seen = np.zeros(size, dtype=bool)
    for sentence in sentences:
        seen[list(sentence)] = True
    roles = ["unused"] * size
    for voted in np.flatnonzero(votes.sum(axis=1) > 0):
        roles[voted] = _ROLE_ORDER[int(np.argmax(votes[voted]))]
    free = [int(c) for c in np.flatnonzero(seen & (votes.sum(axis=1) == 0))]
    if len(free) > max_free_classes:
        raise ConceptNotLearned(f"{len(free)} classes never occur in one- or three-token sentences: too many to search")
    long = [s for s in sentences if any(c in free for c in s)] or list(sentences)
    lengths = np.array([len(s) for s in long])
    ids = np.zeros((len(long), int(lengths.max())), dtype=np.int64)
    for row, sentence in enumerate(long):
        ids[row, : len(sentence)] = sentence
    best: tuple[int, tuple[str, ...]] | None = None
    for assignment in itertools.product(_ROLE_ORDER, repeat=len(free)):
        trial = list(roles)
        for c, role in zip(free, assignment):
            trial[c] = role
        if trial.count("open") != 1 or trial.count("close") != 1:
            continue
        kinds = np.array([_ROLE_ORDER.index(r) if r != "unused" else -1 for r in trial])[ids]
        score = int(grammatical(kinds, lengths).sum())
        if best is None or score > best[0]:
            best = (score, tuple(trial))
    if best is None:
        raise ConceptNotLearned("no assignment of the remaining classes gives exactly one open and one close bracket")
    return best[1]


def check_results(results: Sequence[int]) -> None:
    """Raise ``ValueError`` naming the first of ``results`` that is no int (numpy's too, not a bool): ``None`` failed
    in a comparison with a ``TypeError`` and ``2.5`` was truncated to 2."""
    bad = next((index for index, result in enumerate(results) if not is_int(result)), None)
    if bad is not None:
        raise ValueError(f"results must be integers, got {results[bad]!r} at {bad}")


def learn_values(sentences: Sequence[Sentence], results: Sequence[int], roles: Sequence[str]) -> dict[int, int]:
    """The value of each number class: the most common result of its one-token sentences (step 2); ``ValueError``
    for a result that is no int."""
    check_results(results)
    seen: dict[int, Counter] = defaultdict(Counter)
    for sentence, result in zip(sentences, results):
        if len(sentence) == 1:
            seen[sentence[0]][int(result)] += 1
    missing = [c for c, role in enumerate(roles) if role == "number" and not seen[c]]
    if missing:
        raise ConceptNotLearned(f"number classes {missing} never occur alone: their values are unknown")
    return {c: seen[c].most_common(1)[0][0] for c, role in enumerate(roles) if role == "number"}


def learn_programs(
    sentences: Sequence[Sentence],
    results: Sequence[int],
    roles: Sequence[str],
    values: dict[int, int],
    max_size: int = 8,
    min_agreement: float = 1.0,
    lowest_agreement: float | None = None,
) -> dict[int, Program]:
    """Each operator class's program, induced from its ``i op j -> result`` sentences (step 3); with
    ``lowest_agreement``, :func:`induce_noisy_operator` from ``min_agreement`` down to it. Negative results are left
    out; a result that is no int raises ``ValueError``."""
    check_results(results)
    triples: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for sentence, result in zip(sentences, results):
        if len(sentence) == 3 and sentence[0] in values and sentence[2] in values and result >= 0:
            triples[sentence[1]].append((values[sentence[0]], values[sentence[2]], int(result)))
    lowest = min_agreement if lowest_agreement is None else lowest_agreement
    programs = {}
    for c, role in enumerate(roles):
        if role != "operator":
            continue
        if not triples[c]:
            raise ConceptNotLearned(f"operator class {c} never occurs between two numbers: its program is unknown")
        program = induce_noisy_operator(triples[c], max_size, min_agreement, lowest)
        if program is None:
            raise ConceptNotLearned(f"no program up to size {max_size} explains {lowest:.0%} of operator class {c}'s examples")
        programs[c] = program
    return programs


def learn_levels(
    sentences: Sequence[Sentence],
    results: Sequence[int],
    roles: Sequence[str],
    values: dict[int, int],
    programs: dict[int, Program],
    limit: int = 2000,
) -> dict[int, int]:
    """The precedence level of each operator class: the assignment to the two levels that explains
    the most results of sentences with two or more operators (step 4); ties keep the first tried."""
    operators = sorted(programs)
    several = [(s, r) for s, r in zip(sentences, results) if sum(roles[c] == "operator" for c in s) >= 2][:limit]
    if not several:
        raise ConceptNotLearned("no sentence has two operators: the precedence is unknown")

    def explained(levels: dict[int, int]) -> int:
        grounding = Grounding(tuple(roles), values, programs, levels)
        return sum(v == r for v, (_, r) in zip(grounding.solve([s for s, _ in several]), several))

    assignments = itertools.product((ADDITIVE, MULTIPLICATIVE), repeat=len(operators))
    return max((dict(zip(operators, assignment)) for assignment in assignments), key=explained)  # the first of ties


def learn_grounding(
    sentences: Sequence[Sentence], results: Sequence[int], size: int, config: GroundingConfig = GroundingConfig()
) -> Grounding:
    """Learn the roles, values, programs and precedence of ``size`` anonymous classes from sentences of
    class ids and their integer results (no symbol is ever seen); ``ValueError`` for a result that is no int."""
    if len(sentences) != len(results) or not sentences:
        raise ValueError(f"need as many results as sentences (and some), got {len(sentences)} and {len(results)}")
    check_results(results)
    if any(not 0 <= c < size for s in sentences for c in s):
        raise ValueError(f"class ids must be in 0..{size - 1}")
    roles = learn_roles(sentences, size, config.max_free_classes)
    values = learn_values(sentences, results, roles)
    programs = learn_programs(
        sentences, results, roles, values, config.max_program_size, config.min_agreement, config.lowest_agreement
    )
    levels = learn_levels(sentences, results, roles, values, programs, config.precedence_sentences)
    return Grounding(roles, values, programs, levels)


def accuracy_by_subset(
    grounding: Grounding, sentences: Sequence[Sentence], results: Sequence[int], subsets: Sequence[str | None]
) -> dict[str, float]:
    """Fraction of sentences the grounding evaluates to their result, per subset (HINT's in the order
    ``I SS LS SL LL``; ``None`` counts as ``"all"``), with ``"avg"`` (over every record, as HINT's "Avg."). One result and
    one subset per sentence, else ``ValueError`` (the longer lists were cut to the shortest and scored without a word)."""
    if not len(sentences) == len(results) == len(subsets):
        raise ValueError(f"{len(sentences)} sentences, {len(results)} results and {len(subsets)} subsets: one each per sentence")
    hits: dict[str, list[bool]] = defaultdict(list)
    for value, result, subset in zip(grounding.solve(sentences), results, subsets):
        hits[str(subset) if subset else "all"].append(value == result)
    return subset_scores(hits)
