"""Hypothesis strategies shared by the HINT syntax, semantics and solver tests."""

from __future__ import annotations

from hypothesis import strategies as st

from neurosym.syntax import Node


def trees(numbers: str = "0123456789", operators: str = "+-*/", max_leaves: int = 12) -> st.SearchStrategy[Node]:
    """Random expression trees over the given number and operator symbols."""
    leaves = st.sampled_from(numbers).map(Node)
    return st.recursive(
        leaves,
        lambda sub: st.tuples(st.sampled_from(operators), sub, sub).map(lambda t: Node(t[0], (t[1], t[2]))),
        max_leaves=max_leaves,
    )
