"""Binary operators: an exact scalar rule, and optionally the same rule over int64 numpy arrays.

A scalar rule returns ``None`` when the result is undefined (e.g. division by zero), or raises an arithmetic or
value error (:data:`INVALID`: ``lambda a, b: a // b`` as written) which :func:`rule_value` reads as ``None``; every
caller applies a rule through it (or :meth:`Operator.value`), as a grammar's rules are read. A vectorised rule
takes operand arrays ``a, b`` of shape ``[n]`` (int64) and returns a tuple ``(values, valid)``: the integer results
``[n]``, exact whenever every ``|operand| <= 2**30`` (they must then fit in int64), and a boolean mask ``[n]`` that is
False where the scalar rule returns ``None``, or ``None`` when the rule is defined everywhere. It must not raise on
any operands: a batch applies it to operand pairs no sentence holds (the rows of other operators, placeholders), and
an exception gives no result for any row, where a scalar rule's marks one pair's result undefined. Callers apply it
through :func:`vector_outcome`, which names the operator of a rule that raises or returns anything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, SupportsIndex

import numpy as np

#: The value of an expression: an exact integer (HINT's semantics) or fraction (the rational semantics).
Value = int | Fraction
ScalarRule = Callable[[Value, Value], Value | None]
VectorRule = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray | None]]
#: Errors a rule may raise to say "this result is undefined" (division by zero, a negative square root, ...).
INVALID = (ArithmeticError, ValueError)


def rule_value(rule: ScalarRule, a: Value, b: Value) -> Value | None:
    """``rule(a, b)``, or ``None`` where the rule raises one of :data:`INVALID` (its result is undefined there)."""
    try:
        return rule(a, b)
    except INVALID:
        return None


def vector_outcome(symbol: str, rule: VectorRule, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``rule(a, b)`` for operand arrays ``a, b [n]``: the results ``[n]`` of an integer dtype and the validity mask
    ``[n]`` of bools or ``None`` (either may be one scalar for every row).

    Raises:
        ValueError: naming operator ``symbol``, where the rule raises anything (the exception chained as the cause:
            a vectorised rule marks undefined results in its mask, never by raising) or returns anything else.
    """
    try:
        outcome = rule(a, b)
    except Exception as error:  # (a user's rule: numpy's, torch's or Python's errors alike)
        raise ValueError(
            f"the vectorised rule of operator {symbol!r} raised {type(error).__name__}: {error}; a vectorised rule "
            "must not raise on any int64 operands (mark undefined results False in its validity mask, or give the "
            "operator no vectorised rule)"
        ) from error
    return _checked_outcome(symbol, outcome, len(a))


def _checked_outcome(symbol: str, outcome: object, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """``outcome`` of operator ``symbol``'s vectorised rule for ``n`` operand pairs as ``(values, valid)``, refused
    (``ValueError``) unless a tuple of integer results and a boolean mask or ``None``, each ``[n]`` or a scalar."""
    what = f"the vectorised rule of operator {symbol!r} returned"
    if not (isinstance(outcome, tuple) and len(outcome) == 2):
        raise ValueError(f"{what} {type(outcome).__name__} {outcome!r:.40}, not a tuple (values, valid)")
    values, valid = np.asarray(outcome[0]), outcome[1]
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(
            f"{what} {values.dtype} values; execution is exact over integers (give it no vectorised rule, or one of "
            "int64 results)"
        )
    if values.shape not in ((), (n,)):
        raise ValueError(f"{what} values of shape {list(values.shape)} for {n} operand pairs")
    if valid is None:
        return values, None
    valid = np.asarray(valid)
    if valid.dtype != np.bool_ or valid.shape not in ((), (n,)):
        raise ValueError(f"{what} a validity mask of {valid.dtype} shape {list(valid.shape)}; it is None or {n} bools")
    return values, valid


@dataclass(frozen=True)
class Operator:
    """An operator's meaning: ``level`` is its precedence (1 like ``+ -``, 2 like ``* /``).

    The meanings defined in this module (:data:`PLUS`, :data:`CEIL_DIVIDE`, :data:`MAXIMUM`, ...) pickle and copy
    (``copy.copy``, ``copy.deepcopy``) as references to themselves: parts of the library recognise them by identity
    (:func:`~neurosym.semantics.preimage.operand_preimages` knows their preimages in closed form), and their rules
    are lambdas, which do not pickle. Any other operator pickles and copies by value, its rules with it (pickled only
    where they pickle: module-level functions, not lambdas or closures).
    """

    level: int
    apply: ScalarRule
    vectorised: VectorRule | None = None
    description: str = ""

    def value(self, a: Value, b: Value) -> Value | None:
        """The scalar rule's result for ``a`` and ``b``, ``None`` where it is undefined (:func:`rule_value`)."""
        return rule_value(self.apply, a, b)

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """This module's name of a meaning defined here (pickle and ``copy`` then give this very object), else the
        default reduction by value."""
        return _MODULE_MEANINGS.get(id(self)) or super().__reduce_ex__(protocol)


def _ceil_divide(a: Value, b: Value) -> int | None:
    return None if b == 0 else -(-a // b)


def _ceil_divide_arrays(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    valid = b != 0
    return -(-a // np.where(valid, b, 1)), valid


def _ceil_harmonic(i: Value, j: Value) -> int | None:
    return _ceil_divide(2 * i * j, i + j)


def _ceil_harmonic_arrays(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _ceil_divide_arrays(2 * i * j, i + j)


def _fraction_divide(a: Value, b: Value) -> Fraction | None:
    return None if b == 0 else Fraction(a) / b


PLUS = Operator(1, lambda a, b: a + b, lambda a, b: (a + b, None), "a + b")
CLAMPED_MINUS = Operator(1, lambda a, b: max(0, a - b), lambda a, b: (np.maximum(a - b, 0), None), "max(0, a − b)")
TIMES = Operator(2, lambda a, b: a * b, lambda a, b: (a * b, None), "a × b")
CEIL_DIVIDE = Operator(2, _ceil_divide, _ceil_divide_arrays, "⌈a ÷ b⌉, invalid if b = 0")

MINUS = Operator(1, lambda a, b: a - b, lambda a, b: (a - b, None), "a − b")
FRACTION_DIVIDE = Operator(2, _fraction_divide, None, "a ÷ b as an exact fraction, invalid if b = 0")

MAXIMUM = Operator(1, max, lambda a, b: (np.maximum(a, b), None), "max(a, b)")
MINIMUM = Operator(1, min, lambda a, b: (np.minimum(a, b), None), "min(a, b)")
CEIL_MEAN = Operator(2, lambda i, j: -(-(i + j) // 2), lambda i, j: (-(-(i + j) // 2), None), "⌈(i + j) ÷ 2⌉")
CEIL_HARMONIC = Operator(2, _ceil_harmonic, _ceil_harmonic_arrays, "⌈2ij ÷ (i + j)⌉, invalid if i + j = 0")

#: The meanings defined above by identity, each with its name in this module (:meth:`Operator.__reduce_ex__`).
_MODULE_MEANINGS = {id(meaning): name for name, meaning in globals().items() if isinstance(meaning, Operator)}
