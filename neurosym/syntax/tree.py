"""The parse-tree node shared by syntax, semantics and the data generators."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Node:
    """One node of an expression tree.

    ``symbol`` is the token (a digit such as ``"7"``, an operator such as ``"+"``, or a concept added at
    run time); ``children`` are the operands, left to right (empty for numbers); ``span`` is the
    ``[start, end)`` token range of the node's sub-expression in the source sentence when known.
    """

    symbol: str
    children: tuple[Node, ...] = ()
    span: tuple[int, int] | None = field(default=None, compare=False)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def __eq__(self, other: object) -> bool:
        """Same symbols in the same shape (spans aside); iterative, so trees of any depth compare."""
        if not isinstance(other, Node):
            return NotImplemented
        pairs = [(self, other)]
        while pairs:
            left, right = pairs.pop()
            if left is right:
                continue
            if left.symbol != right.symbol or len(left.children) != len(right.children):
                return False
            pairs.extend(zip(left.children, right.children, strict=True))
        return True

    def __hash__(self) -> int:
        """The hash of the pre-order ``(symbol, arity)`` sequence, which determines the tree (spans aside)."""
        order, nodes = [], [self]
        while nodes:
            node = nodes.pop()
            order.append((node.symbol, len(node.children)))
            nodes.extend(reversed(node.children))
        return hash(tuple(order))


def check_tree(node: object, where: str) -> None:
    """Raise ``TypeError`` unless ``node`` is a :class:`Node` (``where`` names the function given it)."""
    if not isinstance(node, Node):
        raise TypeError(f"{where} takes a parse tree (neurosym.syntax.parse(text)), got {type(node).__name__} {node!r:.40}")
