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


def check_tree(node: object, where: str) -> None:
    """Raise ``TypeError`` unless ``node`` is a :class:`Node` (``where`` names the function given it)."""
    if not isinstance(node, Node):
        raise TypeError(f"{where} takes a parse tree (neurosym.syntax.parse(text)), got {type(node).__name__} {node!r:.40}")
