import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neurosym.data.pvr import VectorPVR, block_rule, sequential_rule, vector_rule
from neurosym.metrics.noise_sensitivity import (
    bits_per_digit,
    bits_to_digits,
    noise_sensitivity,
    noise_sensitivity_curve,
)
from neurosym.semantics.pvr_rules import AGGREGATIONS, PVRRule, induce_rule


def test_noise_sensitivity_of_constant_is_zero_and_of_parity_is_half():
    rng = np.random.default_rng(0)
    for delta in (0.05, 0.3, 0.5):
        assert noise_sensitivity(lambda d: np.zeros(len(d)), 11, 10, delta, 2000, rng) == 0.0
    parity = noise_sensitivity(lambda d: d.sum(axis=1) % 2, 16, 2, 0.5, 20_000, rng)
    assert abs(parity - 0.5) < 0.015
    # parity of n bits at small delta: 1/2 - (1 - 2 delta)^n / 2
    small = noise_sensitivity(lambda d: d.sum(axis=1) % 2, 16, 2, 0.02, 20_000, rng)
    assert abs(small - (0.5 - 0.5 * (1 - 0.04) ** 16)) < 0.015
    assert noise_sensitivity(lambda d: d[:, 0], 4, 10, 0.0, 500, rng) == 0.0


def test_bits_to_digits_reads_unsigned_binary_mod_k():
    bits = np.array([[0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1]])  # 3, 10, 15 in 4-bit groups
    assert bits_to_digits(bits, 10).tolist() == [[3, 0, 5]]
    with pytest.raises(ValueError, match="4-bit digits"):
        bits_to_digits(np.zeros((1, 6), dtype=int), 10)
    with pytest.raises(ValueError, match="probability"):
        noise_sensitivity(lambda d: d[:, 0], 2, 10, 1.5)


@settings(max_examples=100, deadline=None)
@given(bits=st.integers(1, 62), offset=st.sampled_from([-1, 0, 1]))
def test_bits_per_digit_is_the_fewest_bits_that_hold_every_class(bits, offset):
    classes = max(2, 2**bits + offset)  # (just past a power of two, from 2**49 + 1 on, took one bit too few)
    width = bits_per_digit(np.int64(classes))
    assert 2 ** (width - 1) < classes <= 2**width


def test_mod_sum_gets_more_sensitive_with_complexity_and_min_does_not():
    rng = np.random.default_rng(1)
    deltas = np.array([0.02, 0.1])
    mod_sum = [noise_sensitivity_curve(vector_rule(m).label, 11, 10, deltas, 4000, 2, rng)[0].mean() for m in (0, 3)]
    minimum = [noise_sensitivity_curve(vector_rule(m, "min").label, 11, 10, deltas, 4000, 2, rng)[0].mean() for m in (0, 5)]
    assert mod_sum[1] > mod_sum[0] + 0.1
    assert minimum[1] < minimum[0]


@settings(max_examples=50, deadline=None)
@given(
    length=st.integers(2, 8),
    data=st.data(),
    aggregation=st.sampled_from(sorted(AGGREGATIONS)),
    boundary=st.sampled_from(["wrap", "truncate"]),
    classes=st.integers(2, 5),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_labels_from_each_start_are_those_of_the_rule_that_starts_every_window_there(
    length, data, aggregation, boundary, classes, seed
):
    complexity, position = data.draw(st.integers(0, length - 2)), data.draw(st.integers(0, length - 1))
    digits = np.random.default_rng(seed).integers(0, classes, size=(data.draw(st.integers(0, 6)), length))
    rule = PVRRule(length, (0,) * classes, position, complexity, aggregation, boundary)
    each = rule.labels_from_each_start(digits)
    assert each.shape == (length - 1, len(digits)) and each.dtype == np.int64
    for start in range(length - 1):
        starting_there = PVRRule(length, (start,) * classes, position, complexity, aggregation, boundary)
        assert each[start].tolist() == starting_there.label(digits).tolist()


@settings(max_examples=8, deadline=None)
@given(
    complexity=st.integers(0, 3),
    aggregation=st.sampled_from(sorted(AGGREGATIONS)),
    boundary=st.sampled_from(["wrap", "truncate"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_induction_recovers_a_vector_rule_from_a_few_hundred_examples(complexity, aggregation, boundary, seed):
    rule = vector_rule(complexity, aggregation, boundary=boundary)
    rng = np.random.default_rng(seed)
    digits, labels = VectorPVR(rule).sample(400, rng)
    found = induce_rule(digits, labels, complexities=range(5), pointer_positions=[0, 5])
    assert found.agreement == 1.0
    fresh, fresh_labels = VectorPVR(rule).sample(2000, rng)
    assert (found.rule.label(fresh) == fresh_labels).all()


def test_induction_finds_block_table_and_pointer_position_despite_label_noise():
    rng = np.random.default_rng(3)
    rule = block_rule(pointer_position=2)
    digits = rng.integers(0, 10, size=(300, 4))
    labels = rule.label(digits)
    flip = rng.random(300) < 0.05
    labels[flip] = (labels[flip] + 1) % 10
    found = induce_rule(digits, labels)
    assert found.rule.pointer_position == 2 and found.rule.pointer_table == rule.pointer_table
    assert found.rule.complexity == 0 and 0.9 < found.agreement < 1.0
    sequential = sequential_rule(length=7, complexity=1, aggregation="max")
    digits = rng.integers(0, 10, size=(300, 7))
    assert induce_rule(digits, sequential.label(digits)).rule.label(digits).tolist() == sequential.label(digits).tolist()
    with pytest.raises(ValueError, match="labels must be integers, got dtype float64"):  # (agreed with no rule: 0.0)
        induce_rule(digits, np.full(300, np.nan))


def test_induction_rejects_bad_input():
    with pytest.raises(ValueError, match="labels of shape"):
        induce_rule(np.zeros((3, 4), dtype=int), np.zeros(2, dtype=int))
    with pytest.raises(ValueError, match="zero examples"):
        induce_rule(np.zeros((0, 4), dtype=int), np.zeros(0, dtype=int))
    with pytest.raises(ValueError, match="search space is empty"):
        induce_rule(np.zeros((3, 4), dtype=int), np.zeros(3, dtype=int), aggregations=())
    assert isinstance(induce_rule(np.zeros((3, 4), dtype=int), np.zeros(3, dtype=int)).rule, PVRRule)
    for name, value in (("aggregations", "median"), ("boundaries", "wrap")):  # (their letters were searched)
        with pytest.raises(TypeError, match=rf"{name} must be a sequence of names, got the string '{value}'"):
            induce_rule(np.zeros((3, 4), dtype=int), np.zeros(3, dtype=int), **{name: value})
    with pytest.raises(ValueError, match="pointer_position 7 is outside 0..3"):  # (was numpy's IndexError)
        induce_rule(np.zeros((3, 4), dtype=int), np.zeros(3, dtype=int), pointer_positions=[7])
    for bad in (1, 0, 2.5, True):  # (1 was named as a pointer_table, which the call has none of)
        with pytest.raises(ValueError, match=rf"num_classes \(digit classes\) must be an int of at least 2, got {bad}"):
            induce_rule(np.zeros((3, 4), dtype=int), np.zeros(3, dtype=int), num_classes=bad)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12), st.one_of(st.integers(-50, -1), st.integers(12, 50)), st.integers(0, 4))
def test_induction_names_a_label_that_no_rule_gives(num_classes, label, where):
    """A label outside 0..num_classes-1 agreed with no rule, silently: the search returned agreement below 1."""
    labels = np.zeros(5, dtype=int)
    labels[where] = label
    with pytest.raises(ValueError, match=f"label {label} of example {where} is outside 0..{num_classes - 1}"):
        induce_rule(np.zeros((5, 4), dtype=int), labels, num_classes=num_classes)


@pytest.mark.parametrize("name", ["complexities", "pointer_positions"])
def test_induction_names_complexities_or_pointer_positions_that_are_no_sequence(name):
    with pytest.raises(TypeError, match=rf"{name} must be a sequence of ints, got int 1 \(write \[1\]\)"):
        induce_rule(np.zeros((3, 4), dtype=int), np.zeros(3, dtype=int), **{name: 1})


def test_induction_prefers_a_lower_complexity_to_an_earlier_pointer_position():
    """Every label is the first digit: the pointer at slot 1 selecting it (m = 0) explains them all, and so does the
    max of the last two digits (pointer at slot 0, m = 1). The position came first, so the larger window won."""
    digits = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 1]])
    found = induce_rule(digits, np.ones(3, dtype=int), num_classes=2)
    assert found.agreement == 1.0
    assert (found.rule.complexity, found.rule.pointer_position, found.rule.pointer_table) == (0, 1, (0, 0))


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.integers(0, 2), min_size=4, max_size=4), min_size=n, max_size=n),
            st.lists(st.integers(0, 2), min_size=n, max_size=n),
        )
    )
)
def test_induction_ties_go_to_the_lowest_complexity_then_the_earliest_position(rows):
    digits, labels = np.array(rows[0]), np.array(rows[1])
    found = induce_rule(digits, labels, num_classes=3)
    simpler = [induce_rule(digits, labels, 3, complexities=[m]).agreement for m in range(found.rule.complexity)]
    earlier = [
        induce_rule(digits, labels, 3, complexities=[found.rule.complexity], pointer_positions=[p]).agreement
        for p in range(found.rule.pointer_position)
    ]
    assert all(agreement < found.agreement for agreement in simpler + earlier)


@settings(max_examples=60, deadline=None)
@given(classes=st.integers(2**62 - 2, 2**64 + 2), data=st.data())
@example(classes=2**63, data=None).via("63-bit digits, 2**63 classes: numpy's OverflowError")
def test_bits_to_digits_reads_63_bit_digits_exactly_and_refuses_more_classes(classes, data):
    # (2**63 classes or more: an OverflowError from numpy naming nothing, a 64-bit digit's top bit wrapped around)
    width = bits_per_digit(classes)
    rows = [[1] * width, [0] * (width - 1) + [1]] if data is None else data.draw(st.lists(
        st.lists(st.integers(0, 1), min_size=width, max_size=width), min_size=1, max_size=4))  # fmt: skip
    if classes > 2**63 - 1:
        for read in (lambda: bits_to_digits(np.array(rows), classes), lambda: noise_sensitivity(sum, 1, classes, 0.1)):
            with pytest.raises(ValueError, match=rf"^{classes} digit classes are too many: .* at most 2\*\*63 - 1 "):
                read()
        return
    expected = [[int("".join(map(str, row)), 2) % classes] for row in rows]
    assert bits_to_digits(np.array(rows), classes).tolist() == expected
