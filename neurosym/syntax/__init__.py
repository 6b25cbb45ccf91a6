"""Lark parsing, parse trees, graph export and printing with minimal parentheses."""

from neurosym.syntax.tree import Node

__all__ = ["Node"]
