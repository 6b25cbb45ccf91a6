"""Malformed trees named at the entry points that walk them.

``Node`` does not check its fields when built (construction is hot), so a str or None where a child belongs, a
list of children or an int symbol failed deep inside a walk (``AttributeError: 'str' object has no attribute
'symbol'``) or gave an answer. Each entry point now raises ``TypeError`` naming the node at fault and its path;
well-formed trees give what they gave.
"""

from __future__ import annotations

import copy
import pickle
import re
from fractions import Fraction

import pytest
from hint_strategies import trees
from hypothesis import given, settings

from neurosym.semantics import RATIONAL_SEMANTICS, execute
from neurosym.semantics.mathematics_arithmetic import QuestionError, answer_tree, to_sympy
from neurosym.semantics.mathematics_arithmetic import evaluate as evaluate_question
from neurosym.syntax import (
    Node,
    from_prefix,
    heads,
    infix_layout,
    to_infix,
    to_networkx,
    to_postfix,
    to_prefix,
    tokens,
)

ENTRY_POINTS = {
    "to_infix": to_infix,
    "tokens": tokens,
    "heads": heads,
    "infix_layout": infix_layout,
    "to_prefix": to_prefix,
    "to_postfix": to_postfix,
    "to_networkx": to_networkx,
    "execute": execute,
    "mathematics evaluate": evaluate_question,
    "mathematics to_sympy": to_sympy,
    "mathematics answer_tree": answer_tree,
}
NODE_METHODS = {"==": lambda tree: tree == copy.copy(tree), "hash": hash, "repr": repr, "pickle": pickle.dumps}


def _chain(depth: int, bottom: object) -> Node:
    """``depth`` nested ``+`` nodes, each the right operand of the one above, with ``bottom`` deepest."""
    tree: object = bottom
    for _ in range(depth):
        tree = Node("+", (Node("1"), tree))
    assert isinstance(tree, Node)
    return tree


CHILD_FAULTS = {  # (tree, message): walks failed on these with AttributeError
    "str child": (
        Node("*", (Node("3"), Node("+", (Node("1"), "2")))),
        "child 1 of node '+' at root.children[1] is of type str, not a Node",
    ),
    "None child at depth": (
        Node("*", (Node("+", (Node("1"), Node("+", (None, Node("2"))))), Node("3"))),
        "child 0 of node '+' at root.children[0].children[1] is of type NoneType, not a Node",
    ),
}
FIELD_FAULTS = {  # (tree, message): walks gave answers on these, or failed on an unknown symbol 7 at no position
    "list children": (
        Node("*", (Node("+", [Node("1"), Node("2")]), Node("3"))),
        "the children of node '+' at root.children[0] are of type list, not a tuple",
    ),
    "int symbol": (
        Node("+", (Node("1"), Node("*", (Node(7), Node("2"))))),
        "the node at root.children[1].children[0] has symbol 7 of type int, not a str",
    ),
}
FAULTS = CHILD_FAULTS | FIELD_FAULTS


@pytest.mark.parametrize("walk", ENTRY_POINTS.values(), ids=ENTRY_POINTS.keys())
@pytest.mark.parametrize(("tree", "message"), FAULTS.values(), ids=FAULTS.keys())
def test_every_entry_point_names_a_malformed_node_and_its_path(walk, tree, message) -> None:
    with pytest.raises(TypeError, match=rf"^malformed tree: {re.escape(message)}$"):
        walk(tree)


@pytest.mark.parametrize("method", NODE_METHODS.values(), ids=NODE_METHODS.keys())
@pytest.mark.parametrize(("tree", "message"), CHILD_FAULTS.values(), ids=CHILD_FAULTS.keys())
def test_trees_own_methods_name_a_child_that_is_no_node(method, tree, message) -> None:
    with pytest.raises(TypeError, match=rf"^malformed tree: {re.escape(message)}$"):
        method(tree)


def test_equality_names_a_malformed_right_operand() -> None:
    tree, message = CHILD_FAULTS["str child"]
    with pytest.raises(TypeError, match=rf"^malformed tree: {re.escape(message)}$"):
        assert Node("*", (Node("3"), Node("+", (Node("1"), Node("2"))))) == tree


def test_trees_own_methods_read_list_children_and_int_symbols_by_value() -> None:
    # (these methods never read a symbol or the children's type; a check there would cost every comparison)
    listed, int_symbol = (tree for tree, _ in FIELD_FAULTS.values())
    assert listed == from_prefix(["*", "+", "1", "2", "3"]) and hash(listed) == hash(from_prefix(["*", "+", "1", "2", "3"]))
    assert int_symbol == copy.deepcopy(int_symbol) != from_prefix(["+", "1", "*", "7", "2"])


def test_a_float_symbol_is_named_where_it_gave_an_inexact_answer() -> None:
    tree = Node("+", (Node(0.1), Node("2")))
    # evaluate gave Fraction(75660473739824333, 36028797018963968), the float's binary value plus 2
    with pytest.raises(TypeError, match=r"^malformed tree: the node at root.children\[0\] has symbol 0.1 of type float"):
        evaluate_question(tree)


def test_a_deep_path_is_elided_in_the_middle_and_found_without_recursion() -> None:
    steps = r"root(\.children\[1\]){6}\(\.\.\.7 more levels\.\.\.\)(\.children\[1\]){6}"
    with pytest.raises(TypeError, match=rf"^malformed tree: child 1 of node '\+' at {steps} is of type str, not a Node$"):
        to_infix(_chain(20, "7"))
    with pytest.raises(TypeError, match=r"\(\.\.\.2987 more levels\.\.\.\)") as raised:
        execute(_chain(3000, None))
    assert len(str(raised.value)) < 300


def test_errors_of_well_formed_trees_pass_through_unchanged() -> None:
    with pytest.raises(ValueError, match=r"^operator '\+' needs 2 operands, got 1$"):
        to_infix(Node("+", (Node("1"),)))
    with pytest.raises(ValueError, match=r"^unknown symbol 'q': neither a number nor an operator of this language \("):
        execute(Node("+", (Node("1"), Node("q"))))
    with pytest.raises(QuestionError, match=r"^division by zero at characters None$"):
        evaluate_question(Node("/", (Node("1"), Node("0"))))


def _reference_value(tree: Node) -> object:
    """The exact value of ``tree`` by plain recursion over the tree (``execute`` reads an infix layout)."""
    if not tree.children:
        return RATIONAL_SEMANTICS.numbers[tree.symbol]
    left, right = map(_reference_value, tree.children)
    return RATIONAL_SEMANTICS.operators[tree.symbol].apply(left, right)


@settings(max_examples=60, deadline=None)
@given(trees(operators="+-*"))
def test_well_formed_trees_print_and_execute_as_before(tree) -> None:
    """Each entry point gives its undecorated walk's answer, and the values are those of an independent recursion."""
    infix = "".join(infix_layout.__wrapped__(tree).tokens)
    assert to_infix(tree) == infix and tokens(tree) == list(infix)
    assert to_prefix(tree) == to_prefix.__wrapped__(tree) and to_postfix(tree) == to_postfix.__wrapped__(tree)
    value = _reference_value(tree)
    assert execute(tree, RATIONAL_SEMANTICS).value == value == evaluate_question(tree) == Fraction(answer_tree(tree))
    assert to_sympy(tree) == value
    assert sorted(to_networkx(tree).nodes) == [index for index, token in enumerate(infix) if token not in "()"]
    rebuilt = from_prefix(to_prefix(tree))
    assert rebuilt == tree and hash(rebuilt) == hash(tree) and repr(pickle.loads(pickle.dumps(tree))) == repr(tree)
