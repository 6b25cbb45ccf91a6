"""HINT syntax against references written from the definitions, each reading the text rather than the tree.

The release's ``head`` lists come from reading the printed sentence left to right with an operator-precedence
stack (as the release derives ``head`` from ``expr``); parse errors from a scan for the longest viable prefix of the
sentence; the networkx export is read back into a tree by its documented conventions alone.
"""

from __future__ import annotations

import networkx as nx
import pytest
from hint_strategies import trees
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, evaluate
from neurosym.syntax import (
    Node,
    ParseError,
    UnexpectedCharacterError,
    UnexpectedEndError,
    UnexpectedSymbolError,
    heads,
    parse,
    to_infix,
    to_networkx,
)

FEWSHOT = HINT_FEWSHOT_SEMANTICS.concepts
LEVEL = {"+": 1, "-": 1, "−": 1, "a": 1, "b": 1, "*": 2, "/": 2, "×": 2, "÷": 2, "c": 2, "d": 2}
NUMBERS = set("0123456789")


def release_heads(sentence: str) -> list[int]:
    """Each symbol's head, read off ``sentence`` with an operator-precedence stack: an operator takes the two values
    below it when it is reduced, and both brackets of a group take the operator the group reduced to last."""
    head = [-1] * len(sentence)
    values: list[int] = []
    pending: list[int] = []  # operator and "(" positions

    def reduce() -> int:
        operator = pending.pop()
        head[values.pop()] = head[values.pop()] = operator
        values.append(operator)
        return operator

    for at, symbol in enumerate(sentence):
        if symbol == "(":
            pending.append(at)
        elif symbol == ")":
            last = values[-1]  # (a redundant group of a single number heads nothing: the printer never writes one)
            while sentence[pending[-1]] != "(":
                last = reduce()
            head[pending.pop()] = head[at] = last
        elif symbol in LEVEL:
            while pending and sentence[pending[-1]] != "(" and LEVEL[sentence[pending[-1]]] >= LEVEL[symbol]:
                reduce()
            pending.append(at)
        else:
            values.append(at)
    while pending:
        reduce()
    return head


@settings(max_examples=150, deadline=None)
@given(trees(numbers="0123456789xy", operators="+-*/abcd", max_leaves=16))
def test_heads_are_those_the_release_reads_off_the_printed_sentence(tree):
    assert heads(tree, FEWSHOT) == release_heads(to_infix(tree, FEWSHOT))


def expected_after(previous: str, depth: int) -> tuple[str, ...]:
    """What may follow a token of kind ``previous`` at bracket ``depth``, in the parser's words."""
    if previous in ("start", "operator", "("):
        return ("a number", "'('")
    return ("an operator", "')'" if depth else "the end of input")


def scanned_error(text: str) -> tuple[type[ParseError], int, str | None, tuple[str, ...]] | None:
    """The error of ``text`` from the first character at which it stops being a prefix of an expression; ``None``
    for an expression."""
    previous, depth = "start", 0
    for at, char in enumerate(text):
        if char.isspace():
            continue
        kind = "number" if char in NUMBERS else "operator" if char in LEVEL and char not in "abcd" else char
        if kind not in ("number", "operator", "(", ")"):
            return UnexpectedCharacterError, at, char, expected_after(previous, depth)
        allowed = ("number", "(") if previous in ("start", "operator", "(") else ("operator", ")") if depth else ("operator",)
        if kind not in allowed:
            return UnexpectedSymbolError, at, char, expected_after(previous, depth)
        previous, depth = kind, depth + (kind == "(") - (kind == ")")
    if previous in ("number", ")") and depth == 0:
        return None
    return UnexpectedEndError, len(text), None, expected_after(previous, depth)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789+-*/()" * 2 + "  ×÷−x&.\t\n１", max_size=12))
def test_parse_errors_are_those_of_a_viable_prefix_scan(text):
    expected = scanned_error(text)
    try:
        parse(text)
    except ParseError as error:
        assert (type(error), error.position, error.char, error.expected) == expected
    else:
        assert expected is None


@pytest.mark.parametrize(
    ("left_grouped", "right_grouped", "values"),
    [
        ("(7-5)-3", "7-(5-3)", (0, 5)),
        ("(7-5)+3", "7-(5+3)", (5, 0)),
        ("(1+2)-5", "1+(2-5)", (0, 1)),  # associative-looking, but the minus is clamped
        ("(7/5)*3", "7/(5*3)", (6, 1)),
        ("(7/5)/3", "7/(5/3)", (1, 4)),
        ("(7*5)/3", "7*(5/3)", (12, 14)),  # associative-looking, but the division rounds up
        ("(2*3)*4", "2*(3*4)", (24, 24)),  # equal values, different trees: the brackets stay
        ("(2+3)+4", "2+(3+4)", (9, 9)),
    ],
)
def test_regroupings_print_with_the_brackets_their_tree_needs(left_grouped, right_grouped, values):
    flat = left_grouped.replace("(", "").replace(")", "")
    assert to_infix(parse(left_grouped)) == flat and to_infix(parse(right_grouped)) == right_grouped
    assert parse(flat) == parse(left_grouped) != parse(right_grouped)
    assert (evaluate(flat), evaluate(right_grouped)) == values


def tree_of_graph(graph: nx.DiGraph) -> Node:
    """The tree a graph of :func:`to_networkx` describes: the node without a parent is the root, and an operator's
    operands are its successors in the order of their indices (infix token indices: the left operand first)."""
    (root,) = (index for index, parents in graph.in_degree if parents == 0)

    def build(index: int) -> Node:
        return Node(graph.nodes[index]["symbol"], tuple(build(operand) for operand in sorted(graph.successors(index))))

    return build(root)


@settings(max_examples=80, deadline=None)
@given(trees(numbers="0123456789xy", operators="+-*/abcd"))
def test_the_graph_is_read_back_into_its_tree(tree):
    graph = to_networkx(tree, FEWSHOT)
    assert tree_of_graph(graph) == tree
    assert graph.graph["infix"] == to_infix(tree, FEWSHOT)


def test_graph_spans_are_token_ranges_of_the_parsed_text_not_of_the_printed_one():
    graph = to_networkx(parse(" ((1+2)) * 3"))
    assert graph.graph["infix"] == "(1+2)*3"
    assert (graph.nodes[2]["symbol"], graph.nodes[2]["span"]) == ("+", (0, 7))  # "((1+2))": tokens 0-6 of the text
    assert graph.nodes[5]["span"] == (0, 9) and graph.nodes[6]["span"] == (8, 9)
