"""Any Lark grammar as a language of perceived symbols: one window, one single-character symbol, one token.

A :class:`SymbolGrammar` reads a Lark grammar (text or ``.lark`` file) whose terminals match single
characters: every symbol of its vocabulary is read as one terminal (of those it matches, the one of the highest
priority: ``X.2: "x"`` over ``VAR: /[a-z]/``), so a sentence (a string of symbols) is lexed one token per symbol,
whatever the terminals' patterns would match greedily. It parses sentences into Lark trees whose tokens carry their symbol position (``token.start_pos``), and compiles
the grammar's rules into the weighted normal form that exact grammar-constrained decoding needs
(:class:`NormalForm`: terminal, unary and binary rules over integer ids). An optional ``[item]`` that is absent is
no child of its rule (as ``item?``), not Lark's ``None`` placeholder.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import string
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np
from lark import Lark, Token, Tree
from lark.common import LexerConf
from lark.exceptions import GrammarError, LarkError, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.grammar import Rule, Symbol, Terminal
from lark.lexer import Lexer, Pattern

from neurosym.paths import read_user_text, user_path
from neurosym.syntax.errors import ParseError, UnexpectedCharacterError, UnexpectedEndError, UnexpectedSymbolError
from neurosym.syntax.parser import accepted_terminals
from neurosym.training.checks import is_int, is_real

#: Characters tried against every terminal when no vocabulary is given.
CANDIDATE_SYMBOLS = string.digits + string.ascii_letters + string.punctuation + "×÷−"
OUTSIDE_VOCABULARY = "$OUTSIDE_VOCABULARY"
"""The terminal a symbol outside the vocabulary is read as: no rule takes it, so the parser stops there."""
AMBIGUITY_CHECKED = 256
"""The most sentences (one per sequence of terminals) :attr:`SymbolGrammar.ambiguous_sentence` parses with all their
trees, and the most sequences of terminals a nonterminal may derive at a length it reaches (Lark's Earley parser
takes one to a few milliseconds per short sentence: under a second in all)."""
AMBIGUITY_LENGTHS = 16
"""The longest sentences :attr:`SymbolGrammar.ambiguous_sentence` parses."""


@dataclass(frozen=True)
class NormalForm:
    """The grammar's rules in the form CKY decoding uses (nonterminals and terminals as ids).

    ``terminal_rules`` ``(A, t)``: nonterminal ``A`` derives terminal ``t``; ``unary_rules`` ``(A, B)``;
    ``binary_rules`` ``(A, B, C)``: ``A -> B C``. ``start`` is the start symbol's id, ``nonterminals``
    and ``terminals`` name the ids. Empty rules are eliminated (a sentence has at least one symbol).
    """

    nonterminals: tuple[str, ...]
    terminals: tuple[str, ...]
    start: int
    terminal_rules: tuple[tuple[int, int], ...]
    unary_rules: tuple[tuple[int, int], ...]
    binary_rules: tuple[tuple[int, int, int], ...]


def check_sentence(sentence: object) -> str:
    """``sentence`` when it is a str (a string of symbols), else ``TypeError`` naming what it is."""
    if not isinstance(sentence, str):
        raise TypeError(f"a sentence is a string of symbols, got {type(sentence).__name__} {sentence!r:.40}")
    return sentence


class SymbolGrammar:
    """A Lark grammar over single-character symbols, one token per symbol.

    Args:
        grammar: Lark grammar text, or the path of a grammar file (whose relative imports, ``%import .defs (DIGIT)``,
            look beside it, as ``Lark.open``'s do): a path object, or a str of one line that names an existing file, or
            that holds a path separator or ends in an extension (``grammars/calc``, ``calc.txt``, ``C:\\g\\calc.lark``)
            and is no grammar: it starts with no definition (``start: "a"  // a.lark`` is text; ``C:\\``, ``c:/``
            start a drive) and no ``%`` statement (``~`` is the home folder).
        symbols: the vocabulary (single characters); default: every character of
            :data:`CANDIDATE_SYMBOLS` that one of the grammar's terminals matches.
        start: the start rule.

    Raises:
        ValueError: grammar text Lark cannot load (with Lark's line and column), no ``start`` rule, a symbol that
            is not one character, matches no terminal, or several of the highest priority among those it matches; a
            terminal that only symbols read as terminals of a higher priority match; a terminal that matches strings of several
            characters (``"01" | "1"``, ``/[0-9]+/``); a terminal that matches none of ``symbols`` (without them,
            none of :data:`CANDIDATE_SYMBOLS`); an ``%import`` of a grammar Lark does not find; a start rule that derives no
            sentence of symbols (``start: start DIGIT``: its language is empty), naming the rules that derive none; a terminal
            declared without a pattern (``%declare X``) or ignored (``%ignore SP``) that a rule uses, which no symbol is
            read as, naming the rules that use it.
        TypeError: a grammar that is neither text nor a path, a ``start`` that is no str, a symbol that is no str.
        FileNotFoundError: a path (as above) to no file.
        UnicodeError: a grammar file that is not UTF-8 text (a ``ValueError`` too), named with the line and column of
            its first byte that is not; a UTF-8 byte-order mark opening the file (a Windows editor's) is skipped, and
            Windows line ends read as any others. A grammar file that is a Git LFS pointer raises ``ValueError`` naming
            it; so do a file's grammar that Lark cannot load, one without a ``start`` rule and one whose import is not
            found.

    A grammar pickles and copies as its text, symbols, start rule and path, and the copy is built again from them (a
    grammar read from a file needs the grammars it imports beside that file where it is unpickled).
    """

    def __init__(self, grammar: str | os.PathLike, symbols: Sequence[str] | None = None, start: str = "start"):
        if not isinstance(grammar, str | os.PathLike):
            raise TypeError(f"SymbolGrammar takes a grammar's text or the path of a .lark file, got {type(grammar).__name__}")
        if not isinstance(start, str):  # (Lark takes several; a list failed here as "unhashable type: 'list'")
            raise TypeError(f"start is the name of the one rule sentences start from, got {type(start).__name__} {start!r:.40}")
        # (a file's relative imports, %import .defs, resolve against its folder, as Lark.open resolves them)
        source_path = _grammar_path(grammar)
        text = str(grammar) if source_path is None else read_user_text(source_path, "grammar")
        self._build(text, symbols, start, source_path)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied as what it was built from, and built again by the copy: Lark's parser holds a lexer class
        local to this grammar, which does not pickle, and its LALR tables do not deep-copy (a deep copy's parse failed
        inside Lark, "'int' object has no attribute 'expansion'")."""
        return {"text": self.text, "symbols": self.symbols, "start": self.start, "source_path": self.source_path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._build(**state)

    def _build(self, text: str, symbols: Sequence[str] | None, start: str, source_path: str | None) -> None:
        """Load ``text`` (read from ``source_path``, where relative imports look, or ``None``) and check it as
        :class:`SymbolGrammar` says."""
        self.text, self.start, self.source_path = text, start, source_path
        probe = _loaded(text, start, self.source_path)
        ignored = set(probe.ignore_tokens)
        self._patterns = {t.name: t.pattern for t in probe.terminals if t.name not in ignored}
        self._priorities = {t.name: t.priority for t in probe.terminals}
        self._ignored = {t.name: t.pattern for t in probe.terminals if t.name in ignored}
        _check_terminals_used(probe.rules, set(self._patterns), ignored)
        if not self._patterns:
            raise ValueError(f"the grammar's rules from {start!r} use no terminal: it has no sentence of symbols to read")
        if wide := {name: pattern for name, pattern in self._patterns.items() if pattern.max_width > 1}:
            used = _rules_using(probe.rules, wide.__contains__)
            shown = ", ".join(
                f"{name} ({pattern.to_regexp()}, {_in_rules(used.get(name, []))})" for name, pattern in wide.items()
            )
            raise ValueError(
                f"the grammar's terminals {shown} match strings of several characters: every terminal of a SymbolGrammar "
                "matches one character (one window, one symbol); write a sequence as a rule (e.g. bits: BIT+), a word as its "
                'letters ("s" "i" "n") or as one symbol of its own (SIN: "s")'
            )
        self.symbols: tuple[str, ...] = tuple(symbols) if symbols is not None else self._matched(CANDIDATE_SYMBOLS)
        self.terminal_of: dict[str, str] = {}
        for symbol in self.symbols:
            self.terminal_of[symbol] = self._read_as(symbol)
        if shadowed := [n for n, p in self._patterns.items() if n not in self.terminal_of.values() and self._matched_by(p)]:
            raise ValueError(
                f"the grammar's terminals {shadowed} match only symbols read as terminals of a higher priority: a sentence "
                "could never hold them; give them symbols of their own, or leave them out of the grammar"
            )
        if unmatched := [n for n, p in self._patterns.items() if not self._matched_by(p)]:
            raise ValueError(
                f"the grammar's terminals {unmatched} match none of the symbols {list(self.symbols)}: a sentence could never "
                "hold them (and decoding would find no sentence of a length that needs them); give every terminal a "
                "symbol, or leave it out of the grammar"
                if symbols is not None
                else f"the grammar's terminals {unmatched} match no single symbol: every terminal of a SymbolGrammar "
                "matches single characters (one window, one symbol); give symbols= for characters outside CANDIDATE_SYMBOLS"
            )
        if len(set(self.symbols)) != len(self.symbols) or not self.symbols:
            raise ValueError(f"the vocabulary must be non-empty without repeats, got {list(self.symbols)}")
        self._symbol_of = {terminal: symbol for symbol, terminal in reversed(self.terminal_of.items())}  # one each
        self._rules = probe.rules
        if unproductive := _unproductive(self.normal_form):
            raise ValueError(
                f"the grammar's start rule {start!r} derives no sentence of symbols: the rules that derive no symbols are "
                f"{', '.join(unproductive)} (each of their alternatives is empty or needs one of them); give the start rule "
                "an alternative that ends in symbols"
            )
        self.parser = self._parser()

    def _read_as(self, symbol: str) -> str:
        """The terminal ``symbol`` is read as: the one of the highest priority among those it matches (``X.2: "x"``
        over ``VAR: /[a-z]/``, as Lark's basic lexer chooses); ``ValueError`` where none, or several of that
        priority, match it."""
        if not isinstance(symbol, str):  # (an int failed on its missing len())
            raise TypeError(f"symbols are single characters (str), got {type(symbol).__name__} {symbol!r:.40}")
        if len(symbol) != 1:
            raise ValueError(f"symbols are single characters, got {symbol!r}")
        matching = [name for name, pattern in self._patterns.items() if _matches(pattern, symbol)]
        if not matching:
            if skipped := [name for name, pattern in self._ignored.items() if _matches(pattern, symbol)]:
                raise ValueError(
                    f"symbol {symbol!r} matches only the terminals {skipped} the grammar ignores (%ignore): every window is "
                    "one symbol of the sentence, so none is ignored; leave it out of symbols"
                )
            raise ValueError(f"symbol {symbol!r} matches no terminal of the grammar; each symbol must match exactly one")
        top = max(self._priorities[name] for name in matching)
        if len(first := [name for name in matching if self._priorities[name] == top]) > 1:
            raise ValueError(
                f"symbol {symbol!r} matches several terminals ({', '.join(first)}) of the grammar, of priority {top}: each "
                f"symbol is read as one terminal, the one of the highest priority it matches (give it one, e.g. {first[0]}.{top + 1})"
            )
        return first[0]

    def _matched(self, candidates: Iterable[str]) -> tuple[str, ...]:
        return tuple(c for c in candidates if any(_matches(p, c) for p in self._patterns.values()))

    def _matched_by(self, pattern: Pattern) -> bool:
        return any(_matches(pattern, symbol) for symbol in self.symbols)

    def _parser(self) -> Lark:
        """LALR where the grammar is LALR(1) without conflicts (Lark's strict mode; so one parse tree per sentence),
        else Earley, which parses any context-free grammar (:attr:`ambiguous_sentence`)."""
        try:
            return self._lark(parser="lalr", strict=True)
        except GrammarError:
            return self._lark(parser="earley")

    def _lark(self, **options: Any) -> Lark:
        """The grammar's Lark parser with ``options``, over one token per symbol (:func:`_symbol_lexer`)."""
        return Lark(
            self.text,
            start=self.start,
            lexer=_symbol_lexer(self.terminal_of),
            source_path=self.source_path,
            propagate_positions=_placed,
            maybe_placeholders=False,  # an absent [item] is no child (a None child would read as invalid)
            **options,
        )

    @cached_property
    def ambiguous_sentence(self) -> tuple[str, tuple[Tree | Token, Tree | Token]] | None:
        """A sentence with several parse trees, and two of them, or ``None`` where none was found: the parser takes one
        of them by its own order of the rules, so the semantics may give such a sentence another value than meant. An
        LALR grammar has none. An Earley grammar's sentences are parsed with all their trees, the shortest first (one
        per sequence of terminals, :func:`_terminal_sentences`), up to :data:`AMBIGUITY_CHECKED` of them and
        :data:`AMBIGUITY_LENGTHS` symbols: longer sentences go unchecked. Derivations that give one tree (``x+ x+``)
        count as one."""
        if self.parser.options.parser == "lalr":
            return None
        explicit, left = self._lark(parser="earley", ambiguity="explicit"), AMBIGUITY_CHECKED
        form = self.normal_form
        for sentences in itertools.islice(_terminal_sentences(form, AMBIGUITY_CHECKED), AMBIGUITY_LENGTHS):
            if (left := left - len(sentences)) < 0:
                return None
            for terminals in sentences:
                sentence = "".join(self._symbol_of[form.terminals[terminal]] for terminal in terminals)
                if (trees := _two_trees(explicit.parse(sentence))) is not None:
                    return sentence, trees
        return None

    def symbols_of(self, terminal: str) -> tuple[str, ...]:
        """The vocabulary's symbols that ``terminal`` matches."""
        return tuple(s for s in self.symbols if self.terminal_of[s] == terminal)

    def parse(self, sentence: str) -> Tree | Token:
        """The Lark tree of ``sentence`` (each token's ``start_pos`` is its symbol position; a lone ``Token`` when the
        grammar's inlined rules (``?rule``) reduce the whole sentence to one symbol).

        Raises:
            ParseError: naming the position and what the grammar expected there, by the symbols that could stand there
                (its ``expected``: the terminals' names, ``"$END"`` for the end of the sentence).
        """
        if not check_sentence(sentence):  # (Lark parsed it where the start rule can be empty, which sentences() never gives)
            raise UnexpectedEndError(
                f"the sentence is empty (a sentence has at least one symbol); expected {_in_symbols(self._first_terminals, self.symbols_of)}",
                0,
                None,
                self._first_terminals,
            )
        try:
            return self.parser.parse(sentence)
        except UnexpectedInput as error:
            raise _parse_error(self.parser, sentence, error, self.symbols_of) from None

    def accepts(self, sentence: str) -> bool:
        """Whether ``sentence`` is a sentence of the grammar. Parsing sees only terminals, so the answer is
        remembered per terminal sequence (decoding asks it of every batch's sentences, mostly of a few shapes)."""
        return self.accepts_terminals(self.terminals(sentence))

    def terminals(self, sentence: str) -> tuple[str | None, ...]:
        """The terminal of each symbol of ``sentence`` (``None`` for a symbol outside the vocabulary): all that
        parsing sees of it (``TypeError`` for no str, :func:`check_sentence`: a list of symbols was read as one)."""
        return tuple(map(self.terminal_of.get, check_sentence(sentence)))

    def accepts_terminals(self, terminals: tuple[str | None, ...]) -> bool:
        """Whether the grammar accepts a sentence of these terminals (``None``: a symbol outside the vocabulary; a name
        that is none of the grammar's terminals is never accepted either), remembered per sequence: :meth:`accepts`
        without the symbols. ``TypeError`` for ``terminals`` that are no tuple of names (a str was read as one name a
        letter; a list failed in the cache as "unhashable type: 'list'", before this check)."""
        if not isinstance(terminals, tuple) or not all(terminal is None or isinstance(terminal, str) for terminal in terminals):
            raise TypeError(f"terminals must be a tuple of terminal names, got {type(terminals).__name__} {terminals!r:.40}")
        return self._accepts_terminals(terminals)

    @lru_cache(maxsize=10_000)  # noqa: B019 (a grammar lives as long as the pipelines that use it)
    def _accepts_terminals(self, terminals: tuple[str | None, ...]) -> bool:
        """:meth:`accepts_terminals` of a checked tuple, remembered per sequence."""
        known = [terminal for terminal in terminals if terminal in self._symbol_of]
        if not terminals or len(known) != len(terminals):  # empty (parse refuses it), or a symbol no terminal reads
            return False
        try:  # (Lark's own error: a ParseError's message, built for nothing here, took half the time of a long sentence)
            self.parser.parse("".join(self._symbol_of[terminal] for terminal in known))
        except UnexpectedInput:
            return False
        return True

    @cached_property
    def _first_terminals(self) -> tuple[str, ...]:
        """The terminals some sentence starts with, sorted (what an empty sentence's :class:`ParseError` expected)."""
        form = self.normal_form
        first: list[set[int]] = [set() for _ in form.nonterminals]
        for head, terminal in form.terminal_rules:
            first[head].add(terminal)
        grew = True
        while grew:  # (a left child derives no empty string in the normal form)
            grew = False
            for head, child in (*form.unary_rules, *((head, left) for head, left, _ in form.binary_rules)):
                if not first[child] <= first[head]:
                    first[head] |= first[child]
                    grew = True
        return tuple(sorted(form.terminals[terminal] for terminal in first[form.start]))

    @cached_property
    def names(self) -> frozenset[str]:
        """Every name a parse tree's nodes and tokens can carry: the rules with an alternative that gives a node of
        their name (not those named ``_rule``, which Lark inlines into their parents, but the start rule, the root of
        every tree, ``start="_s"``; nor a ``?rule`` each of whose
        alternatives has an alias or one child, which Lark puts in its place, also where that child comes from a
        ``_rule`` that always gives one; a template's instances, ``list{DIGIT}`` of ``list{x}``, carry the template's
        name, ``list``), their aliases (``-> name``), and the terminals a rule keeps (not those named ``_TERMINAL`` or
        anonymous ones such as ``"+"``, which Lark drops, but in a ``!rule`` that keeps all its tokens)."""
        kept = {
            str(item.name) for rule in self._rules for item in rule.expansion if isinstance(item, Terminal) and _keeps(rule, item)
        }
        return frozenset(set(self.node_children) | kept)

    @cached_property
    def node_children(self) -> dict[str, frozenset[int]]:
        """Per name a parse tree's nodes can carry (a rule or an alias, as :attr:`names` says; not a terminal), how many
        children its nodes can have (2 for two or more): a node of one child may pass its child's value up, one of none
        or several needs a callable of its own (:class:`~neurosym.semantics.tree_semantics.TreeSemantics`)."""
        given = self._rule_children
        counts: dict[str, frozenset[int]] = {}
        for rule in self._rules:
            name = str(rule.alias) if rule.alias else _node_name(rule, self.start)
            if name is not None and (rule.alias or not _inlined(rule, given)):
                counts[name] = counts.get(name, frozenset()) | _children(rule, given)
        return counts

    @cached_property
    def indistinct_alternatives(self) -> dict[str, list[str]]:
        """Per rule, its alternatives without an alias that give nodes alike though they differ only in tokens Lark
        drops (``e: n "+" n | n "-" n``: both ``e`` over two ``n``, the operator gone), written as their symbols: no
        semantics of the rule can tell them apart. (An alternative of a ``?rule`` with one child is inlined, but not one
        whose ``_rule`` item gives several.)"""
        alike: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        for rule in self._rules:
            name, kept = _node_name(rule, self.start), tuple(str(item.name) for item in rule.expansion if _keeps(rule, item))
            if rule.alias or name is None or _inlined(rule, self._rule_children):
                continue
            alike.setdefault((name, kept), []).append(" ".join(str(item.name) for item in rule.expansion))
        return {name: alternatives for (name, _), alternatives in alike.items() if len(alternatives) > 1}

    @cached_property
    def _rule_children(self) -> dict[str, set[int]]:
        """Per rule named ``_rule``, how many children it gives the node it is inlined into: :func:`_inlined_children`."""
        return _inlined_children(self._rules)

    @cached_property
    def normal_form(self) -> NormalForm:
        """The rules as terminal, unary and binary rules (long rules binarised, empty rules removed)."""
        return _normal_form(self._rules, tuple(self._patterns), self.start)

    def position_symbols(self, length: int) -> tuple[tuple[str, ...], ...]:
        """Per position of a sentence of ``length`` symbols, the vocabulary's symbols that some sentence of the
        grammar of that length has there (all empty when no sentence has that length); e.g. which symbols an
        edit may put at a position. Exact, computed once per length (time ``O(rules · length²)``). ``TypeError`` for a
        ``length`` that is no int (numpy's ints are)."""
        if not is_int(length):  # (True, 2.5 and "3" failed inside numpy or in a comparison)
            raise TypeError(f"length must be an int, got {type(length).__name__} {length!r:.40}")
        length = int(length)
        if length < 1:
            raise ValueError(f"a sentence has at least one symbol, got length {length}")
        return self._position_symbols(length)

    def sentences(self, length: int, limit: int) -> list[str] | None:
        """Every sentence of ``length`` symbols (in the vocabulary's order), or ``None`` where more than ``limit``
        strings would have to be parsed to find them: those of the symbols some sentence of that length has at each
        position (:meth:`position_symbols`). ``limit``: a number of at least 0 (``math.inf``: no limit), else
        ``ValueError`` (NaN, which compares False, parsed every candidate)."""
        if not (is_real(limit) and limit >= 0):
            raise ValueError(f"limit must be a number of at least 0 (math.inf: none), got {limit!r:.40}")
        allowed = self.position_symbols(length)
        if math.prod(map(len, allowed)) > limit:
            return None
        return [sentence for sentence in map("".join, itertools.product(*allowed)) if self.accepts(sentence)]

    @lru_cache(maxsize=64)  # noqa: B019 (a grammar lives as long as the pipelines that use it)
    def _position_symbols(self, length: int) -> tuple[tuple[str, ...], ...]:
        form = self.normal_form
        reached = _reached_spans(form, length)  # [N, start, span length]
        allowed: list[set[str]] = [set() for _ in range(length)]
        for head, terminal in form.terminal_rules:
            for position in np.flatnonzero(reached[head, :, 1]):
                allowed[position].update(self.symbols_of(form.terminals[terminal]))
        return tuple(tuple(s for s in self.symbols if s in symbols) for symbols in allowed)


def _symbol_lexer(terminal_of: dict[str, str]) -> type[Lexer]:
    """A Lark lexer that reads each symbol as one token of its terminal (``terminal_of``)."""

    class SymbolLexer(Lexer):
        def __init__(self, lexer_conf: LexerConf) -> None:
            """Lark builds a lexer from its configuration; one token per symbol needs none of it."""

        # Lark's interface-0 custom lexer (its wrapper passes the text); Lark's stub has only the newer signature.
        def lex(self, data: str) -> Iterator[Token]:  # type: ignore[override]
            # (a symbol outside the vocabulary is a token no rule takes: the parser stops at it as at any unexpected
            # token, and so says what it expected there; the lexer's own error knew nothing of the grammar)
            for position, symbol in enumerate(data):
                yield symbol_token(terminal_of.get(symbol, OUTSIDE_VOCABULARY), symbol, position)

    return SymbolLexer


def _terminal_sentences(form: NormalForm, cap: int) -> Iterator[list[tuple[int, ...]]]:
    """Per length 1, 2, ...: the sentences of ``form`` of that length as terminal ids, sorted; it stops before a length
    where a nonterminal derives more than ``cap`` sequences."""
    derived: list[list[set[tuple[int, ...]]]] = [[set() for _ in form.nonterminals]]  # [length][nonterminal]
    for length in itertools.count(1):
        cell: list[set[tuple[int, ...]]] = [set() for _ in form.nonterminals]
        for head, terminal in form.terminal_rules if length == 1 else ():
            cell[head].add((terminal,))
        for head, left, right in form.binary_rules:
            for split in range(1, length):
                cell[head].update(a + b for a in derived[split][left] for b in derived[length - split][right])
            if len(cell[head]) > cap:
                return
        changed = True
        while changed:  # (along the unary rules, as _close_unary)
            changed = False
            for head, child in form.unary_rules:
                if not cell[child] <= cell[head]:
                    cell[head] |= cell[child]
                    changed = True
        if max(map(len, cell)) > cap:
            return
        derived.append(cell)
        yield sorted(cell[form.start])


def _two_trees(parsed: Tree | Token) -> tuple[Tree | Token, Tree | Token] | None:
    """Two different trees of the alternatives at the first of Lark's ``_ambig`` nodes in ``parsed`` (a parse with
    ``ambiguity="explicit"``) that has any, else ``None``."""
    if not isinstance(parsed, Tree):
        return None
    for node in parsed.iter_subtrees_topdown():
        if node.data == "_ambig" and (other := next((c for c in node.children[1:] if c != node.children[0]), None)) is not None:
            return node.children[0], other
    return None


def symbol_token(terminal: str, symbol: str, position: int | None) -> Token:
    """The token of ``symbol`` read as ``terminal`` at ``position`` of a sentence, placed as Lark's lexer places a
    one-character token (one line, columns from 1, ``end_pos`` and ``end_column`` just past it); ``position`` ``None``:
    a token placed nowhere."""
    if position is None:
        return Token(terminal, symbol)
    return Token(terminal, symbol, position, 1, position + 1, 1, position + 2, position + 1)


def _placed(child: Tree | Token) -> bool:
    """Whether Lark may place a parse-tree node by ``child`` (``propagate_positions``): a token, or a tree placed to its
    end. Where a ``?rule``'s node is replaced by an empty rule's node (``?z: "a" x`` with ``x:``), Lark places that node
    at the start of the rule's first token but not to its end, then reads its end (``AttributeError`` parsing ``a``)."""
    return not isinstance(child, Tree) or hasattr(child.meta, "end_pos")


_DEFINITION = re.compile(r"^\s*[?!]?[A-Za-z_]\w*(\.-?\d+)?(\{[^}]*\})?\s*:", re.MULTILINE)
"""The start of a rule's or terminal's definition (``start:``, ``?sum:``, ``X.2:``, ``list{x}:``): grammar text."""
_DRIVE = re.compile(r"\s*[A-Za-z]:[\\/]")
"""The start of a path from a Windows drive (``C:\\``, ``c:/``), not a definition."""
_DRIVE_HINT = "; as grammar text, a one-letter rule's colon right before a slash (c:/x/) reads as a drive: add a space (c: /x/)"
"""What the error of a missing file adds where the str started with a drive: it may be a one-letter rule."""
_STATEMENT = re.compile(r"\s*%[a-z]+\b")
"""The start of one of Lark's statements (``%import``, ``%ignore``, ``%declare``): grammar text."""
_PATH_LIKE = re.compile(r"[\\/]|\.\w+$")
"""A path separator, or an extension at the end (``.lark``, ``.txt``)."""


def _grammar_path(grammar: str | os.PathLike) -> str | None:
    """The resolved path of the file ``grammar`` names, ``None`` where it is grammar text. A path object names a file;
    a str does where it is one line and names an existing file or :func:`_looks_like_a_path` (``~`` is the home folder).
    ``FileNotFoundError`` where the file named is not there."""
    line = str(grammar).strip()
    named = isinstance(grammar, os.PathLike) or (
        "\n" not in line and (os.path.isfile(user_path(grammar)) or _looks_like_a_path(line))
    )
    if not named:
        return None
    path = user_path(grammar).resolve()
    if not path.is_file():
        raise FileNotFoundError(
            f"no grammar file {str(grammar)!r} (looked for {path}): a path object, or a one-line str with a path separator "
            "or an extension that starts with no definition (start: ...) and no %statement, names the file of a grammar"
            + _DRIVE_HINT
            * bool(_DRIVE.match(line))
        )
    return str(path)


def _looks_like_a_path(line: str) -> bool:
    """Whether ``line`` (a str of one line that names no existing file) is the path of a file: it holds a path
    separator or ends in an extension (``grammars/calc``, ``calc.txt``, ``calc.lark``), and starts with no definition
    (a one-line grammar is its start rule's, ``start: "a"  // a.lark``; ``C:\\``, ``c:/`` start a drive) and no
    ``%`` statement. (A one-line str that is neither, ``calc``, is text, which Lark names where it does not load.)"""
    grammar_syntax = bool(_STATEMENT.match(line)) or (bool(_DEFINITION.match(line)) and not _DRIVE.match(line))
    return not grammar_syntax and bool(_PATH_LIKE.search(line))


def _loaded(text: str, start: str, source_path: str | None) -> Lark:
    """The grammar loaded by Lark (Earley, basic lexer: any grammar), its errors as ``ValueError`` (an ``%import`` of
    a grammar file that is nowhere to be found too), which name the file ``source_path`` where the text is read from
    one; relative imports look beside ``source_path`` (``None``: text, beside the script run)."""
    named = "" if source_path is None else f"{source_path}: "
    try:
        return Lark(text, start=start, parser="earley", lexer="basic", source_path=source_path)
    except LarkError as error:
        if f"NonTerminal('{start}')" in str(error):
            raise ValueError(f"{named}the grammar has no rule {start!r} to start from (give start= for another)") from None
        raise ValueError(f"{named}the grammar does not load: {error}") from None
    except FileNotFoundError as error:  # (Lark opens the missing file to raise its error)
        folder = "the folder of the script run (grammar text)" if source_path is None else f"the folder of {source_path}"
        raise ValueError(
            f"{named}the grammar imports {error.filename!r}, which Lark does not find: a relative %import (.name) looks in {folder}, "
            "any other among Lark's own grammars (%import common.DIGIT)"
        ) from None


def _matches(pattern: Pattern, symbol: str) -> bool:
    """Whether the terminal's pattern (a string or a regular expression, with its flags: ``"a"i``) matches ``symbol``."""
    return bool(re.fullmatch(pattern.to_regexp(), symbol))


def _parse_error(parser: Lark, sentence: str, error: UnexpectedInput, symbols_of: Callable[[str], tuple[str, ...]]) -> ParseError:
    """``error`` as a :class:`ParseError` whose ``expected`` are the terminals' names (``"$END"``: the end) and whose
    message shows them by their symbols (``symbols_of``)."""
    if isinstance(error, UnexpectedEOF) or (isinstance(error, UnexpectedToken) and error.token.type == "$END"):
        position = len(sentence)
        expected = _expected(parser, sentence[:position], error)
        return UnexpectedEndError(  # (parse refuses the empty sentence before Lark sees it)
            f"the sentence ends too early at position {position}; expected {_in_symbols(expected, symbols_of)}",
            position,
            None,
            expected,
        )
    if not isinstance(error, UnexpectedToken):  # pragma: no cover - the parsers raise only the two kinds above
        raise error
    position = error.token.start_pos
    char = sentence[position]
    expected = _expected(parser, sentence[:position], error)
    kind: type[ParseError]
    if error.token.type == OUTSIDE_VOCABULARY:
        message, kind = f"symbol {char!r} at position {position} is not in the grammar's vocabulary", UnexpectedCharacterError
    else:
        message, kind = f"unexpected symbol {char!r} at position {position}", UnexpectedSymbolError
    return kind(f"{message}; expected {_in_symbols(expected, symbols_of)}", position, char, expected)


SYMBOLS_SHOWN = 8
"""How many of a terminal's symbols a parse error's message shows."""


def _in_symbols(terminals: Sequence[str], symbols_of: Callable[[str], tuple[str, ...]]) -> str:
    """The ``terminals`` a parse expected, in the symbols a sentence would hold there: ``'+'`` for a terminal of one
    symbol, ``DIGIT ('0', '1', ...)`` for one of several (``one of 'a', 'b'`` where Lark named an anonymous pattern,
    ``__ANON_0``), and ``$END`` as the end of the sentence; Lark's names alone (``LPAR``, ``__ANON_0``) said little of
    the grammar one wrote."""
    words = [_terminal_in_symbols(terminal, symbols_of(terminal)) for terminal in terminals if terminal != "$END"]
    words += ["the end of the sentence"] * ("$END" in terminals)
    return " or ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def _terminal_in_symbols(terminal: str, symbols: tuple[str, ...]) -> str:
    if len(symbols) == 1:
        return repr(symbols[0])
    shown = ", ".join(map(repr, symbols[:SYMBOLS_SHOWN])) + (", ..." if len(symbols) > SYMBOLS_SHOWN else "")
    return f"one of {shown}" if terminal.startswith("__") else f"{terminal} ({shown})"


def _expected(parser: Lark, prefix: str, error: UnexpectedInput) -> tuple[str, ...]:
    """The terminals the grammar accepts after ``prefix``, where ``error`` stopped the parse, sorted (``"$END"`` where
    ``prefix`` is a sentence): fed anew to an LALR parser (its error names those of the state after the lookahead's
    default reductions); Earley's error names those that continue ``prefix``, never its end."""
    if parser.options.parser == "lalr":
        return tuple(sorted(accepted_terminals(parser, prefix)))
    named = set(getattr(error, "expected", None) or getattr(error, "accepts", None) or ())
    # (at the end of the sentence, prefix is the sentence that failed)
    if isinstance(error, UnexpectedToken) and _is_sentence(parser, prefix):
        named.add("$END")
    return tuple(sorted(named))


def _is_sentence(parser: Lark, text: str) -> bool:
    """Whether ``parser`` parses ``text`` whole."""
    try:
        parser.parse(text)
    except UnexpectedInput:
        return False
    return True


def _normal_form(rules: Iterable[Rule], terminals: tuple[str, ...], start: str) -> NormalForm:
    """Lark's expanded rules -> :class:`NormalForm` (nullable symbols dropped in every combination)."""
    expansions: dict[str, list[tuple[str, ...]]] = {}
    for rule in rules:
        expansions.setdefault(str(rule.origin.name), []).append(tuple(str(s.name) for s in rule.expansion))
    terminal_set = set(terminals)
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for head, bodies in expansions.items():
            if head not in nullable and any(all(s in nullable for s in body) for body in bodies):
                nullable.add(head)
                changed = True
    productions: set[tuple[str, tuple[str, ...]]] = set()
    for head, bodies in expansions.items():
        for body in bodies:
            for variant in _without_nullable(body, nullable):
                if variant and variant != (head,):
                    productions.add((head, variant))
    names: list[str] = [start]
    index: dict[str, int] = {start: 0}

    def nonterminal(name: str) -> int:
        if name not in index:
            index[name] = len(names)
            names.append(name)
        return index[name]

    terminal_id = {name: i for i, name in enumerate(terminals)}
    terminal_rules, unary, binary = set(), set(), set()

    def symbol(name: str) -> int:  # a terminal inside a longer body gets a pre-terminal
        if name in terminal_set:
            pre = nonterminal(f"<{name}>")
            terminal_rules.add((pre, terminal_id[name]))
            return pre
        return nonterminal(name)

    for head, body in sorted(productions):
        head_id = nonterminal(head)
        if len(body) == 1:
            if body[0] in terminal_set:
                terminal_rules.add((head_id, terminal_id[body[0]]))
            else:
                unary.add((head_id, nonterminal(body[0])))
            continue
        current = head_id
        for position in range(len(body) - 2):  # A -> X1 X2 ... Xk  ==>  A -> X1 A', A' -> X2 A'', ...
            rest = nonterminal(f"{head}->{' '.join(body)}@{position + 1}")
            binary.add((current, symbol(body[position]), rest))
            current = rest
        binary.add((current, symbol(body[-2]), symbol(body[-1])))
    if start not in expansions:
        raise ValueError(f"the grammar has no rule {start!r}")
    return NormalForm(tuple(names), terminals, 0, tuple(sorted(terminal_rules)), tuple(sorted(unary)), tuple(sorted(binary)))


_LARK_REPETITION = re.compile(r"^__(.+)_(?:plus|star)_\d+$")
"""The name of the rule Lark makes of a repetition in a rule (``__start_plus_0`` of ``DIGIT+`` in ``start``)."""


def _rules_using(rules: Iterable[Rule], chosen: Callable[[str], bool]) -> dict[str, list[str]]:
    """Per terminal ``rules`` use that is ``chosen`` by its name, the rules that use it, sorted: where a refusal of the
    terminal points (an anonymous ``"sin"`` is Lark's ``SIN``; a ``%declare X`` has no definition to point to)."""
    used: dict[str, set[str]] = {}
    for rule in rules:
        for item in rule.expansion:
            if isinstance(item, Terminal) and chosen(str(item.name)):
                used.setdefault(str(item.name), set()).add(_LARK_REPETITION.sub(r"\1", str(rule.origin.name)))
    return {terminal: sorted(names) for terminal, names in sorted(used.items())}


def _check_terminals_used(rules: Iterable[Rule], defined: set[str], ignored: set[str]) -> None:
    """``ValueError`` naming the terminals ``rules`` use that no symbol is ever read as, and the rules that use them: an
    ``ignored`` one (``%ignore SP``: every window is one symbol of the sentence, none is skipped) or one not ``defined``
    (``%declare X``: a name without a pattern, for a lexer of one's own to make)."""
    if used := _rules_using(rules, ignored.__contains__):
        raise ValueError(
            f"the grammar's terminals {_with_rules(used)} are ignored (%ignore) but used in rules: every window is one "
            "symbol of the sentence and none is skipped, so no symbol is read as an ignored terminal; leave out the %ignore"
        )
    if declared := _rules_using(rules, lambda name: name not in defined and name not in ignored):
        raise ValueError(
            f"the grammar's terminals {_with_rules(declared)} are declared (%declare) without a pattern: no symbol is read "
            'as one, so no sentence holds them; define each by the symbols it matches (X: "x")'
        )


def _with_rules(used: dict[str, list[str]]) -> str:
    """``"SP (in rule start); X (in rule a, b)"``: terminals and the rules that use them (:func:`_rules_using`)."""
    return "; ".join(f"{terminal} ({_in_rules(rules)})" for terminal, rules in used.items())


def _in_rules(rules: list[str]) -> str:
    """``"in rule a, b"``: where the ``rules`` that use a terminal are."""
    return f"in rule {', '.join(rules)}" if rules else "in no rule"


def _unproductive(form: NormalForm) -> list[str]:
    """The grammar's own rules that derive no sentence (``a: a "+"``), sorted, where the start symbol is one of them (it
    derives no sentence, though it may derive the empty one, which a sentence of symbols never is), else none: the
    least fixed point of the nonterminals some rule of ``form`` derives symbols from. (Names of the normal form's own,
    ``<TERMINAL>`` and ``rule->...@k``, and of Lark's, ``__start_plus_0``, are left out.)"""
    productive = {head for head, _ in form.terminal_rules}
    changed = True
    while changed:
        grown = productive | {head for head, child in form.unary_rules if child in productive}
        grown |= {head for head, left, right in form.binary_rules if left in productive and right in productive}
        changed, productive = grown != productive, grown
    if form.start in productive:
        return []
    return sorted(
        name
        for i, name in enumerate(form.nonterminals)
        if i not in productive and not name.startswith(("<", "__")) and "->" not in name
    )


def _derivable_lengths(form: NormalForm, length: int) -> np.ndarray:
    """``[N, length + 1]``: whether each nonterminal derives some string of each length."""
    derives = np.zeros((len(form.nonterminals), length + 1), dtype=bool)
    for head, _ in form.terminal_rules:
        derives[head, 1] = True
    for span in range(1, length + 1):
        for head, left, right in form.binary_rules:
            derives[head, span] |= bool(np.any(derives[left, 1:span] & derives[right, span - 1 : 0 : -1]))
        _close_unary(form, derives[:, span], lambda head, child: (child, head))
    return derives


def _reached_spans(form: NormalForm, length: int) -> np.ndarray:
    """``[N, length, length + 1]``: whether nonterminal ``A`` spans ``[start, start + span)`` in some derivation
    of a whole sentence of ``length`` symbols (top-down from the start symbol through derivable children)."""
    derives = _derivable_lengths(form, length)
    reached = np.zeros((len(form.nonterminals), length, length + 1), dtype=bool)
    reached[form.start, 0, length] = derives[form.start, length]
    for span in range(length, 0, -1):
        starts = length - span + 1
        cell = reached[:, :starts, span]
        _close_unary(form, cell, lambda head, child: (head, child), derives[:, span])
        for head, left, right in form.binary_rules:
            parents = cell[head]
            if not parents.any():
                continue
            for split in np.flatnonzero(derives[left, 1:span] & derives[right, span - 1 : 0 : -1]) + 1:
                reached[left, :starts, split] |= parents
                reached[right, split : split + starts, span - split] |= parents
    return reached


def _close_unary(
    form: NormalForm, cell: np.ndarray, direction: Callable[[int, int], tuple[int, int]], derivable: np.ndarray | None = None
) -> None:
    """Propagate ``cell [N, ...]`` along the unary rules in place until nothing changes; ``direction`` maps a
    rule ``(head, child)`` to ``(source, destination)``; ``derivable [N]``: destinations allowed."""
    changed = True
    while changed:
        changed = False
        for rule in form.unary_rules:
            source, destination = direction(*rule)
            if derivable is not None and not derivable[destination]:
                continue
            grown = cell[destination] | cell[source]
            if np.any(grown != cell[destination]):
                cell[destination] = grown
                changed = True


def _without_nullable(body: tuple[str, ...], nullable: set[str]) -> list[tuple[str, ...]]:
    variants: list[tuple[str, ...]] = [()]
    for name in body:
        variants = [v + (name,) for v in variants] + ([*variants] if name in nullable else [])
    return list(dict.fromkeys(variants))


__all__ = ["CANDIDATE_SYMBOLS", "NormalForm", "SymbolGrammar", "symbol_token"]


def _node_name(rule: Rule, start: str) -> str | None:
    """The name of the parse-tree nodes of ``rule`` without its alias: ``None`` for a rule named ``_rule`` (Lark inlines
    it into its parent) but the ``start`` rule (the root, which has no parent: ``start="_s"`` gives a tree ``_s``), the
    template's name for an instance of a template (``list{DIGIT}`` of ``list{x}``: ``list``)."""
    origin = str(rule.origin.name)
    return None if origin.startswith("_") and origin != start else str(rule.options.template_source or origin)


def _inlined(rule: Rule, given: dict[str, set[int]]) -> bool:
    """Whether ``rule`` is an alternative of a ``?rule`` that Lark replaces by its one child: it always has one child,
    once the ``_rule`` items are inlined (``given``: :func:`_inlined_children`)."""
    return bool(rule.options.expand1) and _children(rule, given) == {1}


def _inlined_children(rules: Iterable[Rule]) -> dict[str, set[int]]:
    """Per rule named ``_rule``, how many children it gives the node it is inlined into (2 for two or more): the
    least fixed point of :func:`_children` over its alternatives (a ``_rule`` may hold itself, as ``x*`` does)."""
    rules = [rule for rule in rules if str(rule.origin.name).startswith("_")]
    given: dict[str, set[int]] = {str(rule.origin.name): set() for rule in rules}
    changed = True
    while changed:
        changed = False
        for rule in rules:
            counts = given[str(rule.origin.name)]
            if not (grown := _children(rule, given)) <= counts:
                counts |= grown
                changed = True
    return given


def _children(rule: Rule, given: dict[str, set[int]]) -> set[int]:
    """How many children an alternative's node can have (2 for two or more): one per item it keeps, but a ``_rule``,
    which gives the counts ``given`` names for it."""
    counts = {0}
    for item in rule.expansion:
        if not _keeps(rule, item):
            continue
        inlined = not isinstance(item, Terminal) and str(item.name).startswith("_")
        counts = {min(count + more, 2) for count in counts for more in (given.get(str(item.name), set()) if inlined else {1})}
    return counts


def _keeps(rule: Rule, item: Symbol) -> bool:
    """Whether the parse-tree node of ``rule`` keeps ``item`` of its expansion: a rule, or a terminal Lark does not drop
    (it drops those named ``_TERMINAL`` and anonymous ones such as ``"+"``, but in a ``!rule``)."""
    return not isinstance(item, Terminal) or rule.options.keep_all_tokens or not item.filter_out
