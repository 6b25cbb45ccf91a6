"""Vector PVR: rows of digits whose first entry points into the rest, and the holdout-i shift.

Holdout-i (paper, Section 7) for complexity ``m``: the *held-out windows* are the first ``i``
permutations of ``(0, 1, ..., m)`` in lexicographic order (so holdout-1 holds out ``(0, ..., m)``
itself and holdout-``(m+1)!`` all of its orderings). The training set never has a held-out window at
the pointed position; the paper's test set, whatever ``i``, has ``(0, ..., m)`` there in every example
(:func:`sample_vector_holdout_test` given ``held[:1]``), everything else uniform.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from neurosym.data.pvr.sampling import all_allowed, sample_digits
from neurosym.data.randomness import as_generator
from neurosym.semantics.pvr_rules import PVRRule, cyclic_pointer_table
from neurosym.training.checks import int_at_least


def vector_rule(
    complexity: int = 0,
    aggregation: str = "mod_sum",
    num_values: int = 10,
    boundary: str = "wrap",
    num_classes: int = 10,
) -> PVRRule:
    """The paper's vector task: the pointer is the first entry; digit ``d`` starts the window at value
    ``d % num_values`` (with the default 10 values, value ``d``)."""
    return PVRRule(
        length=num_values + 1,
        pointer_table=cyclic_pointer_table(num_classes, num_values),
        complexity=complexity,
        aggregation=aggregation,
        boundary=boundary,
    )


@dataclass(frozen=True)
class VectorPVR:
    """A vector PVR task: every slot uniform over the digits; ``sample`` gives ``(digits [n, L], labels [n])``."""

    rule: PVRRule

    def sample(self, n: int, rng: np.random.Generator | int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` examples drawn with ``rng`` (a generator or the seed of one): ``(digits [n, L], labels [n])``."""
        rng = as_generator(rng)
        digits = sample_digits(n, all_allowed(self.rule.length, self.rule.num_classes), rng)
        return digits, self.rule.label(digits)


def held_out_windows(complexity: int, count: int) -> np.ndarray:
    """The first ``count`` permutations of ``(0, ..., complexity)``: ``[count, complexity + 1]`` int64."""
    int_at_least(complexity, "complexity m", 0)  # (1.5 failed inside math.factorial, True was read as m = 1)
    int_at_least(count, "holdout-i's i", 1)
    total = math.factorial(complexity + 1)
    if not 1 <= count <= total:
        raise ValueError(f"holdout-i needs 1 <= i <= (m+1)! = {total} for m={complexity}, got i={count}")
    permutations = itertools.islice(itertools.permutations(range(complexity + 1)), count)
    return np.array(list(permutations), dtype=np.int64)


def _window_contents(rule: PVRRule, digits: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    slots, valid = rule.window_slots(digits[:, rule.pointer_position])
    return slots, valid, np.take_along_axis(digits, slots, axis=1)


def _holds_held_out_window(rule: PVRRule, digits: np.ndarray, held: np.ndarray) -> np.ndarray:
    _, valid, window = _window_contents(rule, digits)
    equal = (window[:, None, :] == held[None, :, :]).all(axis=-1).any(axis=-1)
    return equal & valid.all(axis=1)


def sample_vector_holdout_train(
    rule: PVRRule, n: int, held: np.ndarray, rng: np.random.Generator | int
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform rows, redrawn until no pointed window equals a held-out window; ``(digits, labels)``."""
    rng = as_generator(rng)
    held = _check_held_digits(rule, held)  # (a window of an impossible digit held nothing out: a plain training set)
    if rule.window_slots(np.arange(rule.num_classes))[1].all() and len(np.unique(held, axis=0)) >= rule.num_classes ** (
        rule.complexity + 1
    ):
        raise ValueError("every window is held out and every pointer selects a whole window: no training row can be drawn")
    allowed = all_allowed(rule.length, rule.num_classes)
    digits = sample_digits(n, allowed, rng)
    bad = _holds_held_out_window(rule, digits, held)
    while bad.any():
        digits[bad] = sample_digits(int(bad.sum()), allowed, rng)
        bad = _holds_held_out_window(rule, digits, held)
    return digits, rule.label(digits)


def sample_vector_holdout_test(
    rule: PVRRule, n: int, held: np.ndarray, rng: np.random.Generator | int
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform rows whose pointed window is overwritten by a held-out window chosen uniformly; only
    pointers whose window is complete (all of them, unless truncated) are drawn. ``(digits, labels)``."""
    rng = as_generator(rng)
    held = _check_held_digits(rule, held)
    allowed = all_allowed(rule.length, rule.num_classes)
    _, valid = rule.window_slots(np.arange(rule.num_classes))
    complete_pointers = valid.all(axis=1)
    if not complete_pointers.any():
        raise ValueError("no pointer digit selects a complete window, so no held-out window can be placed")
    allowed[rule.pointer_position] = complete_pointers
    digits = sample_digits(n, allowed, rng)
    slots, _, _ = _window_contents(rule, digits)
    np.put_along_axis(digits, slots, held[rng.integers(len(held), size=n)], axis=1)
    return digits, rule.label(digits)


def _check_held_digits(rule: PVRRule, held: np.ndarray) -> np.ndarray:
    """:func:`_check_held`, and ``ValueError`` unless there is a held-out window and every digit is in
    ``[0, num_classes)``."""
    held = _check_held(rule, held)
    if not len(held) or held.min() < 0 or held.max() >= rule.num_classes:
        raise ValueError(f"a holdout needs held-out windows of digits in [0, {rule.num_classes}), got {held.tolist()!r:.60}")
    return held


def _check_held(rule: PVRRule, held: np.ndarray) -> np.ndarray:
    held = np.asarray(held)
    if held.ndim != 2 or held.shape[1] != rule.complexity + 1:
        raise ValueError(f"held-out windows must have shape [i, {rule.complexity + 1}], got {held.shape}")
    if held.size and held.dtype.kind not in "iu":  # 2.7 was truncated to 2 in a test row, and never matched in training
        raise ValueError(f"held-out windows must hold integer digits, got dtype {held.dtype}")
    return held
