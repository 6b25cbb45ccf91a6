"""The parse-tree node shared by syntax, semantics and the data generators."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")
_SHOWN_STEPS = 12
"""How many steps of a path from the root a malformed-tree message shows (the first and last half of them)."""


def names_malformed_trees(walk: Callable[_Params, _Result]) -> Callable[_Params, _Result]:
    """``walk``, raising ``TypeError`` that names the malformed part of a tree it was given where it fails on one.

    :class:`Node` does not check its fields when built (construction is hot in parsing and abduction), so a walk
    over a malformed tree fails deep inside (``AttributeError`` on a child that is not a Node, ``ValueError`` on
    a symbol that is not a str, or ``TypeError`` from the walk's own check of a node's fields, such as
    :func:`symbol_and_children`, where a malformed node would give an answer). Only then are the walk's
    :class:`Node` arguments searched with :func:`tree_fault`: well-formed trees pay nothing, and other errors
    (an unknown symbol, a division by zero) pass through unchanged.
    """

    @functools.wraps(walk)
    def named(*args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        try:
            return walk(*args, **kwargs)
        except (AttributeError, TypeError, ValueError) as error:
            for tree in (*args, *kwargs.values()):
                fault = tree_fault(tree) if isinstance(tree, Node) else None
                if fault is not None:
                    raise TypeError(f"malformed tree: {fault}") from error
            raise

    return named


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
        """Whether the node has no children."""
        return not self.children

    @names_malformed_trees
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

    @names_malformed_trees
    def __hash__(self) -> int:
        """The hash of the pre-order ``(symbol, arity)`` sequence, which determines the tree (spans aside)."""
        return hash(tuple((node.symbol, len(node.children)) for node in self._preorder()))

    @names_malformed_trees
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

    @names_malformed_trees
    def __repr__(self) -> str:
        """The dataclass's ``Node(symbol=..., children=(...), span=...)``, built iteratively (any depth) as pieces
        joined once, in linear time (a subtree held twice is shown twice): a stack holds the nodes still to show and
        the text that closes each one shown (joining each node's children's texts copied long chains at every level)."""
        pieces: list[str] = []
        pending: list[Node | _Text] = [self]
        while pending:
            item = pending.pop()
            if isinstance(item, _Text):
                pieces.append(item)
                continue
            pieces.append(f"Node(symbol={item.symbol!r}, children=(")
            pending.append(_Text(f"{',' if len(item.children) == 1 else ''}), span={item.span!r})"))
            for index in reversed(range(len(item.children))):
                pending.append(item.children[index])
                if index:
                    pending.append(_Text(", "))
        return "".join(pieces)


class _Text(str):
    """Text that :meth:`Node.__repr__` writes between nodes (a child that is a plain str is a malformed tree's)."""


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


def symbol_and_children(node: Node) -> tuple[str, tuple[Node, ...]]:
    """``node``'s symbol and children; ``TypeError`` unless they are a str and a tuple (the fields a walk cannot
    tell wrong from its own failures: an int symbol or a list of children would give an answer)."""
    symbol, children = node.symbol, node.children
    if isinstance(symbol, str) and isinstance(children, tuple):
        return symbol, children
    raise TypeError(node_fault(node))


def tree_fault(root: Node) -> str | None:
    """The first malformed part of ``root`` in pre-order with its path from the root, e.g. ``"child 0 of node '+'
    at root.children[1] is of type str, not a Node"``; ``None`` when every node has a str symbol and a tuple of Nodes
    for children. Iterative (trees of any depth); paths are spelled out only for the node at fault."""
    pending: list[tuple[Node, tuple | None]] = [(root, None)]  # a node and its path: (child index, parent's path)
    while pending:
        node, path = pending.pop()
        if node_fault(node) is not None:
            return node_fault(node, f" at {_path_text(path)}")
        pending.extend((child, (index, path)) for index, child in reversed(tuple(enumerate(node.children))))
    return None


def node_fault(node: Node, where: str = "") -> str | None:
    """What is wrong with ``node``'s own fields, ``None`` when nothing (``where`` names its place, e.g.
    ``" at root.children[1]"``)."""
    symbol, children = node.symbol, node.children
    if not isinstance(symbol, str):
        return f"the node{where} has symbol {symbol!r:.40} of type {type(symbol).__name__}, not a str"
    if not isinstance(children, tuple):
        return f"the children of node {symbol!r}{where} are of type {type(children).__name__}, not a tuple"
    for index, child in enumerate(children):
        if not isinstance(child, Node):
            return f"child {index} of node {symbol!r}{where} is of type {type(child).__name__}, not a Node"
    return None


def _path_text(path: tuple | None) -> str:
    """``root.children[1].children[0]`` for the path ``(0, (1, None))``; the middle of a long path is elided."""
    indices: list[int] = []
    while path is not None:
        index, path = path
        indices.append(index)
    steps = [f".children[{index}]" for index in reversed(indices)]
    if len(steps) > _SHOWN_STEPS:
        half = _SHOWN_STEPS // 2
        steps[half:-half] = [f"(...{len(steps) - _SHOWN_STEPS} more levels...)"]
    return "root" + "".join(steps)
