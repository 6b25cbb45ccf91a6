"""The symbols of the HINT language and the concepts that extend it at run time.

A :class:`ConceptTable` names new number symbols and new operators at either precedence level. It is
purely syntactic (what a symbol *is*); what a symbol *means* lives in
:class:`neurosym.semantics.OperatorTable`. Each table turns into a small ``%extend`` block that is
appended to ``grammars/hint.lark``, so the grammar file stays the single source of the language.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

#: Precedence level of ``+`` and ``-``: the grammar's ``OP1`` (Expression level).
ADDITIVE = 1
#: Precedence level of ``*`` and ``/``: the grammar's ``OP2`` (Term level).
MULTIPLICATIVE = 2

#: The grammar's built-in numbers.
BUILTIN_NUMBERS: tuple[str, ...] = tuple("0123456789")
#: The grammar's built-in operators by canonical ASCII symbol, each with its precedence level.
BUILTIN_OPERATORS: dict[str, int] = {"+": ADDITIVE, "-": ADDITIVE, "*": MULTIPLICATIVE, "/": MULTIPLICATIVE}
#: Typeset spellings accepted on input and the canonical symbol each one is read as.
ALIASES: dict[str, str] = {"×": "*", "÷": "/", "−": "-"}
#: What :func:`canonical_sentence` replaces: each alias by its canonical symbol.
_CANONICAL_ALIASES: dict[int, str] = {ord(k): v for k, v in ALIASES.items()}
#: The characters :func:`canonical_sentence` changes: whitespace of any kind (which the grammar ignores, as
#: ``str.isspace`` defines it: spaces, tabs, line ends, no-break spaces) and the aliases.
NON_CANONICAL = re.compile(rf"\s|[{''.join(ALIASES)}]")
#: A run of whitespace, which the grammar ignores.
WHITESPACE = re.compile(r"\s+")


def canonical_sentence(text: str) -> str:
    """``text`` as the solver and the parser read it: whitespace dropped, :data:`ALIASES` in ASCII (``"3 × 4\\n"`` ->
    ``"3*4"``); ``TypeError`` for ``text`` that is no str (re's "expected string or bytes-like object" named neither)."""
    if not isinstance(text, str):
        raise TypeError(f"canonical_sentence takes a sentence (str), got {type(text).__name__} {text!r:.40}")
    return WHITESPACE.sub("", text).translate(_CANONICAL_ALIASES)


#: Symbols with a fixed grammatical role that no concept may take.
RESERVED: frozenset[str] = frozenset(BUILTIN_NUMBERS) | set(BUILTIN_OPERATORS) | set(ALIASES) | set("() ")

_TERMINAL_OF_LEVEL = {ADDITIVE: "OP1", MULTIPLICATIVE: "OP2"}


@dataclass(frozen=True)
class ConceptTable:
    """Extra symbols on top of the built-in language (hashable: parsers are cached per table).

    ``numbers`` are new leaves (e.g. ``("x", "y")``); ``additive`` operators share the precedence of
    ``+ -`` (e.g. ``("a", "b")``); ``multiplicative`` ones share that of ``* /`` (e.g. ``("c", "d")``).
    Every symbol is one printable, non-space character not already used by the language.
    """

    numbers: tuple[str, ...] = ()
    additive: tuple[str, ...] = ()
    multiplicative: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("numbers", "additive", "multiplicative"):  # any iterable of symbols ("xy", ["x", "y"]) as a tuple
            symbols = getattr(self, name)
            if not isinstance(symbols, Iterable):  # (None failed in tuple(), "'NoneType' object is not iterable")
                raise TypeError(f"ConceptTable's {name} must be symbols ('xy' or ('x', 'y')), got {symbols!r:.40}")
            object.__setattr__(self, name, tuple(symbols))
        seen: set[str] = set()
        for symbol in (*self.numbers, *self.additive, *self.multiplicative):
            if not isinstance(symbol, str) or len(symbol) != 1:
                raise ValueError(f"a concept symbol must be a single character, got {symbol!r}")
            if symbol in RESERVED or not symbol.isprintable() or symbol.isspace() or symbol in '"\\':
                raise ValueError(f"concept symbol {symbol!r} is reserved or not printable")
            if symbol in seen:
                raise ValueError(f"concept symbol {symbol!r} is declared twice")
            seen.add(symbol)

    def __reduce__(self) -> tuple[type[ConceptTable], tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
        """Pickled and copied as its fields: the views cached once read (``operators``, a mappingproxy) do not pickle."""
        return type(self), (self.numbers, self.additive, self.multiplicative)

    @cached_property
    def operators(self) -> Mapping[str, int]:
        """Every operator symbol (built-in and added) with its precedence level (read-only)."""
        added = {s: ADDITIVE for s in self.additive} | {s: MULTIPLICATIVE for s in self.multiplicative}
        return MappingProxyType(BUILTIN_OPERATORS | added)

    @cached_property
    def _number_set(self) -> frozenset[str]:
        return frozenset(self.all_numbers)

    @property
    def all_numbers(self) -> tuple[str, ...]:
        """Every number symbol: the ten digits, then the added ones."""
        return BUILTIN_NUMBERS + self.numbers

    def precedence(self, symbol: str) -> int | None:
        """The operator's precedence level, ``None`` for a number; unknown symbols raise ``ValueError`` naming the
        language's symbols (a tree parsed with added concepts printed or executed without them met only "unknown symbol
        'm'")."""
        level = self.operators.get(symbol)
        if level is not None:
            return level
        if symbol in self._number_set:
            return None
        raise ValueError(
            f"unknown symbol {symbol!r}: neither a number nor an operator of this language (numbers "
            f"{''.join(self.all_numbers)}, operators {''.join(self.operators)}); a tree parsed with a ConceptTable is "
            "read with the same one: concepts=table.concepts, or execute(tree, table)"
        )

    def is_operator(self, symbol: str) -> bool:
        """Whether ``symbol`` is an operator of this language, built in or added (it has a precedence level)."""
        return self.precedence(symbol) is not None

    def grammar_extension(self) -> str:
        """The ``%extend`` lines that add these concepts to the base grammar (empty when none)."""
        lines = []
        for terminal, symbols in (
            ("NUMBER", self.numbers),
            (_TERMINAL_OF_LEVEL[ADDITIVE], self.additive),
            (_TERMINAL_OF_LEVEL[MULTIPLICATIVE], self.multiplicative),
        ):
            if symbols:
                lines.append(f"%extend {terminal}: " + " | ".join(json.dumps(s, ensure_ascii=False) for s in symbols))
        return "\n".join(lines)


#: The language of the paper, with no concepts added.
BASE_CONCEPTS = ConceptTable()


def concept_table(concepts: object) -> ConceptTable:
    """``concepts`` itself when it is a :class:`ConceptTable`, :data:`BASE_CONCEPTS` for ``None``; else ``TypeError``
    (an ``OperatorTable`` failed deep inside, on a missing ``grammar_extension`` or ``precedence``), telling to pass
    the ``.concepts`` of an object that holds a table, as an ``OperatorTable`` does."""
    if concepts is None:
        return BASE_CONCEPTS
    if not isinstance(concepts, ConceptTable):
        hint = "; pass its .concepts" if isinstance(getattr(concepts, "concepts", None), ConceptTable) else ""
        raise TypeError(f"expected a ConceptTable (e.g. HINT_SEMANTICS.concepts), got {type(concepts).__name__}{hint}")
    return concepts
