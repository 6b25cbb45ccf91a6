"""Converting trees to and from prefix/postfix token lists, and to networkx graphs."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from neurosym.syntax.concepts import ConceptTable, concept_table
from neurosym.syntax.printing import infix_layout, operator_level
from neurosym.syntax.tree import Node, check_tree, names_malformed_trees


@names_malformed_trees
def to_prefix(node: Node, concepts: ConceptTable | None = None) -> list[str]:
    """Symbols in pre-order (operator before its operands), e.g. ``["-", "3", "5"]`` for ``3-5``; ``ValueError``
    for a node :func:`from_prefix` could not rebuild (an operator of ``concepts`` without two operands)."""
    check_tree(node, "to_prefix")
    concepts = concept_table(concepts)
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        operator_level(current, concepts)
        out.append(current.symbol)
        stack.extend(reversed(current.children))
    return out


@names_malformed_trees
def to_postfix(node: Node, concepts: ConceptTable | None = None) -> list[str]:
    """Symbols in post-order (operands before their operator), e.g. ``["3", "5", "-"]`` for ``3-5``; the
    same check as :func:`to_prefix`."""
    check_tree(node, "to_postfix")
    concepts = concept_table(concepts)
    out, stack = [], [node]
    while stack:  # a pre-order walk that visits the right operand first, reversed, is the post-order
        current = stack.pop()
        operator_level(current, concepts)
        out.append(current.symbol)
        stack.extend(current.children)
    return out[::-1]


def from_prefix(symbols: Sequence[str], concepts: ConceptTable | None = None) -> Node:
    """Rebuild the tree from its pre-order symbols; raises ``ValueError`` if they are not one tree, ``TypeError`` for
    symbols that are no sequence of strs (None failed on ``len``, a list among them as unhashable)."""
    concepts = concept_table(concepts)
    try:
        symbols = list(symbols)
    except TypeError:
        raise TypeError(f"from_prefix expects a sequence of symbols (str), got {type(symbols).__name__}") from None
    operands: list[Node] = []
    for position in range(len(symbols) - 1, -1, -1):  # right to left, operands are ready on a stack
        symbol = symbols[position]
        if not isinstance(symbol, str):
            raise TypeError(f"prefix position {position}: a symbol must be a str, got {type(symbol).__name__} {symbol!r}")
        if concepts.precedence(symbol) is None:
            operands.append(Node(symbol))
            continue
        if len(operands) < 2:
            raise ValueError(f"prefix position {position}: operator {symbol!r} lacks operands")
        left, right = operands.pop(), operands.pop()
        operands.append(Node(symbol, (left, right)))
    if len(operands) != 1:
        what = "no symbols" if not operands else f"{len(operands)} separate expressions"
        raise ValueError(f"prefix symbols form {what}, not one expression")
    return operands[0]


def to_networkx(node: Node, concepts: ConceptTable | None = None, values: Sequence[object] | None = None) -> nx.DiGraph:
    """The tree as a DiGraph with edges operator → operand.

    Graph nodes are the infix token indices of the symbols (those of :func:`~neurosym.syntax.tokens`);
    attributes: ``symbol``, ``span`` (the tree node's span, ``None`` if unknown) and ``value`` (taken
    from ``values``, one per infix token such as ``execute(node).res_all``; ``None`` when not given;
    ``TypeError`` for values that are no sequence, such as an iterator).
    """
    layout = infix_layout(node, concepts)
    if values is not None and not hasattr(values, "__len__"):  # (an iterator failed on len())
        raise TypeError(f"values must be a sequence of one value per infix token, got {type(values).__name__}")
    if values is not None and len(values) != len(layout.tokens):
        raise ValueError(f"values has {len(values)} entries for {len(layout.tokens)} infix tokens")
    graph = nx.DiGraph(infix="".join(layout.tokens))
    for index in layout.preorder:
        tree_node = layout.nodes[index]
        assert tree_node is not None  # preorder lists symbol tokens only, never brackets
        value = None if values is None else values[index]
        graph.add_node(index, symbol=tree_node.symbol, span=tree_node.span, value=value)
        for operand in layout.operands[index] or ():
            graph.add_edge(index, operand)
    return graph
