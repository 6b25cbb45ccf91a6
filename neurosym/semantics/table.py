"""Operator tables: what each number and operator symbol means, and the concepts they add."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from types import MappingProxyType
from typing import TypeVar

from neurosym.semantics.operators import (
    CEIL_DIVIDE,
    CEIL_HARMONIC,
    CEIL_MEAN,
    CLAMPED_MINUS,
    FRACTION_DIVIDE,
    MAXIMUM,
    MINIMUM,
    MINUS,
    PLUS,
    TIMES,
    Operator,
    Value,
)
from neurosym.syntax.concepts import ADDITIVE, BUILTIN_NUMBERS, BUILTIN_OPERATORS, MULTIPLICATIVE, ConceptTable
from neurosym.training.checks import is_int

_Symbols = TypeVar("_Symbols")


def number_value(symbol: str, value: object) -> Value:
    """``value`` as the value of the number ``symbol``: an int (numpy's as a Python int, not a bool) or a Fraction,
    else ``ValueError``."""
    if is_int(value):
        return int(value)  # type: ignore[call-overload]  # (an Integral: is_int is no TypeGuard)
    if not isinstance(value, Fraction):
        raise ValueError(f"number {symbol!r}: its value must be an int or a Fraction, got {value!r}")
    return value


def _symbol_mapping(symbols: _Symbols, what: str) -> _Symbols:
    """``symbols`` when it is a mapping (symbol -> value or Operator), else ``TypeError`` naming ``what``."""
    if not isinstance(symbols, Mapping):
        raise TypeError(f"{what} must be a mapping symbol -> meaning, got {type(symbols).__name__} {symbols!r:.40}")
    return symbols


def _check_rules(symbol: str, operator: Operator) -> None:
    """``ValueError`` naming operator ``symbol`` where its scalar rule, or its vectorised rule where it has one, is not
    callable (``Operator(1, max, "max(a, b)")`` took the description for a vectorised rule, and failed at a batch's first
    solve as a rule that raised; ``Operator(1, 5)`` at the first evaluation as "'int' object is not callable")."""
    rules: dict[str, object] = {"scalar rule (apply)": operator.apply}
    if operator.vectorised is not None:  # (None: the scalar rule alone)
        rules["vectorised rule"] = operator.vectorised
    for role, rule in rules.items():
        if not callable(rule):
            raise ValueError(
                f"operator {symbol!r}: its {role} must be callable, got {type(rule).__name__} {rule!r:.40} (an Operator "
                "is Operator(level, apply, vectorised=None, description=''))"
            )


@dataclass(frozen=True, eq=False)
class OperatorTable:
    """The meaning of every symbol: ``numbers`` maps number symbols to values, ``operators`` maps
    operator symbols to :class:`Operator`. It must cover the built-in digits and ``+ - * /`` (with
    their grammatical levels); any other symbol is a concept, and :attr:`concepts` tells the parser.

    A table pickles and copies (``copy.copy``, ``copy.deepcopy``) as its three fields, so a copy evaluates and solves
    as the original does: the operators defined in :mod:`~neurosym.semantics.operators` (``PLUS``, ``MAXIMUM``, ...)
    come back as the very same objects, which keeps the closed-form preimages recognised by identity; any other
    operator by value (pickled where its rules pickle: module-level functions, not lambdas).
    """

    numbers: Mapping[str, Value]
    operators: Mapping[str, Operator]
    name: str = field(default="custom")

    def __post_init__(self) -> None:
        for field_name in ("numbers", "operators"):  # (a list failed in dict(), "cannot convert dictionary update ...")
            _symbol_mapping(getattr(self, field_name), f"operator table {self.name!r}: {field_name}")
        numbers = {symbol: number_value(symbol, value) for symbol, value in dict(self.numbers).items()}
        object.__setattr__(self, "numbers", MappingProxyType(numbers))
        object.__setattr__(self, "operators", MappingProxyType(dict(self.operators)))
        missing = [s for s in (*BUILTIN_NUMBERS, *BUILTIN_OPERATORS) if s not in self.numbers and s not in self.operators]
        if missing:
            raise ValueError(f"operator table {self.name!r} lacks the built-in symbols {missing}")
        for symbol, operator in self.operators.items():  # (a plain function failed below, reading its level)
            if not isinstance(operator, Operator):
                raise ValueError(f"operator {symbol!r} must be an Operator(level, apply), got {operator!r}")
            if not is_int(operator.level) or operator.level not in (ADDITIVE, MULTIPLICATIVE):  # (True, 1.0 equal 1)
                raise ValueError(
                    f"operator {symbol!r}: level must be the int 1 (like + −) or 2 (like × ÷), got "
                    f"{type(operator.level).__name__} {operator.level!r:.40}"
                )
            _check_rules(symbol, operator)
        for symbol, level in BUILTIN_OPERATORS.items():
            if self.operators[symbol].level != level:
                raise ValueError(f"built-in operator {symbol!r} must keep precedence level {level}")
        both = set(self.numbers) & set(self.operators)
        if both:
            raise ValueError(f"symbols {sorted(both)} are both numbers and operators")
        self.concepts  # noqa: B018 - validates the added symbols now rather than at the first parse

    def __reduce__(self) -> tuple[type[OperatorTable], tuple[dict[str, Value], dict[str, Operator], str]]:
        """Pickled and copied as its fields: the read-only views it holds (mappingproxy) do not pickle."""
        return type(self), (dict(self.numbers), dict(self.operators), self.name)

    @cached_property
    def concepts(self) -> ConceptTable:
        """The syntactic side of the added symbols, for :func:`neurosym.syntax.parse`."""
        added = {s: op.level for s, op in self.operators.items() if s not in BUILTIN_OPERATORS}
        return ConceptTable(
            numbers=tuple(s for s in self.numbers if s not in BUILTIN_NUMBERS),
            additive=tuple(s for s, level in added.items() if level == ADDITIVE),
            multiplicative=tuple(s for s, level in added.items() if level == MULTIPLICATIVE),
        )

    def extend(
        self,
        numbers: Mapping[str, Value] | None = None,
        operators: Mapping[str, Operator] | None = None,
        name: str | None = None,
    ) -> OperatorTable:
        """A new table with added (or redefined) numbers and operators, e.g. ``{"x": 11}`` (``TypeError`` for ones that
        are no mapping: a list of symbols has no values)."""
        return OperatorTable(
            {**self.numbers, **_symbol_mapping(numbers or {}, "extend: numbers")},
            {**self.operators, **_symbol_mapping(operators or {}, "extend: operators")},
            name or f"{self.name}+concepts",
        )


_DIGITS = {str(d): d for d in range(10)}

#: The paper's semantics: a − b = max(0, a − b), a ÷ b = ⌈a ÷ b⌉, ÷0 invalid; exact integers.
HINT_SEMANTICS = OperatorTable(_DIGITS, {"+": PLUS, "-": CLAMPED_MINUS, "*": TIMES, "/": CEIL_DIVIDE}, "hint")

#: Ordinary arithmetic over exact fractions (negative results allowed, ÷0 invalid).
RATIONAL_SEMANTICS = OperatorTable(
    {s: Fraction(v) for s, v in _DIGITS.items()},
    {"+": PLUS, "-": MINUS, "*": TIMES, "/": FRACTION_DIVIDE},
    "rational",
)

#: The paper's few-shot numbers: x = 11, y = 12.
FEWSHOT_NUMBERS: dict[str, int] = {"x": 11, "y": 12}
#: The paper's few-shot operators: a = max and b = min (precedence of + −); c = ⌈(i+j)/2⌉ and d = ⌈2ij/(i+j)⌉
#: (precedence of × ÷).
FEWSHOT_OPERATORS: dict[str, Operator] = {"a": MAXIMUM, "b": MINIMUM, "c": CEIL_MEAN, "d": CEIL_HARMONIC}
#: The paper's semantics with the few-shot numbers and operators added.
HINT_FEWSHOT_SEMANTICS = HINT_SEMANTICS.extend(FEWSHOT_NUMBERS, FEWSHOT_OPERATORS, "hint-fewshot")
