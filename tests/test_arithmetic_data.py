import copy
import io
import math
import re
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neurosym.data.arithmetic import (
    OPERATIONS,
    RANGE_PAIRS,
    SampleRange,
    SimpleFunctionData,
    SubsetLayout,
    UniformStream,
    seed_stream,
)


@settings(max_examples=40, deadline=None)
@given(
    input_size=st.integers(4, 300),
    subset_percent=st.integers(5, 50),
    overlap_percent=st.integers(0, 100),
    data=st.data(),
)
def test_subset_weights_follow_the_size_and_overlap_rules(input_size, subset_percent, overlap_percent, data):
    subset_ratio, overlap_ratio = subset_percent / 100, overlap_percent / 100
    subset = subset_percent * input_size // 100
    overlap = overlap_percent * subset // 100
    if subset < 1 or 2 * subset - overlap > input_size:
        with pytest.raises(ValueError):
            SubsetLayout(input_size, subset_ratio, overlap_ratio)
        return
    layout = SubsetLayout(input_size, subset_ratio, overlap_ratio)
    offsets = torch.tensor(data.draw(st.lists(st.integers(0, layout.offsets - 1), min_size=1, max_size=5)))
    weights = layout.weights(offsets)
    assert weights.shape == (len(offsets), 2, input_size)
    assert set(weights.unique().tolist()) <= {0.0, 1.0}
    assert (weights.sum(-1) == subset).all()
    assert ((weights[:, 0] * weights[:, 1]).sum(-1) == overlap).all()
    positions = torch.arange(input_size)
    for member, offset in enumerate(offsets.tolist()):
        a_positions = positions[weights[member, 0] == 1]
        b_positions = positions[weights[member, 1] == 1]
        assert a_positions.tolist() == list(range(offset, offset + subset))  # contiguous, starts at the offset
        assert b_positions.tolist() == list(range(offset + subset - overlap, offset + 2 * subset - overlap))


def _decimal(lowest: int) -> st.SearchStrategy[tuple[int, int]]:
    """A ratio in [lowest / 10^n, 1] with n = 1..4 decimals as written: ``(digits, n)`` for ``digits / 10^n``."""
    return st.integers(1, 4).flatmap(lambda n: st.tuples(st.integers(lowest, 10**n), st.just(n)))


@settings(max_examples=300, deadline=None)
@given(input_size=st.integers(1, 1000), subset=_decimal(1), overlap=_decimal(0))
@example(input_size=100, subset=(29, 2), overlap=(5, 1))  # (a binary float product made 28 of 29)
@example(input_size=100, subset=(57, 2), overlap=(0, 1))
@example(input_size=50, subset=(58, 2), overlap=(0, 1))
@example(input_size=150, subset=(6, 1), overlap=(7, 1))  # (an overlap of 62 for ⌊0.7·90⌋ = 63)
def test_sizes_are_the_exact_floors_of_the_ratios_as_written(input_size, subset, overlap):
    subset_ratio, overlap_ratio = (Fraction(digits, 10**decimals) for digits, decimals in (subset, overlap))
    subset_size = math.floor(subset_ratio * input_size)
    overlap_size = math.floor(overlap_ratio * subset_size)
    written = (subset[0] / 10 ** subset[1], overlap[0] / 10 ** overlap[1])  # the floats 0.29 and 0.5 a user gives
    if subset_size < 1 or 2 * subset_size - overlap_size > input_size:
        with pytest.raises(ValueError):
            SubsetLayout(input_size, *written)
        return
    layout = SubsetLayout(input_size, *written)
    assert (layout.subset_size, layout.overlap_size) == (subset_size, overlap_size)


def test_default_layout_is_25_overlapping_by_12():
    layout = SubsetLayout()
    assert (layout.subset_size, layout.overlap_size, layout.span, layout.offsets) == (25, 12, 38, 63)
    with pytest.raises(ValueError, match="offsets must lie"):
        layout.weights(torch.tensor([63]))


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(RANGE_PAIRS)), seed=st.integers(0, 2**31))
def test_samples_stay_inside_their_ranges(name, seed):
    for sample_range in RANGE_PAIRS[name]:
        x = sample_range.sample((4000,), torch.Generator().manual_seed(seed))
        inside = torch.zeros_like(x, dtype=torch.bool)
        for low, high in sample_range.intervals:
            inside |= (x >= low) & (x <= high)
        assert inside.all()
        for low, high in sample_range.intervals:  # every interval is used, in proportion to its length
            share = ((x >= low) & (x <= high)).float().mean()
            expected = (high - low) / sum(h - l for l, h in sample_range.intervals)
            assert abs(float(share) - expected) < 0.05


def test_range_parsing_and_errors():
    assert SampleRange.parse("U[-6,-2] ∪ U[2,6]") == SampleRange(((-6.0, -2.0), (2.0, 6.0)))
    assert SampleRange.parse("[0.1,0.2]").intervals == ((0.1, 0.2),)
    with pytest.raises(ValueError, match="position 5"):
        SampleRange.parse("[1,2]x[3,4]")
    with pytest.raises(ValueError, match="position 0"):
        SampleRange.parse("(1,2)")
    with pytest.raises(ValueError, match="sorted and disjoint"):
        SampleRange(((2.0, 6.0), (1.0, 3.0)))
    for interval in (("1", "2"), (1.0, 2.0, 3.0), (True, 2.0), 1.0):
        with pytest.raises(TypeError, match="each interval must be a pair of numbers"):
            SampleRange((interval,))
    assert SampleRange(((np.float32(1), np.int64(2)),)).high == 2
    assert set(RANGE_PAIRS) == {"[1,2]", "[-2,-1]", "[-2,2]", "[0,1]", "[0.1,0.2]", "[1.1,1.2]", "[10,20]"}
    assert str(RANGE_PAIRS["[-2,2]"][1]) == "U[-6,-2]∪U[2,6]"


def _digits(draw, min_size: int) -> str:
    """Decimal digits with single underscores between some of them, as in Python's float literals."""
    digits = draw(st.lists(st.sampled_from("0123456789"), min_size=min_size, max_size=6))
    return "".join(digit + ("_" if index < len(digits) - 1 and draw(st.booleans()) else "") for index, digit in enumerate(digits))


@st.composite
def float_literals(draw) -> str:
    """Plain float literals: sign, integer part, fraction (``5.``, ``.5``), exponent with sign, underscores."""
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = _digits(draw, 0)
    fraction = _digits(draw, 0) if draw(st.booleans()) else None  # None: no point; "": a trailing point
    if not whole and not fraction:
        whole = _digits(draw, 1)
    mantissa = whole if fraction is None else f"{whole}.{fraction}"
    exponent = draw(st.none() | st.tuples(st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), st.integers(0, 300)))
    return sign + mantissa + ("" if exponent is None else f"{exponent[0]}{exponent[1]}{exponent[2]}")


@settings(max_examples=300, deadline=None)
@given(low=float_literals(), high=float_literals())
@example(low="+1", high="1e+5")
@example(low=".5", high="5.")
@example(low="-1_000.5e-3", high="1E1_0")
def test_range_bounds_are_read_as_float_reads_them(low, high):
    if not float(low) < float(high):
        low, high = high, low
    if float(low) == float(high):
        with pytest.raises(ValueError, match="low < high"):
            SampleRange.parse(f"[{low},{high}]")
        return
    assert SampleRange.parse(f" U[ {low} , {high} ] ").intervals == ((float(low), float(high)),)


@settings(max_examples=200, deadline=None)
@given(bounds=st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=2, max_size=6, unique=True).map(sorted))
@example(bounds=[1e16, 2e16])
@example(bounds=[1 / 3, 0.5])
@example(bounds=[-0.0, 5e-324])
def test_a_formatted_range_parses_back_exactly(bounds):
    pairs = list(zip(bounds[::2], bounds[1::2], strict=False))
    sample_range = SampleRange(tuple(pairs))
    assert SampleRange.parse(str(sample_range)) == sample_range
    for low, high in pairs:  # each bound written as repr, signed, in e-format
        for text in (f"[{low!r},{high!r}]", f"[{low:+},{high:+}]", f"[{low:.17e},{high:.17E}]"):
            assert SampleRange.parse(text).intervals == ((low, high),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1,2", "position 4: expected ']'"),
        ("[1 2]", "position 3: expected ','"),
        ("[1e400,2]", "position 1: 1e400 is too large for a float"),
        ("[-1,1e+309]", "position 4: 1e\\+309 is too large for a float"),
        ("[nan,1]", "position 1: expected a number"),
        ("[1,inf]", "position 3: expected a number"),
        ("[1__0,2]", "position 2: expected ','"),
        ("[.,1]", "position 1: expected a number"),
        ("[1e,2]", "position 2: expected ','"),
        ("[+-1,2]", "position 1: expected a number"),
        ("[1,2]u", "position 6: expected '\\[low,high\\]'"),
        ("[1,2] ∪ (3,4)", "position 8: expected '\\[low,high\\]'"),
    ],
)
def test_range_parsing_names_the_position_of_bad_text(text, message):
    with pytest.raises(ValueError, match=f"cannot read a range from .* at {message}"):
        SampleRange.parse(text)


def test_batches_have_per_member_offsets_operations_and_targets():
    names = ["add", "sub", "mul", "div", "square", "sqrt"]
    data = SimpleFunctionData(names, seeds=[0, 1, 2, 3, 4, 5], evaluation_size=50)
    x, t = data.training_batch(16)
    assert x.shape == (6, 16, 100) and t.shape == (6, 16, 1)
    assert bool((x >= 1).all() and (x <= 2).all())
    for member, name in enumerate(names):
        k = int(data.offsets[member])
        a = x[member, :, k : k + 25].sum(-1)
        b = x[member, :, k + 13 : k + 38].sum(-1)
        expected = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "square": a * a, "sqrt": a.sqrt()}[name]
        torch.testing.assert_close(t[member, :, 0], expected, rtol=1e-5, atol=1e-4)
    assert len(set(data.offsets.tolist())) > 1  # one random offset per seed


def test_evaluation_sets_are_fixed_per_seed_and_in_range():
    first = SimpleFunctionData(["add", "mul"], seeds=[7, 3], evaluation_size=300)
    second = SimpleFunctionData(["sub", "add", "add"], seeds=[3, 7, 9], evaluation_size=300)
    assert first.offsets.tolist() == [second.offsets[1].item(), second.offsets[0].item()]
    (x1, t1), (x2, t2) = next(first.evaluation_batches("test", 300)), next(second.evaluation_batches("test", 300))
    torch.testing.assert_close(x1[0], x2[1])  # seed 7 sees the same test inputs in both ensembles
    torch.testing.assert_close(t1[0], t2[1])
    assert x1.shape == (2, 300, 100) and bool((x1 >= 2).all() and (x1 <= 6).all())
    chunks = list(first.evaluation_batches("validation", 128))
    assert [c[0].shape[1] for c in chunks] == [128, 128, 44]
    assert bool((chunks[0][0] >= 1).all() and (chunks[0][0] <= 2).all())
    again = torch.cat(
        [
            c[0]
            for c in SimpleFunctionData(["add", "mul"], seeds=[7, 3], evaluation_size=300).evaluation_batches("validation", 128)
        ],
        1,
    )
    torch.testing.assert_close(torch.cat([c[0] for c in chunks], 1), again)


def test_training_batches_are_reproducible_and_fresh():
    a = SimpleFunctionData(["add"], seeds=[0], evaluation_size=10, train_seed=5)
    b = SimpleFunctionData(["add"], seeds=[0], evaluation_size=10, train_seed=5)
    first = a.training_batch(8)[0]
    torch.testing.assert_close(first, b.training_batch(8)[0])
    assert not torch.equal(first, a.training_batch(8)[0])


def test_bad_configurations_raise_clear_errors():
    with pytest.raises(ValueError, match="unknown operation 'pow'"):
        SimpleFunctionData(["pow"], seeds=[0])
    with pytest.raises(ValueError, match="unknown range pair"):
        SimpleFunctionData(["add"], seeds=[0], ranges="[3,4]")
    with pytest.raises(ValueError, match="non-negative"):
        SimpleFunctionData(["sqrt"], seeds=[0], ranges="[-2,2]")
    with pytest.raises(ValueError, match="one operation per seed"):
        SimpleFunctionData(["add"], seeds=[0, 1])
    data = SimpleFunctionData(["add"], seeds=[0], evaluation_size=10)
    with pytest.raises(ValueError, match=r"expected inputs of shape \[1, batch, 100\]"):
        data.targets(torch.ones(1, 4, 99))
    with pytest.raises(ValueError, match="unknown split"):
        next(data.evaluation_batches("train"))


def test_seed_streams_are_distinct():
    values = {seed_stream(seed, stream) for seed in range(20) for stream in range(3)}
    assert len(values) == 60 and all(0 <= v < 2**63 for v in values)
    assert set(OPERATIONS) == {"add", "sub", "mul", "div", "square", "sqrt"}


def test_uniform_stream_draws_float32_on_the_range_grid_reproducibly_and_resumes():
    stream = UniformStream(11)
    x = stream.sample(RANGE_PAIRS["[1,2]"][0], (64, 100))
    assert x.shape == (64, 100) and x.dtype == torch.float32
    steps = (x.double() - 1) * 2**23  # every float32 in [1, 2) is 1 + k / 2^23
    assert bool((x >= 1).all() and (x < 2).all()) and torch.equal(steps, steps.round())
    assert abs(float(x.mean()) - 1.5) < 0.01 and abs(float(x.var()) - 1 / 12) < 0.005
    assert torch.equal(x, UniformStream(11).sample(RANGE_PAIRS["[1,2]"][0], (64, 100)))
    assert not torch.equal(x, UniformStream(12).sample(RANGE_PAIRS["[1,2]"][0], (64, 100)))
    state = stream.state()
    union = SampleRange.parse("[-6,-2]u[2,6]")
    odd = stream.sample(union, (3, 7))  # an odd count uses half of the last 64-bit word
    assert odd.shape == (3, 7) and bool(((odd.abs() >= 2) & (odd.abs() <= 6)).all())
    resumed = UniformStream(0)
    resumed.set_state(state)
    assert torch.equal(resumed.sample(union, (3, 7)), odd)
    for shape in ((-1,), (2, 1.5)):  # ((-1,) gave an empty tensor)
        with pytest.raises(ValueError, match="shape must hold sizes of at least 0"):
            stream.sample(union, shape)
    assert stream.sample(union, (0, 3)).shape == (0, 3)
    with pytest.raises(ValueError, match="cannot resume"):
        resumed.set_state({"torch": torch.Generator().get_state()})


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**63 - 1), st.integers(1, 9))
def test_a_stream_state_loads_weights_only_and_continues_the_stream(seed, drawn):
    """The state goes into checkpoints, which ``torch.load`` reads with ``weights_only=True`` by default: it held
    SFC64's words as a numpy array, which that refuses. All 64 bits of each word come back (int64 of the same bits);
    a state of the older form, a numpy array, still resumes."""
    stream = UniformStream(seed)
    stream.sample(RANGE_PAIRS["[1,2]"][0], (drawn,))
    buffer = io.BytesIO()
    torch.save(stream.state(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    older = {"sfc64": copy.deepcopy(stream._bits.state)}  # what checkpoints held before
    expected = stream.sample(RANGE_PAIRS["[1,2]"][0], (5, 3))
    for saved in (state, older):
        resumed = UniformStream(0)
        resumed.set_state(saved)
        assert torch.equal(resumed.sample(RANGE_PAIRS["[1,2]"][0], (5, 3)), expected)


@pytest.mark.parametrize("name", sorted(RANGE_PAIRS))
def test_transform_maps_uniform_samples_from_either_origin_identically(name):
    uniform = torch.rand(5000, dtype=torch.float64)
    for sample_range in RANGE_PAIRS[name]:
        from_zero = sample_range.transform(uniform.clone())
        from_one = sample_range.transform(uniform + 1, origin=1.0)
        torch.testing.assert_close(from_one, from_zero, rtol=0, atol=1e-12)
        assert bool((from_zero >= sample_range.low).all() and (from_zero <= sample_range.high).all())


def test_sizes_and_counts_must_be_positive_ints():
    data = SimpleFunctionData(["add"], seeds=[0], evaluation_size=10)
    with pytest.raises(ValueError, match="batch_size must be an int of at least 1, got 0"):
        data.training_batch(0)  # (an empty batch made a NaN loss)
    with pytest.raises(ValueError, match="batch_size must be an int of at least 1, got 2.5"):
        data.training_batch(2.5)
    with pytest.raises(ValueError, match="chunk_size must be an int of at least 1, got -5"):
        data.evaluation_batches("test", -5)  # (yielded no chunk at all)
    with pytest.raises(ValueError, match="chunk_size must be an int of at least 1, got 0"):
        data.evaluation_batches("test", 0)
    with pytest.raises(ValueError, match="evaluation_size must be an int of at least 1, got 10.5"):
        SimpleFunctionData(["add"], seeds=[0], evaluation_size=10.5)
    with pytest.raises(ValueError, match=r"input_size must be an int of at least 1, got 100\.5"):
        SubsetLayout(100.5)  # (made weights 101 wide)
    with pytest.raises(ValueError, match="offsets must be an integer tensor, got torch.float32"):
        SubsetLayout().weights(torch.tensor([1.5]))  # (selected a shifted subset)
    for ratio in (True, "0.25", None, math.nan):  # True overlapped the whole subset, "0.25" and None failed in a comparison
        with pytest.raises(ValueError, match=rf"^overlap_ratio must be a number in \[0, 1\], got {re.escape(repr(ratio))}$"):
            SubsetLayout(overlap_ratio=ratio)
        with pytest.raises(ValueError, match=rf"^subset_ratio must be a number in \(0, 1\], got {re.escape(repr(ratio))}$"):
            SubsetLayout(subset_ratio=ratio)
    assert SubsetLayout(subset_ratio=np.float64(0.5), overlap_ratio=0).span == 100
    assert [c[0].shape[1] for c in data.evaluation_batches("test", np.int64(4))] == [4, 4, 2]


def test_seeds_and_operations_are_checked_by_name():
    with pytest.raises(ValueError, match=r"seeds\[1\] must be an int of at least 0, got -1"):
        SimpleFunctionData(["add", "add"], seeds=[0, -1], evaluation_size=10)
    with pytest.raises(ValueError, match=r"seeds\[0\] must be an int of at least 0, got 1\.5"):
        SimpleFunctionData(["add"], seeds=[1.5], evaluation_size=10)
    with pytest.raises(ValueError, match="train_seed must be an int of at least 0, got -3"):
        SimpleFunctionData(["add"], seeds=[0], evaluation_size=10, train_seed=-3)
    with pytest.raises(ValueError, match="seed must be an int of at least 0, got True"):
        UniformStream(True)
    with pytest.raises(ValueError, match="operations must be a list of operation names, got the string 'add'"):
        SimpleFunctionData("add", seeds=[0, 1, 2], evaluation_size=10)
    with pytest.raises(TypeError, match="from a string like '\\[1,2\\]', got NoneType None"):
        SampleRange.parse(None)


_BOUNDS = st.floats(-1e6, 1e6, allow_subnormal=False)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_BOUNDS, min_size=2, max_size=6, unique=True).map(sorted),
    st.sampled_from([torch.float32, torch.float64]),
    st.sampled_from([0.0, 1.0]),
    st.integers(0, 2**31),
)
@example([1.0, 2.0], torch.float32, 0.0, 0)  # (torch.rand's largest value gave exactly 2.0)
@example([-6.0, -2.0, 2.0, 6.0], torch.float32, 0.0, 0)
def test_every_sample_lies_in_its_half_open_interval(points, dtype, origin, seed):
    pairs = tuple(zip(points[0::2], points[1::2]))
    sample_range = SampleRange(pairs)
    try:  # (an interval narrower than the dtype's spacing holds no value of it)
        uniform = torch.tensor([0.0, 1 - torch.finfo(dtype).eps / 2], dtype=dtype)
        uniform = torch.cat([uniform, torch.rand(64, generator=torch.Generator().manual_seed(seed), dtype=dtype)]) + origin
        samples = sample_range.transform(uniform, origin=origin).double()
    except ValueError as error:
        assert "holds no" in str(error)
        info = torch.finfo(dtype)
        assert any(high - low <= max(info.eps * max(abs(low), abs(high)), info.smallest_normal) for low, high in pairs)
        return
    inside = torch.zeros_like(samples, dtype=torch.bool)
    for low, high in pairs:
        inside |= (samples >= low) & (samples < high)
    assert bool(inside.all()), samples[~inside]


_WIDE_RANGES = [
    ("[-3e38,3e38]", torch.float32),
    ("[-3e38,-1]u[1,3e38]", torch.float32),
    ("[0,2e38]", torch.float32),
    ("[-1.7e308,-1e308]u[1e308,1.7e308]", torch.float64),
]


@pytest.mark.parametrize(("text", "dtype"), _WIDE_RANGES)
def test_ranges_whose_width_overflows_the_dtype_still_sample_inside_them(text, dtype):
    """The width of U[-3e38, 3e38] overflowed float32 to inf: every sample came out the largest float32 (from origin 1,
    as UniformStream draws, already from U[0, 2e38]), a union's NaN; they are mapped in float64 now."""
    sample_range = SampleRange.parse(text)
    drawn = [sample_range.sample((4000,), torch.Generator().manual_seed(0), dtype=dtype)]
    drawn.append(
        sample_range.transform(torch.rand(4000, generator=torch.Generator().manual_seed(1), dtype=dtype) + 1, origin=1.0)
    )
    if dtype == torch.float32:
        drawn.append(UniformStream(0).sample(sample_range, (4000,)))
    for samples in drawn:
        assert samples.dtype == dtype
        inside = torch.zeros_like(samples, dtype=torch.bool)
        for low, high in sample_range.intervals:
            inside |= (samples.double() >= low) & (samples.double() < high)
        assert bool(inside.all()), samples[~inside]
        assert len(samples.unique()) > 3900  # (not piled up at a bound)


def test_ranges_beyond_the_dtype_are_refused_by_name():
    """U[0, 1e39] in float32 put two thirds of its samples at the largest float32, U[-1e308, 1e308] gave NaN samples."""
    generator = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match=r"reaches beyond the largest torch\.float32 value"):
        SampleRange.parse("[0,1e39]").sample((10,), generator)
    assert bool(SampleRange.parse("[0,1e39]").sample((10,), generator, dtype=torch.float64).isfinite().all())
    with pytest.raises(ValueError, match=r"U\[-1e\+308,1e\+308\] is too wide to sample from origin 0\.0: its map overflows"):
        SampleRange.parse("[-1e308,1e308]").sample((10,), generator, dtype=torch.float64)
