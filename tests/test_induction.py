"""Program induction recovers operators from examples; concepts are learned from results."""

import itertools
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.hint import fewshot_split, main_split
from neurosym.pipelines.concepts import (
    ConceptNotLearned,
    explained_fraction,
    induced_table,
    learn_number,
    learn_operator,
    learn_operator_at,
    operator_examples,
    placeholder_table,
)
from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, Operator, induction
from neurosym.semantics.induction import Program, _Enumerator, induce_noisy_operator, induce_operator, induce_operators
from neurosym.semantics.operators import FRACTION_DIVIDE, MINUS
from neurosym.syntax import ADDITIVE, MULTIPLICATIVE, canonical_sentence

TARGETS = {
    "max": max,
    "min": min,
    "ceil mean": lambda i, j: -(-(i + j) // 2),
    "floor mean": lambda i, j: (i + j) // 2,
    "clamped minus": lambda i, j: max(0, i - j),
    "i*j+1": lambda i, j: i * j + 1,
}


def _examples(function, count=30, seed=0):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 10, size=(count, 2)).tolist()
    return [(i, j, function(i, j)) for i, j in pairs]


@pytest.mark.parametrize("name", list(TARGETS))
def test_recovers_known_operators_from_a_few_dozen_examples(name):
    function = TARGETS[name]
    program = induce_operator(_examples(function), max_size=7)
    assert program is not None
    grid = [(i, j) for i in range(15) for j in range(15)]
    assert all(program(i, j) == function(i, j) for i, j in grid), str(program)


def test_smallest_program_is_returned():
    assert str(induce_operator(_examples(max))) == "max(i, j)"
    assert induce_operator(_examples(max)).size == 3
    assert induce_operator(_examples(lambda i, j: -(-(i + j) // 2))).size == 6


def test_noisy_examples_with_an_agreement_threshold():
    examples = _examples(min, count=40, seed=1)
    examples[:4] = [(i, j, v + 3) for i, j, v in examples[:4]]  # 10% wrong abductions
    assert induce_operator(examples, max_size=5) is None or str(induce_operator(examples, max_size=5)) != "min(i, j)"
    assert str(induce_operator(examples, max_size=5, min_agreement=0.85)) == "min(i, j)"


def test_no_program_within_the_size_limit_gives_none():
    rng = np.random.default_rng(3)
    examples = [(i, j, int(rng.integers(50))) for i, j in rng.integers(0, 10, size=(20, 2)).tolist()]
    assert induce_operator(examples, max_size=4) is None


def test_programs_are_exact_and_partial():
    program = Program(("ceil", ("/", ("+", ("i",), ("j",)), ("const", 2))))
    assert program(3, 4) == 4 and program(2, 4) == 3
    assert str(program) == "ceil(((i + j) / 2))"
    assert Program(("/", ("i",), ("j",)))(1, 0) is None  # division by zero
    assert Program(("/", ("i",), ("j",)))(1, 2) is None  # not an integer
    assert Program(("-", ("i",), ("j",)))(1, 2) is None  # negative


def test_bad_examples_raise():
    with pytest.raises(ValueError, match="at least one"):
        induce_operator([])
    with pytest.raises(ValueError, match="non-negative"):
        induce_operator([(1, 2)])
    with pytest.raises(ValueError, match="min_agreement"):
        induce_operator([(1, 2, 3)], min_agreement=0)


@settings(max_examples=25, deadline=None)
@given(
    target=st.sampled_from(sorted(TARGETS)),
    pairs=st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=8),
    corrupt=st.one_of(st.none(), st.integers(0, 7)),
)
def test_any_returned_program_explains_every_example(target, pairs, corrupt):
    """Tables of a known operator (one entry possibly corrupted): whatever program comes back agrees with
    every example, and an uncorrupted table always gets one."""
    table = [(i, j, TARGETS[target](i, j)) for i, j in pairs]
    if corrupt is not None and corrupt < len(table):
        i, j, v = table[corrupt]
        table[corrupt] = (i, j, v + 1)
    program = induce_operator(table)  # the default size limit holds every target
    if corrupt is None:
        assert program is not None
    if program is not None:
        assert all(program(i, j) == v for i, j, v in table)


def test_induced_table_recovers_hint_semantics_from_results():
    splits = main_split(scale=0.002, seed=0, cache=False, progress=False)
    table, programs = induced_table([(r.expr, r.res) for r in splits["train"]], HINT_SEMANTICS)
    assert str(programs["+"]) == "(i + j)" and str(programs["*"]) == "(i * j)"
    grid = [(i, j) for i in range(12) for j in range(12)]
    assert all(programs["-"](i, j) == max(0, i - j) for i, j in grid)
    assert all(programs["/"](i, j) == (None if j == 0 else -(-i // j)) for i, j in grid)
    assert explained_fraction(table, [(r.expr, r.res) for r in splits["test"]]) == 1.0


def test_induced_table_names_a_number_the_known_table_lacks():
    with pytest.raises(ValueError, match="sentence 'x\\+2' uses 'x', which is no number of the table 'hint'"):
        induced_table([("1+2", 3), ("x+2", 5)], HINT_SEMANTICS)


def test_induced_table_reads_sentences_as_the_solver_does():
    # typeset operators and spaces are the same sentences; the invalid 1/0 (no result) constrains nothing
    examples = [("3+4", 7), ("5 - 2", 3), ("7/2", 4), ("9 ÷ 2", 5), ("3×4", 12), ("2 × 5", 10), ("6*7", 42), ("1/0", None)]
    _, programs = induced_table(examples, HINT_SEMANTICS)
    assert str(programs["*"]) == "(i * j)"
    assert canonical_sentence(" 3 × (4 − 1) ÷ 2") == "3*(4-1)/2"


def test_new_number_value_is_abduced():
    sentences = ["x", "x+1", "2*x", "x-3", "(x+1)/2", "9-x"]
    examples = [(s, _evaluate(s)) for s in sentences]
    learned = learn_number("x", examples, HINT_SEMANTICS)
    assert learned.value == 11 and learned.explained == 1.0


def test_a_concept_needs_a_new_symbol_and_sentences_that_use_it():
    with pytest.raises(ConceptNotLearned, match="none of the 2 training sentences uses the number 'x'"):
        learn_number("x", [("1+2", 3), ("4*2", 8)], HINT_SEMANTICS)  # was x = 0, explaining all of them
    with pytest.raises(ConceptNotLearned, match="none of the 1 training sentences uses the operator 'a'"):
        learn_operator("a", [("1+2", 3)], HINT_SEMANTICS)
    with pytest.raises(ValueError, match="'3' is already a number of the table 'hint': a new concept needs a new symbol"):
        learn_number("3", [("3+2", 12)], HINT_SEMANTICS)  # was 3 = 10, silently redefined
    with pytest.raises(ConceptNotLearned, match="none of the 101 candidate values explains an example of the number 'x'"):
        learn_number("x", [("x", 500), ("x+1", 501)], HINT_SEMANTICS)  # was x = 0, explaining nothing
    with pytest.raises(TypeError, match="example 1 of the operator 'a' has the result 5.0: results are ints"):
        learn_operator("a", [("2a3", 3), ("5a1", 5.0)], HINT_SEMANTICS)  # (failed deep in the program search)
    with pytest.raises(TypeError, match="example 0 of the number 'x' has the result '11'"):
        learn_number("x", [("x", "11")], HINT_SEMANTICS)  # (was x = 0, explaining nothing)
    with pytest.raises(TypeError, match=r"example 0 of the operator 'q' is '2q3': examples are \(sentence, result\) pairs"):
        learn_operator("q", ["2q3"], HINT_SEMANTICS)  # (was "too many values to unpack")
    with pytest.raises(TypeError, match=r"example 1 of the number 'x' is \('x',\): examples are"):
        learn_number("x", [("x", 3), ("x",)], HINT_SEMANTICS)
    with pytest.raises(TypeError, match=r"example 0 of the number 'x' is \(3, 'x'\): examples are"):
        learn_number("x", [(3, "x")], HINT_SEMANTICS)
    with pytest.raises(ValueError, match="'a' is already an operator of the table"):
        learn_operator("a", [("1a2", 2), ("3a4", 4)], HINT_FEWSHOT_SEMANTICS)
    with pytest.raises(ValueError, match="'3' is already a number"):
        placeholder_table(HINT_SEMANTICS, "3", "number")  # was 3 = 0
    with pytest.raises(ValueError, match="no training sentence for the operator 'a'"):
        learn_operator("a", [], HINT_SEMANTICS)
    with pytest.raises(ValueError, match="no candidate value for the number 'x'"):
        learn_number("x", [("x+2", 12)], HINT_SEMANTICS, candidates=[])
    with pytest.raises(ValueError, match="explained_fraction needs at least one example"):
        explained_fraction(HINT_SEMANTICS, [])  # was NaN


def _evaluate(sentence):
    from neurosym.semantics import evaluate

    return evaluate(sentence, HINT_FEWSHOT_SEMANTICS)


@pytest.mark.parametrize("concept,level,function", [("a", ADDITIVE, max), ("c", MULTIPLICATIVE, lambda i, j: -(-(i + j) // 2))])
def test_operator_precedence_and_meaning_are_learned(concept, level, function):
    split = fewshot_split(concept, scale=0.05, seed=0, cache=False, progress=False)
    learned = learn_operator(concept, [(r.expr, r.res) for r in split["train"]], HINT_SEMANTICS, max_size=7)
    assert learned.level == level
    assert all(learned.program(i, j) == function(i, j) for i in range(12) for j in range(12)), str(learned.program)
    assert explained_fraction(learned.table, [(r.expr, r.res) for r in split["test"]]) == 1.0


AGREEMENTS = (0.95, 0.9, 0.8, 0.7, 0.6)


@settings(max_examples=15, deadline=None)
@given(
    target=st.sampled_from(sorted(TARGETS)),
    seed=st.integers(0, 2**31 - 1),
    noise=st.integers(0, 12),
    max_size=st.integers(3, 7),
)
def test_one_enumeration_gives_each_agreement_the_program_of_a_search_of_its_own(target, seed, noise, max_size):
    rng = np.random.default_rng(seed)
    examples = _examples(TARGETS[target], count=40, seed=seed)
    for k in rng.choice(40, noise, replace=False):  # misread results, as abduction through a young reader gives them
        i, j, v = examples[k]
        examples[k] = (i, j, v + int(rng.integers(1, 4)))
    separately = [induce_operator(examples, max_size, agreement) for agreement in AGREEMENTS]
    assert induce_operators(examples, max_size, AGREEMENTS) == separately
    assert induce_noisy_operator(examples, max_size, 0.95, 0.6, 0.05) == next((p for p in induce_operators(
        examples, max_size, [0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6]) if p is not None), None)  # fmt: skip


def test_an_operator_is_learned_at_each_agreement_as_learn_operator_learns_it_there():
    split = fewshot_split("c", scale=0.05, seed=0, cache=False, progress=False)
    examples = [(r.expr, r.res) for r in split["train"]]
    examples[::4] = [(sentence, result + 1) for sentence, result in examples[::4]]  # a quarter misread
    learned = learn_operator_at("c", examples, HINT_SEMANTICS, AGREEMENTS, max_size=7)
    for agreement, concept in zip(AGREEMENTS, learned):
        try:
            alone = learn_operator("c", examples, HINT_SEMANTICS, max_size=7, min_agreement=agreement)
        except ConceptNotLearned:
            assert concept is None
            continue
        assert concept is not None and (concept.level, concept.program, concept.explained) == (
            alone.level,
            alone.program,
            alone.explained,
        )
    assert learned[0] is None and learned[-1] is not None  # (the noise leaves the strictest without a program)


def test_many_examples_search_a_subset_but_every_example_is_checked():
    examples = _examples(max, count=500, seed=5)
    i, j, v = examples[-1]
    examples[-1] = (i, j, v + 1)  # one wrong example, very likely outside the searched subset
    assert induce_operator(examples, max_size=4) is None
    assert str(induce_operator(examples, max_size=4, min_agreement=0.99)) == "max(i, j)"


def test_agreement_counts_repeated_examples_as_often_as_they_occur():
    right = [(i, j, i + j) for i in range(5) for j in range(5)] * 8  # 200 examples, 25 distinct
    noise = [(i, j, 40 + k) for k, (i, j) in enumerate((k % 5, k // 5) for k in range(20))]  # 20 distinct misreadings
    assert str(induce_operator(right + noise, max_size=3, min_agreement=0.8)) == "(i + j)"  # 91 % of examples
    assert induce_operator(right + noise, max_size=3, min_agreement=0.95) is None


def test_noisy_induction_lowers_the_agreement_in_steps_so_a_constant_cannot_win():
    pairs = [(i, j) for i in range(10) for j in range(10)]
    # max(0, i - j) read through noise: half of the positive results are one too big (75 % right), the 55 % of
    # zeros untouched, so the constant 0 explains more than half of the examples
    minus = [(i, j, max(0, i - j) + (k % 2 == 0 and i > j)) for k, (i, j) in enumerate(pairs)]
    assert induce_operator(minus, max_size=8, min_agreement=0.8) is None
    assert str(induce_operator(minus, max_size=8, min_agreement=0.5)) == "0"
    assert str(induce_noisy_operator(minus, max_size=8, highest=0.8, lowest=0.5)) == "(i - min(i, j))"
    for bad in ({"step": math.nan}, {"step": 0.0}, {"lowest": math.nan}):  # a NaN step failed inside numpy
        with pytest.raises(ValueError, match="need 0 < lowest <= highest <= 1 and step > 0"):
            induce_noisy_operator(minus, **{"max_size": 8, "highest": 0.8, "lowest": 0.5, **bad})
    for wide in (0.3, 1.0, math.inf):  # a step past lowest tries highest, then lowest (inf was read as NaN)
        assert str(induce_noisy_operator(minus, max_size=8, highest=0.8, lowest=0.5, step=wide)) == "0"
    times = [(i, j, i * j + (k % 4 == 0)) for k, (i, j) in enumerate(pairs)]  # 75 % right
    assert str(induce_noisy_operator(times, max_size=8, highest=0.8, lowest=0.5)) == "(i * j)"
    assert induce_noisy_operator(times, max_size=8, highest=0.8, lowest=0.8) is None
    with pytest.raises(ValueError, match="lowest"):
        induce_noisy_operator(times, max_size=8, highest=0.5, lowest=0.8)


def _levels_before(highest, lowest, step):
    """The agreements induce_noisy_operator searched before it kept one per requirement (every step)."""
    count = int(np.floor((highest - lowest) / step + 1e-9))
    return list(dict.fromkeys((highest, *(highest - k * step for k in range(1, count + 1)), lowest)))


def _requirement(agreement, examples):
    """What _search requires at ``agreement``: whether it is 1.0, and how many examples of the searched subset (64 of
    the distinct examples at most) and of all examples a program must explain."""
    distinct = sorted(set(examples))
    counts = np.array([examples.count(triple) for triple in distinct])
    subset = np.arange(len(distinct))
    if len(distinct) > 64:
        subset = np.sort(np.random.default_rng(0).choice(len(distinct), 64, replace=False))
    searched = counts[subset].sum()
    needed = int(searched) if agreement == 1.0 else int(np.floor(agreement * searched))
    return agreement == 1.0, needed, int(np.ceil(agreement * counts.sum() - 1e-9))


def _spy_on_agreements(monkeypatch):
    """The lists of agreements induce_noisy_operator passes to induce_operators (filled as it is called)."""
    passed = []

    def spy(examples, max_size, agreements, *rest):
        passed.append(list(agreements))
        return induce_operators(examples, max_size, agreements, *rest)

    monkeypatch.setattr(induction, "induce_operators", spy)
    return passed


@settings(max_examples=15, deadline=None)
@given(
    target=st.sampled_from(sorted(TARGETS)),
    seed=st.integers(0, 2**31 - 1),
    noise=st.integers(0, 15),
    count=st.sampled_from([40, 120]),  # 120 examples: more than the 64 distinct ones searched
    highest=st.floats(0.6, 1.0),
    width=st.floats(0.0, 0.4),
    step=st.floats(0.002, 0.3),
)
def test_noisy_induction_searches_the_first_agreement_of_each_requirement(target, seed, noise, count, highest, width, step):
    rng = np.random.default_rng(seed)
    examples = _examples(TARGETS[target], count=count, seed=seed)
    for k in rng.choice(count, noise, replace=False):
        i, j, v = examples[k]
        examples[k] = (i, j, v + int(rng.integers(1, 4)))
    lowest = highest - width
    before = _levels_before(highest, lowest, step)
    requirements = [_requirement(agreement, examples) for agreement in before]
    first = [agreement for k, agreement in enumerate(before) if requirements[k] not in requirements[:k]]
    with pytest.MonkeyPatch.context() as monkeypatch:
        passed = _spy_on_agreements(monkeypatch)
        program = induce_noisy_operator(examples, 5, highest, lowest, step)
    assert passed == [first]  # (every step's agreement was passed: up to 200 here, 10^12 at a step of 1e-12)
    assert program == next((p for p in induce_operators(examples, 5, before) if p is not None), None)


def test_a_fine_step_searches_one_agreement_per_requirement(monkeypatch):
    pairs = [(i, j) for i in range(10) for j in range(10)]
    minus = [(i, j, max(0, i - j) + (k % 2 == 0 and i > j)) for k, (i, j) in enumerate(pairs)]
    coarse = induce_noisy_operator(minus, max_size=8, highest=0.8, lowest=0.5, step=1e-3)  # below 1 / 100 examples
    assert str(coarse) == "(i - min(i, j))"

    def bounded_range(*bounds):  # a list of a step's agreements ran out of memory: fail before building it
        span = range(*bounds)
        assert len(span) <= 10**6, f"a range of {len(span)}"
        return span

    monkeypatch.setattr(induction, "range", bounded_range, raising=False)
    passed = _spy_on_agreements(monkeypatch)
    for fine in (1e-12, 1e-300):
        assert induce_noisy_operator(minus, max_size=8, highest=0.8, lowest=0.5, step=fine) == coarse
    assert all(len(agreements) <= 2 * len(minus) + 3 for agreements in passed)


@settings(max_examples=60, deadline=None)
@given(lowest=st.integers(1, 100), above=st.integers(0, 99), step=st.sampled_from([0.01, 0.02, 0.03, 0.05, 0.07, 0.1, 0.3]))
def test_the_agreements_searched_go_down_from_highest_to_lowest_and_never_below(lowest, above, step):
    lowest, highest = lowest / 100, min(100, lowest + above) / 100
    passed = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setattr(induction, "induce_operators", lambda examples, size, agreements: passed.append(agreements) or [])
        induce_noisy_operator([(i, j, i + j) for i in range(10) for j in range(10)], 3, highest, lowest, step)
    (agreements,) = passed  # (one per count of examples required: 100 examples tell each level apart)
    assert agreements[0] == highest and all(a > b for a, b in itertools.pairwise(agreements))
    assert agreements[-1] == pytest.approx(lowest) and agreements[-1] >= lowest  # (0.03 - 2 * 0.01 gave 0.00999...98)


@pytest.mark.parametrize("name, bad", [("highest", "0.8"), ("lowest", True), ("step", "0.05"), ("step", False)])
def test_noisy_induction_names_an_argument_that_is_no_number(name, bad):
    arguments = {"highest": 0.8, "lowest": 0.5, "step": 0.05, name: bad}  # (a str or bool: "'<=' not supported")
    with pytest.raises(ValueError, match=f"{name} must be a real number, got {bad!r}"):
        induce_noisy_operator([(1, 2, 2), (3, 1, 3)], 3, **arguments)


def test_a_step_too_fine_to_count_its_agreements_in_floats_is_named():
    with pytest.raises(ValueError, match="step 5e-324 is too small"):  # (int(inf) failed with an OverflowError)
        induce_noisy_operator([(1, 2, 2), (3, 1, 3)], 3, 0.8, 0.5, 5e-324)


def test_operator_examples_skip_operands_another_operator_made_fractions():
    """Under a table whose ``/`` gives exact fractions, ``1/2a4`` pushes ``(1/2, 4, 2)`` down to ``a``: the
    integer programs cannot take it (it was truncated to ``(0, 4, 2)`` when checked, so ``i*j`` was refused)."""
    table = HINT_SEMANTICS.extend(operators={"/": FRACTION_DIVIDE}, name="fractions")
    examples = [("2a3", 6), ("3a4", 12), ("7a1", 7), ("1/2a4", 2), ("4/8a6", 3), ("1/3a9", 3)]
    hypothesis = table.extend(operators={"a": Operator(ADDITIVE, lambda a, b: 1)})
    assert operator_examples("a", examples, hypothesis) == [(2, 3, 6), (3, 4, 12), (7, 1, 7)]
    assert learn_operator("a", examples, table).program == Program(("*", ("i",), ("j",)))


@settings(max_examples=30, deadline=None)
@given(
    target=st.sampled_from(sorted(TARGETS)),
    pairs=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 12)), min_size=2, max_size=40, unique=True),
    searched=st.integers(1, 4),
    max_size=st.integers(4, 6),
)
def test_a_searched_subset_finds_a_program_as_small_as_a_search_of_every_example(target, pairs, searched, max_size):
    """Pruned by outputs on the searched subset alone, a sub-program that agreed there but not everywhere hid the
    smallest program that explains every example (None came back). And output vectors of small integers shared
    hashes far more often than 2^-64, so even a search of every example pruned programs it needed."""
    examples = [(i, j, TARGETS[target](i, j)) for i, j in pairs]
    everything = induce_operator(examples, max_size, max_search_examples=len(examples))
    program = induce_operator(examples, max_size, max_search_examples=searched)
    assert (program is None) == (everything is None)
    if program is not None and everything is not None:
        assert program.size == everything.size and all(program(i, j) == v for i, j, v in examples)


def test_programs_with_other_outputs_are_not_pruned_as_equal():
    halves = [(0, j, (j + 1) // 2) for j in range(6)]  # the constant 2 had the hash of 0 on these six examples
    assert str(induce_operator(halves, max_size=4)) == "ceil((j / 2))"  # was None
    enumerator = _Enumerator(np.zeros(64), np.zeros(64))
    vectors = np.unique(np.random.default_rng(0).integers(0, 50, size=(20_000, 64)), axis=0).astype(np.float64)
    assert len(np.unique(enumerator._hashes(vectors))) == len(vectors)  # (18,523 hashes before)


def test_a_counterexample_outside_the_searched_subset_is_searched_again():
    pairs = [(i, j) for i in range(30) for j in range(i + 1)][:80] + [(7, 9), (18, 26), (4, 13)]  # j > i: 3 of 83
    examples = [(i, j, max(i, j) + 1) for i, j in pairs]
    assert str(induce_operator(examples, max_size=5)) == "(1 + max(i, j))"  # was None: i + 1 fit the 64 searched
    separately = [induce_operator(examples, 5, agreement) for agreement in (1.0, 0.9)]
    assert induce_operators(examples, 5, (1.0, 0.9)) == separately and separately[1] is not None


def test_induction_takes_arrays_and_names_bad_arguments():
    table = [(i, j, max(i, j)) for i in range(4) for j in range(4)]
    assert str(induce_operator(np.array(table))) == str(induce_operator(torch.tensor(table))) == "max(i, j)"  # (were
    # "the truth value of an array is ambiguous")
    with pytest.raises(ValueError, match=r"triples of non-negative integers, got \(1, 2\) at 1"):  # ("inhomogeneous")
        induce_operator([(1, 2, 3), (1, 2)])
    with pytest.raises(ValueError, match="triples of non-negative integers, got 5 at 0"):
        induce_operator([5])
    for size in (0, 2.5):  # 0 gave None without a search, 2.5 failed in range()
        with pytest.raises(ValueError, match=f"max_size must be an int of at least 1, got {size}"):
            induce_operator(table, max_size=size)
    with pytest.raises(ValueError, match="max_bank must be an int of at least 1, got -5"):
        induce_operator(table, max_bank=-5)
    with pytest.raises(ValueError, match=r"min_agreement must be in \(0, 1\], got \['1'\]"):
        induce_operator(table, min_agreement="1")


def test_a_negative_result_gives_a_triple_only_where_an_operator_can_give_it():
    """``1-2a3 = -2``: HINT's ``max(0, 1 - b)`` is never -2 (the closed form gave ``b = 3``, so the triple
    ``(2, 3, 3)``); ordinary subtraction gives -2 for ``b = 3``."""
    examples = [("1-2a3", -2), ("9-2a3", 3)]
    hypothesis = HINT_SEMANTICS.extend(operators={"a": Operator(MULTIPLICATIVE, lambda a, b: 1)})
    assert operator_examples("a", examples, hypothesis) == [(2, 3, 6)]
    assert operator_examples("a", examples, hypothesis.extend(operators={"-": MINUS})) == [(2, 3, 3), (2, 3, 6)]


def test_a_negative_operand_or_value_is_no_example_of_an_induced_program():
    """Under ordinary subtraction ``(1-3)a2`` pushes ``(-2, 2, 0)`` down to ``a``, and ``5-9a1 = 7`` wants ``9a1 = -2``:
    the programs are over non-negative integers, and such a triple failed the whole search with a ValueError."""
    table = HINT_SEMANTICS.extend(operators={"-": MINUS}, name="integers")
    examples = [("(1-3)a2", 0), ("5-9a1", 7), ("2a3", 6), ("4a2", 8)]
    hypothesis = table.extend(operators={"a": Operator(MULTIPLICATIVE, lambda a, b: 1)})
    assert operator_examples("a", examples, hypothesis) == [(2, 3, 6), (4, 2, 8)]
    assert learn_operator("a", examples, table).program == Program(("*", ("i",), ("j",)))


@settings(max_examples=20, deadline=None)
@given(
    operands=st.lists(st.tuples(*[st.integers(0, 9)] * 3), min_size=4, max_size=12),
    spaces=st.lists(st.integers(0, 2), min_size=6, max_size=6),
)
def test_spaces_in_the_sentences_change_no_operator_example(operands, spaces):
    """The operator was located by its character index while the parse spans count tokens: spaced sentences lost their
    examples (or pushed a result down to a leaf, failing to unpack its children)."""
    examples = [(f"{a}+{b}a{c}", _evaluate(f"{a}+{b}a{c}")) for a, b, c in operands]
    spaced = [(" " * spaces[0] + "".join(ch + " " * spaces[k % 5 + 1] for k, ch in enumerate(s)), r) for s, r in examples]
    hypothesis = HINT_SEMANTICS.extend(operators={"a": Operator(ADDITIVE, lambda a, b: 1)})
    assert operator_examples("a", spaced, hypothesis) == operator_examples("a", examples, hypothesis)
    assert len(operator_examples("a", examples, hypothesis)) == len(examples)


def test_an_operator_is_learned_from_spaced_sentences():
    examples = [(" ".join(f"{i}+{j}a{k}"), _evaluate(f"{i}+{j}a{k}")) for i in range(3) for j in range(3) for k in range(5)]
    assert learn_operator("a", examples, HINT_SEMANTICS).meaning == "level 1: max(i, j)"


@settings(max_examples=30, deadline=None)
@given(big=st.integers(2**53 + 1, 10**400), place=st.integers(0, 2))
def test_examples_beyond_what_float64_holds_exactly_are_refused_naming_the_example(big, place):
    """The search runs in float64: beyond 2**53 an example was misread (a program that explains it was not found),
    beyond float range the search raised a bare OverflowError."""
    triple = [3, 4, 7]
    triple[place] = big
    with pytest.raises(ValueError, match=r"example 1 .* holds an integer beyond 2\*\*53"):
        induce_operator([(1, 1, 2), tuple(triple)], max_size=3)


def test_examples_up_to_2_to_the_53_are_searched_exactly():
    limit = 2**53
    assert str(induce_operator([(limit, 0, limit), (limit - 2, 1, limit - 1), (3, 4, 7)], max_size=3)) == "(i + j)"


MEANS = {"ceil(((i + j) / 2))": lambda i, j: -(-(i + j) // 2), "floor(((i + j) / 2))": lambda i, j: (i + j) // 2}


@settings(max_examples=25, deadline=None)
@given(
    target=st.sampled_from(sorted(MEANS)),
    large=st.lists(st.tuples(st.integers(2**50, 2**53), st.integers(0, 2**53)), min_size=1, max_size=4),
    small=st.booleans(),
)
def test_values_past_2_to_the_53_inside_the_search_hide_no_program(target, large, small):
    """Examples up to 2**53 are taken, but a program's values on them may pass it, where float64 rounds: ``i + j`` of
    ``2**53 + 1`` was ``2**53``, so ``ceil((i + j) / 2)`` missed ``(2**53, 1, 2**52 + 1)`` and a program of size 8 (or,
    without small examples, none) came back. Such values are unknown to the search, and candidates are checked exactly."""
    mean = MEANS[target]
    pairs = [*large, *((i, j) for i in range(5) for j in range(5) if small)]
    program = induce_operator([(i, j, mean(i, j)) for i, j in pairs], max_size=6)
    assert program is not None and program.size <= 6 and all(program(i, j) == mean(i, j) for i, j in pairs)


def test_the_mean_of_2_to_the_53_and_1_is_found_at_its_size():
    examples = [(2**53, 1, 2**52 + 1)] + [(i, j, -(-(i + j) // 2)) for i in range(10) for j in range(10)]
    assert str(induce_operator(examples)) == "ceil(((i + j) / 2))"  # was floor(((i + (j + 1)) / 2)), of size 8


@settings(max_examples=40, deadline=None)
@given(
    rounding=st.sampled_from(["ceil", "floor"]),
    divisors=st.lists(st.integers(10**9, 2**53), min_size=1, max_size=3),
    data=st.data(),
)
def test_integer_division_is_searched_exactly_up_to_2_to_the_53(rounding, divisors, data):
    """HINT's ``ceil(i / j)`` (and ``floor``) on divisors beyond 10^9: a quotient within 10^-9 of an integer, such as
    ``(10**10 + 1) / 10**10``, was snapped to that integer, so the program was not found (None)."""
    rounded = (lambda i, j: -(-i // j)) if rounding == "ceil" else (lambda i, j: i // j)
    large = []
    for j in divisors:
        i = min(data.draw(st.sampled_from([j + 1, j - 1, 2 * j + 1, 3 * j - 1])), 2**53)  # (examples stop at 2**53)
        large.append((i, j, rounded(i, j)))
    small = [(i, j, rounded(i, j)) for i, j in ((7, 2), (9, 3), (1, 4), (8, 3))]  # only ceil(i / j) or floor explain these
    assert str(induce_operator(small + large, max_size=4)) == f"{rounding}((i / j))"


def test_operator_examples_take_numpy_results_as_python_ints_and_skip_results_of_none():
    """``(2 a 3) - 9 = r`` wants ``2 a 3 = r + 9``: for an ``np.int64`` result near the int64 maximum that sum wrapped
    around (no triple); a result of ``None`` failed on ``None + 9``."""
    hypothesis = HINT_SEMANTICS.extend(operators={"a": Operator(ADDITIVE, lambda a, b: 1)})
    top = 2**63 - 1
    for result in (top, np.int64(top)):
        assert operator_examples("a", [("(2a3)-9", result)], hypothesis) == [(2, 3, top + 9)]
    assert operator_examples("a", [("(2a3)-9", None), ("4a5", 6)], hypothesis) == [(4, 5, 6)]


def test_a_bank_cut_short_still_rounds_every_program_of_its_size():
    """With ``max_bank`` cutting the bank of size 3 before ``i / j``, ``ceil(i / j)`` (size 4) was not tried: None came
    back, as if no program up to size 4 explained HINT's division."""
    examples = [(i, j, -(-i // j)) for i, j in ((7, 2), (9, 3), (1, 4), (8, 3))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing up to size 4 was missed: no warning
        assert str(induce_operator(examples, max_size=4, max_bank=30)) == "ceil((i / j))"


def test_a_bank_cut_short_that_may_change_the_result_says_so():
    """``1 + max(i, j)`` (size 5) needs ``max(i, j)`` from the bank of size 3, cut short before it: None (or a program of
    size 7) came back without a word, as if it were the smallest that explains the examples."""
    examples = [(i, j, max(i, j) + 1) for i in range(5) for j in range(5)]
    for max_size, found in ((5, "None"), (7, "max((i + 1), (j + 1))")):
        with pytest.warns(UserWarning, match="bank of size 3 was cut short at max_bank=30 candidates: programs of size 5"):
            assert str(induce_operator(examples, max_size=max_size, max_bank=30)) == found
    assert str(induce_operator(examples, max_size=5)) == "(1 + max(i, j))"
