import numpy as np
import pytest
from hypothesis import given, settings
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


@settings(max_examples=30, deadline=None)
@given(
    complexity=st.integers(0, 9),
    aggregation=st.sampled_from(sorted(AGGREGATIONS)),
    boundary=st.sampled_from(["wrap", "truncate"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_vectorised_labels_match_a_plain_reading_of_the_definition(complexity, aggregation, boundary, seed):
    rule = vector_rule(complexity, aggregation, boundary=boundary)
    digits, labels = VectorPVR(rule).sample(20, np.random.default_rng(seed))
    for row, label in zip(digits, labels):
        start = row[0]
        positions = [start + k for k in range(complexity + 1)]
        positions = [p % 10 for p in positions] if boundary == "wrap" else [p for p in positions if p < 10]
        window = sorted(int(row[1 + p]) for p in positions)
        expected = {
            "mod_sum": sum(window) % 10,
            "median": window[(len(window) - 1) // 2],
            "majority": max(sorted(set(window)), key=lambda v: (window.count(v), -v)),
            "min": window[0],
            "max": window[-1],
        }[aggregation]
        assert label == expected


@settings(max_examples=20, deadline=None)
@given(complexity=st.integers(1, 3), count=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_vector_holdout_train_never_and_test_always_holds_a_held_out_window(complexity, count, seed):
    import math

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
    with pytest.raises(ValueError, match="complexity m must be at least 0, got -2"):
        held_out_windows(-2, 1)


def test_block_holdout_digits_outside_the_classes_are_named():
    for digits in ((-1,), (12,)):
        with pytest.raises(ValueError, match=r"holdout digits of slot 1 must lie in 0..9, got"):
            block_holdout_masks(4, {1: digits})


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


def test_a_holdout_test_needs_held_out_windows_of_integer_digits():
    rule = vector_rule(complexity=1)
    with pytest.raises(ValueError, match=r"a holdout test needs held-out windows of digits in \[0, 10\), got \[\]"):
        sample_vector_holdout_test(rule, 4, np.zeros((0, 2), dtype=int), 0)  # numpy's "high <= 0"
    with pytest.raises(ValueError, match=r"digits in \[0, 10\), got \[\[3, 12\]\]"):
        sample_vector_holdout_test(rule, 4, np.array([[3, 12]]), 0)
    for sample in (sample_vector_holdout_test, sample_vector_holdout_train):
        with pytest.raises(ValueError, match="held-out windows must hold integer digits, got dtype float64"):
            sample(rule, 4, np.array([[2.7, 1.0]]), 0)  # the test rows were given the window (2, 1)
