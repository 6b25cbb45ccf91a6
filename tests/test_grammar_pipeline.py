"""The grammar-generic pipeline: any Lark grammar's symbols, exact CKY decoding, abduction with and without
inverses, and learning a reader from results on a tiny synthetic task."""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import os
import pickle
import re
import sys
from collections.abc import Iterator

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import example, given, reject, settings
from hypothesis import strategies as st
from lark import Discard, Lark, Transformer, v_args
from lark.grammar import NonTerminal
from table_readers import TableReader

from neurosym.pipelines import grammar_abduction
from neurosym.pipelines.decoding import TokenRoles, constrained_decode
from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.grammar_decoding import GrammarDecoder
from neurosym.pipelines.grammar_pipeline import GrammarPipeline, marginal_loss, pipeline_timings
from neurosym.pipelines.pipeline import Reading
from neurosym.pipelines.sentences import READ, ImageSentences
from neurosym.pipelines.trainer import pseudo_label_loss
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax import ParseError, UnexpectedEndError
from neurosym.syntax.parser import base_grammar
from neurosym.syntax.symbol_grammar import SymbolGrammar

HINT_SYMBOLS = list("0123456789+-*/()")
ADDITION = 'start: number "+" number\nnumber: DIGIT+\nDIGIT: "0".."9"\n'
# A grammar with an empty rule, a unary chain and a rule of four symbols.
ODD = """
start: item+ tail
item: A | B maybe
maybe: C |
tail: B B A B
A: "a"
B: "b"
C: "c"
"""
SYMBOL_ADDITION = SymbolGrammar(ADDITION)


def addition_semantics() -> TreeSemantics:
    return TreeSemantics(
        {"number": lambda digits: int("".join(digits)), "start": lambda xs: xs[0] + xs[1]},
        {
            "start": lambda s, c: [t for t in ((s - c[1], c[1]), (c[0], s - c[0])) if min(t) >= 0],
            "number": lambda v, d: [tuple(str(v).zfill(len(d)))] if 0 <= v < 10 ** len(d) else [],
        },
    )


def test_the_vocabulary_is_every_symbol_a_terminal_matches():
    grammar = SymbolGrammar(ADDITION)
    assert grammar.symbols == tuple("0123456789+")
    assert grammar.terminal_of["7"] == "DIGIT" and grammar.symbols_of("PLUS") == ("+",)


def test_terminals_match_with_their_flags():
    assert SymbolGrammar('start: X+\nX: "a"i\n').symbols == ("a", "A")  # (the flag was ignored: "A" matched nothing)
    assert SymbolGrammar("start: X+\nX: /[a-b]/i\n").symbols == ("a", "b", "A", "B")
    assert SymbolGrammar('start: X+\nX: "a"i\n', symbols=["A", "a"]).accepts("aAa")


def test_a_symbol_must_match_exactly_one_terminal():
    with pytest.raises(ValueError, match="'x' matches no terminal"):
        SymbolGrammar(ADDITION, symbols=list("0123+x"))
    with pytest.raises(ValueError, match="several terminals"):
        SymbolGrammar('start: A | B\nA: "1"\nB: /[0-9]/\n', symbols=["1"])
    with pytest.raises(ValueError, match="single characters"):
        SymbolGrammar(ADDITION, symbols=["12"])


def test_a_grammar_that_cannot_serve_is_named_before_any_work(tmp_path):
    with pytest.raises(TypeError, match="SymbolGrammar takes a grammar's text or the path of a .lark file, got NoneType"):
        SymbolGrammar(None)
    with pytest.raises(TypeError, match="Executor takes a SymbolGrammar and a TreeSemantics, got str and TreeSemantics"):
        Executor(ADDITION, addition_semantics())
    with pytest.raises(ValueError, match=r"memory \(sentences remembered\) must be an int of at least 0, got -1"):
        Executor(SymbolGrammar(ADDITION), addition_semantics(), memory=-1)  # (turned the memory off silently)
    with pytest.raises(ValueError, match="max_changes, max_candidates, max_patterns, alternatives, beam and max_nodes must be"):
        AbductionBudget(max_changes=True)
    for terminal in ('"10" | "11"', '"10" | "1"', "/[0-9]+/"):  # "10" would vanish silently ("1" alone was kept)
        with pytest.raises(ValueError, match=r"terminals NUM \(.*\) match strings of several characters"):
            SymbolGrammar(f'start: NUM ("+" NUM)*\nNUM: {terminal}\n')
    with pytest.raises(ValueError, match=r"terminals \['NUM'\] match no single symbol"):
        SymbolGrammar('start: NUM ("+" NUM)*\nNUM: "é"\n')
    for text in ("", 'expr: "a"\n'):
        with pytest.raises(ValueError, match="the grammar has no rule 'start' to start from"):
            SymbolGrammar(text)
    assert SymbolGrammar('expr: "a"\n', start="expr").symbols == ("a",)
    with pytest.raises(TypeError, match=r"start is the name of the one rule sentences start from, got list \['expr'\]"):
        SymbolGrammar('expr: "a"\n', start=["expr"])
    with pytest.raises(TypeError, match=r"symbols are single characters \(str\), got int 1"):  # ("int has no len()")
        SymbolGrammar('start: D+\nD: "1" | "2"\n', symbols=[1, 2])
    with pytest.raises(ValueError, match=r"symbol ' ' matches only the terminals \['WS'\] the grammar ignores"):
        SymbolGrammar(ADDITION + "%import common.WS\n%ignore WS\n", symbols=list("0123456789+ "))  # ("matches no terminal")
    for text in ('start: start\nA: "a"\n', "start:\n"):  # (an empty vocabulary was named, not why)
        with pytest.raises(ValueError, match="the grammar's rules from 'start' use no terminal"):
            SymbolGrammar(text)
    with pytest.raises(ValueError, match=r"the grammar does not load: .*line 2"):
        SymbolGrammar('start: "a"\nstart: : "b"\n')
    path = tmp_path / "addition.lark"
    path.write_text(ADDITION)
    assert SymbolGrammar(str(path)).symbols == SymbolGrammar(path).symbols == tuple("0123456789+")
    with pytest.raises(FileNotFoundError, match="missing.lark"):
        SymbolGrammar(str(tmp_path / "missing.lark"))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="abcxyz_-/. ", max_size=12), st.sampled_from(['start: "a"', 'start : "a" | "a" start', '?start.2: "a"']))
def test_one_line_grammar_text_ending_in_lark_is_text(comment, rule):
    """A one-line grammar whose comment ended in ``.lark`` was read as the path of a file (``FileNotFoundError``)."""
    assert SymbolGrammar(f"{rule}  // {comment}.lark").symbols == ("a",)


def test_a_path_is_a_path_object_an_existing_file_or_a_path_like_str_that_defines_no_rule(tmp_path):
    """An existing file not named .lark was read as grammar text (Lark's "Unexpected token" of its name), and a missing
    one was named by the operating system's bare error alone."""
    path = tmp_path / "addition grammar.txt"
    path.write_text(ADDITION)
    for grammar in (path, str(path)):
        assert SymbolGrammar(grammar).source_path == str(path.resolve())
    assert SymbolGrammar(ADDITION).source_path is None
    for missing in (tmp_path / "missing.txt", str(tmp_path / "missing.lark"), "missing.lark"):
        with pytest.raises(FileNotFoundError, match=rf"no grammar file {re.escape(repr(str(missing)))} \(looked for .*missing"):
            SymbolGrammar(missing)


SEGMENTS = st.from_regex(r"[A-Za-z][\w\- ]{0,6}", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["", "./", "../", "~/", "/", "C:\\", "c:/"]),
    st.lists(SEGMENTS, min_size=1, max_size=3),
    st.sampled_from(["/", "\\"]),
    st.sampled_from(["", ".lark", ".txt", ".g"]),
)
@example("", ["grammar"], "/", ".txt")
@example("", ["grammars", "my_grammar"], "/", "")
@example("C:\\", ["g", "x"], "\\", ".lark")
def test_a_one_line_str_with_a_folder_or_an_extension_names_a_file(start, folders, separator, extension):
    """A missing file not named .lark (``grammar.txt``, ``grammars/my_grammar``) was read as grammar text (Lark's
    "Unexpected token" of its name), and so was a Windows path from a drive (``C:\\g\\x.lark``, as the definition of
    ``C``): each is named missing, as the path it is."""
    path = start + separator.join(folders) + extension
    if not (start or folders[1:] or extension) or os.path.isfile(os.path.expanduser(path)):
        reject()  # (a bare name is text; a file that is there is read)
    with pytest.raises(FileNotFoundError, match=rf"^no grammar file {re.escape(repr(path))} \(looked for "):
        SymbolGrammar(path)


def test_a_one_letter_rule_read_as_a_drive_is_told_how_to_write_it() -> None:
    """``c:/x/`` is a path from drive C as much as a one-letter rule: the missing file's error says how to write the
    rule (a space after its colon), which then loads."""
    with pytest.raises(FileNotFoundError, match=re.escape("reads as a drive: add a space (c: /x/)")):
        SymbolGrammar("c:/x/", start="c")
    assert SymbolGrammar("c: /x/", start="c").parse("x") is not None
    with pytest.raises(FileNotFoundError) as raised:
        SymbolGrammar("grammars/nope.lark")
    assert "drive" not in str(raised.value)


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from(["", "?", "!", "  "]),
    st.sampled_from(["start", "start.2", "start "]),
    st.sampled_from(['"a"', "/a/", '"a" | "a" start', '("a")']),
    st.sampled_from(["", "  // ", "// see C:\\g\\"]),
    st.text(alphabet="abc_-/\\.: ", max_size=12),
)
def test_a_one_line_grammar_is_text_whatever_its_body_and_comment_hold(prefix, name, body, comment, words):
    """A one-line grammar is its start rule's definition: text, though its body or comment hold separators and dots."""
    line = f"{prefix}{name}:{body}{comment + words if comment else ''}"
    assert SymbolGrammar(line).symbols == ("a",)


@pytest.mark.parametrize("text", ["calc", "%import common.DIGIT", "%import .defs.start"])
def test_a_one_line_str_with_no_folder_extension_or_definition_or_a_statement_is_text(text):
    """A bare name and one of Lark's statements are read as text: Lark names why it does not load."""
    with pytest.raises(ValueError, match="the grammar (does not load|has no rule 'start'|imports)"):
        SymbolGrammar(text)


def test_parse_errors_name_the_position():
    grammar = SymbolGrammar(ADDITION)
    with pytest.raises(ParseError, match="position 2") as error:
        grammar.parse("1++2")
    assert error.value.position == 2 and error.value.char == "+"
    with pytest.raises(ParseError, match="ends too early at position 3"):
        grammar.parse("12+")
    with pytest.raises(ParseError, match="'a' at position 1"):
        grammar.parse("1a+2")
    with pytest.raises(
        ParseError, match=r"^the sentence is empty \(a sentence has at least one symbol\); expected DIGIT \('0', '1',"
    ) as error:
        grammar.parse("")  # (it "ends too early at position 0")
    assert error.value.position == 0 and error.value.char is None
    assert grammar.accepts("12+3") and not grammar.accepts("+3")


def test_the_empty_sentence_is_none_where_the_start_rule_can_be_empty():
    grammar = SymbolGrammar('start: item*\nitem: "(" DIGIT ")" | DIGIT\n%import common.DIGIT')
    with pytest.raises(UnexpectedEndError, match=r"^the sentence is empty .*expected DIGIT .* or '\('") as error:
        grammar.parse("")  # (Lark parses it: as sentences(0) and position_symbols(0), the grammar has no such sentence)
    assert error.value.position == 0 and set(error.value.expected) == {"DIGIT", "LPAR"}
    assert not grammar.accepts("") and not grammar.accepts_terminals(())
    assert grammar.accepts("(1)2") and grammar.sentences(1, 100) == list("0123456789")


HINT_GRAMMAR = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123+*()", max_size=8))
def test_a_parse_error_expects_exactly_the_terminals_that_can_follow_what_came_before(sentence):
    """Lark's LALR error names the terminals of its state after the lookahead's default reductions: after ``1+2``,
    ``)`` was met with ``$END, OP1`` (``*`` left out), and after ``1``, ``1`` with ``RPAR`` outside any bracket."""
    assert_expects_what_can_follow(HINT_GRAMMAR, sentence)


AMBIGUOUS = SymbolGrammar('start: e\ne: e "+" e | e "*" e | N | "(" e ")"\nN: "1" | "2"\n')  # not LALR(1): Earley


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="12+*()", max_size=7))
@example("11")
def test_an_earley_parse_error_expects_the_end_where_what_came_before_is_a_sentence(sentence):
    """Earley's error names the terminals that continue the sentence, never its end: ``11`` expected ``PLUS, STAR``."""
    assert AMBIGUOUS.parser.options.parser == "earley"
    assert_expects_what_can_follow(AMBIGUOUS, sentence)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([HINT_GRAMMAR, AMBIGUOUS]), st.text(alphabet="12+*()", max_size=6), st.text(alphabet="12+*()x"))
@example(AMBIGUOUS, "(1+", "x")
def test_a_symbol_outside_the_vocabulary_expects_what_can_follow_what_came_before(grammar, before, after):
    """The error of a symbol outside the vocabulary expected nothing (``()``, its message naming no alternative), in
    the recursive grammars of either parser: it expects what the error of any other unexpected symbol there would."""
    try:
        grammar.parse(before)
    except ParseError as error:
        before = before[: error.position]  # (a sentence whose first error is the symbol outside the vocabulary)
    sentence = before + "x" + after
    with pytest.raises(
        ParseError, match=rf"'x' at position {len(before)} is not in the grammar's vocabulary; expected "
    ) as error:
        grammar.parse(sentence)
    assert error.value.char == "x" and error.value.expected
    assert_expects_what_can_follow(grammar, sentence)


def assert_expects_what_can_follow(grammar: SymbolGrammar, sentence: str) -> None:
    """A parse error of ``sentence`` expects exactly the terminals that can follow what came before it, and the end of
    input where that is a sentence."""
    try:
        grammar.parse(sentence)
        return
    except ParseError as error:
        position, expected = error.position, set(error.expected)
    prefix = sentence[:position]
    continuing = set()
    for terminal in set(grammar.terminal_of.values()):
        try:
            grammar.parse(prefix + grammar.symbols_of(terminal)[0])
        except ParseError as error:
            if error.position <= position:
                continue  # that terminal cannot come next
        continuing.add(terminal)
    assert expected == continuing | ({"$END"} if grammar.accepts(prefix) else set())


def test_the_terminals_a_parse_error_expects_where_the_lalr_error_named_others():
    expected = r"expected OP1 \('\+', '-'\), OP2 \('\*', '/'\) or the end of the sentence$"
    for sentence, position in (("1+2)", 3), ("11", 1)):
        with pytest.raises(
            ParseError, match=rf"symbol '{re.escape(sentence[position])}' at position {position}; {expected}"
        ) as error:
            HINT_GRAMMAR.parse(sentence)
        assert error.value.expected == ("$END", "OP1", "OP2")


def test_a_parse_errors_message_shows_what_it_expects_by_the_symbols_of_ones_own_grammar():
    """Lark's names of anonymous terminals said little of the grammar one wrote: ``'a^'`` expected ``LPAR, __ANON_0``."""
    grammar = SymbolGrammar('start: /[ab]/ "^" (/[ab]/ | "(" start ")") | VAR "*" VAR\nVAR: /[c-z]/\n')
    for sentence, message in (
        ("a^", r"ends too early at position 2; expected '\(' or one of 'a', 'b'$"),
        ("ab", r"symbol 'b' at position 1; expected '\^'$"),
        ("c", r"expected '\*'$"),
        ("c**", r"symbol '\*' at position 2; expected VAR \('c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', \.\.\.\)$"),
        ("a^a)", r"symbol '\)' at position 3; expected the end of the sentence$"),
    ):
        with pytest.raises(ParseError, match=message):
            grammar.parse(sentence)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789+-a", max_size=8))
def test_accepts_agrees_with_parsing_though_remembered_per_terminal_sequence(sentence):
    grammar = SYMBOL_ADDITION
    try:
        grammar.parse(sentence)
        parsed = True
    except ParseError:
        parsed = False
    assert grammar.accepts(sentence) == parsed


def test_tokens_carry_their_symbol_position():
    tree = SymbolGrammar(ADDITION).parse("12+345")
    assert [(str(t), t.start_pos) for t in tree.scan_values(lambda _: True)] == [("1", 0), ("2", 1), ("3", 3), ("4", 4), ("5", 5)]


@pytest.mark.parametrize("text", [ODD, 'start: x x\nx: "(" x ")" | "1"\n', ADDITION])
def test_position_symbols_are_those_of_the_sentences_of_that_length(text):
    grammar = SymbolGrammar(text)
    for length in itertools.takewhile(lambda n: len(grammar.symbols) ** n <= 3_000, itertools.count(1)):
        seen: list[set[str]] = [set() for _ in range(length)]
        for symbols in itertools.product(grammar.symbols, repeat=length):
            if grammar.accepts("".join(symbols)):
                for position, symbol in enumerate(symbols):
                    seen[position].add(symbol)
        assert [set(symbols) for symbols in grammar.position_symbols(length)] == seen
    with pytest.raises(ValueError, match="at least one symbol"):
        grammar.position_symbols(0)


def test_enumeration_edits_across_terminals_where_the_grammar_allows_it():
    """An operator read as ``*`` whose value needs ``+`` (another terminal, another precedence level): the
    enumeration's alternatives at that position are the other operators, however likely a digit looks there."""
    grammar = SymbolGrammar(
        "?start: sum\n?sum: product | sum ADD product -> binary\n"
        '?product: DIGIT | product MUL DIGIT -> binary\nADD: "+"\nMUL: "*"\nDIGIT: "0".."9"\n'
    )
    operators = {"+": lambda a, b: a + b, "*": lambda a, b: a * b}
    semantics = TreeSemantics({"binary": lambda c: operators[c[1]](c[0], c[2]), "DIGIT": int})
    log_probs = np.log(np.full((3, len(grammar.symbols)), 0.001))
    log_probs[[0, 2], [grammar.symbols.index("8"), grammar.symbols.index("5")]] = np.log(0.9)
    log_probs[1, [grammar.symbols.index(d) for d in "0123456789"]] = np.log(0.05)  # digits beat "+" there
    log_probs[1, grammar.symbols.index("*")] = np.log(0.4)
    found = GrammarAbducer(Executor(grammar, semantics), AbductionBudget(max_changes=1)).abduce("8*5", log_probs, 13)
    assert found is not None and found.sentence == "8+5"


def brute_force_best(grammar: SymbolGrammar, log_probs: torch.Tensor, length: int) -> float:
    best = -np.inf
    for symbols in itertools.product(range(len(grammar.symbols)), repeat=length):
        sentence = "".join(grammar.symbols[i] for i in symbols)
        if grammar.accepts(sentence):
            best = max(best, float(log_probs[range(length), list(symbols)].sum()))
    return best


@pytest.mark.parametrize("text", [ODD, 'start: x x\nx: "(" x ")" | "1"\n'])
def test_decoding_is_exactly_optimal_against_brute_force(text):
    grammar = SymbolGrammar(text)
    decoder = GrammarDecoder(grammar)
    generator = torch.Generator().manual_seed(3)
    for length in range(2, 7):
        log_probs = torch.randn(4, length, len(grammar.symbols), generator=generator).log_softmax(-1)
        best = [brute_force_best(grammar, row, length) for row in log_probs]
        if not np.isfinite(best).all():
            with pytest.raises(ValueError, match="no sentence of the grammar fits"):
                decoder.decode(log_probs, torch.full((4,), length))
            continue
        decoded = decoder.decode(log_probs, torch.full((4,), length))
        assert decoded.log_prob.tolist() == pytest.approx(best, abs=1e-5)
        for sentence, row, score in zip(decoded.sentences(grammar.symbols), log_probs, decoded.log_prob):
            assert grammar.accepts(sentence)
            assert float(row[range(length), [grammar.symbols.index(c) for c in sentence]].sum()) == pytest.approx(
                float(score), abs=1e-5
            )


RULES = ("start", "r0", "r1")


@st.composite
def random_grammars(draw: st.DrawFn) -> str:
    """Lark grammars over the terminals A, B, C (one symbol each): up to three rules of up to three alternatives, each
    up to three items (a terminal, a rule or a parenthesised alternation) with ``?``, ``*``, ``+`` or in ``[ ]``; empty
    alternatives, unit cycles, left recursion and rules that derive only one-symbol sentences all occur."""
    rules = RULES[: draw(st.integers(1, len(RULES)))]

    def alternation(nested: bool) -> str:
        alternatives = []
        for _ in range(draw(st.integers(1, 3))):
            items = []
            for _ in range(draw(st.integers(0, 3))):
                kind = draw(st.sampled_from(["terminal", "rule", "group"] if nested else ["terminal", "rule"]))
                item = {"terminal": lambda: draw(st.sampled_from("ABC")), "rule": lambda: draw(st.sampled_from(rules)),
                        "group": lambda: f"({alternation(False)})"}[kind]()  # fmt: skip
                repeat = draw(st.sampled_from(["", "", "?", "*", "+", "[]"]))
                items.append(f"[{item}]" if repeat == "[]" else item + repeat)
            alternatives.append(" ".join(items))
        return " | ".join(alternatives) if any(alternatives) else "A"

    bodies = [alternation(True) for _ in rules]
    if not any(terminal in body for body in bodies for terminal in "ABC"):  # a grammar of no symbol is refused
        bodies[0] += " | A"
    return "".join(f"{rule}: {body}\n" for rule, body in zip(rules, bodies)) + 'A: "a"\nB: "b"\nC: "c"\n'


def loaded(text: str) -> SymbolGrammar:
    """``text`` as a SymbolGrammar; a grammar Lark refuses for optionals that expand alike (``[A] [A]``), or one whose
    start rule reaches no terminal (``start: start``) or derives no sentence (``start: start A``), is skipped."""
    try:
        return SymbolGrammar(text)
    except ValueError as error:
        assert any(
            refusal in str(error) for refusal in ("colliding expansion of optionals", "use no terminal", "derives no sentence")
        )
        reject()


def grammatical_sentences(grammar: SymbolGrammar, length: int) -> list[str]:
    """The grammar's sentences of ``length`` symbols, in ``itertools.product``'s order of its symbols: derived from the
    BNF rules Lark compiles the grammar into (each rule's sentences of up to ``length`` symbols, grown to a fixed point),
    where parsing every candidate took Earley seconds on some grammars."""
    rules = grammar.parser.rules
    derived: dict[NonTerminal, set[str]] = {rule.origin: set() for rule in rules}
    grown = True
    while grown:
        grown = False
        for rule in rules:
            found = {""}
            for item in rule.expansion:
                ends = derived.get(item, set()) if isinstance(item, NonTerminal) else grammar.symbols_of(item.name)
                found = {start + end for start in found for end in ends if len(start) + len(end) <= length}
            if not found <= derived[rule.origin]:
                derived[rule.origin] |= found
                grown = True
    sentences = derived[NonTerminal(grammar.start)]
    return [s for s in map("".join, itertools.product(grammar.symbols, repeat=length)) if s in sentences]


@settings(max_examples=25, deadline=None)
@given(text=random_grammars(), seed=st.integers(0, 2**31 - 1))
@example(text='start: start\nr0: A\nA: "a"\nB: "b"\nC: "c"\n', seed=0)  # (a grammar of no sentence: skipped)
def test_decoding_any_grammar_is_exactly_optimal_or_names_the_length_no_sentence_fits(text, seed):
    grammar = loaded(text)
    decoder = GrammarDecoder(grammar)
    generator = torch.Generator().manual_seed(seed)
    for length in range(1, 5):
        log_probs = torch.randn(2, length, len(grammar.symbols), generator=generator).log_softmax(-1)
        sentences = grammatical_sentences(grammar, length)
        if not sentences:
            with pytest.raises(ValueError, match="no sentence of the grammar fits"):
                decoder.decode(log_probs, torch.full((2,), length))
            continue
        decoded = decoder.decode(log_probs, torch.full((2,), length))
        for row, sentence, score in zip(log_probs, decoded.sentences(grammar.symbols), decoded.log_prob.tolist()):
            scores = {s: float(row[range(length), [grammar.symbols.index(c) for c in s]].sum()) for s in sentences}
            assert sentence in scores and scores[sentence] == pytest.approx(score, abs=1e-5)
            assert score == pytest.approx(max(scores.values()), abs=1e-5)


BITS = GrammarDecoder(SymbolGrammar('start: BIT+ PLUS BIT+\nBIT: "0" | "1"\nPLUS: "+"\n'))


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_float64_log_probabilities_are_decoded_in_float64(seed):
    """Float64 log-probabilities were decoded rounded to float32: among sentences that float32 cannot tell apart the
    decoder chose one that was not the most probable under the scores given, and reported a float32 log-probability."""
    grammar = BITS.grammar
    generator = torch.Generator().manual_seed(seed)
    for length in (3, 5):
        sentences = grammatical_sentences(grammar, length)
        noise = torch.randn(4, length, len(grammar.symbols), generator=generator, dtype=torch.float64)
        log_probs = (1e-9 * noise).log_softmax(-1)  # differences far below float32's resolution
        symbols = torch.tensor([[grammar.symbols.index(c) for c in sentence] for sentence in sentences])  # [n, L]
        best = log_probs[:, torch.arange(length), symbols].sum(-1).amax(1)  # [4]
        for decoded in (BITS.decode(log_probs, torch.full((4,), length)), BITS.viterbi(log_probs, torch.full((4,), length))):
            assert decoded.log_prob.dtype == torch.float64
            reached = log_probs.gather(-1, decoded.tokens[..., None]).squeeze(-1).sum(-1)
            torch.testing.assert_close(reached, best, rtol=0, atol=1e-13)
            torch.testing.assert_close(decoded.log_prob, best, rtol=0, atol=1e-13)


@settings(max_examples=20, deadline=None)
@given(text=random_grammars(), seed=st.integers(0, 2**31 - 1))
def test_the_executor_reusing_parses_of_one_shape_gives_what_evaluating_each_parse_gives(text, seed):
    """``A`` matches two symbols, so sentences share shapes; a small memory forgets parses. A value writes out the
    whole tree (rules bracket their children in order, symbols as read), so any difference in shape, order or symbol
    shows."""
    grammar = loaded(text.replace('A: "a"', 'A: "a" | "d"'))
    semantics = TreeSemantics({rule: (lambda children, rule=rule: f"{rule}[{','.join(children)}]") for rule in RULES})
    executor = Executor(grammar, semantics, memory=3, shapes=2)
    sentences = [s for length in range(1, 5) for s in map("".join, itertools.product(grammar.symbols, repeat=length))]
    for sentence in np.random.default_rng(seed).permutation(sentences)[:60].tolist():
        try:
            expected = semantics.evaluate(grammar.parse(sentence))
        except ParseError:
            expected = None
        assert executor.value(sentence) == expected
        tree = executor.tree(sentence)  # a parse of its shape, with its own symbols
        assert (tree is None) == (expected is None) and (tree is None or semantics.evaluate(tree) == expected)


@settings(max_examples=25, deadline=None)
@given(text=random_grammars(), seed=st.integers(0, 2**31 - 1), inverses=st.booleans(), max_changes=st.integers(1, 2))
def test_abduction_over_any_grammar_finds_the_most_probable_sentence_with_the_result(text, seed, inverses, max_changes):
    """Semantics: the number of ``a`` symbols; with ``inverses``, each rule's sum solved for one child at a time."""

    def one_child_solved(wanted: int, values: tuple[int, ...]) -> list[tuple[int, ...]]:
        return [
            (*values[:i], wanted - sum(values) + v, *values[i + 1 :]) for i, v in enumerate(values) if wanted >= sum(values) - v
        ]

    grammar = loaded(text)
    semantics = TreeSemantics({**{rule: sum for rule in RULES}, "A": lambda _: 1, "B": lambda _: 0, "C": lambda _: 0},
                              dict.fromkeys(RULES, one_child_solved) if inverses else None)  # fmt: skip
    executor = Executor(grammar, semantics)
    budget = AbductionBudget(max_changes=max_changes, max_candidates=10_000, max_patterns=10_000, alternatives=3)
    abducer = GrammarAbducer(executor, budget)
    rng = np.random.default_rng(seed)
    for length in range(1, 5):
        sentences = grammatical_sentences(grammar, length)
        if not sentences:
            continue
        read = sentences[rng.integers(len(sentences))]
        log_probs = np.log(rng.dirichlet(np.ones(len(grammar.symbols)), size=length))
        kept = abducer.abduce(read, log_probs, read.count("a"))  # a sentence that gives the result stays as read
        assert kept is not None and (kept.sentence, kept.changes) == (read, 0)
        for target in set(range(length + 1)) - {read.count("a")}:
            reachable = [s for s in sentences if s.count("a") == target and sum(map(str.__ne__, s, read)) <= max_changes]
            found = abducer.abduce(read, log_probs, target)
            if not reachable:
                assert found is None
                continue
            assert found is not None and found.sentence in reachable
            assert found.log_prob == pytest.approx(max(abducer.score(s, log_probs) for s in reachable))


@contextlib.contextmanager
def recursion_limit_above_here(frames: int) -> Iterator[None]:
    """Python's recursion limit ``frames`` frames above the caller's stack, restored afterwards."""
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _sum_of_long_numbers(digits: int) -> tuple[Executor, str, np.ndarray]:
    """A sum of two left-recursive numbers of ``digits`` digits (each digit one level deeper), its executor, and
    log-probabilities that read it with 0.9 per symbol."""
    grammar = SymbolGrammar('start: number "+" number\nnumber: number DIGIT | DIGIT\nDIGIT: "0".."9"\n')
    semantics = TreeSemantics(
        {"number": lambda c: int(c[0]) if len(c) == 1 else 10 * c[0] + int(c[1]), "start": lambda c: c[0] + c[1]},
        {"start": lambda w, c: [(w - c[1], c[1]), (c[0], w - c[0])],
         "number": lambda w, c: [(w // 10, str(w % 10))] if w >= 10 else []},
    )  # fmt: skip
    sentence = "3" * digits + "+" + "4" * digits
    log_probs = np.full((len(sentence), len(grammar.symbols)), np.log(0.01))
    log_probs[range(len(sentence)), [grammar.symbols.index(c) for c in sentence]] = np.log(0.9)
    return Executor(grammar, semantics), sentence, log_probs


def test_trees_deeper_than_pythons_recursion_are_executed_and_abduced():
    """Left-recursive numbers of 400 digits, each digit one level deeper, under a recursion limit 300 frames above the
    test's (these walks recursed, and failed at ~330 digits under the default limit of 1,000 frames; 1,200 digits under
    that limit took half a minute, the searches' time growing faster than the depth)."""
    digits = 400
    executor, sentence, log_probs = _sum_of_long_numbers(digits)
    with recursion_limit_above_here(300):
        with pytest.raises(RecursionError):  # deeper than the limit: a walk that recurses (here Lark's own) fails
            list(executor.tree(sentence).scan_values(lambda _: True))
        assert executor.value(sentence) == 7 * (10**digits - 1) // 9
        changed = "5" + sentence[1:]
        assert executor.tree(changed) is not None and executor.value(changed) == executor.value(sentence) + 2 * 10 ** (digits - 1)
        target = executor.value(sentence) + 1
        for budget in (AbductionBudget(readings=1), AbductionBudget(chain_sweeps=2)):  # the search and the chain
            abducer = GrammarAbducer(executor, budget)
            found = abducer.abduce(sentence, log_probs, target)
            assert found is not None and found.changes == 1 and executor.value(found.sentence) == target
            assert all(executor.value(c.sentence) == target for c in abducer.explanations(sentence, log_probs, target))


@pytest.mark.parametrize("sample_readings", [False, True])
def test_the_search_keeps_what_it_found_above_where_a_tree_grows_deeper_than_pythons_recursion(sample_readings):
    """A RecursionError anywhere in the top-down search dropped all its findings: with other readings the enumeration
    alone then missed a change of a last digit of two 100-digit numbers (the top of their left-recursive trees)."""
    executor, sentence, log_probs = _sum_of_long_numbers(100)
    abducer = GrammarAbducer(executor, AbductionBudget(readings=4, sample_readings=sample_readings))
    target = executor.value(sentence) + 1  # (a last digit of either number one more)
    with recursion_limit_above_here(300):
        found = abducer.abduce(sentence, log_probs, target)
    assert found is not None and found.changes == 1 and executor.value(found.sentence) == target


def test_drawn_readings_of_a_tree_deeper_than_pythons_recursion_fall_back_as_the_search_does():
    """Near the recursion limit numpy's unique(axis=0), which counted the drawn readings, turned the RecursionError into
    "TypeError: Cannot compare structured arrays unless they have a common dtype", which nothing caught."""
    grammar = SymbolGrammar('start: number\nnumber: number BIT -> more | BIT\nBIT: "0" | "1"\n')
    semantics = TreeSemantics(
        {"more": lambda c: 2 * c[0] + c[1], "BIT": int},
        {"more": lambda w, c: [((w - b) // 2, b) for b in (0, 1) if w >= b and (w - b) % 2 == 0]},
    )
    bits = 80
    log_probs = np.log(np.tile([0.1, 0.9], (bits, 1)))  # every bit read as 1 at 0.9
    executor = Executor(grammar, semantics)
    for frames in range(300, 312):  # the limit met at every point of a level's calls, inside numpy's unique among them
        with recursion_limit_above_here(frames):
            for sample_readings in (False, True):
                abducer = GrammarAbducer(executor, AbductionBudget(readings=4, sample_readings=sample_readings))
                found = abducer.abduce("0" + "1" * (bits - 1), log_probs, 2**bits - 1)
                assert found is not None and found.sentence == "1" * bits


def test_an_optional_item_in_brackets_that_is_absent_is_no_child():
    grammar = SymbolGrammar('start: DIGIT ["!" SIGN]\nDIGIT: "0".."9"\nSIGN: "-"\n')  # (absent: a None child crashed)
    executor = Executor(grammar, TreeSemantics({"start": lambda c: int(c[0]) * (-1 if len(c) == 2 else 1)}))
    assert [executor.value(s) for s in ("7", "7!-", "7!")] == [7, -7, None]
    log_probs = np.log(np.full((3, len(grammar.symbols)), 1 / len(grammar.symbols)))
    found = GrammarAbducer(executor).abduce("7!-", log_probs, 7)  # the sentence's length is kept: no "7" of 3 symbols
    assert found is None


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), lengths=st.lists(st.integers(0, 6).map(lambda k: 2 * k + 1), min_size=1, max_size=4))
def test_cky_on_the_hint_grammar_agrees_with_hints_bracket_automaton(seed, lengths):
    grammar = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)
    generator = torch.Generator().manual_seed(seed)
    log_probs = torch.randn(len(lengths), max(lengths), len(HINT_SYMBOLS), generator=generator).mul(3).log_softmax(-1)
    roles = TokenRoles.from_vocabulary(HINT_SYMBOLS, "0123456789", "+-*/")
    fast = constrained_decode(log_probs, torch.tensor(lengths), roles, minimal_brackets=False)
    generic = GrammarDecoder(grammar).decode(log_probs, torch.tensor(lengths))
    assert torch.allclose(generic.log_prob, fast.log_prob, atol=1e-4)
    assert generic.sentences(HINT_SYMBOLS) == fast.sentences(HINT_SYMBOLS)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), lengths=st.lists(st.integers(0, 5).map(lambda k: 2 * k + 1), min_size=2, max_size=6))
def test_the_linear_shortcut_decodes_what_the_chart_does_and_spares_it_the_settled_rows(seed, lengths):
    grammar = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)
    decoder = GrammarDecoder(grammar)
    generator = torch.Generator().manual_seed(seed)
    log_probs = torch.randn(len(lengths), max(lengths), len(HINT_SYMBOLS), generator=generator).mul(3)
    for row, length in enumerate(lengths[::2]):  # every other example leans towards a grammatical sentence
        sentence = "".join("7" if i % 2 == 0 else "+" for i in range(length))
        log_probs[2 * row, range(length), [HINT_SYMBOLS.index(c) for c in sentence]] += 20
    log_probs = log_probs.log_softmax(-1)
    exact = decoder.viterbi(log_probs, torch.tensor(lengths))
    charted_rows = []
    charted = decoder._charted
    decoder._charted = lambda scores, sizes, rows: charted_rows.append(len(sizes)) or charted(scores, sizes, rows)
    fast = decoder.decode(log_probs, torch.tensor(lengths))
    assert torch.allclose(fast.log_prob, exact.log_prob, atol=1e-4)
    assert all(grammar.accepts(sentence) for sentence in fast.sentences(HINT_SYMBOLS))
    assert sum(charted_rows) <= len(lengths) - len(lengths[::2])  # the leaning examples never reach the chart


def test_an_example_no_sentence_fits_is_named_by_its_place_in_the_batch_given():
    """The examples the linear shortcut leaves go to the chart alone: one that no sentence fits was named by its place
    among those (example 0), not in the batch."""
    grammar = SymbolGrammar(ADDITION)
    decoder = GrammarDecoder(grammar)
    log_probs = torch.randn(4, 3, len(grammar.symbols), generator=torch.Generator().manual_seed(0)).log_softmax(-1)
    log_probs[2] = -torch.inf
    log_probs[2, :, grammar.symbols.index("0")] = 0.0  # only "000", which the grammar refuses
    for decode in (decoder.decode, decoder.viterbi):
        with pytest.raises(ValueError, match=r"no sentence of the grammar fits example 2 \(length 3 and its fixed symbols\)"):
            decode(log_probs, torch.full((4,), 3))


def test_an_example_no_sentence_fits_says_why_where_the_reason_is_plain():
    """Both said only "length 3 and its fixed symbols": a length the grammar has no sentence of, and a symbol the
    reader lacks marked to be read (mnist-add's "+" left to the digit reader)."""
    grammar = SymbolGrammar(ADDITION)
    decoder = GrammarDecoder(grammar)
    log_probs = torch.randn(2, 3, len(grammar.symbols), generator=torch.Generator().manual_seed(0)).log_softmax(-1)
    log_probs[..., grammar.symbols.index("+")] = -torch.inf
    for decode in (decoder.decode, decoder.viterbi):
        digits = " ".join(str(digit) for digit in range(10))
        expected = rf"\): at position 1 the grammar allows \(\+\) and the example makes only \({digits}\) possible there"
        with pytest.raises(ValueError, match=expected):
            decode(log_probs, torch.full((2,), 3))
        given_first = log_probs.clone()  # "+" given where a digit must stand: named as the one possible symbol there
        given_first[:, 0] = -torch.inf
        given_first[:, 0, grammar.symbols.index("+")] = 0.0
        with pytest.raises(ValueError, match=rf"position 0 the grammar allows \({digits}\) and the example makes only \(\+\)"):
            decode(given_first, torch.full((2,), 3))
        with pytest.raises(ValueError, match=r"length 2 and its fixed symbols\): the grammar has no sentence of 2 symbols"):
            decode(log_probs[:, :2], torch.full((2,), 2))


def test_padding_positions_do_not_change_shorter_examples():
    grammar = SymbolGrammar(ADDITION)
    decoder = GrammarDecoder(grammar)
    log_probs = torch.randn(2, 7, len(grammar.symbols), generator=torch.Generator().manual_seed(0)).log_softmax(-1)
    both = decoder.decode(log_probs, torch.tensor([7, 3]))
    alone = decoder.decode(log_probs[1:, :3], torch.tensor([3]))
    assert both.sentences(grammar.symbols)[1] == alone.sentences(grammar.symbols)[0]
    assert both.tokens[1, 3:].tolist() == [-1] * 4


def test_log_probabilities_and_labels_that_do_not_fit_one_another_are_named():
    grammar = SymbolGrammar(ADDITION)
    decoder, log_probs = GrammarDecoder(grammar), torch.zeros(2, 3, len(grammar.symbols)).log_softmax(-1)
    with pytest.raises(ValueError, match=r"lengths must give one length per example \(2\), got shape \[1\]"):
        decoder.decode(log_probs, torch.tensor([3]))
    with pytest.raises(ValueError, match=r"log_probs must be \[B, T, 11\] \(one score per vocabulary symbol\), got \[1, 3, 5\]"):
        decoder.decode(torch.zeros(1, 3, 5), torch.tensor([3]))
    with pytest.raises(ValueError, match="lengths must be integers, got torch.float32"):
        decoder.decode(log_probs, torch.tensor([3.0, 3.0]))
    poisoned = log_probs.clone()
    poisoned[1, 2, 0] = torch.nan
    with pytest.raises(ValueError, match=r"log_probs hold NaN \(example 1, position 2\)"):
        decoder.decode(poisoned, torch.tensor([3, 3]))
    padded = torch.zeros(2, 4, len(grammar.symbols)).log_softmax(-1)
    padded[0, 3] = torch.nan  # past example 0's length: padding, ignored
    assert decoder.decode(padded, torch.tensor([3, 4])).tokens.shape == (2, 4)
    vocabulary = grammar.symbols
    with pytest.raises(ValueError, match="2 examples of log-probabilities and 1 labels"):
        pseudo_label_loss(log_probs, ["1+2"], vocabulary)
    with pytest.raises(ValueError, match=r"label 1 \('1\+a'\) is longer than the 3 windows or has symbols outside"):
        pseudo_label_loss(log_probs, ["1+2", "1+a"], vocabulary)
    with pytest.raises(ValueError, match="label 0 \\('1\\+23'\\) is longer than the 3 windows"):
        pseudo_label_loss(log_probs, ["1+23", None], vocabulary)


class Arithmetic(Transformer):
    def start(self, children):
        return children[0] // children[1]

    def NUMBER(self, token):
        return int(token)


class CountedArithmetic(Arithmetic):
    """:class:`Arithmetic` counting the numbers it has read: a Transformer with a state of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers_read = 0

    def NUMBER(self, token):
        self.numbers_read += 1
        return super().NUMBER(token)


def test_used_semantics_pickle_and_copy_and_a_copy_calls_its_own_transformer():
    # (the callables looked up held closures over the Transformer: pickling raised "Can't pickle local object", and a
    # deep copy's terminal callbacks ran the original Transformer)
    tree = SymbolGrammar('start: NUMBER "/" NUMBER\nNUMBER: "0".."9"\n').parse("8/2")
    semantics = TreeSemantics(CountedArithmetic())
    assert semantics.evaluate(tree) == 4 and semantics.rules.numbers_read == 2
    for twin in (pickle.loads(pickle.dumps(semantics)), copy.deepcopy(semantics)):
        assert twin.evaluate(tree) == 4 and twin.rules.numbers_read == 4
    assert semantics.rules.numbers_read == 2


def test_a_used_executor_and_abducer_pickle_and_copy_and_a_copy_runs_its_own_transformer():
    """Once it had run a sentence, an executor held its compiled program, a closure: pickling raised "Can't pickle local
    object 'TreeSemantics.compile.<locals>.run'", and a deep copy ran sentences of that shape through the original
    Transformer. An abducer (and so a pipeline) did not pickle even unused: its default ``equal`` was a lambda."""
    executor = Executor(SymbolGrammar('start: NUMBER "/" NUMBER\nNUMBER: "0".."9"\n'), TreeSemantics(CountedArithmetic()))
    abducer = GrammarAbducer(executor)
    assert executor.value("8/2") == 4 and executor.semantics.rules.numbers_read == 2
    uniform = np.full((3, len(executor.grammar.symbols)), -np.log(len(executor.grammar.symbols)))
    for twin in (pickle.loads(pickle.dumps(abducer)), copy.deepcopy(abducer)):
        assert twin.executor.value("9/3") == 3 and twin.executor.semantics.rules.numbers_read == 4
        found = twin.abduce("8/2", uniform, 1)
        assert found is not None and twin.executor.value(found.sentence) == 1
    assert executor.semantics.rules.numbers_read == 2


def test_semantics_from_a_transformer_or_a_mapping_and_invalid_values():
    grammar = SymbolGrammar('start: NUMBER "/" NUMBER\nNUMBER: "0".."9"\n')
    run = Executor(grammar, TreeSemantics(Arithmetic()))
    assert run.values(["8/2", "7/0", "8/"]) == [4, None, None]  # a division by zero and a parse error are invalid
    mapping = Executor(grammar, TreeSemantics({"start": lambda c: c[0] // c[1], "NUMBER": int}))
    assert mapping.value("9/3") == 3
    with pytest.raises(TypeError, match="no callable for rule 'start'"):
        Executor(grammar, TreeSemantics({})).value("9/3")


def test_a_transformers_inline_arguments_and_own_defaults_are_used_as_lark_uses_them():
    grammar = SymbolGrammar('?start: sum\n?sum: DIGIT | sum "+" DIGIT -> add | sum "-" DIGIT -> sub\n%import common.DIGIT\n')

    @v_args(inline=True)
    class Inline(Transformer):
        def add(self, a, b):
            return a + b

        def sub(self, a, b):
            return a - b

        def DIGIT(self, token):
            return int(token)

    class Defaults(Transformer):  # every rule a sum, every token a number (sub: no method of its own)
        def __default__(self, data, children, meta):
            return sum(children)

        def __default_token__(self, token):
            return int(token)

    assert Executor(grammar, TreeSemantics(Inline())).values(["7", "2+3-4"]) == [7, 1]
    assert Executor(grammar, TreeSemantics(Defaults())).values(["7", "2+3-4"]) == [7, 9]  # (a rule without a method
    # had no callable: "no callable for rule 'sub'", and tokens stayed strings)


@settings(max_examples=25, deadline=None)
@given(sentence=st.text(alphabet="0123456789", min_size=1, max_size=6), visit_tokens=st.booleans())
def test_a_transformer_visits_tokens_only_where_lark_would(sentence, visit_tokens):
    """With ``visit_tokens=False`` Lark calls no terminal callback; here ``DIGIT`` was called all the same."""
    grammar = SymbolGrammar("start: DIGIT+\n%import common.DIGIT\n")

    class Tens(Transformer):
        def DIGIT(self, token):
            return int(token) * 10

        def start(self, children):
            return sum(int(child) for child in children)

    lark_value = Tens(visit_tokens=visit_tokens).transform(grammar.parse(sentence))
    assert Executor(grammar, TreeSemantics(Tens(visit_tokens=visit_tokens))).value(sentence) == lark_value
    assert TreeSemantics(Tens(visit_tokens=visit_tokens)).evaluate(grammar.parse(sentence)) == lark_value


@settings(max_examples=30, deadline=None)
@given(sentence=st.text(alphabet="0123+-", min_size=1, max_size=8), data=st.data())
def test_a_transformers_terminal_callbacks_get_tokens_placed_as_larks_lexer_places_them(sentence, data):
    """The callbacks got ``Token(type, symbol)`` without positions (``start_pos`` None), and the grammar's own tokens
    ended a column early (``end_column`` 1 for a symbol at column 1, where Lark's lexer gives 2)."""
    text = 'start: (DIGIT | SIGN)+\nSIGN: "+" | "-"\n%import common.DIGIT\n'

    class Places(Transformer):
        def __default_token__(self, token):
            return (str(token), token.start_pos, token.end_pos, token.line, token.column, token.end_line, token.end_column)

        def start(self, children):
            return children

    grammar = SymbolGrammar(text)
    expected = Places().transform(Lark(text, parser="lalr").parse(sentence))
    executor = Executor(grammar, TreeSemantics(Places()))
    executor.value(sentence.translate(str.maketrans("0123+-", "3210-+")))  # a parse of its shape, run first
    assert executor.value(sentence) == expected
    assert TreeSemantics(Places()).evaluate(grammar.parse(sentence)) == expected
    position = data.draw(st.integers(0, len(sentence) - 1))
    other = {"+": "-", "-": "+", "0": "1"}.get(sentence[position], "0")
    replaced = sentence[:position] + other + sentence[position + 1 :]
    read_as = Places().transform(Lark(text, parser="lalr").parse(replaced))
    assert TreeSemantics(Places()).evaluate(grammar.parse(sentence), {position: other}) == read_as
    assert TreeSemantics(Places()).leaf_value("SIGN", "+", position)[1:3] == (position, position + 1)


@settings(max_examples=25, deadline=None)
@given(digits=st.lists(st.sampled_from("0123456789"), min_size=1, max_size=6), operators=st.data())
def test_a_transformer_that_takes_each_nodes_meta_gets_it_as_lark_gives_it(digits, operators):
    """``v_args(meta=True)`` and ``__default__`` got a node without positions: ``'Meta' object has no attribute
    'start_pos'`` from deep inside evaluation."""
    grammar = SymbolGrammar('?start: sum\n?sum: DIGIT | sum "+" DIGIT -> add | sum "-" DIGIT -> sub\n%import common.DIGIT\n')
    signs = operators.draw(st.lists(st.sampled_from("+-"), min_size=len(digits) - 1, max_size=len(digits) - 1))
    sentence = digits[0] + "".join(sign + digit for sign, digit in zip(signs, digits[1:]))

    @v_args(meta=True)
    class Spans(Transformer):
        def add(self, meta, children):
            return [*children, f"+{meta.start_pos}:{meta.end_pos}"]

        def __default__(self, data, children, meta):  # sub: no method of its own
            return [*children, f"{data}{meta.start_pos}:{meta.end_pos}"]

    executor = Executor(grammar, TreeSemantics(Spans()))
    executor.value(sentence.translate(str.maketrans("0123456789", "9876543210")))  # a parse of its shape, run first
    assert executor.value(sentence) == Spans().transform(grammar.parse(sentence))


def test_a_transformer_that_discards_a_node_is_named_where_its_parent_would_have_seen_lark_discard():
    """Lark leaves a discarded child out of its parent's children: here ``1,2,3`` gave ``[1, Discard, 2, Discard, 3]``."""
    grammar = SymbolGrammar('start: DIGIT (SEP DIGIT)*\nSEP: ","\n%import common.DIGIT\n')

    class Digits(Transformer):
        def SEP(self, token):
            return Discard

        def DIGIT(self, token):
            return int(token)

        def start(self, children):
            return children

    named = r"callback of 'SEP' returned lark's Discard: .*\(a terminal named _SEP"
    with pytest.raises(TypeError, match=named):
        Executor(grammar, TreeSemantics(Digits())).value("1,2,3")
    with pytest.raises(TypeError, match=named):
        TreeSemantics(Digits()).evaluate(grammar.parse("1,2,3"))
    dropped = SymbolGrammar('start: DIGIT (_SEP DIGIT)*\n_SEP: ","\n%import common.DIGIT\n')
    assert Executor(dropped, TreeSemantics({"start": list, "DIGIT": int})).value("1,2,3") == [1, 2, 3]


def brute_force_abduction(grammar, executor, sentence, log_probs, target, max_changes, fixed=()):
    best = None
    index = {s: i for i, s in enumerate(grammar.symbols)}
    for symbols in itertools.product(grammar.symbols, repeat=len(sentence)):
        candidate = "".join(symbols)
        changed = [i for i, (a, b) in enumerate(zip(candidate, sentence)) if a != b]
        if len(changed) > max_changes or any(i in fixed for i in changed) or executor.value(candidate) != target:
            continue
        score = float(sum(log_probs[i, index[c]] for i, c in enumerate(candidate)))
        best = score if best is None else max(best, score)
    return best


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), target=st.integers(0, 20), inverses=st.booleans(), readings=st.integers(0, 3))
def test_abduction_finds_the_most_probable_correction_within_the_budget(seed, target, inverses, readings):
    grammar = SymbolGrammar('start: number "+" number\nnumber: DIGIT DIGIT?\nDIGIT: "0".."3"\n')
    semantics = addition_semantics()
    executor = Executor(grammar, semantics if inverses else TreeSemantics(semantics.rules))
    abducer = GrammarAbducer(executor, AbductionBudget(max_changes=2, max_candidates=10_000, alternatives=4, readings=readings))
    log_probs = np.log(np.random.default_rng(seed).dirichlet(np.ones(5), size=4))
    sentence = "1+22"
    found = abducer.abduce(sentence, log_probs, target, fixed=[1])
    best = brute_force_abduction(grammar, executor, sentence, log_probs, target, 2, fixed=[1])
    if best is None:
        assert found is None
    else:
        assert found is not None and executor.value(found.sentence) == target and found.sentence[1] == "+"
        assert found.log_prob == pytest.approx(best)
        assert found.changes == sum(a != b for a, b in zip(found.sentence, sentence)) <= 2


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), target=st.integers(0, 20), readings=st.integers(0, 3))
def test_explanations_are_verified_sentences_within_the_budget_led_by_abductions_correction(seed, target, readings):
    grammar = SymbolGrammar('start: number "+" number\nnumber: DIGIT DIGIT?\nDIGIT: "0".."3"\n')
    executor = Executor(grammar, addition_semantics())
    abducer = GrammarAbducer(executor, AbductionBudget(max_changes=2, max_candidates=10_000, alternatives=4, readings=readings))
    log_probs = np.log(np.random.default_rng(seed).dirichlet(np.ones(5), size=4))
    found = abducer.explanations("1+22", log_probs, target, fixed=[1])
    every = {  # brute force: every sentence of the vocabulary within two changes, + kept, that sums to the target
        "".join(s)
        for s in itertools.product(grammar.symbols, repeat=4)
        if s[1] == "+" and sum(a != b for a, b in zip(s, "1+22")) <= 2 and executor.value("".join(s)) == target
    }
    assert {c.sentence for c in found} == every  # the budget here reaches them all
    assert [c.log_prob for c in found] == sorted((c.log_prob for c in found), reverse=True)
    best = abducer.abduce("1+22", log_probs, target, fixed=[1])
    assert (best is None) == (not found) and (best is None or best.sentence == found[0].sentence)


@settings(max_examples=30, deadline=None)
@given(sentences=st.lists(st.text(alphabet="0123456789+x", min_size=1, max_size=6), min_size=1, max_size=12))
def test_sentences_of_one_shape_reuse_its_parse_with_their_own_symbols(sentences):
    grammar = SymbolGrammar(ADDITION)
    executor = Executor(grammar, addition_semantics(), memory=2, shapes=4)  # reuses and forgets parses
    for sentence in sentences:
        try:
            expected = addition_semantics().evaluate(grammar.parse(sentence))
        except ParseError:
            expected = None
        assert executor.value(sentence) == expected
        tree = executor.tree(sentence)
        assert (tree is None) == (expected is None)
        if tree is not None:  # the remembered parse rebuilt with this sentence's symbols, where they stand
            assert tree == grammar.parse(sentence)
            tokens = [(t.type, str(t), t.start_pos) for t in tree.scan_values(lambda _: True)]
            assert tokens == [(t.type, str(t), t.start_pos) for t in grammar.parse(sentence).scan_values(lambda _: True)]


def test_the_marginal_loss_is_the_pseudo_label_loss_for_one_explanation_and_sums_over_several():
    vocabulary = list("0123+")
    log_probs = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0)).log_softmax(-1).requires_grad_()
    read = np.array([[True, False, True], [True, False, True]])
    one = marginal_loss(log_probs, [["1+2"], ["3+0"]], vocabulary, read)
    assert torch.allclose(one, pseudo_label_loss(log_probs, ["1+2", "3+0"], vocabulary, read.tolist()))
    both = marginal_loss(log_probs, [["1+2", "2+1"], []], vocabulary, read)
    index = [vocabulary.index(c) for c in "1221"]
    scores = torch.stack(
        [log_probs[0, 0, index[0]] + log_probs[0, 2, index[1]], log_probs[0, 0, index[2]] + log_probs[0, 2, index[3]]]
    )
    expected = -torch.logsumexp(scores, 0) / 2  # the gradient's: the negative log-marginal
    assert torch.allclose(both, -(scores.detach().softmax(0) * scores).sum() / 2)  # the value: the mean cross-entropy
    (gradient,) = torch.autograd.grad(both, log_probs)
    assert torch.allclose(gradient, torch.autograd.grad(expected, log_probs)[0])
    assert marginal_loss(log_probs, [[], []], vocabulary, read) is None


SUMS = [f"{a}+{b}" for a in "0123" for b in "0123"]


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**16),
    st.lists(st.lists(st.sampled_from(SUMS), max_size=4, unique=True), min_size=2, max_size=2),
    st.lists(st.tuples(st.integers(0, 1), st.sampled_from([0, 2]), st.integers(0, 3)), max_size=6),
    st.booleans(),
)
def test_an_explanation_the_reader_rules_out_adds_nothing_to_the_marginal_loss(seed, explanations, ruled_out, drawn):
    """An explanation with a symbol of log-probability -inf at a trained position made the loss NaN (its weight 0 times
    its -inf), and an example whose explanations were all ruled out made its gradient NaN too."""
    vocabulary = list("0123+")
    log_probs = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(seed)).log_softmax(-1)
    for row, position, digit in ruled_out:  # (the reader's own zeros, e.g. for a symbol it lacks)
        log_probs[row, position, digit] = -torch.inf
    log_probs[:, 1] = F.one_hot(torch.tensor(4), 5).log()  # the given "+": never trained, -inf elsewhere
    log_probs.requires_grad_()
    read = np.array([[True, False, True]] * 2)
    proposals = [[-0.5 * (k + 1) for k in range(len(sentences))] for sentences in explanations] if drawn else None
    loss = marginal_loss(log_probs, explanations, vocabulary, read, proposals)
    kept = [  # per example, the explanations whose read digits the reader can read
        [k for k, sentence in enumerate(sentences) if all(log_probs[row, p, int(sentence[p])] > -torch.inf for p in (0, 2))]
        for row, sentences in enumerate(explanations)
    ]
    possible = [[explanations[row][k] for k in ks] for row, ks in enumerate(kept)]
    weights = None if proposals is None else [[proposals[row][k] for k in ks] for row, ks in enumerate(kept)]
    expected = marginal_loss(log_probs, possible, vocabulary, read, weights)
    if expected is None:
        assert loss is None
        return
    assert torch.isfinite(loss) and torch.allclose(loss, expected)
    (gradient,) = torch.autograd.grad(loss, log_probs)
    assert torch.isfinite(gradient).all() and torch.allclose(gradient, torch.autograd.grad(expected, log_probs)[0])


@pytest.mark.parametrize(("dtype", "kept"), [(torch.float64, torch.float64), (torch.bfloat16, torch.float32)])
def test_a_float64_readers_log_probabilities_and_losses_keep_its_precision(dtype, kept):
    """A float64 reader's log-probabilities were rounded to float32, and the losses on them computed in float32; a
    half-precision reader's are still mixed in float32."""
    grammar = SymbolGrammar('start: BIT+ PLUS BIT+\nBIT: "0" | "1"\nPLUS: "+"\n')

    class Bits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vocabulary = ["0", "1"]
            self.layer = torch.nn.Linear(4, 2).to(dtype)

        def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
            return self.layer(windows.to(dtype).flatten(1) / 255).log_softmax(-1)

    reader = Bits()
    pipeline = GrammarPipeline(grammar, TreeSemantics({"start": lambda parts: len(parts)}), reader)
    images = np.random.default_rng(0).integers(0, 256, size=(4, 2, 2), dtype=np.uint8)
    given = np.array([[READ, grammar.symbols.index("+"), READ, READ]])
    source = ImageSentences(images, np.array([[0, -1, 1, 2]]), given, np.array([4]), [4], ["1+01"])
    batch = source.batch([0])
    log_probs = pipeline.log_probs(batch)  # [1, 4, 3]
    assert log_probs.dtype == kept
    read = given == READ
    exact = reader(batch.windows[0, read[0]]).to(kept)  # [3, 2]
    assert torch.equal(log_probs[0, read[0]][:, [grammar.symbols.index("0"), grammar.symbols.index("1")]], exact)
    expected = -exact[[0, 1, 2], [1, 0, 1]].mean()  # the cross-entropy of "1", "0", "1" at the read positions
    for loss in (
        pseudo_label_loss(log_probs, ["1+01"], grammar.symbols, read),
        marginal_loss(log_probs, [["1+01"]], grammar.symbols, read),
    ):
        assert loss.dtype == kept and torch.allclose(loss, expected, rtol=1e-12 if kept == torch.float64 else 1e-6)


class Digits(torch.nn.Module):
    """A reader of the digits that reads nothing (its readings are given)."""

    vocabulary = tuple("0123456789")

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        raise AssertionError("the reading is given")


@pytest.mark.parametrize("favoured", [0, 2])
def test_abduction_ranks_a_float64_readings_corrections_in_float64(favoured):
    """A float64 reading's log-probabilities were rounded to float32 for abduction: corrections they tell apart were
    tied, and the search kept whichever it met first."""
    pipeline = GrammarPipeline(SYMBOL_ADDITION, addition_semantics(), Digits())
    symbols = SYMBOL_ADDITION.symbols
    log_probs = torch.full((1, 3, len(symbols)), math.log(0.01), dtype=torch.float64)
    log_probs[0, [0, 2], symbols.index("1")] = math.log(0.4)
    log_probs[0, [0, 2], symbols.index("2")] = math.log(0.3)
    log_probs[0, 1, symbols.index("+")] = 0.0
    log_probs[0, favoured, symbols.index("2")] += 1e-9  # far below float32's resolution at log(0.3)
    reading, given = Reading(["1+1"], log_probs, [2]), torch.tensor([[READ, symbols.index("+"), READ]])
    expected = "2+1" if favoured == 0 else "1+2"
    assert pipeline.abduce(reading, [3], given)[0].sentence == expected
    assert pipeline.explain(reading, [3], given)[0][0].sentence == expected


@pytest.mark.parametrize("favoured", [0, 2])
def test_the_timed_abduction_ranks_a_float64_readers_corrections_as_training_does(favoured, monkeypatch):
    """pipeline_timings gave abduction the reading rounded to float32: corrections a float64 reader tells apart were
    tied, and the timed search found another correction than training's."""
    rows = torch.full((2, 10), math.log(0.3 / 8), dtype=torch.float64)
    rows[:, 1], rows[:, 2] = math.log(0.4), math.log(0.3)
    rows[1, 2] += 1e-9  # far below float32's resolution at log(0.3)
    pipeline = GrammarPipeline(SYMBOL_ADDITION, addition_semantics(), TableReader("0123456789", rows))
    picks = np.array([[int(favoured == 0), -1, int(favoured == 2)]])
    given = np.array([[READ, SYMBOL_ADDITION.symbols.index("+"), READ]])
    source = ImageSentences(np.stack([np.full((2, 2), k, np.uint8) for k in range(2)]), picks, given, [3], [3])
    found = []
    search = pipeline.abducer.abduce

    def timed(*args):
        found.append(search(*args))
        return found[-1]

    monkeypatch.setattr(pipeline.abducer, "abduce", timed)
    timings = pipeline_timings(pipeline, source, torch.device("cpu"))
    batch = source.batch([0])
    (trained,) = pipeline.abduce(pipeline.read(batch), [3], batch.given)
    assert timings["wrong_timed"] == 1 and found[0].sentence == trained.sentence == ("2+1" if favoured == 0 else "1+2")


def test_the_marginal_loss_divides_each_explanation_by_its_proposal():
    vocabulary = list("0123+")
    log_probs = torch.randn(1, 3, 5, generator=torch.Generator().manual_seed(1)).log_softmax(-1)
    read = np.array([[True, False, True]])
    log_probs.requires_grad_()
    loss = marginal_loss(log_probs, [["1+2", "2+1"]], vocabulary, read, proposals=[[-0.5, -3.0]])
    scores = torch.stack([log_probs[0, 0, 1] + log_probs[0, 2, 2] + 0.5, log_probs[0, 0, 2] + log_probs[0, 2, 1] + 3.0])
    (gradient,) = torch.autograd.grad(loss, log_probs)
    assert torch.allclose(gradient, torch.autograd.grad(-torch.logsumexp(scores, 0) / 2, log_probs)[0])
    weights = scores.detach().softmax(0)  # each explanation's share of the importance-weighted likelihood
    assert torch.allclose(loss, -(weights * (scores - torch.tensor([0.5, 3.0]))).sum() / 2)
    assert torch.allclose(
        marginal_loss(log_probs, [["1+2"]], vocabulary, read, proposals=[[0.0]]),
        marginal_loss(log_probs, [["1+2"]], vocabulary, read),
    )


@pytest.mark.parametrize("seed, target", [(0, 57), (1, 100), (2, 123), (3, 31), (4, 150)])
def test_drawn_readings_give_an_importance_sampled_estimate_of_the_results_likelihood(seed, target):
    grammar = SymbolGrammar(ADDITION)
    plus = grammar.symbols.index("+")
    probabilities = np.random.default_rng(seed).dirichlet(np.full(10, 0.7), size=5)  # [5, 10] digits only
    log_probs = np.full((5, 11), -np.inf)
    log_probs[:, :10] = np.log(probabilities)
    log_probs[2] = -np.inf
    log_probs[2, plus] = 0.0
    draws = 4000
    budget = AbductionBudget(max_changes=4, max_candidates=1, readings=draws, beam=10 * draws, sample_readings=True)
    abducer = GrammarAbducer(Executor(grammar, addition_semantics()), budget)
    sentence = "12+34"
    found = abducer.explanations(sentence, log_probs, target, fixed=[2])
    assert found and all(Executor(grammar, addition_semantics()).value(c.sentence) == target for c in found)
    assert all(c.log_prob == pytest.approx(abducer.score(c.sentence, log_probs)) for c in found)
    number = lambda value, at: probabilities[at, value // 10] * probabilities[at + 1, value % 10]
    exact = sum(number(a, 0) * number(target - a, 3) for a in range(100) if 0 <= target - a < 100)
    # each of the two numbers kept at ``draws`` draws, the other solved for: the mean weight estimates P(result)
    estimate = sum(np.exp(c.log_prob - c.proposal) for c in found) / (2 * draws)
    assert estimate == pytest.approx(exact, rel=0.15)
    again = abducer.explanations(sentence, log_probs, target, fixed=[2])
    assert [(c.sentence, c.proposal) for c in again] == [(c.sentence, c.proposal) for c in found]  # seeded by its inputs


@pytest.mark.parametrize("seed", range(4))
def test_a_route_to_an_explanation_counts_once_in_its_importance_weight(seed):
    """Where a drawn number and the other as read give the result, both of the inverse's preimages (solve either
    number) were that same assumption, and its draw counted twice; and a number as read, with the other solved where the
    inverse changed a drawn one, counted once per distinct draw: a confident reader's likelihood came out about 1.5x."""
    grammar = SymbolGrammar(ADDITION)
    rng = np.random.default_rng(seed)
    probabilities = rng.dirichlet(np.full(10, 0.7), size=5)  # [5, 10] digits only
    for position, digit in zip([0, 1, 3, 4], [1, 2, 3, 4]):  # "12+34" read with 0.9 a digit; 12 + 38 and 16 + 34 give 50
        probabilities[position] *= 0.1 / (1 - probabilities[position, digit])
        probabilities[position, digit] = 0.9
    log_probs = np.full((5, 11), -np.inf)
    log_probs[:, :10] = np.log(probabilities)
    log_probs[2] = -np.inf
    log_probs[2, grammar.symbols.index("+")] = 0.0
    draws = 40000
    budget = AbductionBudget(max_changes=4, max_candidates=1, readings=draws, beam=10 * draws, sample_readings=True)
    abducer = GrammarAbducer(Executor(grammar, addition_semantics()), budget)
    ways = abducer._top_down(abducer.executor.tree("12+34"), "12+34", log_probs, 50, frozenset([2]))
    assert len(set(ways)) == len(ways)
    found = abducer.explanations("12+34", log_probs, 50, fixed=[2])
    number = lambda value, at: probabilities[at, value // 10] * probabilities[at + 1, value % 10]
    exact = sum(number(a, 0) * number(50 - a, 3) for a in range(51))
    estimate = sum(np.exp(c.log_prob - c.proposal) for c in found) / (2 * draws)
    assert estimate == pytest.approx(exact, rel=0.1)


def test_drawn_readings_that_explain_nothing_fall_back_to_the_enumeration():
    """An inverse whose proposals never give the result: the draws were all refused and the enumeration skipped."""
    correct = addition_semantics()
    misleading = TreeSemantics(correct.rules, {**correct.inverses, "start": lambda s, c: [(s, c[1])]})
    log_probs = np.log(np.full((3, 11), 0.05))
    log_probs[range(3), [SYMBOL_ADDITION.symbols.index(c) for c in "1+2"]] = np.log(0.5)
    log_probs[[0, 2], [SYMBOL_ADDITION.symbols.index(c) for c in "23"]] = np.log(0.2)  # "2+2", "1+3" lead
    budget = AbductionBudget(max_changes=1, max_candidates=50, readings=4, sample_readings=True)
    abducer = GrammarAbducer(Executor(SYMBOL_ADDITION, misleading), budget)
    assert abducer._top_down(abducer.executor.tree("1+2"), "1+2", log_probs, 4, frozenset([1]))  # it proposes "4+2"
    found = abducer.explanations("1+2", log_probs, 4, fixed=[1])
    assert sorted(c.sentence for c in found) == ["1+3", "2+2"]


@pytest.mark.parametrize("target", [True, 1, 1.0])
def test_the_top_down_search_tells_apart_wanted_values_python_counts_as_one_where_equal_does_not(target):
    """Its memory of the ways to each (node, wanted value) took ``True``, ``1`` and ``1.0`` for one: under a type-strict
    ``equal``, a symbol of value ``True`` was asked for and the ways to ``1``, asked for first, came back."""
    values = {"a": 1, "b": True, "d": 1.0, "c": 0}
    grammar = SymbolGrammar('start: V\nV: "a" | "b" | "c" | "d"\n')
    others = [value for value in (True, 1, 1.0) if type(value) is not type(target)]
    semantics = TreeSemantics(
        {"start": lambda children: children[0], "V": values.__getitem__},
        {"start": lambda wanted, children: [(other,) for other in others] + [(wanted,)]},
    )
    right = next(symbol for symbol, value in values.items() if type(value) is type(target) and value == target)
    probabilities = {symbol: 0.1 if symbol == right else 0.3 for symbol in grammar.symbols}  # "c" read; the right one least
    log_probs = np.log([[probabilities[symbol] for symbol in grammar.symbols]])

    def strict(value, wanted):
        return type(value) is type(wanted) and value == wanted

    abducer = GrammarAbducer(Executor(grammar, semantics), AbductionBudget(max_candidates=1), equal=strict)
    found = abducer.abduce("c", log_probs, target)  # (the enumeration's one candidate is another symbol)
    assert found is not None and found.sentence == right


def test_top_down_search_changes_a_whole_number_that_enumeration_cannot_reach():
    grammar = SymbolGrammar(ADDITION)
    semantics = addition_semantics()
    sentence = "123456+111111"
    log_probs = np.log(np.full((13, 11), 0.05))
    log_probs[range(13), [grammar.symbols.index(c) for c in sentence]] = np.log(0.5)
    target = 999999 + 111111  # the first number must become 999999: six changes
    top_down = GrammarAbducer(Executor(grammar, semantics), AbductionBudget(max_changes=13, max_candidates=50))
    found = top_down.abduce(sentence, log_probs, target, fixed=[6])
    assert found is not None and found.sentence == "999999+111111" and found.changes == 6
    enumeration_only = GrammarAbducer(
        Executor(grammar, TreeSemantics(semantics.rules)), AbductionBudget(max_changes=13, max_candidates=50)
    )
    assert enumeration_only.abduce(sentence, log_probs, target, fixed=[6]) is None
    cut_off = GrammarAbducer(Executor(grammar, semantics), AbductionBudget(max_changes=13, max_candidates=50, max_nodes=2))
    assert cut_off.abduce(sentence, log_probs, target, fixed=[6]) is None  # the root and a number: no digit reached
    assert cut_off.explanations(sentence, log_probs, target, fixed=[6]) == []


def test_abduction_checks_its_input():
    grammar = SymbolGrammar(ADDITION)
    abducer = GrammarAbducer(Executor(grammar, addition_semantics()))
    with pytest.raises(ValueError, match=r"shape \[3, 11\]"):
        abducer.abduce("1+2", np.zeros((2, 11)), 3)
    with pytest.raises(ValueError, match="at least 1"):
        AbductionBudget(max_changes=0)
    with pytest.raises(ValueError, match="readings and chain_sweeps ints of at least 0"):
        AbductionBudget(readings=-1)
    with pytest.raises(ValueError, match="must be ints of at least 1"):
        AbductionBudget(max_changes=1.5)


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="0123456789+", min_size=1, max_size=8))
def test_executor_values_refuses_one_string_instead_of_reading_each_symbol_as_a_sentence(sentence):
    executor = Executor(SymbolGrammar(ADDITION), addition_semantics())
    with pytest.raises(TypeError, match="values takes many sentences, not one string"):
        executor.values(sentence)


@pytest.mark.parametrize(("sentences", "shown"), [(None, "NoneType None"), (12, "int 12")])
def test_executor_values_names_sentences_that_are_no_iterable(sentences, shown):
    """They failed as "'NoneType' object is not iterable", naming no argument."""
    executor = Executor(SymbolGrammar(ADDITION), addition_semantics())
    with pytest.raises(TypeError, match=rf"values takes an iterable of sentences \(str\), got {shown}"):
        executor.values(sentences)


@pytest.mark.parametrize(
    ("sentence", "shown"), [(["1", "+", "2"], r"list \['1', '\+', '2'\]"), (12, "int 12"), (None, "NoneType None")]
)
def test_executor_names_a_sentence_that_is_no_string(sentence, shown):
    """A list of symbols failed as "unhashable type: 'list'", an int as "'int' object is not iterable"."""
    executor = Executor(SymbolGrammar(ADDITION), addition_semantics())
    for call in (executor.value, executor.tree, lambda s: executor.values([s])):
        with pytest.raises(TypeError, match=f"a sentence is a string of symbols, got {shown}"):
            call(sentence)


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.text(alphabet="0123456789+", max_size=8), st.none(), st.lists(st.sampled_from("0123456789+"))))
def test_semantics_name_a_tree_that_is_no_parse_tree(tree):
    """A sentence (or an ungrammatical sentence's tree, None) given for its tree failed on a missing ``children``."""
    semantics = addition_semantics()
    for call in (semantics.evaluate, semantics.node_values, semantics.compile):
        with pytest.raises(TypeError, match=f"expected a parse tree .*, got {type(tree).__name__}"):
            call(tree)


def test_semantics_refuse_replaced_symbols_that_are_no_mapping():
    """A list of symbols was silently ignored: the tree's own symbols were read."""
    tree = SymbolGrammar(ADDITION).parse("1+2")
    assert addition_semantics().evaluate(tree, {0: "9"}) == 11
    with pytest.raises(TypeError, match=r"replaced must be a mapping position -> symbol, got list \['9'\]"):
        addition_semantics().evaluate(tree, ["9"])


@pytest.mark.parametrize("explain", [False, True])
def test_abduction_names_a_sentence_that_is_no_string_of_the_grammars_symbols(explain):
    """A symbol outside the grammar's vocabulary failed deep inside the search as ``KeyError: 'x'``, and a list of
    symbols as "unhashable type: 'list'"."""
    abducer = GrammarAbducer(Executor(SYMBOL_ADDITION, addition_semantics()))
    search = abducer.explanations if explain else abducer.abduce
    log_probs = np.log(np.full((3, 11), 1 / 11))
    with pytest.raises(ValueError, match=r"position 1: symbol 'x' of '1x2' is not in the vocabulary"):
        search("1x2", log_probs, 3)
    with pytest.raises(TypeError, match=r"a sentence is a string of symbols, got list \['1', '\+', '2'\]"):
        search(["1", "+", "2"], log_probs, 3)


@settings(max_examples=30, deadline=None)
@given(
    sentence=st.sampled_from(["1+2", "12+3", "4+56", "789+0"]),
    data=st.data(),
    explain=st.booleans(),
)
def test_abduction_refuses_nan_log_probabilities_naming_the_first_position_that_holds_one(sentence, data, explain):
    """NaN scores were compared as any other: a correction came back with the log-probability NaN."""
    abducer = GrammarAbducer(Executor(SYMBOL_ADDITION, addition_semantics()), AbductionBudget(max_changes=2))
    log_probs = np.log(np.full((len(sentence), 11), 1 / 11))
    positions = data.draw(st.lists(st.integers(0, len(sentence) - 1), min_size=1, unique=True))
    for position in positions:
        log_probs[position, data.draw(st.integers(0, 10))] = np.nan
    search = abducer.explanations if explain else abducer.abduce
    with pytest.raises(ValueError, match=rf"log_probs of '{re.escape(sentence)}' hold NaN at position {min(positions)}$"):
        search(sentence, log_probs, 99)


@pytest.mark.parametrize("explain", [False, True])
def test_abduction_refuses_a_log_probability_of_plus_infinity_naming_its_position(explain):
    """A symbol scored +inf was passed over as one ruled out: towards 5, ``1+2`` was corrected to ``5+0`` (two changes)
    though its ``4`` at position 2, one change, was scored +inf."""
    abducer = GrammarAbducer(Executor(SYMBOL_ADDITION, addition_semantics()), AbductionBudget(max_changes=2))
    log_probs = np.log(np.random.default_rng(0).dirichlet(np.ones(11), size=3))
    log_probs[2, SYMBOL_ADDITION.symbols.index("4")] = np.inf
    search = abducer.explanations if explain else abducer.abduce
    with pytest.raises(ValueError, match=r"log_probs of '1\+2' hold \+inf at position 2$"):
        search("1+2", log_probs, 5)


def test_readings_let_the_top_down_search_trade_one_number_against_the_other():
    grammar = SymbolGrammar(ADDITION)
    sentence = "19+19"  # read; the sum is 22: keeping either number as read needs an unlikely other number
    log_probs = np.log(np.full((5, 11), 1e-6))
    confident = {0: {"1": 0.9}, 1: {"9": 0.5, "2": 0.45}, 3: {"1": 0.9}, 4: {"9": 0.5, "0": 0.45}}
    for position, readings in confident.items():
        for symbol, probability in readings.items():
            log_probs[position, grammar.symbols.index(symbol)] = np.log(probability)
    log_probs[2, grammar.symbols.index("+")] = 0.0
    plain = GrammarAbducer(Executor(grammar, addition_semantics()), AbductionBudget(max_changes=5, max_candidates=1))
    with_readings = GrammarAbducer(
        Executor(grammar, addition_semantics()), AbductionBudget(max_changes=5, max_candidates=1, readings=4)
    )
    assert with_readings.abduce(sentence, log_probs, 22, fixed=[2]).sentence == "12+10"
    found = plain.abduce(sentence, log_probs, 22, fixed=[2])
    assert found is None or found.sentence != "12+10"


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), max_changes=st.integers(1, 3), alternatives=st.integers(1, 3))
def test_ranked_edits_come_in_decreasing_probability_even_where_another_symbol_beats_the_one_read(
    seed, max_changes, alternatives
):
    """The enumeration's edit sets, from a sentence that is not each position's most probable symbol (the
    grammar's best is not), come most probable first, each once, and all of them when the budget allows."""
    abducer = GrammarAbducer(
        Executor(SYMBOL_ADDITION, addition_semantics()),
        AbductionBudget(max_changes=max_changes, max_candidates=10_000, alternatives=alternatives),
    )
    rng = np.random.default_rng(seed)
    sentence = "".join(rng.choice(list("0123456789"), size=4))
    log_probs = np.log(rng.dirichlet(np.full(len(abducer.index), 0.3), size=4))
    options = {p: [s for s in "0123456789" if s != sentence[p]] for p in range(4)}
    ranked = list(abducer._ranked(sentence, log_probs, options, max_changes))
    gains = [gain for gain, _ in ranked]
    assert gains == sorted(gains, reverse=True)
    for gain, edits in ranked:
        edited = "".join(dict(edits).get(p, c) for p, c in enumerate(sentence))
        assert gain == pytest.approx(abducer.score(edited, log_probs) - abducer.score(sentence, log_probs))
    kept = {  # each position: the symbol read or one of its ``alternatives`` most probable others
        p: set(sorted(symbols, key=lambda s: -log_probs[p, abducer.index[s]])[:alternatives]) for p, symbols in options.items()
    }
    every = {
        tuple(sorted(edits))
        for size in range(1, max_changes + 1)
        for positions in itertools.combinations(range(4), size)
        for edits in itertools.product(*[[(p, s) for s in kept[p]] for p in positions])
    }
    assert sorted(tuple(sorted(edits)) for _, edits in ranked) == sorted(every)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    sentence=st.sampled_from(["1+2*3-4", "(1+2)*3", "7", "9/(3-1)+2", "((1))", "1*2*3*4+5"]),
    max_changes=st.integers(1, 3),
    alternatives=st.integers(1, len(HINT_SYMBOLS) - 1),
    fix_first=st.booleans(),
    read_best=st.booleans(),
    listed=st.booleans(),
)
def test_grammatical_edits_are_the_ranked_ones_the_grammar_accepts_in_the_same_order(
    seed, sentence, max_changes, alternatives, fix_first, read_best, listed
):
    """Ranking by terminal pattern first skips the ungrammatical edit sets without changing the others: the same
    edit sets as filtering the plain ranking by the grammar, each once, in the same decreasing probability (HINT's
    grammar, whose brackets make most edits ungrammatical; some symbols ruled out by the reader; the symbols read
    the reader's best, or not, so that an edit of the same terminal may gain), whether the grammatical patterns of
    the sentence's terminals are listed once or searched for as the ranking goes (``PATTERN_LIST_LIMIT`` 0)."""
    grammar = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)
    abducer = GrammarAbducer(
        Executor(grammar, TreeSemantics({})),
        AbductionBudget(max_changes=max_changes, alternatives=alternatives, max_patterns=10**6),
    )
    rng = np.random.default_rng(seed)
    log_probs = np.log(rng.dirichlet(np.full(len(HINT_SYMBOLS), 0.3), size=len(sentence)))
    read = (range(len(sentence)), [HINT_SYMBOLS.index(c) for c in sentence])
    as_drawn = log_probs[read]
    log_probs[rng.random(log_probs.shape) < 0.2] = -np.inf
    log_probs[read] = 0.0 if read_best else as_drawn
    options = abducer._options(sentence, frozenset({0} if fix_first else ()))
    accepted = [
        (gain, edits)
        for gain, edits in abducer._ranked(sentence, log_probs, options, max_changes)
        if grammar.accepts("".join(dict(edits).get(p, c) for p, c in enumerate(sentence)))
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grammar_abduction, "PATTERN_LIST_LIMIT", grammar_abduction.PATTERN_LIST_LIMIT if listed else 0)
        grammatical = list(abducer._grammatical(sentence, log_probs, options, max_changes))
    assert (abducer._listed_patterns(sentence, max_changes) is not None) == listed
    assert [gain for gain, _ in grammatical] == pytest.approx([gain for gain, _ in accepted])
    as_sets = [tuple(sorted(edits)) for _, edits in grammatical]
    assert len(set(as_sets)) == len(as_sets)
    assert sorted(as_sets) == sorted(tuple(sorted(edits)) for _, edits in accepted)


def test_the_enumeration_stops_after_max_patterns_ungrammatical_patterns(monkeypatch):
    """A reader that prefers brackets everywhere on a long sentence makes countless ungrammatical patterns rank
    first: the enumeration parses at most ``max_patterns`` of them (plus the grammatical ones it runs), then stops."""
    grammar = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)
    abducer = GrammarAbducer(
        Executor(grammar, TreeSemantics({})), AbductionBudget(max_changes=3, max_candidates=8, max_patterns=40)
    )
    sentence = "1+2*3-4" * 6 + "1"
    log_probs = np.full((len(sentence), len(HINT_SYMBOLS)), -20.0)
    log_probs[:, [HINT_SYMBOLS.index("("), HINT_SYMBOLS.index(")")]] = 0.0
    log_probs[range(len(sentence)), [HINT_SYMBOLS.index(c) for c in sentence]] = -1.0
    asked = []
    accepts = SymbolGrammar.accepts_terminals
    monkeypatch.setattr(grammar, "accepts_terminals", lambda terminals: asked.append(terminals) or accepts(grammar, terminals))
    found = list(abducer._grammatical(sentence, log_probs, abducer._options(sentence, frozenset()), 3))
    rejected = sum(not accepts(grammar, terminals) for terminals in asked)
    assert abducer._listed_patterns(sentence, 3) is None  # too long to list: searched as it goes
    assert rejected == 41 and len(asked) - rejected >= len(found)
    with pytest.raises(ValueError, match="max_patterns"):
        AbductionBudget(max_patterns=0)


@pytest.mark.parametrize("max_nodes", [0, -3, 2.5, True, "100"])
def test_max_nodes_must_be_a_positive_int(max_nodes):
    with pytest.raises(ValueError, match="beam and max_nodes must be ints of at least 1"):
        AbductionBudget(max_nodes=max_nodes)


def test_lengths_limits_and_terminal_sequences_of_another_kind_are_named():
    """NaN as a limit parsed every candidate (25.6 million for nine HWF symbols); True, 2.5 and "3" as a length, an
    unknown terminal and a str of terminal names failed inside numpy, a comparison or a dict lookup."""
    grammar = SymbolGrammar('start: DIGIT ("+" DIGIT)*\nDIGIT: "0".."9"\n')
    for limit in (math.nan, None, -1):
        with pytest.raises(ValueError, match=f"limit must be a number of at least 0 \\(math.inf: none\\), got {limit}"):
            grammar.sentences(3, limit)
    assert len(grammar.sentences(3, math.inf)) == 100 and grammar.sentences(3, 99) is None
    for length in (True, 2.5, "3"):
        with pytest.raises(TypeError, match=f"length must be an int, got {type(length).__name__}"):
            grammar.position_symbols(length)
    assert grammar.position_symbols(np.int64(1)) == grammar.position_symbols(1)
    digit = grammar.terminals("1")[0]
    assert grammar.accepts_terminals((digit,)) and not grammar.accepts_terminals(("FOO",))
    with pytest.raises(TypeError, match="terminals must be a tuple of terminal names, got str 'DIGIT'"):
        grammar.accepts_terminals("DIGIT")
    with pytest.raises(TypeError, match=r"terminals must be a tuple of terminal names, got list \['DIGIT'\]"):
        grammar.accepts_terminals(["DIGIT"])  # (failed in the cache: "unhashable type: 'list'")
    with pytest.raises(TypeError, match=r"terminals must be a tuple of terminal names, got tuple \(\['DIGIT'\],\)"):
        grammar.accepts_terminals((["DIGIT"],))


def test_an_example_no_sentence_fits_is_named_by_its_index_in_the_source_in_evaluation_and_training():
    """Evaluation reads examples sorted by length and training draws them: the decoder named the row of its batch
    (example 4, example 0), not the source's example (6, whose "+" is given before any digit)."""
    from neurosym.pipelines import Curriculum, PipelineConfig
    from neurosym.pipelines.grammar_pipeline import evaluate_grammar_pipeline, train_grammar_pipeline

    class Digits(torch.nn.Module):
        vocabulary = tuple("0123456789")

        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 10)

        def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
            return self.layer(windows.flatten(1).float() / 255).log_softmax(-1)

    sentences = ["1+2", "3+4", "12+5", "7+77", "1+1", "2+2", "+12", "3+3"]
    width, plus = max(map(len, sentences)), SYMBOL_ADDITION.symbols.index("+")
    picks = np.full((len(sentences), width), -1)
    given = np.full((len(sentences), width), READ)
    for row, sentence in enumerate(sentences):
        for position, symbol in enumerate(sentence):
            if symbol == "+":
                given[row, position] = plus
            else:
                picks[row, position] = int(symbol)
    images = np.stack([np.full((2, 2), k, np.uint8) for k in range(10)])
    targets = [3, 7, 17, 84, 2, 4, 3, 6]
    source = ImageSentences(images, picks, given, [len(s) for s in sentences], targets)
    pipeline = GrammarPipeline(SYMBOL_ADDITION, addition_semantics(), Digits())
    fits = r"no sentence of the grammar fits example 6 \(length 3 and its fixed symbols\)"
    with pytest.raises(ValueError, match=fits):
        evaluate_grammar_pipeline(pipeline, source, "cpu", batch_size=4)
    with pytest.raises(ValueError, match=fits):
        train_grammar_pipeline(pipeline, source, PipelineConfig(steps=5, batch_size=8, curriculum=Curriculum.none()), "cpu")
