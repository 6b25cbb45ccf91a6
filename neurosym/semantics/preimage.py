"""Set-valued inverses of binary operators over the non-negative integers, as integer intervals.

Top-down abduction pushes a wanted value down an expression tree: given an operator, the value of
one operand and the set of results wanted, which values of the other operand give such a result?
For HINT's operators the answer is always an interval ``[lo, hi]`` (``hi = None`` for unbounded):
``a - b = max(0, a - b)`` makes the result 0 for every ``a <= b``, and ``a / b = ceil(a / b)`` gives
``t`` for every ``a`` in ``((t - 1) b, t b]``. :func:`left_preimage` and :func:`right_preimage` give
those intervals exactly for ``+ - * /``; :func:`operand_preimages` also knows the few-shot concepts ``max``,
``min``, ``ceil((i + j) / 2)`` and ``ceil(2ij / (i + j))`` in closed form (``min(a, 5) = 5`` for every ``a >= 5``).
Any other operator (a concept added at run time or an induced program) gets the hull of a scan over
``0..scan_limit`` — exact for monotone operators within the scan, an over-approximation otherwise, so callers
verify candidates by execution.

The closed forms hold where operands are non-negative, as under HINT's semantics. Where the semantics admit negative
values (a table with ordinary subtraction, or a negative number: :func:`admits_negative_values`), ``a + 4 = 2`` has
``a = -2``, which they leave out: every operator is then scanned over ``-scan_limit..scan_limit`` instead, as it is
for a negative operand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from numbers import Integral, Rational
from typing import TypeVar, cast

from neurosym.semantics.operators import (
    CEIL_DIVIDE,
    CEIL_HARMONIC,
    CEIL_MEAN,
    CLAMPED_MINUS,
    MAXIMUM,
    MINIMUM,
    PLUS,
    TIMES,
    Value,
    rule_value,
)
from neurosym.semantics.operators import Operator as OperatorMeaning
from neurosym.semantics.table import OperatorTable
from neurosym.training.checks import is_int

_Operand = TypeVar("_Operand", bound=Value)

Operator = Callable[[Value, Value], Value | None]
"""A binary operator the scans invert: any scalar rule (a result that is no integer lies in no :class:`Interval`, nor
does an operand pair where it raises an arithmetic or value error: :func:`~neurosym.semantics.operators.rule_value`)."""


@dataclass(frozen=True)
class Interval:
    """The integers ``lo <= v <= hi`` (``hi is None``: no upper bound).

    Under HINT's semantics operands are non-negative, and so are the values of HINT's operators (the preimages of a
    target's negative part under them are empty, and :meth:`make` drops it); the value wanted of another operator, as
    ordinary subtraction, may be negative, and where the semantics admit negative values so may the preimages.

    The bounds are held as Python ints (numpy's are converted: the preimages' arithmetic on an ``np.int64`` bound
    wrapped around, or overflowed, for large values); a bound that is no integer (a float, a bool, ``None`` as
    ``lo``) is refused with ``TypeError``, and ``hi < lo`` with ``ValueError``: an empty set of values is ``None``
    wherever one is expected (:meth:`make` gives it for bounds that may cross).
    """

    lo: int
    hi: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lo", _bound(self.lo, "lo"))
        if self.hi is not None:
            object.__setattr__(self, "hi", _bound(self.hi, "hi"))
            if self.hi < self.lo:
                raise ValueError(f"an Interval's hi ({self.hi}) is below its lo ({self.lo}): an empty interval is None")

    def __contains__(self, value: object) -> bool:
        """Whether ``value`` is an integer (a whole Fraction or a numpy integer too, as execution takes from a rule such
        as ``np.maximum``) in the interval."""
        if isinstance(value, Fraction) and value.denominator == 1:
            value = value.numerator
        elif isinstance(value, Integral):
            value = int(value)
        return isinstance(value, int) and value >= self.lo and (self.hi is None or value <= self.hi)

    @staticmethod
    def make(lo: int, hi: int | None) -> Interval | None:
        """The interval ``[max(lo, 0), hi]``, or ``None`` when it is empty."""
        lo = max(lo, 0)
        return None if hi is not None and hi < lo else Interval(lo, hi)

    @staticmethod
    def point(value: int) -> Interval:
        """The interval holding ``value`` alone (an int, numpy's too)."""
        return Interval(value, value)


def _bound(value: object, name: str) -> int:
    """``value`` as a Python int, ``TypeError`` where it is no int (numpy's count; a bool does not)."""
    if not is_int(value):
        raise TypeError(f"an Interval's {name} must be an int, got {type(value).__name__} {value!r}")
    return int(value)  # type: ignore[call-overload]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _scale(target: Interval, factor: int) -> Interval | None:
    """``{x : x * factor in target}`` for ``factor >= 0``."""
    if factor == 0:
        return Interval(0) if target.lo == 0 else None
    hi = None if target.hi is None else target.hi // factor
    return Interval.make(_ceil_div(target.lo, factor), hi)


def _shift(target: Interval, offset: int) -> Interval | None:
    """``{x : x + offset in target}``."""
    return Interval.make(target.lo - offset, None if target.hi is None else target.hi - offset)


def _reachable(target: Interval) -> Interval | None:
    """The part of ``target`` that HINT's operators can give (their values are non-negative), ``None`` when none is:
    the closed forms below hold for non-negative targets only (for ``a - 3 = -2`` they would give ``a = 1``)."""
    return Interval.make(target.lo, target.hi)


def _left_exact(symbol: str, wanted: Interval, right: int) -> Interval | None:
    target = _reachable(wanted)
    if target is None:
        return None
    if symbol == "+":
        return _shift(target, right)
    if symbol == "-":
        hi = None if target.hi is None else right + target.hi
        return Interval.make(0 if target.lo == 0 else right + target.lo, hi)
    if symbol == "*":
        return _scale(target, right)
    if right == 0:  # "/": division by zero is never a value
        return None
    hi = None if target.hi is None else target.hi * right
    return Interval.make(0 if target.lo == 0 else (target.lo - 1) * right + 1, hi)


def _right_exact(symbol: str, left: int, wanted: Interval) -> Interval | None:
    target = _reachable(wanted)
    if target is None:
        return None
    if symbol in "+*":
        return _left_exact(symbol, target, left)
    if symbol == "-":
        lo = 0 if target.hi is None else left - target.hi
        return Interval.make(lo, None if target.lo == 0 else left - target.lo)
    if left == 0:  # "/": 0 / b = 0 for every b >= 1
        return Interval(1) if 0 in target else None
    if target.hi == 0:
        return None
    lo = 1 if target.hi is None else _ceil_div(left, target.hi)
    hi = None if target.lo <= 1 else (left - 1) // (target.lo - 1)
    return Interval.make(max(lo, 1), hi)


EXACT_SYMBOLS = frozenset("+-*/")


def _maximum_preimage(target: Interval, other: int) -> Interval | None:
    """``{x : max(x, other) in target}``: up to ``target.hi`` where ``other`` is in reach, else ``target`` itself."""
    if target.hi is not None and other > target.hi:
        return None
    return Interval.make(0 if other >= target.lo else target.lo, target.hi)


def _minimum_preimage(target: Interval, other: int) -> Interval | None:
    """``{x : min(x, other) in target}``: from ``target.lo`` on, without a bound where ``other`` is in ``target``."""
    if other < target.lo:
        return None
    return Interval.make(target.lo, None if target.hi is None or other <= target.hi else target.hi)


def _ceil_mean_preimage(target: Interval, other: int) -> Interval | None:
    """``{x : ceil((x + other) / 2) in target}``: ``2 lo - 1 <= x + other <= 2 hi``."""
    return Interval.make(2 * target.lo - 1 - other, None if target.hi is None else 2 * target.hi - other)


def _ceil_harmonic_preimage(target: Interval, other: int) -> Interval | None:
    """``{x : ceil(2 x other / (x + other)) in target}`` (undefined where ``x + other = 0``). For ``other > 0`` the
    quotient grows with ``x`` from 0 towards ``2 other``, never reaching it: ``ceil >= lo`` where it exceeds ``lo - 1``,
    ``ceil <= hi`` where it is at most ``hi``."""
    if other == 0:  # 0 for every x >= 1
        return Interval(1) if 0 in target else None
    below = target.lo - 1  # the quotient must exceed it
    if below >= 2 * other:
        return None
    lo = 0 if below < 0 else below * other // (2 * other - below) + 1
    hi = target.hi
    return Interval.make(lo, None if hi is None or hi >= 2 * other else hi * other // (2 * other - hi))


_SYMMETRIC = {
    id(MAXIMUM): _maximum_preimage,
    id(MINIMUM): _minimum_preimage,
    id(CEIL_MEAN): _ceil_mean_preimage,
    id(CEIL_HARMONIC): _ceil_harmonic_preimage,
}
"""Commutative meanings whose preimages are known in closed form for non-negative integer operands: ``f(target,
other)``, the values of either operand for which the operator gives a value in ``target`` with ``other`` kept."""


def _hull(values: list[int]) -> Interval | None:
    return Interval(min(values), max(values)) if values else None


def _scanned_values(scan_limit: int, negative: bool) -> range:
    """The operand values a scan tries: ``0..scan_limit``, from ``-scan_limit`` on where they may be ``negative``."""
    return range(-scan_limit if negative else 0, scan_limit + 1)


def scan_left_preimage(
    apply: Operator, target: Interval, right: Value, scan_limit: int = 200, negative: bool = False
) -> Interval | None:
    """Hull of the ``a`` in ``0..scan_limit`` (``-scan_limit..scan_limit`` where operands may be ``negative``) with
    ``apply(a, right) in target`` (any operator)."""
    return _hull([a for a in _scanned_values(scan_limit, negative) if rule_value(apply, a, right) in target])


def scan_right_preimage(
    apply: Operator, left: Value, target: Interval, scan_limit: int = 200, negative: bool = False
) -> Interval | None:
    """Hull of the ``b`` in ``0..scan_limit`` (``-scan_limit..scan_limit`` where operands may be ``negative``) with
    ``apply(left, b) in target`` (any operator)."""
    return _hull([b for b in _scanned_values(scan_limit, negative) if rule_value(apply, left, b) in target])


def left_preimage(
    symbol: str, target: Interval, right: int, apply: Operator | None = None, scan_limit: int = 200
) -> Interval | None:
    """Values ``a`` with ``apply(a, right) in target``; ``None`` when there are none.

    ``symbol`` in ``+ - * /`` uses HINT's semantics exactly (``apply`` is then ignored) for a non-negative ``right``;
    for a negative one (the semantics then admit negative values) HINT's rule is scanned over
    ``-scan_limit..scan_limit`` (``a * -2 = 6`` has ``a = -3``), and for any other symbol ``apply`` is scanned
    (:func:`scan_left_preimage`). A numpy integer ``right`` is taken as a Python int.
    """
    right = _python_int(right)  # (an np.int64's arithmetic wrapped around: a / 4 = 2**62 gave a = 0)
    if symbol in EXACT_SYMBOLS and right >= 0:
        return _left_exact(symbol, target, right)
    return scan_left_preimage(_scanned(symbol, apply), target, right, scan_limit, negative=right < 0)


def right_preimage(
    symbol: str, left: int, target: Interval, apply: Operator | None = None, scan_limit: int = 200
) -> Interval | None:
    """Values ``b`` with ``apply(left, b) in target``; ``None`` when there are none (see :func:`left_preimage`)."""
    left = _python_int(left)
    if symbol in EXACT_SYMBOLS and left >= 0:
        return _right_exact(symbol, left, target)
    return scan_right_preimage(_scanned(symbol, apply), left, target, scan_limit, negative=left < 0)


def _python_int(value: _Operand) -> _Operand:
    """``value`` with a numpy integer as a Python int (an ``np.int64``'s arithmetic wraps around at 2**63)."""
    return cast(_Operand, int(value)) if is_int(value) else value


def _scanned(symbol: str, apply: Operator | None) -> Operator:
    """``apply``, the function whose preimages are scanned for, where ``symbol`` has no closed form (HINT's rule for
    ``+ - * /``, whose closed forms do not hold for a negative operand; an error when it was not given)."""
    if symbol in EXACT_SYMBOLS:
        return _HINT_MEANINGS[symbol].apply
    if apply is None:
        raise ValueError(f"operator {symbol!r} has no built-in inverse: pass its function as `apply`")
    return apply


def operand_preimages(
    operator: OperatorMeaning, wanted: Interval, left: Value, right: Value, negative: bool = False
) -> tuple[Interval | None, Interval | None]:
    """Values of the left operand (``right`` kept) and of the right one (``left`` kept) for which ``operator``
    gives a value in ``wanted``.

    Where operands are non-negative (``negative`` False, and ``left`` and ``right`` are not negative), exact for HINT's
    ``+ - * /`` meanings of integer operands and for the few-shot concepts' (:data:`_SYMMETRIC`) (recognised by
    identity, whatever symbol shows them), else the hull of a scan of ``0..scan`` beyond every value in play (a scan
    stops there: ``min(a, 5) = 5`` for every ``a >= 5`` was cut off at 100, and it took seconds for values of millions).
    Where operands may be negative (``negative``: the semantics admit negative values, :func:`admits_negative_values`;
    or an operand is), the closed forms do not hold (``a + 4 = 2`` has ``a = -2``), and every operator gets the hull of a
    scan of ``-scan..scan``."""
    left, right = _python_int(left), _python_int(right)
    negative = negative or left < 0 or right < 0
    exact = _EXACT.get(id(operator))
    if exact is not None and isinstance(left, int) and isinstance(right, int) and not negative:  # (integer operands)
        return _left_exact(exact, wanted, right), _right_exact(exact, left, wanted)
    symmetric = _SYMMETRIC.get(id(operator))
    if symmetric is not None and isinstance(left, int) and isinstance(right, int) and not negative:
        target = _reachable(wanted)
        return (None, None) if target is None else (symmetric(target, right), symmetric(target, left))
    scan = int(max(100, 2 * abs(wanted.lo), 2 * abs(wanted.hi or 0), 2 * max(left, -left), 2 * max(right, -right)))
    return (
        scan_left_preimage(operator.apply, wanted, right, scan, negative),
        scan_right_preimage(operator.apply, left, wanted, scan, negative),
    )


PROBED_VALUES = 32
"""How many values :func:`admits_negative_values` probes each operator on, pairwise, in each of its two rounds."""


def admits_negative_values(table: OperatorTable) -> bool:
    """Whether values under ``table`` may be negative, as far as probing shows: a number is negative, or an operator
    gives a negative value on two of the table's numbers or on two values that one operator gives on them (on the
    :data:`PROBED_VALUES` least in magnitude). ``True`` for ordinary subtraction (``0 - 1``), ``False`` for HINT's
    semantics and its few-shot concepts, whose values are non-negative integers, where the closed-form preimages hold
    (:func:`operand_preimages` with ``negative``)."""
    values = set(table.numbers.values())
    for _ in range(2):
        if any(value < 0 for value in values):
            return True
        probed = sorted(values, key=lambda value: (abs(value), value))[:PROBED_VALUES]
        values |= {
            result
            for operator in table.operators.values()
            for a in probed
            for b in probed
            if isinstance(result := operator.value(a, b), Rational)
        }
    return any(value < 0 for value in values)


_HINT_MEANINGS = {"+": PLUS, "-": CLAMPED_MINUS, "*": TIMES, "/": CEIL_DIVIDE}
"""HINT's meaning of each of the symbols :func:`left_preimage` knows in closed form."""
_EXACT = {id(meaning): symbol for symbol, meaning in _HINT_MEANINGS.items()}
"""Meanings whose preimages are known in closed form, by the symbol :func:`left_preimage` uses for them."""
