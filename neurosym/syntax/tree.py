"""The parse-tree node shared by syntax, semantics and the data generators."""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
        return hash(tuple((node.symbol, len(node.children)) for node in self._preorder()))

    def __reduce__(self) -> tuple[Callable[[tuple], Node], tuple[tuple]]:
        """Pickled and deep-copied as the pre-order ``(symbol, arity, span)`` sequence: trees of any depth."""
        return _from_preorder, (tuple((node.symbol, len(node.children), node.span) for node in self._preorder()),)

    def _preorder(self) -> Iterator[Node]:
        nodes = [self]
        while nodes:
            node = nodes.pop()
            yield node
            nodes.extend(reversed(node.children))

    def postorder(self) -> Iterator[Node]:
        """Every node of the tree, each after its children (left to right); iterative, so trees of any depth."""
        nodes = [(self, False)]
        while nodes:
            node, children_done = nodes.pop()
            if children_done:
                yield node
            else:
                nodes.append((node, True))
                nodes.extend((child, False) for child in reversed(node.children))

    def __repr__(self) -> str:
        """The dataclass's ``Node(symbol=..., children=(...), span=...)``, built iteratively (any depth)."""
        shown: dict[int, str] = {}
        for node in self.postorder():
            inner = ", ".join(shown.pop(id(child)) for child in node.children)
            children = f"({inner},)" if len(node.children) == 1 else f"({inner})"
            shown[id(node)] = f"Node(symbol={node.symbol!r}, children={children}, span={node.span!r})"
        return shown[id(self)]


def _from_preorder(order: tuple[tuple[str, int, tuple[int, int] | None], ...]) -> Node:
    """The tree of a pre-order ``(symbol, arity, span)`` sequence (:meth:`Node.__reduce__`'s)."""
    built: list[Node] = []
    for symbol, arity, span in reversed(order):  # each node after its subtrees; the first child on top
        built.append(Node(symbol, tuple(built.pop() for _ in range(arity)), span))
    return built[0]


def check_tree(node: object, where: str) -> None:
    """Raise ``TypeError`` unless ``node`` is a :class:`Node` (``where`` names the function given it)."""
    if not isinstance(node, Node):
        raise TypeError(f"{where} takes a parse tree (neurosym.syntax.parse(text)), got {type(node).__name__} {node!r:.40}")
