"""Learning everything from results on symbol input: roles, values, programs and precedence of
anonymous classes; the grounding's table, printout and JSON."""

import copy
import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.hint import EVAL_SUBSETS, main_split
from neurosym.pipelines.concepts import ConceptNotLearned
from neurosym.pipelines.ground_symbols import (
    HINT_ALPHABET,
    GroundingConfig,
    accuracy_by_subset,
    anonymise,
    class_symbols,
    grammatical,
    learn_grounding,
    learn_programs,
    learn_values,
    random_permutation,
)
from neurosym.pipelines.grounding import Grounding, compare_grounding
from neurosym.semantics import HINT_SEMANTICS, BatchSolver, Operator
from neurosym.semantics.induction import Program


@pytest.fixture(scope="module")
def split():
    return main_split(scale=0.005, seed=0, cache=False, progress=False)


@settings(max_examples=4, deadline=None)
@given(permutation=st.permutations(range(16)))
def test_learns_hints_table_under_any_permutation_of_the_classes(split, permutation):
    train, test = split["train"], split["test"]
    grounding = learn_grounding(anonymise(train.expr, permutation), train.res.tolist(), 16)
    assert compare_grounding(grounding, HINT_SEMANTICS, class_symbols(permutation)).equal
    scores = accuracy_by_subset(grounding, anonymise(test.expr, permutation), test.res.tolist(), list(test.eval))
    assert scores["avg"] == 1.0 and list(scores) == [*EVAL_SUBSETS, "avg"]  # (the split holds I SS SL LS LL)
    with pytest.raises(ValueError, match=rf"{len(test)} sentences, {len(test) - 1} results and {len(test)} subsets"):
        accuracy_by_subset(grounding, anonymise(test.expr, permutation), test.res.tolist()[1:], list(test.eval))


def test_tolerates_a_few_wrong_results(split):
    train = split["train"]
    permutation = random_permutation(16, 1)
    results = train.res.copy()
    wrong = np.random.default_rng(0).choice(len(results), len(results) // 50, replace=False)
    results[wrong] += 1
    config = GroundingConfig(min_agreement=0.9)
    grounding = learn_grounding(anonymise(train.expr, permutation), results.tolist(), 16, config)
    assert compare_grounding(grounding, HINT_SEMANTICS, class_symbols(permutation)).equal


def test_noisy_results_need_the_agreement_lowered(split):
    train = split["train"]
    permutation = random_permutation(16, 4)
    results = train.res.copy()
    results[np.random.default_rng(1).random(len(results)) < 0.25] += 1  # a quarter wrong, as misread operands make them
    sentences = anonymise(train.expr, permutation)
    with pytest.raises(ConceptNotLearned, match="explains 80% of operator class"):
        learn_grounding(sentences, results.tolist(), 16, GroundingConfig(min_agreement=0.8))
    grounding = learn_grounding(sentences, results.tolist(), 16, GroundingConfig(min_agreement=0.8, lowest_agreement=0.5))
    assert compare_grounding(grounding, HINT_SEMANTICS, class_symbols(permutation)).equal
    with pytest.raises(ValueError, match="lowest_agreement"):
        GroundingConfig(min_agreement=0.8, lowest_agreement=0.9)


def test_comparison_names_a_swapped_precedence(split):
    train = split["train"]
    permutation = random_permutation(16, 2)
    grounding = learn_grounding(anonymise(train.expr, permutation), train.res.tolist(), 16)
    swapped = Grounding(grounding.roles, grounding.values, grounding.programs, {c: 3 - v for c, v in grounding.levels.items()})
    mismatches = compare_grounding(swapped, HINT_SEMANTICS, class_symbols(permutation)).mismatches
    assert len(mismatches) == 4 and all("level" in m for m in mismatches)


def test_a_number_never_seen_alone_is_reported():
    sentences = [(0,), (0, 2, 1), (1, 2, 0), (3, 0, 2, 1, 4, 2, 0)]
    with pytest.raises(ConceptNotLearned, match=r"\[1\] never occur alone"):
        learn_grounding(sentences, [0, 1, 1, 2], 5)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="reorder"):
        anonymise(["1+2"], [0] * 16)
    with pytest.raises(ValueError, match="not in the alphabet"):
        anonymise(["1x2"], list(range(16)))
    with pytest.raises(ValueError, match="class ids"):
        learn_grounding([(0, 16, 1)], [1], 16)


@pytest.mark.parametrize("bad", [None, 2.5, "3", True])
def test_a_result_that_is_no_int_is_named_by_each_step_that_reads_results(bad):
    """``None`` failed in ``result >= 0`` with a ``TypeError`` (and in ``int()`` for the values); 2.5 was truncated."""
    roles, values = ["number", "number", "operator"], {0: 0, 1: 1}
    sentences, results = [(0,), (1,), (0, 2, 1), (1, 2, 0)], [0, 1, 1, bad]
    message = rf"results must be integers, got {re.escape(repr(bad))} at 3"
    with pytest.raises(ValueError, match=message):
        learn_programs(sentences, results, roles, values)
    with pytest.raises(ValueError, match=message):
        learn_values(sentences, results, roles)
    with pytest.raises(ValueError, match=message):
        learn_grounding(sentences, results, 3)
    assert learn_values(sentences, [0, np.int64(1), 1, 1], roles) == values  # (numpy's ints are ints)


KIND_SYMBOLS = "1+()"  # a sentence of kinds written with one symbol per kind


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=9), min_size=1, max_size=20))
def test_grammaticality_of_kinds_agrees_with_the_solver(rows):
    lengths = np.array([len(r) for r in rows])
    kinds = np.zeros((len(rows), lengths.max()), dtype=np.int64)
    for i, row in enumerate(rows):
        kinds[i, : len(row)] = row
    expected = BatchSolver().grammatical(["".join(KIND_SYMBOLS[k] for k in row) for row in rows])
    assert grammatical(kinds, lengths).tolist() == expected.tolist()


def _odd_grounding() -> Grounding:
    """Two numbers show the same digit value and one value has two digits: both get letters."""
    roles = ("number", "operator", "open", "number", "close", "number", "operator", "unused")
    programs = {1: Program(("max", ("i",), ("j",))), 6: Program(("ceil", ("/", ("i",), ("const", 2))))}
    return Grounding(roles, {0: 3, 3: 3, 5: 12}, programs, {1: 1, 6: 2})


def test_display_symbols_and_table_follow_the_learned_meaning():
    grounding = _odd_grounding()
    assert grounding.symbols == ("e", "f", "(", "g", ")", "h", "i", "j")  # a to d, x and y are few-shot concepts
    # f = max at level 1, i = ceil(i / 2) at level 2: e f (g i h) -> max(3, ceil(3 / 2)) = 3
    assert grounding.solve([(0, 1, 2, 3, 6, 5, 4), (5, 6, 0, 1, 3)]) == [3, 6]
    assert grounding.solve([(7, 1, 0)]) == [None]


def test_a_used_grounding_and_its_table_pickle_and_copy():
    # (its table's rules were lru_caches of the programs: "'functools._lru_cache_wrapper' object has no attribute
    # '__qualname__'" once the table had been read, for the grounding, its table and its solver alike)
    grounding = _odd_grounding()
    sentences = [(0, 1, 2, 3, 6, 5, 4), (5, 6, 0, 1, 3), (7, 1, 0)]
    expected = grounding.solve(sentences)
    for twin in (pickle.loads(pickle.dumps(grounding)), copy.deepcopy(grounding)):
        assert twin.solve(sentences) == expected
    for table in (pickle.loads(pickle.dumps(grounding.table)), copy.deepcopy(grounding.table)):
        assert BatchSolver(table).solve([grounding.sentence(s) for s in sentences]) == expected
        assert table.operators["f"].value(3, 12) == 12 and table.operators["i"].value(3, 0) == 2


@pytest.mark.parametrize("bad", [-1, 8, True, 1.0])
def test_a_class_id_outside_the_classes_is_named_rather_than_read_from_the_end(bad):
    """``-1``, the padding of decoded tokens, was read as the last class (``(5, 6, 0, -1)`` as ``h i e j``), and a bool
    as class 1."""
    grounding = _odd_grounding()
    message = rf"class ids must be in 0..7, got {re.escape(repr(bad))} at position 3 of \[5, 6, 0, {re.escape(repr(bad))}\]"
    with pytest.raises(ValueError, match=message):
        grounding.solve([(5, 6, 0, 3), (5, 6, 0, bad)])
    assert grounding.sentence((5, 6, 0, 3)) == "hieg"


def test_printout_and_json_round_trip(tmp_path):
    grounding = _odd_grounding()
    text = grounding.format()
    assert text.splitlines()[0].split() == ["class", "role", "symbol", "meaning", "level"]
    assert "max(i, j)" in text and "ceil((i / 2))" in text and len(text.splitlines()) == 9
    loaded = Grounding.load(grounding.save(tmp_path / "grounding.json"))
    assert loaded.to_json() == grounding.to_json() and loaded.symbols == grounding.symbols
    assert loaded.solve([(5, 6, 0, 1, 3)]) == [6]


def test_a_reference_rule_that_raises_is_compared_as_undefined():
    """The reference ``a // b`` raises for ``b = 0``, where the induced ``floor(i / j)`` is undefined: they agree."""
    reference = HINT_SEMANTICS.extend(operators={"/": Operator(2, lambda a, b: a // b)})
    floor_divide = Program(("floor", ("/", ("i",), ("j",))))
    grounding = Grounding(("number", "operator", "open", "close"), {0: 1}, {1: floor_divide}, {1: 2})
    assert compare_grounding(grounding, reference, ("1", "/", "(", ")")).equal


def test_invalid_groundings_are_refused():
    with pytest.raises(ValueError, match="one open bracket"):
        Grounding(("number", "operator", "close", "close"), {0: 1}, {1: Program(("i",))}, {1: 1})
    with pytest.raises(ValueError, match="programs must cover"):
        Grounding(("number", "operator", "open", "close"), {0: 1}, {}, {1: 1})
    with pytest.raises(ValueError, match="lacks"):
        Grounding.from_json({"roles": []})


def test_class_symbols_invert_the_permutation():
    permutation = random_permutation(16, 5)
    symbols = class_symbols(permutation)
    assert "".join(symbols[c] for c in anonymise([HINT_ALPHABET], permutation)[0]) == HINT_ALPHABET
