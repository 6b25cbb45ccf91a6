"""Pointer Value Retrieval labelling rules (Zhang et al. 2021), and their induction from examples.

A PVR input is a row of ``L`` digit *slots* (a vector, a row of images, or a grid of images read in
row-major order). One slot holds the *pointer*; the other ``L - 1`` slots, in order, are the *values*.
A :class:`PVRRule` maps the pointer digit through a *pointer table* to a start position among the
values, takes a window of ``m + 1`` consecutive values from there (``m`` is the task's complexity) and
aggregates the window into the label.

Aggregations (``window`` is the list of selected values, ``K`` the number of digit classes):

* ``mod_sum``  -- ``sum(window) % K``;
* ``median``   -- the *lower* median (the ``(w - 1) // 2``-th smallest of ``w`` values), so that the
  label is always one of the window's digits, also for even window sizes;
* ``majority`` -- the most frequent value; a tie is broken towards the *smallest* tied value;
* ``min`` / ``max``.

Windows that run past the last value either *wrap* around to the first value (``boundary="wrap"``,
the default: every window then has ``m + 1`` values) or are *truncated* (``boundary="truncate"``:
the window keeps only the values that exist, at least one).

This module is pure numpy: every function works on whole batches ``digits [N, L]`` at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from neurosym.training.checks import int_at_least, is_int

BOUNDARIES = ("wrap", "truncate")


def _mod_sum(window: np.ndarray, valid: np.ndarray, num_classes: int) -> np.ndarray:
    return np.where(valid, window, 0).sum(axis=1) % num_classes


def _lower_median(window: np.ndarray, valid: np.ndarray, num_classes: int) -> np.ndarray:
    ordered = np.sort(np.where(valid, window, num_classes), axis=1)  # invalid entries sort last
    middle = (valid.sum(axis=1) - 1) // 2
    return np.take_along_axis(ordered, middle[:, None], axis=1)[:, 0]


def _majority(window: np.ndarray, valid: np.ndarray, num_classes: int) -> np.ndarray:
    one_hot = (window[:, :, None] == np.arange(num_classes)) & valid[:, :, None]
    return one_hot.sum(axis=1).argmax(axis=1)  # argmax returns the first, i.e. smallest, tied value


def _minimum(window: np.ndarray, valid: np.ndarray, num_classes: int) -> np.ndarray:
    return np.where(valid, window, num_classes).min(axis=1)


def _maximum(window: np.ndarray, valid: np.ndarray, num_classes: int) -> np.ndarray:
    return np.where(valid, window, -1).max(axis=1)


AGGREGATIONS: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "mod_sum": _mod_sum,
    "median": _lower_median,
    "majority": _majority,
    "min": _minimum,
    "max": _maximum,
}
"""name -> ``f(window [N, w] int, valid [N, w] bool, num_classes) -> labels [N]``."""


def _check_table_sizes(num_classes: int, num_values: int) -> None:
    int_at_least(num_classes, "num_classes", 1)
    int_at_least(num_values, "num_values", 1)


def contiguous_pointer_table(num_classes: int, num_values: int) -> tuple[int, ...]:
    """Pointer digits split into ``num_values`` contiguous groups, as equal as possible, the first groups
    one larger: for 10 digits and 3 values ``0-3 -> 0, 4-6 -> 1, 7-9 -> 2`` (the paper's 2x2 block task).
    Every group needs a digit, so there are at most ``num_classes`` values."""
    _check_table_sizes(num_classes, num_values)
    if num_values > num_classes:  # (a 4x4 grid's last 5 cells were never pointed at)
        raise ValueError(f"{num_classes} pointer digits cannot split into {num_values} non-empty groups, one for each value")
    groups = np.array_split(np.arange(num_classes), num_values)
    return tuple(int(position) for position, group in enumerate(groups) for _ in group)


def cyclic_pointer_table(num_classes: int, num_values: int) -> tuple[int, ...]:
    """Pointer digit ``d`` selects value ``d % num_values`` (the identity when there are 10 values)."""
    _check_table_sizes(num_classes, num_values)
    return tuple(int(d) % num_values for d in range(num_classes))


@dataclass(frozen=True)
class PVRRule:
    """The labelling function of one PVR task.

    ``length``: slots per input ``L``; ``pointer_position``: the pointer's slot; ``pointer_table``:
    pointer digit -> start index among the ``L - 1`` values (one entry per digit class);
    ``complexity``: ``m`` (window of ``m + 1`` values); ``aggregation``: a key of :data:`AGGREGATIONS`;
    ``boundary``: ``"wrap"`` or ``"truncate"``.
    """

    length: int
    pointer_table: tuple[int, ...]
    pointer_position: int = 0
    complexity: int = 0
    aggregation: str = "mod_sum"
    boundary: str = "wrap"
    num_classes: int = field(init=False)

    def __post_init__(self) -> None:
        for name in ("length", "pointer_position", "complexity"):  # (2.5 or True would index slots silently)
            int_at_least(getattr(self, name), name, 0)
        if not all(is_int(p) for p in self.pointer_table):  # (int() would truncate)
            raise ValueError(f"pointer_table holds value indices (ints), got {tuple(self.pointer_table)}")
        object.__setattr__(self, "pointer_table", tuple(int(p) for p in self.pointer_table))
        object.__setattr__(self, "num_classes", len(self.pointer_table))
        num_values = self.length - 1
        if self.length < 2:
            raise ValueError(f"a PVR input needs a pointer and at least one value: length={self.length}")
        if not 0 <= self.pointer_position < self.length:
            raise ValueError(f"pointer_position {self.pointer_position} is outside 0..{self.length - 1}")
        if self.num_classes < 2:
            raise ValueError("pointer_table needs an entry for each of at least 2 digit classes")
        bad = [p for p in self.pointer_table if not 0 <= p < num_values]
        if bad:
            raise ValueError(f"pointer_table points to {bad[0]}, outside the {num_values} values 0..{num_values - 1}")
        if not 0 <= self.complexity < num_values:
            raise ValueError(f"complexity must be in 0..{num_values - 1} for {num_values} values, got {self.complexity}")
        if not isinstance(self.aggregation, str) or self.aggregation not in AGGREGATIONS:  # (a list: "unhashable type")
            raise ValueError(f"unknown aggregation {self.aggregation!r}: choose from {sorted(AGGREGATIONS)}")
        if not isinstance(self.boundary, str) or self.boundary not in BOUNDARIES:
            raise ValueError(f"unknown boundary {self.boundary!r}: choose from {BOUNDARIES}")

    @property
    def value_slots(self) -> np.ndarray:
        """Slot index of each value, in order: ``[L - 1]``."""
        return np.delete(np.arange(self.length), self.pointer_position)

    def window_slots(self, pointers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Slots of the window chosen by each pointer digit: ``pointers [N]`` -> ``(slots [N, m+1],
        valid [N, m+1])``; ``valid`` is False where a truncated window ran past the last value."""
        return self._windows_from(np.asarray(self.pointer_table)[pointers])

    def _windows_from(self, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(slots [N, m+1], valid [N, m+1])`` of the windows that start at the values ``starts [N]``."""
        num_values = self.length - 1
        positions = starts[:, None] + np.arange(self.complexity + 1)
        valid = positions < num_values
        if self.boundary == "wrap":
            positions, valid = positions % num_values, np.ones_like(valid)
        return self.value_slots[np.minimum(positions, num_values - 1)], valid

    def label(self, digits: np.ndarray) -> np.ndarray:
        """``digits [N, L]`` (ints in ``0..K-1``) -> labels ``[N]`` int64."""
        digits = check_digits(digits, self.length, self.num_classes)
        slots, valid = self.window_slots(digits[:, self.pointer_position])
        window = np.take_along_axis(digits, slots, axis=1)
        return AGGREGATIONS[self.aggregation](window, valid, self.num_classes).astype(np.int64)

    def labels_from_each_start(self, digits: np.ndarray) -> np.ndarray:
        """``digits [N, L]`` -> ``[L - 1, N]``: row ``s`` holds the labels of the rule whose window starts at value ``s``
        whatever the pointer (this rule with the pointer table ``(s,) * K``), all in one pass: what :func:`induce_rule`
        fits a pointer table from."""
        digits = check_digits(digits, self.length, self.num_classes)
        num_values, count = self.length - 1, len(digits)
        slots, valid = self._windows_from(np.arange(num_values))  # [S, m+1]
        windows = np.swapaxes(digits[:, slots], 0, 1).reshape(num_values * count, slots.shape[1])  # [S * N, m+1], start by start
        aggregate = AGGREGATIONS[self.aggregation]
        return aggregate(windows, np.repeat(valid, count, axis=0), self.num_classes).astype(np.int64).reshape(num_values, count)


def check_digits(digits: np.ndarray, length: int, num_classes: int) -> np.ndarray:
    """Validate a batch of digit rows ``[N, length]`` with entries in ``0..num_classes-1``."""
    digits = np.asarray(digits)
    if digits.ndim != 2 or digits.shape[1] != length:
        raise ValueError(f"expected digits of shape [N, {length}], got {digits.shape}")
    if not np.issubdtype(digits.dtype, np.integer):
        raise ValueError(f"digits must be integers, got dtype {digits.dtype}")
    outside = (digits < 0) | (digits >= num_classes)
    if outside.any():
        row, col = np.argwhere(outside)[0]
        raise ValueError(f"digit {digits[row, col]} at row {row}, slot {col} is outside 0..{num_classes - 1}")
    return digits


@dataclass(frozen=True)
class InducedRule:
    """The result of :func:`induce_rule`: the best rule and the fraction of examples it labels correctly."""

    rule: PVRRule
    agreement: float


def induce_rule(
    digits: np.ndarray,
    labels: np.ndarray,
    num_classes: int = 10,
    complexities: Sequence[int] | None = None,
    aggregations: Sequence[str] = tuple(AGGREGATIONS),
    boundaries: Sequence[str] = BOUNDARIES,
    pointer_positions: Sequence[int] | None = None,
) -> InducedRule:
    """Find the PVR rule that labels the most of ``(digits [N, L], labels [N])`` correctly.

    The search runs over complexities, pointer positions, aggregations and boundaries; for each of
    these the pointer table is fitted digit by digit (every pointer digit independently takes the start
    position that explains most examples with that pointer), so all ``(L-1)^K`` tables are covered at
    the cost of ``K * (L-1)`` checks. Noisy digits (e.g. from a perception network) are tolerated: the
    rule with the highest agreement wins, ties going to the simplest: the lowest complexity (the earliest
    of ``complexities``, which the default lists from 0 up), then the earlier pointer position, aggregation
    and boundary. Pointer digits never seen keep start position 0. ``num_classes``, the digit classes, must be an
    int of at least 2 (as :class:`PVRRule` needs): ``ValueError`` otherwise, as for bad digits and labels (a label
    outside ``0..num_classes-1``, which no rule gives, among them); ``TypeError`` for ``complexities`` or
    ``pointer_positions`` that are no sequence.
    """
    num_classes = int_at_least(num_classes, "num_classes (digit classes)", 2)  # (1 was named as pointer_table)
    for name, names in (("aggregations", aggregations), ("boundaries", boundaries)):
        if isinstance(names, str):  # (its letters were searched: "unknown aggregation 'm'" for "median")
            raise TypeError(f"{name} must be a sequence of names, got the string {names!r} (write [{names!r}])")
    for name, values in (("complexities", complexities), ("pointer_positions", pointer_positions)):
        if values is not None and not isinstance(values, Iterable):  # (an int failed as "'int' object is not iterable")
            raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__} {values!r} (write [{values!r}])")
    digits = np.asarray(digits)
    if digits.ndim != 2:
        raise ValueError(f"expected digits of shape [N, L], got {digits.shape}")
    digits = check_digits(digits, digits.shape[1], num_classes)
    labels = np.asarray(labels)
    if labels.shape != (len(digits),):
        raise ValueError(f"expected labels of shape [{len(digits)}], got {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer):  # (NaN labels agreed with no rule: agreement 0, no error)
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
    if len(digits) == 0:
        raise ValueError("cannot induce a rule from zero examples")
    outside = np.flatnonzero((labels < 0) | (labels >= num_classes))
    if outside.size:  # (no rule gives such a label: it agreed with none, silently)
        raise ValueError(f"label {labels[outside[0]]} of example {outside[0]} is outside 0..{num_classes - 1}")
    length = digits.shape[1]
    num_values = length - 1
    complexities = range(num_values) if complexities is None else complexities
    pointer_positions = range(length) if pointer_positions is None else pointer_positions
    best: InducedRule | None = None
    for complexity, position, aggregation, boundary in itertools.product(  # (complexity outermost: the simplest wins ties)
        complexities, pointer_positions, aggregations, boundaries
    ):
        if boundary == "truncate" and complexity == 0:
            continue  # identical to "wrap" for single-value windows
        # hits[s, n]: whether starting the window at value s labels example n correctly (the rule checks the position)
        hits = (
            PVRRule(length, (0,) * num_classes, position, complexity, aggregation, boundary).labels_from_each_start(digits)
            == labels
        )
        pointers = digits[:, position]
        per_pointer = np.stack([hits[:, pointers == d].sum(axis=1) for d in range(num_classes)])  # [K, L-1]
        table = tuple(int(s) for s in per_pointer.argmax(axis=1))
        agreement = float(per_pointer.max(axis=1).sum() / len(labels))
        if best is None or agreement > best.agreement:
            best = InducedRule(PVRRule(length, table, position, complexity, aggregation, boundary), agreement)
    if best is None:
        raise ValueError("the search space is empty: give at least one complexity, aggregation and boundary")
    return best
