"""Binary operators: an exact scalar rule, and optionally the same rule over int64 numpy arrays.

A scalar rule returns ``None`` when the result is undefined (e.g. division by zero), or raises an arithmetic or
value error (:data:`INVALID`: ``lambda a, b: a // b`` as written) which :func:`rule_value` reads as ``None``; every
caller applies a rule through it (or :meth:`Operator.value`), as a grammar's rules are read. A vectorised rule
takes operand arrays ``a, b`` of shape ``[n]`` (int64) and returns ``(values, valid)``: the results
``[n]``, exact whenever every ``|operand| <= 2**30`` (they must then fit in int64, and the rule must not
fail on any operands), and a boolean mask ``[n]`` that is False where the scalar rule returns
``None``, or ``None`` when the rule is defined everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

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


@dataclass(frozen=True)
class Operator:
    """An operator's meaning: ``level`` is its precedence (1 like ``+ -``, 2 like ``* /``)."""

    level: int
    apply: ScalarRule
    vectorised: VectorRule | None = None
    description: str = ""

    def value(self, a: Value, b: Value) -> Value | None:
        """The scalar rule's result for ``a`` and ``b``, ``None`` where it is undefined (:func:`rule_value`)."""
        return rule_value(self.apply, a, b)


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
