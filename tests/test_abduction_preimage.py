"""Set-valued inverses of HINT's operators agree with brute force over a grid."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.semantics import operators
from neurosym.semantics.preimage import Interval, left_preimage, right_preimage, scan_left_preimage, scan_right_preimage

HINT = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: max(0, a - b),
    "*": lambda a, b: a * b,
    "/": lambda a, b: None if b == 0 else -(-a // b),
}
GRID = range(121)


def _as_set(interval: Interval | None) -> set[int]:
    return set() if interval is None else {v for v in GRID if v in interval}


intervals = st.builds(
    lambda lo, width: Interval(lo, None if width is None else lo + width),
    st.integers(-10, 30),  # (a negative bound was read as a value HINT's operators give: a - 3 = -2 gave a = 1)
    st.one_of(st.none(), st.integers(0, 12)),
)


@settings(max_examples=300, deadline=None)
@given(symbol=st.sampled_from("+-*/"), target=intervals, other=st.integers(0, 12))
def test_exact_preimages_match_brute_force(symbol, target, other):
    apply = HINT[symbol]
    # Upper bounds of the grid matter only for unbounded answers; compare within values whose image stays small.
    wanted_left = {a for a in GRID if apply(a, other) in target}
    wanted_right = {b for b in GRID if apply(other, b) in target}
    assert _as_set(left_preimage(symbol, target, other)) == wanted_left
    assert _as_set(right_preimage(symbol, other, target)) == wanted_right


def test_set_valued_cases_from_the_issue():
    # a - b = 0 for every a <= b; ceil(a / b) = t for a in ((t-1) b, t b].
    assert left_preimage("-", Interval.point(0), 5) == Interval(0, 5)
    assert right_preimage("-", 3, Interval.point(0)) == Interval(3, None)
    assert left_preimage("/", Interval.point(3), 4) == Interval(9, 12)
    assert right_preimage("/", 7, Interval.point(2)) == Interval(4, 6)
    assert left_preimage("/", Interval.point(1), 0) is None
    assert left_preimage("*", Interval.point(7), 2) is None


def test_other_operators_use_a_scan_and_need_a_function():
    assert left_preimage("a", Interval.point(6), 4, apply=max) == Interval(6, 6)
    assert left_preimage("a", Interval.point(4), 4, apply=max) == Interval(0, 4)
    assert right_preimage("b", 3, Interval.point(3), apply=min) == Interval(3, 200)
    with pytest.raises(ValueError, match="'c' has no built-in inverse"):
        left_preimage("c", Interval.point(1), 1)
    with pytest.raises(ValueError, match="'d' has no built-in inverse"):
        right_preimage("d", 1, Interval.point(1))


def test_a_rule_giving_numpy_integers_is_scanned_like_one_giving_python_integers():
    # execution takes np.maximum's np.int64 results; the scan found none of them in any interval (no preimage at all)
    assert left_preimage("m", Interval.point(6), 4, apply=np.maximum) == Interval(6, 6)
    assert right_preimage("m", 4, Interval.point(4), apply=np.maximum) == Interval(0, 4)


def test_operand_preimages_of_a_fractional_operand_hold_integers_only():
    from fractions import Fraction

    from neurosym.semantics.operators import PLUS, TIMES
    from neurosym.semantics.preimage import operand_preimages

    left, right = operand_preimages(PLUS, Interval.point(3), Fraction(1, 2), 1)  # a + 1 = 3; 1/2 + b = 3 has no integer b
    assert left == Interval(2, 2) and right is None
    assert operand_preimages(TIMES, Interval.point(3), Fraction(1, 2), 4)[1] == Interval(6, 6)


@settings(max_examples=200, deadline=None)
@given(
    wanted=st.integers(0, 2**63 - 1),
    operands=st.tuples(st.integers(0, 99), st.integers(1, 99)),
    symbol=st.sampled_from("+-*/"),
    numpy_operands=st.booleans(),
)
def test_numpy_integers_are_taken_as_python_ints_so_large_preimages_are_exact(wanted, operands, symbol, numpy_operands):
    """An ``np.int64`` target's preimage arithmetic wrapped around (or overflowed) past int64: ``(t - 1) * b + 1`` of a
    ceiling division, ``t + b`` of a clamped minus; numpy operands were scanned over ``0..2t`` instead of solved."""
    from neurosym.semantics.operators import CEIL_DIVIDE, CLAMPED_MINUS, PLUS, TIMES
    from neurosym.semantics.preimage import operand_preimages

    operator = {"+": PLUS, "-": CLAMPED_MINUS, "*": TIMES, "/": CEIL_DIVIDE}[symbol]
    left, right = (np.int64(v) for v in operands) if numpy_operands else operands
    found = operand_preimages(operator, Interval.point(np.int64(wanted)), left, right)
    assert found == operand_preimages(operator, Interval.point(wanted), *operands)
    for interval in found:
        assert interval is None or type(interval.lo) is int and type(interval.hi) in (int, type(None))


@settings(max_examples=200, deadline=None)
@given(wanted=st.integers(0, 2**63 - 1), other=st.integers(0, 2**63 - 1), symbol=st.sampled_from("+-*/"))
def test_left_and_right_preimages_take_a_numpy_operand_as_a_python_int(wanted, other, symbol):
    """The public preimages wrapped around on an ``np.int64`` operand as ``operand_preimages`` did: ``a / 4 = 2**62``
    gave ``a = 0`` and ``a - 2**62 = 2**62`` no ``a`` at all."""
    target = Interval.point(wanted)
    assert left_preimage(symbol, target, np.int64(other)) == left_preimage(symbol, target, other)
    assert right_preimage(symbol, np.int64(other), target) == right_preimage(symbol, other, target)


@pytest.mark.parametrize("bound", [2.0, True, np.True_, None, "3", np.float64(3)])
def test_an_interval_bound_that_is_no_int_is_refused(bound):
    with pytest.raises(TypeError, match=r"an Interval's lo must be an int, got"):
        Interval.point(bound)
    if bound is not None:  # (an upper bound of None is no bound)
        with pytest.raises(TypeError, match=r"an Interval's hi must be an int, got"):
            Interval(0, bound)


def test_a_scanned_rule_that_raises_for_some_operands_is_undefined_there():
    def floor_divide(a, b):
        return a // b

    assert scan_left_preimage(floor_divide, Interval.point(0), 0) is None  # every a // 0 raises
    assert scan_right_preimage(floor_divide, 7, Interval.point(0)) == Interval(8, 200)  # (b = 0 raises)
    assert scan_right_preimage(floor_divide, 7, Interval(3, 7), scan_limit=10) == Interval(1, 2)


@settings(max_examples=100, deadline=None)
@given(lo=st.integers(-5, 40), hi=st.integers(-5, 40))
def test_an_interval_whose_hi_is_below_its_lo_is_refused_and_make_gives_none_for_it(lo, hi):
    if 0 <= lo and hi < lo:
        with pytest.raises(ValueError, match=rf"an Interval's hi \({hi}\) is below its lo \({lo}\)"):
            Interval(lo, hi)
    made = Interval.make(lo, hi)
    assert (made is None) == (hi < max(lo, 0))
    assert made is None or (made.lo, made.hi) == (max(lo, 0), hi)


FEWSHOT_VALUES = [*range(300), 10**3, 10**6, 10**15]
"""Operands to check preimages at: a grid, and values far beyond it (an unbounded preimage holds them too)."""


@settings(max_examples=400, deadline=None)
@given(
    symbol=st.sampled_from("abcd"),
    target=intervals,
    operands=st.tuples(st.integers(0, 40), st.integers(0, 40)),
)
def test_fewshot_concept_preimages_match_brute_force_beyond_any_scan(symbol, target, operands):
    """The few-shot concepts' preimages hold every operand value that gives a wanted value, however large: a scan up to
    twice the values in play left out ``a = 162`` of ``min(a, 5) = 5``, which abduction then never proposed."""
    from neurosym.semantics.preimage import operand_preimages
    from neurosym.semantics.table import FEWSHOT_OPERATORS

    operator, (left, right) = FEWSHOT_OPERATORS[symbol], operands
    found = operand_preimages(operator, target, left, right)
    wanted_left = {a for a in FEWSHOT_VALUES if operator.value(a, right) in target}
    wanted_right = {b for b in FEWSHOT_VALUES if operator.value(left, b) in target}
    for interval, wanted in zip(found, (wanted_left, wanted_right), strict=True):
        assert (set() if interval is None else {v for v in FEWSHOT_VALUES if v in interval}) == wanted


NEGATIVE_RANGE = range(-40, 41)
"""Operand values to check preimages at where the semantics admit negative values (within every scan)."""
MONOTONE = {"+", "−", "*", "clamped −", "max", "min", "ceil mean"}
"""Meanings monotone in each operand, the other kept: the hull of their preimage holds preimages only."""


INTEGER_MEANINGS = {
    "+": operators.PLUS, "−": operators.MINUS, "*": operators.TIMES, "/": operators.CEIL_DIVIDE,
    "clamped −": operators.CLAMPED_MINUS, "max": operators.MAXIMUM, "min": operators.MINIMUM,
    "ceil mean": operators.CEIL_MEAN, "ceil harmonic": operators.CEIL_HARMONIC,
}  # fmt: skip
"""Meanings over the integers, by name."""


@settings(max_examples=400, deadline=None)
@given(
    name=st.sampled_from(sorted(INTEGER_MEANINGS)),
    target=st.builds(lambda lo, width: Interval(lo, lo + width), st.integers(-30, 30), st.integers(0, 6)),
    operands=st.tuples(st.integers(-12, 12), st.integers(-12, 12)),
    declared=st.booleans(),
)
def test_preimages_where_values_may_be_negative_miss_no_operand_value(name, target, operands, declared):
    """Where the semantics admit negative values (declared, or an operand is negative), the preimages hold every
    operand value in range that gives a wanted value, and for monotone meanings no other. The closed forms assume
    non-negative operands: ``a + 4 = 2`` gave no ``a`` (not -2), ``a * -2 = 6`` none, ``max(a, -3) = -3`` none."""
    from neurosym.semantics.preimage import operand_preimages

    operator, (left, right) = INTEGER_MEANINGS[name], operands
    if not declared and min(left, right) >= 0:
        left = -left - 1  # (the operand shows that values may be negative)
    found = operand_preimages(operator, target, left, right, negative=declared)
    wanted = (
        {a for a in NEGATIVE_RANGE if operator.value(a, right) in target},
        {b for b in NEGATIVE_RANGE if operator.value(left, b) in target},
    )
    for side, (interval, values) in enumerate(zip(found, wanted, strict=True)):
        held = set() if interval is None else {v for v in NEGATIVE_RANGE if v in interval}
        assert values <= held
        if name in MONOTONE or (name == "/" and side == 0):
            assert held == values


@pytest.mark.parametrize(
    "symbol,target,other,left,right",
    [
        ("*", 6, -2, Interval(-3, -3), Interval(-3, -3)),
        ("+", 2, -3, Interval(5, 5), Interval(5, 5)),
        ("/", 2, -4, Interval(-8, -5), Interval(-3, -2)),
        ("-", 0, -3, Interval(-200, -3), Interval(-3, 200)),
    ],
)
def test_hint_closed_forms_of_a_negative_operand_scan_hints_rule(symbol, target, other, left, right):
    """A negative operand is outside HINT's non-negative values, where the closed forms hold: ``a * -2 = 6`` had
    ``a`` nowhere (not -3), ``ceil(a / -4) = 2`` nowhere (not -8..-5), ``max(0, a - -3) = 0`` nowhere (not a <= -3);
    HINT's rule is scanned instead."""
    assert left_preimage(symbol, Interval.point(target), other) == left
    assert right_preimage(symbol, other, Interval.point(target)) == right


def test_the_tables_that_admit_negative_values_are_found_by_probing():
    from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, RATIONAL_SEMANTICS, Operator
    from neurosym.semantics.operators import MINUS
    from neurosym.semantics.preimage import admits_negative_values

    assert not admits_negative_values(HINT_SEMANTICS) and not admits_negative_values(HINT_FEWSHOT_SEMANTICS)
    assert admits_negative_values(RATIONAL_SEMANTICS) and admits_negative_values(HINT_SEMANTICS.extend({"n": -2}))
    assert admits_negative_values(HINT_SEMANTICS.extend(operators={"-": MINUS}))
    ten_minus = Operator(1, lambda a, b: 10 - a)  # non-negative on digits, negative on 9 + 9
    assert admits_negative_values(HINT_SEMANTICS.extend(operators={"t": ten_minus}))
