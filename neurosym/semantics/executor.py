"""Executing parse trees under an operator table, with every intermediate value."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Rational
from typing import cast

from neurosym.semantics.operators import Value
from neurosym.semantics.table import HINT_SEMANTICS, OperatorTable
from neurosym.syntax.parser import parse
from neurosym.syntax.printing import InfixLayout, infix_layout
from neurosym.syntax.tree import Node
from neurosym.training.checks import is_int

#: ``res_all`` entry of a bracket token.
BRACKET_VALUE = -1


@dataclass(frozen=True)
class Execution:
    """The result of executing a tree.

    ``value`` is the final result, ``None`` when the expression is invalid (e.g. division by zero);
    ``res_all`` has one entry per infix token of ``to_infix(tree)``: the value of the sub-expression
    the token heads, −1 for brackets; ``None`` when the expression is invalid.
    """

    value: Value | None
    res_all: list[Value] | None


INVALID = Execution(None, None)


def execute(node: Node, table: OperatorTable = HINT_SEMANTICS) -> Execution:
    """Execute ``node`` with ``table``; invalid arithmetic gives ``Execution(None, None)``, never raises.

    Symbols the table does not know raise ``ValueError`` (a programming error, not a data error).
    """
    _check_table(table)
    layout = infix_layout(node, table.concepts)
    values = subexpression_values(layout, table)
    if values[layout.preorder[0]] is None:
        return INVALID
    return Execution(values[layout.preorder[0]], cast(list[Value], values))  # (no None below a valid root)


def subexpression_values(layout: InfixLayout, table: OperatorTable = HINT_SEMANTICS) -> list[Value | None]:
    """The value of the sub-expression each token of ``layout`` heads (``BRACKET_VALUE`` for a bracket), ``None``
    for one that is invalid or holds an invalid one: which parts of an invalid expression still have values.
    ``TypeError`` for a layout that is no :class:`~neurosym.syntax.printing.InfixLayout` or a table that is no
    :class:`OperatorTable` (``None`` failed as "'NoneType' object has no attribute 'tokens'")."""
    if not isinstance(layout, InfixLayout):
        raise TypeError(f"expected an InfixLayout (infix_layout(tree, concepts)), got {type(layout).__name__} {layout!r:.40}")
    _check_table(table)
    values: list[Value | None] = [BRACKET_VALUE] * len(layout.tokens)
    for index in reversed(layout.preorder):
        symbol, operands = layout.tokens[index], layout.operands[index]
        if operands is None:
            values[index] = table.numbers[symbol]
            continue
        left, right = values[operands[0]], values[operands[1]]
        result = None if left is None or right is None else table.operators[symbol].value(left, right)
        values[index] = _exact_result(symbol, left, right, result)
    return values


def _exact_result(symbol: str, left: Value | None, right: Value | None, result: object) -> Value | None:
    """``result`` of operator ``symbol`` on ``left`` and ``right`` as a value: a numpy integer as a Python int (it
    wrapped around at 2**63 in every operator that read it), an int, a Fraction or ``None`` as it is; anything else
    (a float, a bool) ``ValueError``."""
    if is_int(result):
        return int(result)  # type: ignore[call-overload]  # (an Integral: is_int is no TypeGuard)
    if result is None or (isinstance(result, Rational) and not isinstance(result, bool)):
        return cast(Value | None, result)  # (a Rational that is no Integral: a Fraction, or a type like it)
    raise ValueError(
        f"operator {symbol!r} gave {result!r} for {left} and {right}: an operator's rule returns an int, a "
        "Fraction, or None where it is undefined (execution is exact)"
    )


def evaluate(text: str, table: OperatorTable = HINT_SEMANTICS) -> Value | None:
    """Parse and execute one sentence: ``evaluate("3-5*2") == 0``, ``evaluate("7/(2-2)") is None``.

    Raises :class:`neurosym.syntax.ParseError` when ``text`` is not an expression of the language.
    """
    _check_table(table)
    return execute(parse(text, table.concepts), table).value


def _check_table(table: object) -> None:
    if not isinstance(table, OperatorTable):
        raise TypeError(f"expected an OperatorTable (e.g. neurosym.semantics.HINT_SEMANTICS), got {type(table).__name__}")
