"""HINT syntax: Lark parsing, parse trees, minimal-parenthesis printing, heads and graph export.

The language is the grammar ``grammars/hint.lark`` (the paper's Table A2), optionally extended at run
time by a :class:`ConceptTable` of new numbers and operators.
"""

from neurosym.syntax.concepts import (
    ADDITIVE,
    ALIASES,
    BASE_CONCEPTS,
    BUILTIN_NUMBERS,
    BUILTIN_OPERATORS,
    MULTIPLICATIVE,
    ConceptTable,
    canonical_sentence,
)
from neurosym.syntax.convert import from_prefix, to_networkx, to_postfix, to_prefix
from neurosym.syntax.errors import (
    AmbiguousGrammarWarning,
    ParseError,
    UnexpectedCharacterError,
    UnexpectedEndError,
    UnexpectedSymbolError,
)
from neurosym.syntax.parser import grammar_text, lark_parser, parse
from neurosym.syntax.printing import InfixLayout, heads, infix_layout, to_infix, tokens
from neurosym.syntax.symbol_grammar import NormalForm, SymbolGrammar
from neurosym.syntax.tree import Node

__all__ = [
    "AmbiguousGrammarWarning",
    "NormalForm",
    "SymbolGrammar",
    "ADDITIVE",
    "ALIASES",
    "BASE_CONCEPTS",
    "BUILTIN_NUMBERS",
    "BUILTIN_OPERATORS",
    "MULTIPLICATIVE",
    "ConceptTable",
    "canonical_sentence",
    "InfixLayout",
    "Node",
    "ParseError",
    "UnexpectedCharacterError",
    "UnexpectedEndError",
    "UnexpectedSymbolError",
    "from_prefix",
    "grammar_text",
    "heads",
    "infix_layout",
    "lark_parser",
    "parse",
    "to_infix",
    "to_networkx",
    "to_postfix",
    "to_prefix",
    "tokens",
]
