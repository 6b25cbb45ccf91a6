"""The "simple function" task of Madsen & Johansen (2019), vectorised across seeds.

An input ``x ∈ R^d`` is drawn uniformly from a range; two contiguous subsets of ``⌊s·d⌋`` elements,
overlapping by ``⌊o·⌊s·d⌋⌋`` elements and starting at a random offset fixed per seed, are summed to
``a`` and ``b``; the target is ``a ∘ b``. Models train on the interpolation range and are tested on the
extrapolation range.

Everything here is batched over an ensemble of ``S`` members (independent runs): member ``i`` has its
own seed (hence its own subset offset and fixed evaluation sets) and its own operation, so one batched
model can train many seeds (and operations) at once. Tensors are ``[S, batch, d]`` inputs and
``[S, batch, 1]`` targets.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import torch
from torch import Tensor

from neurosym.data.shares import decimal_floor
from neurosym.layers.arithmetic.base import ensemble_linear
from neurosym.training.checks import int_at_least, is_fraction, is_int, is_int_tensor, is_real

__all__ = [
    "SampleRange",
    "RANGE_PAIRS",
    "range_pair",
    "Operation",
    "OPERATIONS",
    "operation",
    "SubsetLayout",
    "DEFAULT_LAYOUT",
    "seed_stream",
    "UniformStream",
    "check_domain",
    "SimpleFunctionData",
]


@dataclass(frozen=True)
class SampleRange:
    """A uniform distribution over a union of disjoint intervals ``[low, high)``, e.g. ``U[−6,−2] ∪ U[2,6]``.

    Each interval is chosen with probability proportional to its length, so the union is sampled uniformly.
    """

    intervals: tuple[tuple[float, float], ...]

    def __post_init__(self) -> None:
        if not self.intervals:
            raise ValueError("a SampleRange needs at least one interval")
        previous_high = -math.inf
        for interval in self.intervals:
            if not (isinstance(interval, tuple | list) and len(interval) == 2 and all(map(is_real, interval))):
                raise TypeError(f"each interval must be a pair of numbers (low, high), got {interval!r}")
            low, high = interval
            if not (math.isfinite(low) and math.isfinite(high) and low < high):
                raise ValueError(f"interval [{low}, {high}] must be finite with low < high")
            if low < previous_high:
                raise ValueError(f"intervals {self.intervals} must be sorted and disjoint")
            previous_high = high

    @classmethod
    def parse(cls, text: str) -> SampleRange:
        """Read ``"[1,2]"`` or ``"[-6,-2]u[2,6]"`` (``u``, ``U`` or ``∪`` joins intervals; a leading ``U`` is allowed).

        The bounds are written as Python's ``float()`` reads them (``+1``, ``.5``, ``5.``, ``1e+5``, ``1_000``),
        finite (no ``nan`` or ``inf``). ``ValueError`` names the position of text that does not fit.
        """
        if not isinstance(text, str):
            raise TypeError(f"a range is read from a string like '[1,2]', got {type(text).__name__} {text!r}")
        reader = _RangeReader(text)
        intervals = [reader.interval()]
        while not reader.at_end():
            reader.expect("uU∪", "'∪' or the end")
            intervals.append(reader.interval())
        return cls(tuple(intervals))

    @property
    def low(self) -> float:
        """The lowest value of the range: the start of its first interval."""
        return self.intervals[0][0]

    @property
    def high(self) -> float:
        """The highest value of the range: the end of its last interval."""
        return self.intervals[-1][1]

    def contains_negative(self) -> bool:
        """Whether the range reaches below 0."""
        return self.low < 0

    def sample(self, shape: Sequence[int], generator: torch.Generator, dtype: torch.dtype = torch.float32) -> Tensor:
        """Draw a tensor of ``shape`` on ``generator``'s device, uniform over the union of intervals."""
        uniform = torch.rand(tuple(shape), generator=generator, device=generator.device, dtype=dtype)
        return self.transform(uniform)

    def transform(self, uniform: Tensor, origin: float = 0.0) -> Tensor:
        """Map samples uniform on ``[origin, origin + 1)`` onto this range, in place (any shape).

        A single interval is an affine map, skipped entirely when the range already is ``[origin, origin + 1)``;
        a union first places each sample along the total length, then shifts it into its interval. Every result lies
        in ``[low, high)`` of its interval: the map's rounding in ``uniform``'s dtype could reach ``high`` (``U[1, 2]``
        from ``torch.rand`` gave 2.0), so results are clamped to the values of that dtype in the interval
        (:func:`_dtype_bounds`; an interval that holds none, or reaches beyond the dtype's largest value, raises
        ``ValueError``). A range too wide for the map's products and sums in ``uniform``'s dtype (``U[-3e38,3e38]`` in
        float32, whose width overflowed to ``inf``: every sample came out NaN or the largest float) is mapped in float64
        and written back; one too wide for float64 raises ``ValueError``.
        """
        bounds = [_dtype_bounds(low, high, uniform.dtype) for low, high in self.intervals]
        # the largest intermediate of _map (its results lie in the bounds): a sample times the width or the shift of an
        # interval's affine map, the total length for a union (its samples are moved to origin 0 first)
        width = self.high - self.low
        single = max((abs(origin) + 1) * width, abs(self.low) + abs(origin) * width)
        reach = single if len(self.intervals) == 1 else sum(high - low for low, high in self.intervals)
        if reach <= torch.finfo(uniform.dtype).max:
            return self._map(uniform, origin, bounds)
        if reach > torch.finfo(torch.float64).max:
            raise ValueError(f"the range {self} is too wide to sample from origin {origin}: its map overflows float64")
        return uniform.copy_(self._map(uniform.double(), origin, bounds))  # (bounds hold: they are values of the dtype)

    def _map(self, uniform: Tensor, origin: float, bounds: list[tuple[float, float]]) -> Tensor:
        """:meth:`transform` in ``uniform``'s dtype, whose values ``bounds`` (per interval, the smallest and the largest
        value to clamp to) are."""
        if len(self.intervals) == 1:
            width = self.high - self.low
            shift = self.low - origin * width
            if width == 1 and shift == 0:
                return uniform
            return uniform.mul_(width).add_(shift).clamp_(*bounds[0])
        dtype, device = uniform.dtype, uniform.device
        lows = torch.tensor([low for low, _ in self.intervals], dtype=dtype, device=device)
        lengths = torch.tensor([high - low for low, high in self.intervals], dtype=dtype, device=device)
        starts = torch.cumsum(lengths, 0) - lengths
        position = uniform.sub_(origin).mul_(lengths.sum())
        index = (torch.searchsorted(starts, position, right=True) - 1).clamp_(0, len(self.intervals) - 1)
        smallest, largest = torch.tensor(bounds, dtype=dtype, device=device).unbind(1)  # [I] each
        return (position - starts[index] + lows[index]).clamp_(smallest[index], largest[index])

    def __str__(self) -> str:
        """``U[low,high]`` joined by ``∪``, each bound written short but exactly (:meth:`parse` reads it back)."""
        return "∪".join(f"U[{_format_bound(low)},{_format_bound(high)}]" for low, high in self.intervals)


@lru_cache(maxsize=1024)
def _dtype_bounds(low: float, high: float, dtype: torch.dtype) -> tuple[float, float]:
    """The smallest value of ``dtype`` at least ``low`` and the largest below ``high``; ``ValueError`` when
    ``[low, high)`` holds no value of ``dtype`` or reaches beyond its largest one. Kept per interval and dtype (every
    training step asks again)."""
    rounded = torch.tensor([low, high], dtype=torch.float64).to(dtype)
    if not bool(rounded.isfinite().all()):  # (its samples beyond the largest value all became that value)
        raise ValueError(
            f"the interval [{low}, {high}) reaches beyond the largest {dtype} value ({torch.finfo(dtype).max:g}): "
            f"narrow it, or sample it in a wider dtype"
        )
    outside = torch.stack([rounded[0].double() < low, rounded[1].double() >= high])
    inside = torch.where(outside, torch.nextafter(rounded, torch.tensor([math.inf, -math.inf], dtype=dtype)), rounded)
    smallest, largest = inside.tolist()
    if smallest > largest:
        raise ValueError(f"the interval [{low}, {high}) holds no {dtype} value to sample")
    return smallest, largest


def _format_bound(value: float) -> str:
    """``value`` in ``g`` format (``2``, ``0.1``) where that is exact, else its shortest exact ``repr``."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


_DIGITS = r"\d(?:_?\d)*"
_NUMBER = re.compile(rf"[+-]?(?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?{_DIGITS})?")
"""A finite float as ``float()`` reads it: sign, digits (single underscores between them), fraction, exponent."""


class _RangeReader:
    """Reads the intervals of :meth:`SampleRange.parse` from ``text``, left to right, skipping spaces."""

    def __init__(self, text: str):
        self.text, self.position = text, 0
        self._skip_spaces()

    def at_end(self) -> bool:
        return self.position == len(self.text)

    def interval(self) -> tuple[float, float]:
        """``U[low,high]`` (the ``U`` optional) -> ``(low, high)``."""
        if self.text.startswith(("U[", "u["), self.position):
            self.position += 1
        self.expect("[", "'[low,high]'")
        low = self.number()
        self.expect(",", "','")
        high = self.number()
        self.expect("]", "']'")
        return low, high

    def expect(self, characters: str, what: str) -> None:
        """Step over one of ``characters`` (and the spaces after it), else raise naming ``what`` was expected."""
        if self.at_end() or self.text[self.position] not in characters:
            raise self._error(f"expected {what}")
        self.position += 1
        self._skip_spaces()

    def number(self) -> float:
        """The finite number at the position (and the spaces after it)."""
        match = _NUMBER.match(self.text, self.position)
        if match is None:
            raise self._error("expected a number")
        value = float(match.group())
        if not math.isfinite(value):
            raise self._error(f"{match.group()} is too large for a float")
        self.position = match.end()
        self._skip_spaces()
        return value

    def _error(self, problem: str) -> ValueError:
        return ValueError(f"cannot read a range from {self.text!r} at position {self.position}: {problem}")

    def _skip_spaces(self) -> None:
        while not self.at_end() and self.text[self.position].isspace():
            self.position += 1


RANGE_PAIRS: dict[str, tuple[SampleRange, SampleRange]] = {
    name: (SampleRange.parse(interpolation), SampleRange.parse(extrapolation))
    for name, interpolation, extrapolation in [
        ("[1,2]", "[1,2]", "[2,6]"),
        ("[-2,-1]", "[-2,-1]", "[-6,-2]"),
        ("[-2,2]", "[-2,2]", "[-6,-2]u[2,6]"),
        ("[0,1]", "[0,1]", "[1,5]"),
        ("[0.1,0.2]", "[0.1,0.2]", "[0.2,2]"),
        ("[1.1,1.2]", "[1.1,1.2]", "[1.2,6]"),
        ("[10,20]", "[10,20]", "[20,40]"),
    ]
}
"""The paper's (interpolation, extrapolation) range pairs, keyed by the interpolation range; ``"[1,2]"`` is the default."""


@dataclass(frozen=True)
class Operation:
    """A target function ``t = f(a, b)`` of the two subset sums (unary operations ignore ``b``)."""

    name: str
    symbol: str
    function: Callable[[Tensor, Tensor], Tensor]
    needs_non_negative: bool = False
    needs_one_sign: bool = False
    """Whether ``b`` is a denominator, which inputs of both signs sum arbitrarily close to 0 (:func:`check_domain`)."""


def _square(a: Tensor, b: Tensor) -> Tensor:
    """``a²`` (``b`` is ignored): a module-level function, so that an :class:`Operation` pickles (a lambda did not)."""
    return a.square()


def _sqrt(a: Tensor, b: Tensor) -> Tensor:
    """``√a`` (``b`` is ignored), as :func:`_square`."""
    return a.sqrt()


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        Operation("add", "+", torch.add),
        Operation("sub", "−", torch.sub),
        Operation("mul", "×", torch.mul),
        Operation("div", "÷", torch.div, needs_one_sign=True),
        Operation("square", "a²", _square),
        Operation("sqrt", "√a", _sqrt, needs_non_negative=True),
    ]
}
"""The task's operations by name: ``add sub mul div`` (Table 1) and the unary ``square sqrt``."""


def operation(name: str) -> Operation:
    """Look up an operation by name, with an error that lists the valid names."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise ValueError(f"unknown operation {name!r}: choose from {', '.join(OPERATIONS)}") from None


def range_pair(name: str) -> tuple[SampleRange, SampleRange]:
    """Look up an (interpolation, extrapolation) pair by name, with an error that lists the valid names."""
    try:
        return RANGE_PAIRS[name]
    except KeyError:
        raise ValueError(f"unknown range pair {name!r}: choose from {', '.join(RANGE_PAIRS)}") from None


@dataclass(frozen=True)
class SubsetLayout:
    """Sizes of the two summed subsets: ``⌊s·d⌋`` elements each, overlapping by ``⌊o·⌊s·d⌋⌋``."""

    input_size: int = 100
    subset_ratio: float = 0.25
    overlap_ratio: float = 0.5

    def __post_init__(self) -> None:
        int_at_least(self.input_size, "input_size", 1)  # (a float would make weights of another width)
        # (True was read as the ratio 1, a string or None failed in the comparison, naming neither)
        if not (is_fraction(self.subset_ratio) and self.subset_ratio > 0):
            raise ValueError(f"subset_ratio must be a number in (0, 1], got {self.subset_ratio!r}")
        if not is_fraction(self.overlap_ratio):
            raise ValueError(f"overlap_ratio must be a number in [0, 1], got {self.overlap_ratio!r}")
        if self.subset_size < 1:
            raise ValueError(f"subset_ratio {self.subset_ratio} of input_size {self.input_size} leaves an empty subset")
        if self.span > self.input_size:
            raise ValueError(
                f"two subsets of {self.subset_size} overlapping by {self.overlap_size} span {self.span} "
                f"elements, more than input_size {self.input_size}"
            )

    @property
    def subset_size(self) -> int:
        """``⌊s·d⌋``, exact for the decimal ``s`` is written as (:func:`~neurosym.data.shares.decimal_floor`)."""
        return decimal_floor(self.subset_ratio, self.input_size)

    @property
    def overlap_size(self) -> int:
        """``⌊o·subset⌋``, exact for the decimal ``o`` is written as (:func:`~neurosym.data.shares.decimal_floor`)."""
        return decimal_floor(self.overlap_ratio, self.subset_size)

    @property
    def span(self) -> int:
        """Elements covered by the two subsets together: ``2·subset − overlap``."""
        return 2 * self.subset_size - self.overlap_size

    @property
    def offsets(self) -> int:
        """Number of possible start offsets: the subsets must fit inside the input."""
        return self.input_size - self.span + 1

    def weights(self, offsets: Tensor) -> Tensor:
        """The optimal first-layer weights ``W*`` for start ``offsets [S]``: ``[S, 2, d]`` of 0/1.

        Row 0 selects ``a = x[k : k+subset]``, row 1 selects ``b = x[k+subset−overlap : k+span]``.
        """
        if offsets.dim() != 1:
            raise ValueError(f"offsets must be [S], got shape {list(offsets.shape)}")
        if not is_int_tensor(offsets):
            raise ValueError(f"offsets must be an integer tensor, got {offsets.dtype}")
        if bool(((offsets < 0) | (offsets >= self.offsets)).any()):
            raise ValueError(f"offsets must lie in [0, {self.offsets - 1}], got {offsets.tolist()}")
        position = torch.arange(self.input_size, device=offsets.device)
        starts = torch.stack([offsets, offsets + self.subset_size - self.overlap_size], dim=1)  # [S, 2]
        relative = position - starts.unsqueeze(-1)  # [S, 2, d]
        return ((relative >= 0) & (relative < self.subset_size)).float()


DEFAULT_LAYOUT = SubsetLayout()
"""The paper's default: d = 100, subsets of 25 overlapping by 12."""


def seed_stream(seed: int, stream: int) -> int:
    """A 63-bit generator seed for an independent random stream ``stream`` of run ``seed``."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(2, dtype=np.uint64)[0] >> np.uint64(1))


_OFFSET_STREAM, _VALIDATION_STREAM, _TEST_STREAM = 0, 1, 2


class UniformStream:
    """A seeded stream of uniform training inputs (float32), cheap on the CPU.

    On the CPU each raw 64-bit word of numpy's SFC64 generator gives two float32 samples: 23 random
    bits written into the mantissa of 1.0 make a value uniform over the 2^23 float32 numbers in ``[1, 2)``
    (2^23 equally spaced values, the resolution of float32 there), which :meth:`SampleRange.transform`
    maps onto the wanted range — no arithmetic at all for the default ``U[1, 2]``. That takes less than
    half the time of ``torch.rand``, whose Mersenne Twister dominated a batched training step. On other
    devices the stream is ``torch.rand`` on a device generator. The state (:meth:`state`,
    :meth:`set_state`) goes into checkpoints, so a resumed run continues the same stream.
    """

    def __init__(self, seed: int, device: torch.device | str = "cpu"):
        seed = int_at_least(seed, "seed", 0)
        self.device = torch.device(device)
        if self.device.type == "cpu":
            self._bits: np.random.SFC64 | None = np.random.SFC64(seed)
        else:
            self._bits = None
            self._generator = torch.Generator(device=self.device).manual_seed(seed)

    def sample(self, sample_range: SampleRange, shape: Sequence[int]) -> Tensor:
        """A fresh float32 tensor of ``shape`` (sizes ints >= 0, else ``ValueError``: ``(-1,)`` gave an empty tensor) on
        the stream's device, uniform over ``sample_range``."""
        if not all(is_int(size) and size >= 0 for size in shape):
            raise ValueError(f"shape must hold sizes of at least 0, got {tuple(shape)}")
        if self._bits is None:
            return sample_range.transform(torch.rand(tuple(shape), generator=self._generator, device=self.device))
        count = math.prod(shape)
        mantissas = self._bits.random_raw((count + 1) // 2).view(np.uint32)[:count]
        mantissas >>= np.uint32(9)
        mantissas |= np.uint32(0x3F800000)  # sign 0, exponent of 1.0: 1 + mantissa / 2^23
        return sample_range.transform(torch.from_numpy(mantissas.view(np.float32)).reshape(tuple(shape)), origin=1.0)

    @property
    def generator(self) -> torch.Generator | None:
        """The device generator the stream draws from (``None`` on the CPU, where numpy's SFC64 draws)."""
        return None if self._bits is not None else self._generator

    def state(self) -> dict:
        """The position in the stream, for a checkpoint: tensors and Python numbers, so that the checkpoint loads with
        ``torch.load(..., weights_only=True)`` (SFC64's four uint64 words as int64 ``[4]`` of the same bits: numpy's
        array was refused there)."""
        if self._bits is None:
            return {"torch": self._generator.get_state()}
        state = self._bits.state
        words = torch.from_numpy(state["state"]["state"].view(np.int64).copy())
        return {"sfc64": state | {"state": {"state": words}}}

    def set_state(self, state: dict) -> None:
        """Continue from a :meth:`state` of a stream on the same kind of device (an SFC64 state whose words are
        a numpy array, as checkpoints held them before, too)."""
        kind = "torch" if self._bits is None else "sfc64"
        if not isinstance(state, dict) or kind not in state:
            raise ValueError(
                f"cannot resume the {kind} training stream from this checkpoint's random state "
                "(written by another device type or an older version); run without --resume"
            )
        if self._bits is None:
            self._generator.set_state(state["torch"].cpu())  # generator states are CPU byte tensors on every device
            return
        saved = state["sfc64"]
        words = saved["state"]["state"]
        if isinstance(words, torch.Tensor):  # (read onto the training device)
            words = words.cpu().numpy().view(np.uint64)
        self._bits.state = saved | {"state": {"state": words}}


def check_domain(op: Operation, ranges: str, *drawn: SampleRange) -> None:
    """Raise ``ValueError`` when ``op`` needs non-negative inputs (√) and one of the ranges ``drawn`` (from the
    range pair ``ranges``) reaches below zero, or when ``op`` divides (÷) and one holds values of both signs: a sum of
    such inputs comes arbitrarily close to 0, so the MSE of a perturbed solution, the success threshold, has no finite
    value (estimates of it on ``[-2,2]`` ranged from 4 to 4·10⁶ with the seed)."""
    if op.needs_non_negative and any(part.contains_negative() for part in drawn):
        raise ValueError(f"operation {op.name!r} needs non-negative inputs, but range pair {ranges!r} has negatives")
    if op.needs_one_sign and any(part.low < 0 < part.high for part in drawn):
        raise ValueError(
            f"operation {op.name!r} needs inputs of one sign, but range pair {ranges!r} has both: its denominator comes "
            "arbitrarily close to 0, and the success threshold (a perturbed solution's MSE) has no finite value"
        )


class SimpleFunctionData:
    """Training batches and fixed evaluation sets for an ensemble of ``S`` runs of the simple function task.

    Member ``i`` uses ``operations[i]`` and ``seeds[i]``; the seed alone fixes the member's subset offset
    and its validation (interpolation) and test (extrapolation) inputs, so runs with equal seeds see the
    same inputs whatever else is batched with them. Training batches come from one
    :class:`UniformStream` (``train_seed``) shared by the ensemble, fresh at every step.

    Shapes: :meth:`training_batch` → ``x [S, B, d]``, ``t [S, B, 1]``; :meth:`evaluation_batches` yields
    chunks of the same form. The evaluation inputs are stored once per distinct seed.
    """

    def __init__(
        self,
        operations: Sequence[str],
        seeds: Sequence[int],
        ranges: str = "[1,2]",
        layout: SubsetLayout = DEFAULT_LAYOUT,
        evaluation_size: int = 10_000,
        train_seed: int = 0,
        device: torch.device | str = "cpu",
    ):
        if isinstance(operations, str):  # (a string would be read as its characters' operations)
            raise ValueError(f"operations must be a list of operation names, got the string {operations!r}")
        if len(operations) != len(seeds) or len(seeds) == 0:
            raise ValueError(f"need one operation per seed, got {len(operations)} operations and {len(seeds)} seeds")
        seeds = [int_at_least(seed, f"seeds[{member}]", 0) for member, seed in enumerate(seeds)]
        evaluation_size = int_at_least(evaluation_size, "evaluation_size", 1)
        train_seed = int_at_least(train_seed, "train_seed", 0)
        self.operations = [operation(name) for name in operations]
        self.interpolation, self.extrapolation = range_pair(ranges)
        for op in self.operations:
            check_domain(op, ranges, self.interpolation, self.extrapolation)
        self.layout = layout
        self.seeds = seeds
        self.evaluation_size = evaluation_size
        self.device = torch.device(device)
        distinct = sorted(set(self.seeds))
        self._seed_index = torch.tensor([distinct.index(seed) for seed in self.seeds], device=self.device)
        self._distinct_seeds = len(distinct)
        self._inputs_are_per_member = distinct == self.seeds  # no gather needed
        self.offsets = torch.tensor([self._draw_offset(seed) for seed in self.seeds], dtype=torch.long, device=self.device)
        self.weights = layout.weights(self.offsets)  # [S, 2, d]
        self._evaluation_inputs = {
            "validation": self._fixed_inputs(distinct, _VALIDATION_STREAM, self.interpolation),
            "test": self._fixed_inputs(distinct, _TEST_STREAM, self.extrapolation),
        }
        self.stream = UniformStream(train_seed, self.device)

    @property
    def ensemble(self) -> int:
        """The number of members ``S``: one per seed."""
        return len(self.seeds)

    def _draw_offset(self, seed: int) -> int:
        generator = torch.Generator().manual_seed(seed_stream(seed, _OFFSET_STREAM))
        return int(torch.randint(self.layout.offsets, (1,), generator=generator))

    def _fixed_inputs(self, seeds: Sequence[int], stream: int, sample_range: SampleRange) -> Tensor:
        shape = (self.evaluation_size, self.layout.input_size)
        inputs = [sample_range.sample(shape, torch.Generator().manual_seed(seed_stream(seed, stream))) for seed in seeds]
        return torch.stack(inputs).to(self.device)  # [distinct seeds, N, d]

    @cached_property
    def _operation_groups(self) -> list[tuple[Operation, Tensor]]:
        names = [op.name for op in self.operations]
        return [
            (operation(name), torch.tensor([i for i, n in enumerate(names) if n == name], device=self.device))
            for name in dict.fromkeys(names)
        ]

    def targets(self, x: Tensor) -> Tensor:
        """``x [S, B, d]`` → targets ``[S, B, 1]``: each member's operation applied to its two subset sums."""
        if x.dim() != 3 or x.shape[0] != self.ensemble or x.shape[2] != self.layout.input_size:
            raise ValueError(f"expected inputs of shape [{self.ensemble}, batch, {self.layout.input_size}], got {list(x.shape)}")
        sums = ensemble_linear(x, self.weights.to(x.dtype))  # [S, B, 2]: a and b
        groups = self._operation_groups
        if len(groups) == 1:  # every member has the same operation
            return groups[0][0].function(sums[..., :1], sums[..., 1:])
        targets = torch.empty_like(sums[..., :1])
        for op, members in groups:
            selected = sums[members]
            targets[members] = op.function(selected[..., :1], selected[..., 1:])
        return targets

    def training_batch(self, batch_size: int = 128) -> tuple[Tensor, Tensor]:
        """A fresh interpolation-range batch: ``x [S, batch_size, d]``, ``t [S, batch_size, 1]``.

        Members with equal seeds (the same run of different operations) share their inputs, which keeps
        the cost of random numbers per step proportional to the number of distinct seeds.
        """
        shape = (self._distinct_seeds, int_at_least(batch_size, "batch_size", 1), self.layout.input_size)
        x = self.stream.sample(self.interpolation, shape)
        if not self._inputs_are_per_member:
            x = x[self._seed_index]
        return x, self.targets(x)

    def evaluation_batches(self, split: str, chunk_size: int = 2_000) -> Iterator[tuple[Tensor, Tensor]]:
        """The fixed ``split`` (``"validation"`` or ``"test"``) set in chunks: ``x [S, c, d]``, ``t [S, c, 1]``.

        The arguments are checked at the call, before the first chunk is asked for.
        """
        if split not in self._evaluation_inputs:
            raise ValueError(f"unknown split {split!r}: choose 'validation' or 'test'")
        return self._chunks(self._evaluation_inputs[split], int_at_least(chunk_size, "chunk_size", 1))

    def _chunks(self, inputs: Tensor, chunk_size: int) -> Iterator[tuple[Tensor, Tensor]]:
        for start in range(0, self.evaluation_size, chunk_size):
            x = inputs[self._seed_index, start : start + chunk_size]
            yield x, self.targets(x)
