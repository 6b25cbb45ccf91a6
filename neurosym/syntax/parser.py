"""Parsing HINT sentences with Lark's LALR parser into :class:`~neurosym.syntax.tree.Node` trees."""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from importlib.resources import files
from typing import cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from neurosym.syntax.concepts import ALIASES, BASE_CONCEPTS, WHITESPACE, ConceptTable, concept_table
from neurosym.syntax.errors import (
    ParseError,
    UnexpectedCharacterError,
    UnexpectedEndError,
    UnexpectedSymbolError,
)
from neurosym.syntax.tree import Node

_END = "$END"


def base_grammar() -> str:
    """The text of ``grammars/hint.lark``, the paper's grammar (Table A2)."""
    return (files("neurosym") / "grammars" / "hint.lark").read_text(encoding="utf-8")


def grammar_text(concepts: ConceptTable = BASE_CONCEPTS) -> str:
    """The base grammar extended with ``concepts`` (the text Lark builds the parser from)."""
    extension = concept_table(concepts).grammar_extension()
    return base_grammar() + ("\n" + extension + "\n" if extension else "")


class _TreeBuilder(Transformer):
    """Builds ``Node`` trees during LALR parsing; spans are character ranges until re-indexed."""

    def start(self, children: list) -> Node:
        return _as_node(children[0])

    def binary(self, children: list) -> Node:
        left, operator, right = _as_node(children[0]), children[1], _as_node(children[2])
        assert left.span is not None and right.span is not None  # the builder gives every node it makes a span
        symbol = ALIASES.get(operator.value, operator.value)
        return Node(symbol, (left, right), (left.span[0], right.span[1]))

    def bracketed(self, children: list) -> Node:
        opening, inner, closing = children
        return replace(_as_node(inner), span=(opening.start_pos, closing.end_pos))


def _as_node(item: Node | Token) -> Node:
    if isinstance(item, Token):
        assert item.start_pos is not None and item.end_pos is not None  # Lark's lexer places every token it makes
        return Node(item.value, (), (item.start_pos, item.end_pos))
    return item


def lark_parser(concepts: ConceptTable = BASE_CONCEPTS) -> Lark:
    """The LALR parser for the language extended by ``concepts`` (built once per table; checked before the cache,
    which named an unhashable non-table only as unhashable)."""
    return _cached_parser(concept_table(concepts))


@lru_cache(maxsize=32)
def _cached_parser(concepts: ConceptTable) -> Lark:
    return Lark(grammar_text(concepts), parser="lalr", transformer=_TreeBuilder(), cache=False)


def parse(text: str, concepts: ConceptTable | None = None) -> Node:
    """Parse one sentence into a tree.

    Whitespace is ignored (``str.isspace``: spaces, tabs, line ends); ``× ÷ −`` are read as ``* / -``. Each node's
    ``span`` is the ``[start, end)`` range of *token* indices (whitespace not counted) covered by its sub-expression,
    brackets included. Raises a :class:`ParseError` subclass naming the position, the offending character and what the
    grammar expected there.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse expects a string, got {type(text).__name__}")
    concepts = concept_table(concepts)
    parser = lark_parser(concepts)
    try:
        tree = parser.parse(text)
    except UnexpectedInput as error:
        raise _parse_error(parser, text, error, concepts) from None
    assert isinstance(tree, Node)  # the _TreeBuilder transformer turns Lark's tree into a Node
    return _reindex_spans(tree, _token_index_of_char(text)) if WHITESPACE.search(text) else tree


def _token_index_of_char(text: str) -> list[int]:
    """For each character offset (and the end), the number of tokens that start before it."""
    index, counts = 0, []
    for char in text:
        counts.append(index)
        index += not char.isspace()
    counts.append(index)
    return counts


def _reindex_spans(root: Node, token_index: list[int]) -> Node:
    """``root`` with character spans turned into token spans (iterative: trees of any depth)."""
    rebuilt: dict[int, Node] = {}
    for node in root.postorder():
        assert node.span is not None  # the parser spans every node
        start, end = node.span
        children = tuple(rebuilt.pop(id(child)) for child in node.children)
        # A span ends one past its last character: map that character, then step past it.
        rebuilt[id(node)] = Node(node.symbol, children, (token_index[start], token_index[end - 1] + 1))
    return rebuilt[id(root)]


QUOTED_BEFORE_ERROR = 40
"""The characters before a parse error that its message quotes at most (the last ones, after an ellipsis): the
message of an error deep in a long text stays one line."""


def _parse_error(parser: Lark, text: str, error: UnexpectedInput, concepts: ConceptTable) -> ParseError:
    kind: type[ParseError]
    char: str | None
    if isinstance(error, UnexpectedCharacters):
        # Lark declares pos_in_stream as None on the base class; the lexer sets the character's offset.
        position = cast(int, error.pos_in_stream)
        char, kind = text[position], UnexpectedCharacterError
    elif isinstance(error, UnexpectedToken) and error.token.type != _END:
        position, char, kind = error.token.start_pos, error.token.value, UnexpectedSymbolError
    elif isinstance(error, (UnexpectedToken, UnexpectedEOF)):
        position, char, kind = len(text), None, UnexpectedEndError
    else:  # pragma: no cover - Lark's LALR parser raises only the three kinds above
        raise error
    expected = _expected_words(parser, text[:position], concepts)
    consumed = text[:position].rstrip()
    shown = consumed if len(consumed) <= QUOTED_BEFORE_ERROR else "…" + consumed[-QUOTED_BEFORE_ERROR:]
    what = "end of input" if char is None else f"character {char!r}"
    where = f" after {shown!r}" if consumed else _start(text, char)
    message = f"position {position}: unexpected {what}{where}, expected {_join(expected)}"
    return kind(message, position, char, expected)


def _start(text: str, char: str | None) -> str:
    """Where in the message of an error at the start of ``text``: an end there means the sentence is empty (the end
    of ``"   "`` at position 3 was said to be "at the start")."""
    if char is not None:
        return " at the start"
    return ": the sentence holds only whitespace" if text else ": the sentence is empty"


def accepted_terminals(parser: Lark, prefix: str) -> set[str]:
    """The terminals (``"$END"`` for the end of input) that the LALR ``parser`` accepts after ``prefix``, a viable
    prefix: found by feeding the prefix to the parser, not read off Lark's error, whose state has taken the default
    reductions of the unexpected token's lookahead and so names terminals of another state."""
    interactive = parser.parse_interactive(prefix)
    interactive.exhaust_lexer()
    return interactive.accepts()


def _expected_words(parser: Lark, prefix: str, concepts: ConceptTable) -> tuple[str, ...]:
    """What the grammar accepts after ``prefix`` (a viable prefix), in words."""
    terminals = accepted_terminals(parser, prefix)
    words = []
    if "NUMBER" in terminals:
        words.append("a number")
    if "LPAR" in terminals:
        words.append("'('")
    if {"OP1", "OP2"} <= terminals:
        words.append("an operator")
    else:
        for terminal, level in (("OP1", 1), ("OP2", 2)):
            if terminal in terminals:
                symbols = [s for s, lv in concepts.operators.items() if lv == level]
                words.append(_join([repr(s) for s in symbols]))
    if "RPAR" in terminals:
        words.append("')'")
    if _END in terminals:
        words.append("the end of input")
    return tuple(words)


def _join(words: list[str] | tuple[str, ...]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
