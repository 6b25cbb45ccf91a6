"""Parse errors that name the position, the offending character and what was expected; the warning of an ambiguous
grammar."""

from __future__ import annotations


class ParseError(ValueError):
    """A sentence that is not an expression of the language.

    ``position`` is the 0-based character index in the text given to ``parse`` (whitespace included);
    ``char`` the offending character, ``None`` when the text ended too early; ``expected`` what the
    grammar would have accepted there, in words (e.g. ``("a number", "'('")``; a
    :class:`~neurosym.syntax.symbol_grammar.SymbolGrammar`'s: its terminals' names, ``"$END"`` for the end).
    """

    def __init__(self, message: str, position: int, char: str | None, expected: tuple[str, ...]) -> None:
        super().__init__(message)
        self.position = position
        self.char = char
        self.expected = expected

    def __reduce__(self) -> tuple[type[ParseError], tuple[str, int, str | None, tuple[str, ...]]]:
        """Pickled and copied with its fields (``BaseException``'s default rebuilds it from the message alone, which
        ``__init__`` refuses): an error raised in a worker process reaches the parent as itself."""
        return type(self), (str(self), self.position, self.char, self.expected)


class UnexpectedCharacterError(ParseError):
    """A character that is no symbol of the language at that point (e.g. ``&`` or an unknown letter)."""


class UnexpectedSymbolError(ParseError):
    """A symbol of the language in a place where the grammar does not allow it (e.g. the ``2`` of ``12``)."""


class UnexpectedEndError(ParseError):
    """The text ended before the expression was complete (e.g. ``3+``, ``(2`` or the empty string)."""


class AmbiguousGrammarWarning(UserWarning):
    """A grammar with a sentence of several parse trees
    (:attr:`~neurosym.syntax.symbol_grammar.SymbolGrammar.ambiguous_sentence`): the parser takes one of them by its own
    order of the rules, so where the semantics give the trees different values, the value of such a sentence may be
    another than meant."""
