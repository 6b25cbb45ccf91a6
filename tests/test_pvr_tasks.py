import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pvr_fakes import fake_digit_class, write_fake_mnist

from neurosym.data.mnist import load_mnist
from neurosym.data.pvr import (
    DigitBank,
    VectorPVR,
    VisualPVR,
    block_holdout_masks,
    block_rule,
    held_out_windows,
    sample_vector_holdout_test,
    sample_vector_holdout_train,
    sequential_rule,
    vector_rule,
)
from neurosym.data.pvr.sampling import sample_digits
from neurosym.semantics.pvr_rules import (
    AGGREGATIONS,
    PVRRule,
    contiguous_pointer_table,
    cyclic_pointer_table,
)

#            pointer  values 0..9
ROW = np.array([[8, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])  # pointer 8 -> values 8, 9, 0, 1 = 5, 3, 3, 1


@pytest.mark.parametrize(
    ("complexity", "aggregation", "boundary", "expected"),
    [
        (0, "mod_sum", "wrap", 5),
        (1, "mod_sum", "wrap", 8),  # 5 + 3
        (2, "mod_sum", "wrap", 1),  # (5 + 3 + 3) % 10 -- wraps to value 0
        (2, "mod_sum", "truncate", 8),  # only 5, 3 exist
        (3, "median", "wrap", 3),  # 5 3 3 1 -> sorted 1 3 3 5 -> lower median 3
        (3, "median", "truncate", 3),  # 5 3 -> lower of the two middle values
        (4, "majority", "wrap", 3),  # 5 3 3 1 4
        (1, "majority", "wrap", 3),  # 5 3: a tie -> the smallest
        (3, "min", "wrap", 1),
        (3, "max", "truncate", 5),
    ],
)
def test_hand_made_vector_labels(complexity, aggregation, boundary, expected):
    rule = vector_rule(complexity, aggregation, boundary=boundary)
    assert rule.label(ROW).tolist() == [expected]


def test_majority_of_two_values_is_their_minimum():
    """Ties go to the smallest value, so at m = 1 the majority vote is the minimum (docs/pvr.md)."""
    pairs = np.array([[0, a, b] for a in range(10) for b in range(10)])
    rule = PVRRule(3, (0,) * 10, complexity=1, aggregation="majority")
    assert (rule.label(pairs) == pairs[:, 1:].min(axis=1)).all()


def test_block_layout_labels():
    rule = block_rule()
    assert rule.pointer_table == (0, 0, 0, 0, 1, 1, 1, 2, 2, 2)
    grids = np.array([[3, 7, 8, 9], [4, 7, 8, 9], [6, 7, 8, 9], [7, 7, 8, 9], [0, 1, 2, 5]])
    assert rule.label(grids).tolist() == [7, 8, 8, 9, 1]
    # pointer in the bottom-right cell: values are top-left, top-right, bottom-left
    moved = block_rule(pointer_position=3)
    assert moved.label(np.array([[1, 2, 3, 5], [1, 2, 3, 9]])).tolist() == [2, 3]


def test_sequential_layouts_and_tables():
    assert sequential_rule().label(ROW).tolist() == [5]
    short = sequential_rule(length=6)  # 5 values, pointer digit d -> value d % 5
    assert short.label(np.array([[7, 10 % 10, 1, 2, 3, 4]])).tolist() == [2]
    middle = sequential_rule(length=5, pointer_position=2)  # values are slots 0, 1, 3, 4
    assert middle.label(np.array([[5, 6, 2, 7, 8]])).tolist() == [7]
    assert contiguous_pointer_table(10, 8) == (0, 0, 1, 1, 2, 3, 4, 5, 6, 7)
    assert cyclic_pointer_table(10, 4) == (0, 1, 2, 3, 0, 1, 2, 3, 0, 1)


def test_bad_rules_and_digits_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown aggregation"):
        vector_rule(aggregation="mean")
    with pytest.raises(ValueError, match="complexity must be"):
        vector_rule(complexity=10)
    with pytest.raises(ValueError, match="unknown boundary"):
        vector_rule(boundary="clip")
    with pytest.raises(ValueError, match="outside the 3 values"):
        PVRRule(4, (0, 3) * 5)
    with pytest.raises(ValueError, match=r"digit 12 at row 0, slot 2"):
        vector_rule().label(np.array([[1, 2, 12] + [0] * 8]))
    with pytest.raises(ValueError, match=r"shape \[N, 11\]"):
        vector_rule().label(np.zeros((2, 5), dtype=int))


@st.composite
def pvr_rules(draw, max_complexity: int = 11) -> PVRRule:
    """Any rule: length, pointer slot, pointer table, number of digit classes, complexity, aggregation, boundary."""
    length = draw(st.integers(2, 12))
    num_classes = draw(st.integers(2, 12))
    table = draw(st.lists(st.integers(0, length - 2), min_size=num_classes, max_size=num_classes))
    return PVRRule(
        length,
        tuple(table),
        draw(st.integers(0, length - 1)),
        draw(st.integers(0, min(length - 2, max_complexity))),
        draw(st.sampled_from(sorted(AGGREGATIONS))),
        draw(st.sampled_from(["wrap", "truncate"])),
    )


def plain_window(rule: PVRRule, row) -> list[int]:
    """The paper's window read off one row: the ``m + 1`` values from the pointed one on, past the last value
    wrapped to the first or left out."""
    values = [int(v) for slot, v in enumerate(row) if slot != rule.pointer_position]
    start = rule.pointer_table[int(row[rule.pointer_position])]
    positions = [start + k for k in range(rule.complexity + 1)]
    if rule.boundary == "wrap":
        positions = [p % len(values) for p in positions]
    return [values[p] for p in positions if p < len(values)]


def plain_label(rule: PVRRule, row) -> int:
    window = sorted(plain_window(rule, row))
    return {
        "mod_sum": sum(window) % rule.num_classes,
        "median": window[(len(window) - 1) // 2],
        "majority": max(sorted(set(window)), key=lambda v: (window.count(v), -v)),
        "min": window[0],
        "max": window[-1],
    }[rule.aggregation]


@settings(max_examples=60, deadline=None)
@given(rule=pvr_rules(), seed=st.integers(0, 2**32 - 1))
def test_vectorised_labels_match_a_plain_reading_of_the_definition(rule, seed):
    digits = np.random.default_rng(seed).integers(rule.num_classes, size=(20, rule.length))
    assert rule.label(digits).tolist() == [plain_label(rule, row) for row in digits]
    vector = vector_rule(rule.complexity % 10, rule.aggregation, boundary=rule.boundary)
    digits, labels = VectorPVR(vector).sample(20, np.random.default_rng(seed))
    assert labels.tolist() == [plain_label(vector, row) for row in digits]


@settings(max_examples=20, deadline=None)
@given(complexity=st.integers(1, 3), count=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_vector_holdout_train_never_and_test_always_holds_a_held_out_window(complexity, count, seed):
    count = min(count, math.factorial(complexity + 1))
    rule = vector_rule(complexity)
    held = {tuple(w) for w in held_out_windows(complexity, count)}
    assert (tuple(range(complexity + 1))) in held
    rng = np.random.default_rng(seed)

    def windows(digits):
        return [tuple(int(row[1 + (row[0] + k) % 10]) for k in range(complexity + 1)) for row in digits]

    train, train_labels = sample_vector_holdout_train(rule, 300, held_out_windows(complexity, count), rng)
    test, test_labels = sample_vector_holdout_test(rule, 300, held_out_windows(complexity, count), rng)
    assert not held & set(windows(train))
    assert set(windows(test)) <= held
    assert (train_labels == rule.label(train)).all() and (test_labels == rule.label(test)).all()


def test_holdout_i_is_bounded():
    assert held_out_windows(2, 6).shape == (6, 3)
    with pytest.raises(ValueError, match=r"\(m\+1\)! = 6"):
        held_out_windows(2, 7)


@settings(max_examples=60, deadline=None)
@given(rule=pvr_rules(max_complexity=3), data=st.data())
def test_holdout_i_splits_of_any_rule_follow_the_paper(rule, data):
    """Training never has a held-out window at the pointed values; the test has (0, ..., m) there in every row,
    behind a pointer whose window is whole, for any pointer slot, pointer table and boundary."""
    m = rule.complexity
    assume(m < rule.num_classes)  # (0, ..., m) must be digits
    held = held_out_windows(m, data.draw(st.integers(1, math.factorial(m + 1))))
    seed = data.draw(st.integers(0, 2**32 - 1))
    train, _ = sample_vector_holdout_train(rule, 200, held, seed)
    assert not {tuple(plain_window(rule, row)) for row in train} & {tuple(w) for w in held.tolist()}
    whole = [d for d in range(rule.num_classes) if rule.boundary == "wrap" or rule.pointer_table[d] + m < rule.length - 1]
    assume(whole)
    test, labels = sample_vector_holdout_test(rule, 200, held[:1], seed)
    assert all(plain_window(rule, row) == list(range(m + 1)) for row in test)
    assert set(test[:, rule.pointer_position].tolist()) <= set(whole)
    assert labels.tolist() == [plain_label(rule, row) for row in test]


def test_the_paper_holdout_test_draws_pointers_and_the_digits_outside_the_window_at_random():
    """Section 7: only (0, ..., m) in the value window, "the pointers and other digits outside the value
    window are random": every pointer, and every digit in every slot outside the window, turns up."""
    rule = vector_rule(2)
    test, labels = sample_vector_holdout_test(rule, 3000, held_out_windows(2, 6)[:1], np.random.default_rng(0))
    assert (labels == 3).all()  # (0 + 1 + 2) % 10
    assert np.bincount(test[:, 0], minlength=10).min() > 200  # 300 expected for each pointer digit
    slots = np.arange(1, 11)
    outside = slots[None, :] - 1 - test[:, :1]  # position of each value after the window's start
    for offset in range(3, 10):  # the values after the window, up to the one before it
        others = test[:, 1:][(outside % 10) == offset]
        assert np.bincount(others, minlength=10).min() > 200


def test_rules_and_holdouts_without_room_for_a_pointer_and_a_value_are_named():
    with pytest.raises(ValueError, match=r"grid \(2 x 2 cells at least: a pointer and a value\) must be an int of at least 2"):
        block_rule(1)
    with pytest.raises(ValueError, match=r"length \(2 digits at least: a pointer and a value\) must be an int of at least 2"):
        sequential_rule(1)
    for build, message in ((lambda: block_rule(2.5), "grid .* got 2.5"), (lambda: sequential_rule(5, pointer_position=True),
                           "pointer_position must be an int"), (lambda: vector_rule(complexity=1.5), "complexity must be an int"),
                           (lambda: vector_rule(num_values=2.5), "num_values must be an int")):  # fmt: skip
        with pytest.raises(ValueError, match=message):  # (were accepted: slots indexed by 2.5 or True)
            build()
    with pytest.raises(ValueError, match="complexity m must be an int of at least 0, got -2"):
        held_out_windows(-2, 1)


def test_sizes_slots_and_names_of_the_wrong_type_are_named():
    for complexity, count in ((1.5, 1), (True, 1)):  # (a TypeError in math.factorial; True read as m = 1)
        with pytest.raises(ValueError, match=rf"complexity m must be an int of at least 0, got {complexity}"):
            held_out_windows(complexity, count)
    for count in (1.5, True):
        with pytest.raises(ValueError, match=rf"holdout-i's i must be an int of at least 1, got {count}"):
            held_out_windows(1, count)
    for n in (2.5, True):
        with pytest.raises(ValueError, match=rf"n \(rows to draw\) must be an int of at least 0, got {n}"):
            VectorPVR(vector_rule()).sample(n, 0)
    with pytest.raises(ValueError, match=r"unknown aggregation \['mod_sum'\]"):
        vector_rule(aggregation=["mod_sum"])  # (was "unhashable type: 'list'")
    with pytest.raises(ValueError, match=r"unknown boundary \['wrap'\]"):
        vector_rule(boundary=["wrap"])
    for slot in (True, 1.0):
        with pytest.raises(ValueError, match=rf"holdout slot {slot} is not an int in 0..3"):
            block_holdout_masks(4, {slot: (2,)})
    with pytest.raises(ValueError, match=r"holdout digits of slot 1 must lie in 0..9, got \(2.5,\)"):
        block_holdout_masks(4, {1: (2.5,)})


def test_a_grid_with_more_value_cells_than_pointer_digits_is_named():
    """A 4x4 grid has 15 value cells and 10 pointer digits: five cells were never pointed at."""
    assert contiguous_pointer_table(10, 10) == tuple(range(10))
    with pytest.raises(ValueError, match="10 pointer digits cannot split into 15 non-empty groups"):
        block_rule(4)


def test_block_holdout_digits_outside_the_classes_are_named():
    for digits in ((-1,), (12,)):
        with pytest.raises(ValueError, match=r"holdout digits of slot 1 must lie in 0..9, got"):
            block_holdout_masks(4, {1: digits})
    for digits in ((), tuple(range(10))):  # (none failed only when sampling; all left no training row)
        with pytest.raises(ValueError, match=r"holdout digits of slot 1 must be some but not all of 0..9"):
            block_holdout_masks(4, {1: digits})


def test_the_papers_block_holdout_is_of_the_two_by_two_grid_only():
    with pytest.raises(ValueError, match=r"the paper's holdout is of the 2 x 2 grid \(length 4\), got length 9: give holdout="):
        block_holdout_masks(9)  # (its slots 1, 2, 3 are other places of a 3 x 3 grid)
    assert block_holdout_masks(9, {4: (0, 1)})["train"][4].tolist() == [False, False] + [True] * 8


def test_holding_out_every_window_is_named_instead_of_drawing_forever():
    with pytest.raises(ValueError, match="every window is held out and every pointer selects a whole window"):
        sample_vector_holdout_train(vector_rule(0), 2, np.arange(10)[:, None], np.random.default_rng(0))
    _, labels = sample_vector_holdout_train(vector_rule(0), 5, np.arange(9)[:, None], np.random.default_rng(0))
    assert (labels == 9).all()  # the one window left


def test_sample_digits_respects_masks_and_reports_empty_slots():
    allowed = np.zeros((3, 10), dtype=bool)
    allowed[0, [2, 5]] = True
    allowed[1, 9] = True
    allowed[2] = True
    digits = sample_digits(2000, allowed, np.random.default_rng(0))
    assert set(digits[:, 0].tolist()) == {2, 5} and set(digits[:, 1].tolist()) == {9}
    assert set(digits[:, 2].tolist()) == set(range(10))
    allowed[1] = False
    with pytest.raises(ValueError, match="slot 1 allows no digit"):
        sample_digits(5, allowed, np.random.default_rng(0))


class _EdgeDraws(np.random.Generator):
    """A generator whose uniform draws are all ``value`` (the edges of ``[0, 1)`` that rounding meets)."""

    def __init__(self, value: float) -> None:
        super().__init__(np.random.PCG64(0))
        self.value = value

    def random(self, size=None, dtype=np.float64, out=None):  # type: ignore[override]
        return np.full(size, self.value, dtype=dtype)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.booleans(), min_size=10, max_size=10).filter(any), min_size=1, max_size=5),
    st.sampled_from([0.0, 0.5, float(np.nextafter(1.0, 0.0))]),
)
def test_sample_digits_draws_only_allowed_digits_at_the_edges_of_the_unit_interval(mask, draw):
    """The shares of the allowed digits, summed in floats, can stop short of 1 (1/6 six times is 1 - 2^-53), so
    the largest draw below 1 passed a slot's last allowed digit: the paper's held-out 7-9 and 0 bottom right."""
    allowed = np.array(mask)
    digits = sample_digits(3, allowed, _EdgeDraws(draw))
    assert allowed[np.arange(len(allowed)), digits].all()


def test_the_block_holdout_training_mask_never_draws_a_held_out_digit_at_the_top_draw():
    digits = sample_digits(1, block_holdout_masks()["train"], _EdgeDraws(float(np.nextafter(1.0, 0.0))))
    assert digits.tolist() == [[9, 9, 9, 6]]  # bottom right allows 1..6 only


@pytest.fixture
def mnist(tmp_path):
    return load_mnist(write_fake_mnist(tmp_path / "mnist.pkl.gz"))


def test_block_images_hold_the_sampled_digits_and_the_holdout_masks(mnist):
    bank = DigitBank.from_mnist(mnist, "train")
    masks = block_holdout_masks()
    rng = np.random.default_rng(1)
    for split in ("train", "holdout", "dshift"):
        images, digits, labels = VisualPVR(bank, block_rule(), allowed=masks[split]).sample(200, rng)
        assert images.shape == (200, 80, 80) and images.dtype == np.uint8
        cells = images.reshape(200, 2, 40, 2, 40).transpose(0, 1, 3, 2, 4).reshape(200, 4, 40, 40)
        read = np.array([[fake_digit_class(c) for c in row] for row in cells])
        assert (read == digits).all()
        assert (labels == block_rule().label(digits)).all()
        in_held = np.isin(digits[:, 1], [1, 2, 3]) | np.isin(digits[:, 2], [4, 5, 6]) | np.isin(digits[:, 3], [7, 8, 9, 0])
        all_held = np.isin(digits[:, 1], [1, 2, 3]) & np.isin(digits[:, 2], [4, 5, 6]) & np.isin(digits[:, 3], [7, 8, 9, 0])
        if split == "train":
            assert not in_held.any()
        if split == "holdout":
            assert all_held.all()
        if split == "dshift":
            assert in_held.any() and not all_held.all()
        assert set(digits[:, 0].tolist()) == set(range(10))


def test_sequential_images_and_split_sources(mnist):
    rng = np.random.default_rng(2)
    test_bank = DigitBank.from_mnist(mnist, "test")
    images, digits, _ = VisualPVR(test_bank, sequential_rule(length=6), style="sequential").sample(30, rng)
    assert images.shape == (30, 28, 6 * 28)
    read = np.array([[fake_digit_class(images[n, :, 28 * k : 28 * (k + 1)]) for k in range(6)] for n in range(30)])
    assert (read == digits).all()
    with pytest.raises(ValueError, match="2x2 grid has 4 slots"):
        VisualPVR(test_bank, sequential_rule())
    with pytest.raises(ValueError, match="split must be"):
        DigitBank.from_mnist(mnist, "valid")


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_digit_bank_draws_only_images_of_its_own_split(mnist, split):
    """Images drawn from the train bank are train images of the right class, never test images (the fake
    splits share their labels but not their noise), and the other way round."""
    own, other = (mnist.train_images, mnist.test_images) if split == "train" else (mnist.test_images, mnist.train_images)
    own_labels = mnist.train_labels if split == "train" else mnist.test_labels
    classes = np.tile(np.arange(10), 5)
    drawn = DigitBank.from_mnist(mnist, split).draw(classes, np.random.default_rng(4))
    for image, digit in zip(drawn, classes):
        matches = (own == image).all(axis=(1, 2))
        assert matches.any() and (own_labels[matches] == digit).all()
        assert not (other == image).all(axis=(1, 2)).any()


def test_three_by_three_grid_with_custom_pointer_table(mnist):
    rule = PVRRule(9, (7, 6, 5, 4, 3, 2, 1, 0, 0, 0), pointer_position=4)  # centre cell points outwards
    images, digits, labels = VisualPVR(DigitBank.from_mnist(mnist, "test"), rule, grid=3, block=30).sample(
        50, np.random.default_rng(3)
    )
    assert images.shape == (50, 90, 90)
    cells = images.reshape(50, 3, 30, 3, 30).transpose(0, 1, 3, 2, 4).reshape(50, 9, 30, 30)
    assert all(fake_digit_class(cells[n, k]) == digits[n, k] for n in range(50) for k in range(9))
    values = np.delete(digits, 4, axis=1)
    assert (labels == values[np.arange(50), np.array(rule.pointer_table)[digits[:, 4]]]).all()


def test_a_digit_bank_names_labels_that_are_no_classes():
    images = np.zeros((20, 28, 28), dtype=np.uint8)
    for labels in (np.arange(20, dtype=float) % 10, np.arange(20) % 10 - 1):
        with pytest.raises(ValueError, match=r"labels must be integer classes in 0..9, got"):
            DigitBank(images, labels)
    assert DigitBank(images, np.arange(20) % 10).counts.tolist() == [2] * 10


def test_a_holdout_needs_held_out_windows_of_integer_digits():
    rule = vector_rule(complexity=1)
    for sample in (sample_vector_holdout_test, sample_vector_holdout_train):  # (train held out nothing: a plain set)
        with pytest.raises(ValueError, match=r"a holdout needs held-out windows of digits in \[0, 10\), got \[\]"):
            sample(rule, 4, np.zeros((0, 2), dtype=int), 0)  # numpy's "high <= 0"
        with pytest.raises(ValueError, match=r"digits in \[0, 10\), got \[\[3, 12\]\]"):
            sample(rule, 4, np.array([[3, 12]]), 0)
        with pytest.raises(ValueError, match=r"digits in \[0, 10\), got \[\[-1, 0\]\]"):
            sample(rule, 4, np.array([[-1, 0]]), 0)
    for sample in (sample_vector_holdout_test, sample_vector_holdout_train):
        with pytest.raises(ValueError, match="held-out windows must hold integer digits, got dtype float64"):
            sample(rule, 4, np.array([[2.7, 1.0]]), 0)  # the test rows were given the window (2, 1)
