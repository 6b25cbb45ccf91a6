"""Top-down back-search finds the known corrections, including through set-valued inverses."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.pipelines.abduction import Abducer
from neurosym.pipelines.decoding import CLOSE_CLASS, NUMBER, OPEN_CLASS, OPERATOR, sentence_templates
from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, Operator, evaluate
from neurosym.semantics.operators import MINUS

VOCAB = list("0123456789+-*/()")


def _log_probs(sentence: str, second: dict[int, dict[str, float]] | None = None, confidence: float = 0.9) -> np.ndarray:
    """Confident readings of ``sentence``; ``second[position][symbol]`` gives chosen alternatives a probability."""
    probs = np.full((len(sentence), len(VOCAB)), 1e-4)
    for position, symbol in enumerate(sentence):
        probs[position, VOCAB.index(symbol)] = confidence
        for other, p in (second or {}).get(position, {}).items():
            probs[position, VOCAB.index(other)] = p
    return np.log(probs / probs.sum(axis=1, keepdims=True))


@pytest.fixture(scope="module")
def abducer():
    return Abducer(VOCAB)


def test_correct_sentence_is_returned_unchanged(abducer):
    found = abducer.abduce("3+4*2", _log_probs("3+4*2"), 11)
    assert found.sentence == "3+4*2" and found.changes == 0


def test_single_digit_correction_picks_the_most_probable_fix(abducer):
    # 7 - b = 3 needs b = 4 on the right; on the left a = 7 would need... a - 9 = 3 -> a = 12 (no digit).
    found = abducer.abduce("7-9", _log_probs("7-9", {2: {"4": 0.05}}), 3)
    assert found.sentence == "7-4" and found.changes == 1


def test_clamped_minus_set_valued_inverse(abducer):
    # 9 - 2 = 7 but the label is 0: any left value <= 2 works, or any right value >= 9.
    found = abducer.abduce("9-2", _log_probs("9-2", {0: {"1": 0.02, "2": 0.01}, 2: {"9": 0.005}}), 0)
    assert found.sentence == "1-2"
    found = abducer.abduce("9-2", _log_probs("9-2", {0: {"1": 0.002}, 2: {"9": 0.05}}), 0)
    assert found.sentence == "9-9"


def test_ceiling_division_set_valued_inverse(abducer):
    # ceil(9 / 4) = 3; label 2: the left must lie in (4, 8], or the right in [5, 8].
    found = abducer.abduce("9/4", _log_probs("9/4", {0: {"7": 0.03, "4": 0.2}}), 2)
    assert found.sentence == "7/4"  # "4/4" is more probable but gives 1
    found = abducer.abduce("9/4", _log_probs("9/4", {2: {"6": 0.04, "9": 0.3}}), 2)
    assert found.sentence == "9/6"  # "9/9" is more probable but gives 1


def test_a_rule_that_raises_for_some_operands_is_searched_around():
    """Floor division written as ``a // b`` raises for ``b = 0``: such a reading has no value, and neither has ``/``
    proposed in place of ``*`` before a zero."""
    abducer = Abducer(VOCAB, HINT_SEMANTICS.extend(operators={"/": Operator(2, lambda a, b: a // b)}))
    assert abducer.abduce("8/0", _log_probs("8/0", {2: {"2": 0.05}}), 4).sentence == "8/2"
    assert abducer.abduce("6*0", _log_probs("6*0", {2: {"1": 0.05}}), 6).sentence == "6*1"


def test_inverse_pushed_through_two_levels(abducer):
    # (2+3)*4 = 20; label 28 needs the inner sum to be 7: 2 -> 4 or 3 -> 5.
    found = abducer.abduce("(2+3)*4", _log_probs("(2+3)*4", {3: {"5": 0.05}, 1: {"4": 0.01}}), 28)
    assert found.sentence == "(2+5)*4"


def test_operator_replacement_same_and_other_precedence(abducer):
    assert abducer.abduce("6+3", _log_probs("6+3", {1: {"*": 0.05}}), 18).sentence == "6*3"
    # 2+3*4 = 14; "2*3*4" = 24 changes precedence of the first operator: verified by execution.
    assert abducer.abduce("2+3*4", _log_probs("2+3*4", {1: {"*": 0.05}}), 24).sentence == "2*3*4"


def test_two_changes_when_one_is_not_enough(abducer):
    # 1+1 = 2; label 18 needs two changes: the uncertain digits read as 9 give 9+9.
    probs = {0: {"9": 0.08}, 2: {"9": 0.08}}
    found = abducer.abduce("1+1", _log_probs("1+1", probs, confidence=0.6), 18)
    assert found.sentence == "9+9" and found.changes == 2
    assert Abducer(VOCAB, max_changes=1).abduce("1+1", _log_probs("1+1", probs, confidence=0.6), 18) is None


def test_bracket_shape_is_abduced_for_short_sentences(abducer):
    # The glyphs of "(2+3)*4" misread as a bracket-free sentence of another shape.
    wrong = "5-6*7+4"
    probs = {0: {"(": 0.3}, 1: {"2": 0.3}, 2: {"+": 0.3}, 3: {"3": 0.3}, 4: {")": 0.3}, 5: {"*": 0.3}}
    found = abducer.abduce(wrong, _log_probs(wrong, probs, confidence=0.6), 20)
    assert found.sentence == "(2+3)*4"
    assert evaluate(found.sentence) == 20


def test_impossible_label_gives_none_and_bad_shapes_raise(abducer):
    assert abducer.abduce("1+1", _log_probs("1+1"), 10_000) is None
    with pytest.raises(ValueError, match="shape"):
        abducer.abduce("1+1", np.zeros((2, len(VOCAB))), 2)
    with pytest.raises(ValueError, match="position 2: symbol 'a' of '1\\+a' is not in the vocabulary"):
        abducer.abduce("1+a", np.zeros((3, len(VOCAB))), 2)
    for target in ("2", None, 2.0, True, np.True_):  # (str and None failed deep in the preimages)
        with pytest.raises(TypeError, match="target must be an int, got"):
            abducer.abduce("1+1", _log_probs("1+1"), target)
    assert abducer.abduce("1+1", _log_probs("1+1"), np.int64(3)) is not None
    log_probs = _log_probs("1+1")
    log_probs[1, 0] = np.nan
    with pytest.raises(ValueError, match="log_probs of '1\\+1' hold NaN at position 1"):  # (came back with log_prob nan)
        abducer.abduce("1+1", log_probs, 3)


def test_a_log_probability_of_plus_infinity_is_refused_by_position(abducer):
    """A +inf is no log-probability: the correction through it came back with the log-probability +inf."""
    log_probs = _log_probs("1+1")
    log_probs[2, VOCAB.index("2")] = np.inf
    with pytest.raises(ValueError, match="log_probs of '1\\+1' hold \\+inf at position 2"):
        abducer.abduce("1+1", log_probs, 3)


def test_concept_operators_have_inverses():
    vocab = VOCAB + ["a"]
    abducer = Abducer(vocab, HINT_FEWSHOT_SEMANTICS)
    probs = np.full((3, len(vocab)), 1e-4)
    for position, symbol in enumerate("3a5"):
        probs[position, vocab.index(symbol)] = 0.9
    probs[2, vocab.index("8")] = 0.05
    found = abducer.abduce("3a5", np.log(probs), 8)  # max(3, 5) = 5; label 8 -> max(3, 8)
    assert found.sentence == "3a8"


def test_a_concept_operator_passes_on_wanted_values_beyond_any_scan():
    """min(a, 5) = 5 for every a >= 5: the most probable fix, 9*9*2 = 162, lies beyond the scan up to 100 that
    stood for that preimage, which found only the less probable 9*9*1."""
    vocab = VOCAB + ["b"]
    read = "(9*9*0)b5"
    probs = np.full((len(read), len(vocab)), 1e-4)
    for position, symbol in enumerate(read):
        probs[position, vocab.index(symbol)] = 0.9
    probs[5, vocab.index("2")] = 0.5
    probs[5, vocab.index("1")] = 0.01
    found = Abducer(vocab, HINT_FEWSHOT_SEMANTICS, max_changes=1).abduce(read, np.log(probs), 5)
    assert found.sentence == "(9*9*2)b5"


@pytest.mark.parametrize(
    ("read", "target", "expected"),
    [
        ("6/0+3", 9, "6+0+3"),  # the reading has no value: the fix is inside 6/0
        ("6-1/5", 10, "6-1+5"),  # 1/5 cannot change to anything useful, but changing its operator's level can
    ],
)
def test_single_change_is_found_where_no_wanted_value_reaches_it(abducer, read, target, expected):
    second = {position: {symbol: 0.3} for position, symbol in enumerate(expected) if symbol != read[position]}
    found = abducer.abduce(read, _log_probs(read, second, confidence=0.6), target)
    assert (found.sentence, found.changes) == (expected, 1)


def _single_changes(abducer: Abducer, read: str) -> list[str]:
    """Every sentence one same-class symbol away from ``read``."""
    classes = ["0123456789", "+-*/"]
    return [
        read[:position] + other + read[position + 1 :]
        for position, symbol in enumerate(read)
        for other in next((c for c in classes if symbol in c), "")
        if other != symbol
    ]


ONE_CHANGE = Abducer(VOCAB, max_changes=1, max_template_length=1)  # (no shape search)


def _one_change_problem(
    length: int, template: int, seed: int, planted: int, ruled_out: float = 0.0, abducer: Abducer = ONE_CHANGE
) -> tuple[str, np.ndarray, int, float] | None:
    """A reading of the ``template``-th shape of ``length`` symbols (the most probable symbol of each class), its
    log-probabilities ``[length, V]`` (a share ``ruled_out`` of the other entries ``-inf``), a target drawn among the
    values of its one-change corrections under ``abducer``'s semantics and the best log-probability of those that give
    it (``None``: no target)."""
    rng = np.random.default_rng(seed)
    shape = sentence_templates(length)[template % len(sentence_templates(length))]
    log_probs = np.log(rng.dirichlet(np.full(len(VOCAB), 0.3), size=length))
    members = {NUMBER: "0123456789", OPERATOR: "+-*/", OPEN_CLASS: "(", CLOSE_CLASS: ")"}
    read = "".join(max(members[c], key=lambda s: log_probs[p, VOCAB.index(s)]) for p, c in enumerate(shape))
    ruled = rng.random(log_probs.shape) < ruled_out
    ruled[np.arange(length), [VOCAB.index(s) for s in read]] = False
    log_probs[ruled] = -np.inf
    values = {fixed: abducer.value(fixed) for fixed in _single_changes(abducer, read)}
    targets = sorted({v for v in values.values() if v is not None and v != abducer.value(read)})
    if not targets:
        return None
    target = targets[planted % len(targets)]
    return read, log_probs, target, max(abducer.score(fixed, log_probs) for fixed, v in values.items() if v == target)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([3, 5, 7]), st.integers(0, 100), st.integers(0, 2**32 - 1), st.integers(0, 10**6))
def test_one_change_search_matches_brute_force(length, template, seed, planted):
    """With one change allowed, the back-search returns the most probable of all one-change corrections (the target
    is the value of one of them, drawn)."""
    if (problem := _one_change_problem(length, template, seed, planted)) is None:
        return
    read, log_probs, target, best = problem
    found = ONE_CHANGE.abduce(read, log_probs, target)
    assert found is not None and found.changes == 1 and found.log_prob == pytest.approx(best)
    assert ONE_CHANGE.value(found.sentence) == target


INTEGER_ONE_CHANGE = Abducer(VOCAB, HINT_SEMANTICS.extend(operators={"-": MINUS}, name="integers"), 1, max_template_length=1)
"""One change under semantics whose values may be negative (ordinary subtraction)."""


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([3, 5, 7]), st.integers(0, 100), st.integers(0, 2**32 - 1), st.integers(0, 10**6))
def test_one_change_search_matches_brute_force_where_values_may_be_negative(length, template, seed, planted):
    """Under ordinary subtraction values may be negative, which the preimages assumed they are not: the closed form of
    ``+`` wanted no value of ``8`` in ``1-4+8`` for the result -3 (``1-4+0``), so no correction was found, and a scan
    from 0 never tried ``8-5 = -4`` in ``8-5-2`` for -6 (``1-5-2``), so a less probable one came back."""
    if (problem := _one_change_problem(length, template, seed, planted, abducer=INTEGER_ONE_CHANGE)) is None:
        return
    read, log_probs, target, best = problem
    found = INTEGER_ONE_CHANGE.abduce(read, log_probs, target)
    assert found is not None and found.changes == 1 and found.log_prob == pytest.approx(best)
    assert INTEGER_ONE_CHANGE.value(found.sentence) == target


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([1, 3, 5, 7]), st.integers(0, 100), st.integers(0, 2**32 - 1), st.integers(0, 10**6))
def test_a_symbol_the_reader_rules_out_is_never_abduced(length, template, seed, planted):
    """Where the reader scores symbols ``-inf``, the one-change search returns the most probable correction among those
    it leaves possible, ``None`` where there is none (a ruled-out one was returned with log-probability ``-inf``, and
    ``-inf - -inf`` made scores NaN), and the wider searches return none either."""
    if (problem := _one_change_problem(length, template, seed, planted, ruled_out=0.5)) is None:
        return
    read, log_probs, target, best = problem
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (NaN arithmetic warned)
        found = ONE_CHANGE.abduce(read, log_probs, target)
        wider = Abducer(VOCAB, max_changes=3).abduce(read, log_probs, target)
    if np.isfinite(best):
        assert found is not None and found.changes == 1 and found.log_prob == pytest.approx(best)
    else:
        assert found is None
    assert wider is None or (np.isfinite(wider.log_prob) and ONE_CHANGE.value(wider.sentence) == target)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_corruptions_are_repaired(abducer, seed):
    rng = np.random.default_rng(seed)
    repaired = trials = 0
    while trials < 30:
        while True:
            truth = "".join(str(rng.integers(10)) if i % 2 == 0 else "+-*/"[rng.integers(4)] for i in range(7))
            if evaluate(truth) is not None:
                break
        position = int(rng.integers(7))
        wrong = list(truth)
        wrong[position] = str(rng.integers(10)) if position % 2 == 0 else "+-*/"[rng.integers(4)]
        wrong = "".join(wrong)
        if evaluate(wrong) == evaluate(truth):
            continue  # nothing to correct
        trials += 1
        log_probs = _log_probs(wrong, {position: {truth[position]: 0.2}}, confidence=0.6)
        found = abducer.abduce(wrong, log_probs, evaluate(truth))
        assert found is not None and evaluate(found.sentence) == evaluate(truth)
        repaired += found.sentence == truth
    assert repaired >= 27  # the planted second reading is the most probable fix nearly always


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_changes": 2.5}, "max_changes must be an int of at least 1, got 2.5"),
        ({"beam": 0}, "beam must be an int of at least 1, got 0"),
        ({"max_template_length": -1}, "max_template_length must be an int of at least 1"),
    ],
)
def test_abducer_names_search_sizes_that_are_not_positive_ints(options, message):
    with pytest.raises(ValueError, match=message):
        Abducer(VOCAB, **options)


def test_a_numpy_target_beyond_int64_products_is_abduced_exactly(abducer):
    """9^20 / 9 = 9^19 fits in int64, but the left operand 9^20 wanted of the division does not: with the target an
    np.int64 its preimage overflowed (a wrapped interval or an OverflowError) instead of reaching the misread 8."""
    read = "8" + "*9" * 19 + "/9"
    for target in (9**19, np.int64(9**19)):
        found = abducer.abduce(read, _log_probs(read), target)
        assert found is not None and found.sentence == "9" + read[1:] and found.changes == 1
