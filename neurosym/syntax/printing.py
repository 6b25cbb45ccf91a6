"""Printing trees back to infix with the release's minimal parentheses, and the release's heads.

The left operand of an operator is bracketed when its operator binds less tightly than the parent's;
the right operand when it binds less tightly or equally (all operators are left-associative).
"""

from __future__ import annotations

from dataclasses import dataclass

from neurosym.syntax.concepts import ConceptTable, concept_table
from neurosym.syntax.tree import Node, check_tree, names_malformed_trees, node_fault

OPEN, CLOSE = "(", ")"


@dataclass(frozen=True)
class InfixLayout:
    """A tree laid out as infix tokens.

    ``tokens[i]`` is the i-th infix symbol; ``heads[i]`` the index of its parent token (−1 for the
    root; both brackets point at the operator heading the bracketed expression); ``nodes[i]`` the tree
    node the token heads (``None`` for brackets); ``operands[i]`` the token indices heading the left
    and right operands of an operator token (``None`` otherwise); ``preorder`` the token indices of
    all nodes in pre-order, so ``reversed(preorder)`` visits every operand before its operator.
    """

    tokens: list[str]
    heads: list[int]
    nodes: list[Node | None]
    operands: list[tuple[int, int] | None]
    preorder: list[int]


def operator_level(node: Node, concepts: ConceptTable) -> int | None:
    """The precedence level of ``node``'s operator, ``None`` for a number; ``ValueError`` unless an operator
    has two operands and a number none; ``TypeError`` unless its children are a tuple (a symbol that is no str is
    an unknown symbol: ``ValueError``)."""
    symbol, children = node.symbol, node.children
    if not isinstance(children, tuple):  # (not symbol_and_children's call: this runs for every node printed)
        raise TypeError(node_fault(node))
    level = concepts.precedence(symbol)
    if level is None and children:
        raise ValueError(f"number {symbol!r} cannot have operands")
    if level is not None and len(children) != 2:
        raise ValueError(f"operator {symbol!r} needs 2 operands, got {len(children)}")
    return level


@names_malformed_trees
def infix_layout(node: Node, concepts: ConceptTable | None = None) -> InfixLayout:
    """Lay ``node`` out as infix tokens with minimal parentheses (iterative: trees of any depth); ``TypeError``
    naming the place of a malformed node (a child that is not a Node, a symbol not a str, a list of children)."""
    check_tree(node, "infix_layout (to_infix, tokens, execute)")
    concepts = concept_table(concepts)
    tokens: list[str] = []
    owners: list[int] = []  # per token: the occurrence (node visit) it heads or brackets
    occurrence_nodes: list[Node] = []
    parents: list[int] = []  # per occurrence: its parent occurrence, -1 for the root
    head_tokens: list[int] = []  # per occurrence: the index of the token that heads it
    # Work items: (node, parent occurrence, bracketed) to visit, or (symbol, occurrence) to emit.
    stack: list[tuple] = [(node, -1, False)]
    while stack:
        item = stack.pop()
        if len(item) == 2:
            symbol, occurrence = item
            if symbol not in (OPEN, CLOSE):
                head_tokens[occurrence] = len(tokens)
            tokens.append(symbol)
            owners.append(occurrence)
            continue
        current, parent, bracketed = item
        occurrence = len(occurrence_nodes)
        occurrence_nodes.append(current)
        parents.append(parent)
        head_tokens.append(-1)
        level = operator_level(current, concepts)
        if level is None:
            stack.append((current.symbol, occurrence))
            continue
        left, right = current.children
        work = [
            (CLOSE, occurrence) if bracketed else None,
            (right, occurrence, _binds_less(right, level, concepts, or_equally=True)),
            (current.symbol, occurrence),
            (left, occurrence, _binds_less(left, level, concepts, or_equally=False)),
            (OPEN, occurrence) if bracketed else None,
        ]
        stack.extend(w for w in work if w is not None)
    heads: list[int] = []
    nodes: list[Node | None] = []
    for index, (symbol, occurrence) in enumerate(zip(tokens, owners)):
        is_bracket = symbol in (OPEN, CLOSE)
        parent = occurrence if is_bracket else parents[occurrence]
        heads.append(head_tokens[parent] if parent >= 0 else -1)
        nodes.append(None if is_bracket else occurrence_nodes[occurrence])
    operands: list[tuple[int, int] | None] = [None] * len(tokens)
    for occurrence, parent in enumerate(parents):
        # An operator's left operand is the occurrence visited right after it; the other child is the right one.
        if parent >= 0 and occurrence != parent + 1:
            operands[head_tokens[parent]] = (head_tokens[parent + 1], head_tokens[occurrence])
    return InfixLayout(tokens, heads, nodes, operands, head_tokens)


def _binds_less(operand: Node, level: int, concepts: ConceptTable, *, or_equally: bool) -> bool:
    """Whether ``operand`` needs brackets under an operator of precedence ``level``."""
    operand_level = concepts.precedence(operand.symbol)
    if operand_level is None:
        return False
    return operand_level <= level if or_equally else operand_level < level


def to_infix(node: Node, concepts: ConceptTable | None = None) -> str:
    """The infix sentence of ``node`` with minimal parentheses, e.g. ``"3-(5+2)*4"``."""
    return "".join(infix_layout(node, concepts).tokens)


def tokens(node: Node, concepts: ConceptTable | None = None) -> list[str]:
    """The infix tokens of ``node`` (those of :func:`to_infix`)."""
    return infix_layout(node, concepts).tokens


def heads(node: Node, concepts: ConceptTable | None = None) -> list[int]:
    """The release's ``head`` list: the parent token index of each infix token, −1 for the root."""
    return infix_layout(node, concepts).heads
