"""Exact answers to the arithmetic questions of DeepMind Mathematics: parse, execute, format.

The question is parsed with the Lark grammar ``grammars/mathematics_arithmetic.lark`` into a
:class:`~neurosym.syntax.Node` tree, evaluated exactly with :class:`fractions.Fraction`, and the result is
written the way ``mathematics_dataset`` writes it: ``-7``, ``2.78075253`` (when the question contains a
decimal), ``-2/3`` (otherwise), a number in the question's base, or an integer root. ``Simplify``
questions with square roots are evaluated with sympy and answered as the generator does, with
``str(expand(simplify(expression)))``.

Node symbols: ``"+" "-" "*" "/" "**"`` (two children), ``"neg"`` and ``"sqrt"`` (one), ``"|-|"``
(absolute difference), ``"base"`` (the base literal, then the expression), ``"root"`` (radicand, then
degree), ``"simplify"`` (one); leaves carry the number exactly as written. Spans are ``[start, end)``
character offsets in the question.
"""

from __future__ import annotations

import functools
import importlib.resources
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from fractions import Fraction
from typing import TypeVar

import lark
import sympy

from neurosym.syntax import Node
from neurosym.syntax.tree import names_malformed_trees, symbol_and_children
from neurosym.training.checks import int_at_least, is_int

ARITHMETIC_MODULES: dict[str, tuple[str, ...]] = {
    "interpolate": (
        "arithmetic__add_or_sub",
        "arithmetic__add_or_sub_in_base",
        "arithmetic__add_sub_multiple",
        "arithmetic__div",
        "arithmetic__mixed",
        "arithmetic__mul",
        "arithmetic__mul_div_multiple",
        "arithmetic__nearest_integer_root",
        "arithmetic__simplify_surd",
    ),
    "extrapolate": (
        "arithmetic__add_or_sub_big",
        "arithmetic__add_sub_multiple_longer",
        "arithmetic__div_big",
        "arithmetic__mixed_longer",
        "arithmetic__mul_big",
        "arithmetic__mul_div_multiple_longer",
    ),
}
"""The modules (released file stems) whose questions this module answers, per test regime."""

_ROOT_DEGREES = {
    "square": 2, "second": 2, "cube": 3, "third": 3, "fourth": 4, "fifth": 5,
    "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip
_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
_UNARY = {"neg": "neg", "sqrt": "sqrt", "simplify": "simplify"}
_SURD_OPERATIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}
_MAX_EXPONENT = 10_000
_MAX_DIGITS = 4_000
"""The most digits a number may have in a question, as a power's value, or in an answer (the dataset's answers have at
most 30 characters; Python refuses to convert integers of more than 4,300 digits to or from text)."""
_MAX_POWER_TERMS = 20_000
"""The most terms a surd's integer power may expand into, ``C(e + k - 1, k - 1)`` for a base of ``k`` terms to the ``e``:
simplifying takes about a millisecond a term (``(sqrt(2)+sqrt(3)+sqrt(5)+sqrt(7))**100``, 176,851 terms, took 79 s;
``(sqrt(2)+1)**10000``, 10,001 terms, 9 s)."""
_MAX_DEPTH = 200
"""How deep a question's parse tree, or a tree given to :func:`evaluate`, :func:`to_sympy` or :func:`answer_tree`, may
nest (its operations are evaluated recursively; the generator's questions nest a few levels)."""
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


class QuestionError(ValueError):
    """A question outside the arithmetic question language, or one without a defined answer."""


@functools.lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    grammar = importlib.resources.files("neurosym") / "grammars" / "mathematics_arithmetic.lark"
    return lark.Lark(grammar.read_text(), parser="lalr", propagate_positions=True)


def parse_question(question: str) -> Node:
    """Parse one question into a :class:`Node` tree; raise :class:`QuestionError` with the position (also for a
    question nested more than :data:`_MAX_DEPTH` levels deep), ``TypeError`` for a question that is no str (it failed
    inside Lark's lexer, on a missing ``char_pos``)."""
    if not isinstance(question, str):
        raise TypeError(f"a question is a str, got {type(question).__name__} {question!r:.40}")
    try:
        tree = _parser().parse(question)
    except lark.exceptions.UnexpectedInput as error:
        raise QuestionError(f"not an arithmetic question {_error_place(question, error)}: {question!r}") from None
    _check_depth(tree)
    return _to_node(tree.children[0] if tree.data == "start" else tree)


def _error_place(question: str, error: lark.exceptions.UnexpectedInput) -> str:
    """Where ``error`` stopped parsing ``question``: the column and the text from there, or the column after the end
    for a question that ends too early (Lark places its end of input at the last token, which was not the fault)."""
    ended = isinstance(error, lark.exceptions.UnexpectedToken) and error.token.type == "$END"
    if ended or isinstance(error, lark.exceptions.UnexpectedEOF):
        return f"at column {len(question) - question.rfind(chr(10))} (the question ends too early)"
    found = question[error.pos_in_stream : error.pos_in_stream + 10] if error.pos_in_stream is not None else ""
    return f"at column {error.column} ({found!r})"


_Tree = TypeVar("_Tree")


def _levels(root: _Tree, children: Callable[[_Tree], Iterable[_Tree]]) -> Iterator[list[_Tree]]:
    """The nodes of a tree level by level, the root's first (without recursion, so trees of any depth)."""
    level = [root]
    while level:
        yield level
        level = [child for node in level for child in children(node)]


def _check_depth(tree: lark.Tree) -> None:
    """Raise :class:`QuestionError` for a parse tree nested deeper than :data:`_MAX_DEPTH` (found without recursion:
    a sum of thousands of terms exceeded Python's recursion limit)."""
    for depth, level in enumerate(_levels(tree, _subtrees), start=1):
        if depth > _MAX_DEPTH:
            raise QuestionError(f"the question is nested more than {_MAX_DEPTH} levels deep (at characters {_span(level[0])})")


def _subtrees(tree: lark.Tree) -> list[lark.Tree]:
    """The children of a parse tree that are trees (not tokens)."""
    return [child for child in tree.children if isinstance(child, lark.Tree)]


def _check_tree_depth(tree: Node) -> None:
    """Raise :class:`QuestionError` naming the depth of a tree (one built by hand: parsed questions are capped) deeper
    than :data:`_MAX_DEPTH`, which the recursive walks below would meet as a ``RecursionError`` from deep inside."""
    depth = sum(1 for _ in _levels(tree, _node_children))
    if depth > _MAX_DEPTH:
        raise QuestionError(f"the tree is {depth} levels deep, more than the {_MAX_DEPTH} levels evaluated")


def _node_children(node: Node) -> tuple[Node, ...]:
    return node.children


def _span(tree: lark.Tree | lark.Token) -> tuple[int, int]:
    if isinstance(tree, lark.Token):
        assert tree.start_pos is not None and tree.end_pos is not None  # Lark's lexer places every token it makes
        return (tree.start_pos, tree.end_pos)
    return (tree.meta.start_pos, tree.meta.end_pos)


def _token(part: lark.Tree | lark.Token) -> lark.Token:
    """``part`` of a parse tree where the grammar has a token (a ``NUMBER`` or a ``ROOT_NAME``)."""
    assert isinstance(part, lark.Token), part
    return part


def _leaf(token: lark.Token) -> Node:
    return Node(str(token), (), _span(token))


def _to_node(tree: lark.Tree | lark.Token) -> Node:
    if isinstance(tree, lark.Token):
        return _leaf(tree)
    kind, parts = tree.data, tree.children
    if kind == "number":
        return _leaf(_token(parts[0]))
    if kind in _BINARY:
        return Node(_BINARY[kind], tuple(_to_node(part) for part in parts), _span(tree))
    if kind in _UNARY:
        return Node(_UNARY[kind], (_to_node(parts[0]),), _span(tree))
    if kind == "sub_swapped":
        subtrahend, minuend = parts
        return Node("-", (_to_node(minuend), _to_node(subtrahend)), _span(tree))
    if kind == "difference":
        return Node("|-|", (_to_node(parts[1]), _to_node(parts[2])), _span(tree))
    if kind == "in_base":
        return Node("base", (_leaf(_token(parts[0])), _to_node(parts[1])), _span(tree))
    if kind == "root_power":
        radicand, numerator, degree = map(_token, parts)
        if numerator != "1":
            raise QuestionError(f"only powers 1/k are roots, got {numerator}/{degree} at column {numerator.column}")
        return Node("root", (_leaf(radicand), _leaf(degree)), _span(tree))
    if kind == "root_named":
        name, radicand = map(_token, parts)
        return Node("root", (_leaf(radicand), Node(str(_ROOT_DEGREES[name]), (), _span(name))), _span(tree))
    raise QuestionError(f"unexpected parse-tree node {kind!r}")  # pragma: no cover - grammar and code disagree


@names_malformed_trees
def evaluate(tree: Node, base: int = 10) -> Fraction:
    """The exact value of an expression tree (base questions and roots give integral fractions); ``TypeError``
    naming the place of a malformed node (a child that is not a Node, a symbol not a str, a list of children);
    :class:`QuestionError` for a tree more than :data:`_MAX_DEPTH` levels deep."""
    _check_tree_depth(tree)
    return _evaluate(tree, base)


def _evaluate(tree: Node, base: int) -> Fraction:
    """:func:`evaluate`'s recursion."""
    symbol, children = symbol_and_children(tree)
    if not children:
        return _literal(symbol, tree.span, base)
    if symbol == "base":
        return _evaluate(children[1], _integer(children[0], "base", minimum=2, maximum=len(_DIGITS)))
    if symbol == "root":
        radicand = _integer(children[0], "radicand", minimum=0)
        return Fraction(_nearest_root(radicand, _integer(children[1], "root degree", minimum=1)))
    if symbol == "simplify":
        raise QuestionError("a Simplify question has a surd for answer, not a rational: use answer_tree")
    values = [_evaluate(child, base) for child in children]
    if symbol == "neg":
        return -values[0]
    if symbol == "sqrt":
        return _rational_sqrt(values[0], children[0])
    left, right = values
    if symbol == "+":
        return left + right
    if symbol == "-":
        return left - right
    if symbol == "*":
        return left * right
    if symbol == "|-|":
        return abs(left - right)
    if symbol == "**":
        return _power(left, right, children[1])
    if symbol == "/":
        if right == 0:
            raise QuestionError(f"division by zero at characters {children[1].span}")
        return left / right
    raise QuestionError(f"unknown operator {symbol!r}")


def _power(base: Fraction, exponent: Fraction, where: Node) -> Fraction:
    if exponent.denominator != 1 or abs(exponent) > _MAX_EXPONENT:
        raise QuestionError(f"exponent {exponent} at characters {where.span} must be an integer of at most {_MAX_EXPONENT}")
    if base == 0 and exponent < 0:
        raise QuestionError(f"zero to the negative power {exponent} at characters {where.span}")
    size = math.log10(max(abs(base.numerator), base.denominator))  # (the power's digits: its logarithm's whole part + 1)
    _check_digits(int(abs(exponent) * size) + 1, f"the power with the exponent at characters {where.span}")
    return base ** int(exponent)


def _digits(value: Fraction) -> int:
    """The number of decimal digits of the larger of ``value``'s numerator and denominator."""
    return _integer_digits(max(abs(value.numerator), value.denominator))


def _integer_digits(number: int) -> int:
    """The number of decimal digits of ``number`` (at least 1), exactly: a float logarithm's whole part + 1 is one
    too many just below a power of 10 (4,000 nines) and may be one too few at it."""
    digits = int(math.log10(number)) + 1
    return digits - (number < 10 ** (digits - 1)) + (number >= 10**digits)


def _check_digits(digits: int, what: str) -> None:
    """Raise :class:`QuestionError` for a number of more than :data:`_MAX_DIGITS` digits (computed before a power is
    taken: nested powers ran for minutes, and a long answer raised ``ValueError`` when written)."""
    if digits > _MAX_DIGITS:
        raise QuestionError(f"{what} has {digits} digits, more than the {_MAX_DIGITS} answered")


def _number(symbol: str, span: tuple[int, int] | None) -> Fraction:
    """A base-10 literal's exact value; :class:`QuestionError` for one of more than :data:`_MAX_DIGITS` characters."""
    _check_digits(len(symbol), f"the number at characters {span}")
    return Fraction(symbol)


def _rational_sqrt(value: Fraction, where: Node) -> Fraction:
    roots = [math.isqrt(part) if part >= 0 else -1 for part in (value.numerator, value.denominator)]
    if min(roots) < 0 or roots[0] ** 2 != value.numerator or roots[1] ** 2 != value.denominator:
        raise QuestionError(f"sqrt of {value} at characters {where.span} is not rational (only Simplify keeps surds)")
    return Fraction(roots[0], roots[1])


@names_malformed_trees
def to_sympy(tree: Node) -> sympy.Expr:
    """The exact sympy expression of a tree of numbers, ``+ - * / ** neg sqrt`` (for surds); ``TypeError`` for a
    malformed tree, :class:`QuestionError` for a too deep one, as :func:`evaluate`, and for one without a real value
    (division by zero, zero to a negative power, the square root of a negative number)."""
    _check_tree_depth(tree)
    return _to_sympy(tree)


def _to_sympy(tree: Node) -> sympy.Expr:
    """:func:`to_sympy`'s recursion."""
    symbol, children = symbol_and_children(tree)
    if not children:
        return sympy.Rational(_number(symbol, tree.span))
    values = [_to_sympy(child) for child in children]
    if symbol == "neg":
        return -values[0]
    if symbol == "sqrt":
        if values[0].is_negative:  # (answered "2*I" for sqrt(-4))
            raise QuestionError(f"sqrt of {values[0]} at characters {children[0].span} is not real")
        return sympy.sqrt(values[0])
    left, right = values
    if symbol == "/" and right.is_zero:
        raise QuestionError(f"division by zero at characters {children[1].span}")
    if symbol not in _SURD_OPERATIONS:
        raise QuestionError(f"operator {symbol!r} at characters {tree.span} has no surd meaning")
    if symbol == "**":
        return _surd_power(left, right, children[1])
    return _SURD_OPERATIONS[symbol](left, right)


def _surd_power(base: sympy.Expr, exponent: sympy.Expr, where: Node) -> sympy.Expr:
    """``base ** exponent`` for surds: a rational to an integer power as :func:`_power` takes it (sympy computed
    ``10**10**9`` for minutes), any exponent at most :data:`_MAX_EXPONENT` in size, a power of a sum expanding into at
    most :data:`_MAX_POWER_TERMS` terms, and a fractional power only of a base that is not negative (sympy answered
    ``(-4)**(1/2)`` with ``2*I``, as ``sqrt(-4)``)."""
    if abs(exponent) > _MAX_EXPONENT:
        raise QuestionError(f"exponent {exponent} at characters {where.span} is larger than {_MAX_EXPONENT}")
    if exponent.is_negative and base.is_zero:  # (a zero sympy does not write as 0 was answered "zoo")
        raise QuestionError(f"zero to the negative power {exponent} at characters {where.span}")
    if not exponent.is_Integer and not base.is_nonnegative:
        raise QuestionError(f"{base} to the power {exponent} at characters {where.span} is not real")
    if base.is_Rational and exponent.is_Integer:
        return sympy.Rational(_power(_fraction(base), _fraction(exponent), where))
    power = base**exponent  # (sympy joins a power of a power: ((...)**30)**3 is (...)**90)
    if isinstance(power, sympy.Pow) and power.exp.is_Integer:
        base_terms = len(sympy.Add.make_args(sympy.expand(power.base)))
        if (terms := math.comb(abs(int(power.exp)) + base_terms - 1, base_terms - 1)) > _MAX_POWER_TERMS:
            raise QuestionError(f"the power at characters {where.span} expands into {terms} terms, more than {_MAX_POWER_TERMS}")
    return power


def _fraction(value: sympy.Rational) -> Fraction:
    return Fraction(int(value.p), int(value.q))


def _literal(symbol: str, span: tuple[int, int] | None, base: int) -> Fraction:
    """A leaf's exact value in ``base``: a decimal in base 10, else digits of the base (``"1e5"`` in base 10 was read
    as 100000 by ``Fraction`` and ``"562c"`` failed in it with a ``ValueError``); :class:`QuestionError` otherwise."""
    if base == 10 and "." in symbol:  # (a decimal: the numbers of a base question are digits only)
        return _number(symbol, span)
    _check_digits(len(symbol), f"the number at characters {span}")
    if not symbol or any(digit not in _DIGITS[:base] for digit in symbol):  # (int() read "0x1f" in base 16 as 31)
        raise QuestionError(f"{symbol!r} at characters {span} is not a number in base {base}")
    return Fraction(int(symbol, base))


def _integer(leaf: Node, role: str, minimum: int, maximum: int | None = None) -> int:
    """The value of a leaf where only an integer in digits belongs (a base, a radicand, a root's degree);
    :class:`QuestionError` for a decimal there, ``2.0`` too (a base ``2.0`` failed later as ``int("2.0")``), or a value
    out of range."""
    symbol = symbol_and_children(leaf)[0]
    value = _number(symbol, leaf.span)
    if not (symbol.isascii() and symbol.isdigit()) or value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and at most {maximum}"
        raise QuestionError(
            f"{role} {symbol!r} at characters {leaf.span} must be an integer in digits, at least {minimum}{upper}"
        )
    return int(value)


def _nearest_root(radicand: int, degree: int) -> int:
    """The integer nearest to ``radicand ** (1 / degree)`` (never a tie for integer radicands), computed in integers:
    a radicand beyond float range has its root too."""
    if radicand < 2 or degree >= 2 * radicand.bit_length():  # 1.5 ** degree > radicand: the root is below 1.5
        return min(radicand, 1)
    root = _floor_root(radicand, degree)
    return root + 1 if (2 * root + 1) ** degree < 2**degree * radicand else root


def _floor_root(radicand: int, degree: int) -> int:
    """The largest integer whose ``degree``-th power is at most ``radicand`` (>= 1): Newton's iteration in integers,
    falling from a power of two above the root."""
    if degree == 2:
        return math.isqrt(radicand)
    root = 1 << -(-radicand.bit_length() // degree)
    while (smaller := ((degree - 1) * root + radicand // root ** (degree - 1)) // degree) < root:
        root = smaller
    return root


def _has_decimal(tree: Node) -> bool:
    return ("." in tree.symbol) if tree.is_leaf else any(_has_decimal(child) for child in tree.children)


def format_rational(value: Fraction, as_decimal: bool = False) -> str:
    """``value`` as the dataset writes it: an integer, a reduced fraction ``-2/3``, or an exact decimal;
    :class:`QuestionError` for more than :data:`_MAX_DIGITS` digits (in the decimal, when it is one)."""
    _check_digits(_digits(value), "the answer")
    if value.denominator == 1:
        return str(value.numerator)
    if not as_decimal:
        return f"{value.numerator}/{value.denominator}"
    places = max(_multiplicity(value.denominator, 2), _multiplicity(value.denominator, 5))
    if 10**places % value.denominator:
        raise QuestionError(f"{value} has no terminating decimal expansion")
    scaled = abs(value.numerator) * 10**places // value.denominator
    # (a decimal has more digits than its fraction: 0.5**10000 has 10,000, and failed to be written as a ValueError)
    _check_digits(max(places, _integer_digits(max(scaled, 1))), "the answer as a decimal")
    digits = str(scaled).rjust(places + 1, "0")
    text = f"{digits[:-places]}.{digits[-places:]}".rstrip("0")
    return ("-" if value < 0 else "") + text


def _multiplicity(number: int, prime: int) -> int:
    count = 0
    while number % prime == 0:
        number //= prime
        count += 1
    return count


def format_in_base(value: int, base: int) -> str:
    """An integer written in ``base`` with digits ``0-9a-z`` and a leading ``-`` when negative; ``ValueError`` for a
    value that is no int (numpy's count) or a base that is no int in ``2..36`` (base 1, or ``True``, looped forever)."""
    if not is_int(value):
        raise ValueError(f"format_in_base writes an int, got {type(value).__name__} {value!r:.40}")
    base = int_at_least(base, "base", 2)
    if base > len(_DIGITS):
        raise ValueError(f"base must be at most {len(_DIGITS)} (the digits 0-9a-z), got {base}")
    magnitude, digits = abs(int(value)), []
    while True:
        magnitude, digit = divmod(magnitude, base)
        digits.append(_DIGITS[digit])
        if magnitude == 0:
            break
    return ("-" if value < 0 else "") + "".join(reversed(digits))


@names_malformed_trees
def answer_tree(tree: Node) -> str:
    """The answer string for a parsed question; ``TypeError`` for a malformed tree, :class:`QuestionError` for a too
    deep one, as :func:`evaluate`, and for a base question whose value is no integer (a tree built by hand)."""
    _check_tree_depth(tree)
    if tree.symbol == "simplify":
        surd = sympy.expand(sympy.simplify(_to_sympy(tree.children[0])))
        for number in surd.atoms(sympy.Rational):
            _check_digits(_digits(_fraction(number)), "a number of the answer")
        return str(surd)
    value = _evaluate(tree, 10)
    if tree.symbol == "base":
        if value.denominator != 1:  # (a tree built with a division: int() truncated 1/10 in base 2 to "0")
            raise QuestionError(f"the base question at characters {tree.span} has the value {value}, which is no integer")
        return format_in_base(int(value), int(tree.children[0].symbol))
    return format_rational(value, as_decimal=_has_decimal(tree))


def answer_question(question: str) -> str:
    """Answer one arithmetic question exactly as ``mathematics_dataset`` writes the answer (:class:`QuestionError` for
    one outside the language, ``TypeError`` for one that is no str: :func:`parse_question`)."""
    return answer_tree(parse_question(question))


def symbolic_answers(questions: Sequence[str]) -> list[str]:
    """The symbolic route's answers; a question outside its language gets an empty answer (a miss)."""
    answers = []
    for question in questions:
        try:
            answers.append(answer_question(question))
        except QuestionError:
            answers.append("")
    return answers
