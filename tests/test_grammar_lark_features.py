"""Lark's grammar features as one brings a language of one's own to the pipeline: each is taken (parsed into the tree
its semantics evaluate, decoded as exactly as brute force finds the best sentence, abduced through its inverses) or
refused when the grammar is built, with a message that names it."""

from __future__ import annotations

import pytest

from neurosym.syntax.symbol_grammar import SymbolGrammar

DIGITS = 'DIGIT: "0".."2"\n'


@pytest.mark.parametrize(
    "text, unproductive",
    [
        ("start: start DIGIT\n" + DIGITS, "start"),
        ('start: a\na: a "+" DIGIT\n' + DIGITS, "a, start"),
        ('start: a?\na: "(" a ")"\n' + DIGITS, "a, start"),  # (only the empty sentence, which no symbols read as)
        ("expr: expr DIGIT\n" + DIGITS, "expr"),
    ],
)
def test_a_grammar_whose_language_is_empty_is_refused_naming_the_rules_that_derive_no_sentence(text, unproductive):
    """Such a grammar was taken, and every length then decoded as one the grammar had no sentence of."""
    start = "expr" if text.startswith("expr") else "start"
    with pytest.raises(
        ValueError,
        match=f"start rule '{start}' derives no sentence of symbols: the rules that derive no symbols are {unproductive} ",
    ):
        SymbolGrammar(text, start=start)


def test_a_rule_that_derives_no_sentence_beside_ones_that_do_is_taken():
    grammar = SymbolGrammar('start: DIGIT | a\na: a "+"\n' + DIGITS)
    assert grammar.sentences(1, 10) == ["0", "1", "2"] and grammar.sentences(2, 100) == []


@pytest.mark.parametrize("text", ["start: DIGIT X | DIGIT\n%declare X\n" + DIGITS, "start: DIGIT X\n%declare X\n" + DIGITS])
def test_a_terminal_declared_without_a_pattern_is_refused_naming_it_and_its_rules(text):
    """``%declare X`` names a terminal for a lexer of one's own to make; the one-token-per-symbol reading makes none, so the
    alternatives holding it silently had no sentence (and semantics could name ``X``, which no tree held)."""
    with pytest.raises(ValueError, match=r"terminals X \(in rule start\) are declared \(%declare\) without a pattern"):
        SymbolGrammar(text)
