"""Lark's grammar features as one brings a language of one's own to the pipeline: each is taken (parsed into the tree
its semantics evaluate, decoded as exactly as brute force finds the best sentence, abduced through its inverses) or
refused when the grammar is built, with a message that names it."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.perception import SymbolClassifier
from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.grammar_decoding import GrammarDecoder
from neurosym.pipelines.grammar_pipeline import GrammarPipeline
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax import AmbiguousGrammarWarning
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


def sums(wanted: int, parts: tuple[int, int]) -> list[tuple[int, int]]:
    """Each part of a sum solved for from the other."""
    return [(wanted - parts[1], parts[1]), (parts[0], wanted - parts[0])]


def differences(wanted: int, parts: tuple[int, int]) -> list[tuple[int, int]]:
    """Each part of a difference solved for from the other."""
    return [(wanted + parts[1], parts[1]), (parts[0], parts[0] - wanted)]


def two_digits(wanted: object, _: tuple) -> list[tuple[str, str]]:
    """The two decimal digits of ``wanted``, where it has two."""
    return [tuple(f"{wanted:02d}")] if isinstance(wanted, int) and 0 <= wanted < 100 else []  # type: ignore[list-item]


def signed(children: list[str]) -> int:
    """A number of digits after an optional ``-`` (a ``[SIGN]`` that is absent is no child)."""
    sign = -1 if children[0] == "-" else 1
    return sign * int("".join(child for child in children if child != "-"))


def right_product(sentence: str) -> int:
    """``-`` and ``*`` grouped to the right, as ``start: DIGIT "*" start | "-" start | DIGIT`` reads them."""
    if sentence[0] == "-":
        return -right_product(sentence[1:])
    return int(sentence) if len(sentence) == 1 else int(sentence[0]) * right_product(sentence[2:])


@dataclass(frozen=True)
class Feature:
    """A grammar written with one of Lark's features, its semantics, and what its sentences mean (``value``)."""

    text: str
    rules: dict[str, Callable]
    value: Callable[[str], object]
    inverses: dict[str, Callable] = field(default_factory=dict)
    lengths: tuple[int, ...] = (1, 2, 3, 4)
    start: str = "start"


FEATURES = {
    "?rule, alias, left recursion": Feature(
        '?start: sum\n?sum: sum "+" DIGIT -> add | sum "-" DIGIT -> sub | DIGIT\n' + DIGITS,
        {"add": lambda parts: parts[0] + parts[1], "sub": lambda parts: parts[0] - parts[1], "DIGIT": int},
        eval,
        {"add": sums, "sub": differences},
        (1, 3, 5),
    ),
    "right recursion, unary operator": Feature(
        '?start: DIGIT "*" start -> mul | "-" start -> neg | DIGIT\n' + DIGITS,
        {"mul": lambda parts: parts[0] * parts[1], "neg": lambda parts: -parts[0], "DIGIT": int},
        right_product,
        {"neg": lambda wanted, _: [(-wanted,)]},
    ),
    "_rule, _TERMINAL": Feature(
        'start: _pair\n_pair: DIGIT _SEP DIGIT\n_SEP: ","\n' + DIGITS,
        {"start": lambda digits: int("".join(digits))},
        lambda sentence: int(sentence.replace(",", "")),
        {"start": two_digits},
        (3,),
    ),
    "template": Feature(
        'start: pair{DIGIT} "+" pair{DIGIT}\npair{x}: x x\n' + DIGITS,
        {"start": lambda parts: parts[0] + parts[1], "pair": lambda digits: int("".join(digits))},
        lambda sentence: int(sentence[:2]) + int(sentence[3:]),
        {"start": sums, "pair": two_digits},
        (5,),
    ),
    "+, *, ? and [ ]": Feature(
        'start: [SIGN] DIGIT DIGIT* _END?\nSIGN: "-"\n_END: ";"\n' + DIGITS, {"start": signed}, lambda s: int(s.rstrip(";"))
    ),
    "empty alternatives": Feature(
        'start: sign DIGIT+\nsign: -> plus | "-" -> minus\n' + DIGITS,
        {"start": lambda parts: parts[0] * int("".join(parts[1:])), "plus": lambda _: 1, "minus": lambda _: -1},
        int,
    ),
    "rule priorities": Feature(
        "start: a | b\na.2: DIGIT\nb: DIGIT\n" + DIGITS,
        {"a": lambda digit: int(digit[0]), "b": lambda _: None},
        int,
        lengths=(1,),
    ),
    "rule priorities among an ambiguous grammar's trees": Feature(
        "start: x | y\nx.2: DIGIT DIGIT*\ny: DIGIT+\n" + DIGITS,
        {"x": lambda digits: int("".join(digits)), "y": lambda _: None},
        int,
        lengths=(1, 2, 3),
    ),
    "mutual recursion": Feature(
        'start: a\na: DIGIT | "(" b ")"\nb: a "+" a\n' + DIGITS,
        {"a": lambda part: int(part[0]), "b": lambda parts: parts[0] + parts[1]},
        eval,
        {"b": sums},
        (1, 5),
    ),
    "!rule, ~ repetition, %override": Feature(
        '!start: DIGIT "+" DIGIT~1..2\n%import common.DIGIT\n%override DIGIT: "0".."2"\n',
        {"start": lambda tokens: int(tokens[0]) + int("".join(tokens[2:]))},
        lambda sentence: int(sentence[0]) + int(sentence[2:]),
        lengths=(3, 4),
    ),
    "regexp, union of terminals, case-insensitive string": Feature(
        'start: NUM OP NUM\nNUM: /[0-2]/\nOP: PLUS | TIMES\nPLUS: "+"\nTIMES: "x"i\n',
        {"start": lambda p: int(p[0]) + int(p[2]) if p[1] == "+" else int(p[0]) * int(p[2])},
        lambda s: eval(s.lower().replace("x", "*")),
        lengths=(3,),
    ),
    "%import common.DIGIT": Feature(
        'start: DIGIT "-" DIGIT\n%import common.DIGIT\n',
        {"start": lambda digits: int(digits[0]) - int(digits[1])},
        eval,
        lengths=(3,),
    ),
    "ambiguous": Feature(
        'start: e\ne: e "+" e | DIGIT\n' + DIGITS,
        {"e": lambda parts: int(parts[0]) if len(parts) == 1 else parts[0] + parts[1]},
        eval,
        {"e": lambda wanted, parts: sums(wanted, parts) if len(parts) == 2 else []},
        (1, 3, 5),
    ),
    "start=": Feature(
        'expr: DIGIT "-" DIGIT\n' + DIGITS, {"expr": lambda d: int(d[0]) - int(d[1])}, eval, lengths=(3,), start="expr"
    ),
    "%ignore, unreachable rule, unused terminal": Feature(
        'start: DIGIT "+" DIGIT\nunused: "x" DIGIT\nX: "y"\n%ignore " "\n' + DIGITS,
        {"start": lambda d: int(d[0]) + int(d[1])},
        eval,
        lengths=(3,),
    ),
    "one sentence": Feature('start: "1" "+" "2"\n', {"start": lambda _: 3}, eval, lengths=(3,)),
}


@functools.cache
def built(name: str) -> tuple[SymbolGrammar, Executor, dict[int, list[str]]]:
    """The feature's grammar, its executor and, per length, every sentence (brute force over the vocabulary)."""
    feature = FEATURES[name]
    grammar = SymbolGrammar(feature.text, start=feature.start)
    executor = Executor(grammar, TreeSemantics(feature.rules, feature.inverses))
    strings = {length: map("".join, itertools.product(grammar.symbols, repeat=length)) for length in feature.lengths}
    return grammar, executor, {length: [s for s in all_of if grammar.accepts(s)] for length, all_of in strings.items()}


@pytest.mark.parametrize("name", FEATURES)
def test_a_features_sentences_are_parsed_into_the_trees_their_semantics_evaluate(name):
    grammar, executor, sentences = built(name)
    for length, of_length in sentences.items():
        assert of_length, f"no sentence of {length} symbols"
        assert sorted(grammar.sentences(length, 10_000) or ()) == sorted(of_length)
        assert executor.values(of_length) == [FEATURES[name].value(s) for s in of_length]


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
@pytest.mark.parametrize("name", FEATURES)
def test_a_feature_is_decoded_and_abduced_exactly_as_brute_force_finds_it(name, seed):
    """The most probable sentence of each length, and the most probable one of a value drawn among theirs."""
    grammar, executor, sentences = built(name)
    rng = np.random.default_rng(seed)
    abducer = GrammarAbducer(executor, AbductionBudget(max_changes=5, max_candidates=10**5, max_patterns=10**5))
    for length, of_length in sentences.items():
        log_probs = np.log(rng.dirichlet(np.full(len(grammar.symbols), 0.3), size=length))
        score = {s: float(log_probs[range(length), [grammar.symbols.index(c) for c in s]].sum()) for s in of_length}
        decoded = GrammarDecoder(grammar).decode(torch.from_numpy(log_probs)[None].float(), torch.tensor([length]))
        read = decoded.sentences(grammar.symbols)[0]
        assert score[read] == pytest.approx(max(score.values()), abs=1e-4)
        target = executor.value(of_length[rng.integers(len(of_length))])
        found = abducer.abduce(read, log_probs, target)
        assert found is not None and executor.value(found.sentence) == target
        assert found.log_prob == pytest.approx(max(score[s] for s in of_length if executor.value(s) == target), abs=1e-4)


@pytest.mark.parametrize("text", ["_s: DIGIT DIGIT\n", "_s: DIGIT _s | DIGIT DIGIT\n"])
def test_a_start_rule_named_as_lark_inlines_is_the_root_its_semantics_name(text):
    """Lark inlines a ``_rule`` into its parent, but the root has none: ``start="_s"`` parses into a tree ``_s``. Its
    semantics were refused as naming what no tree holds, and semantics without it were taken, then failed on every
    sentence for want of a callable of ``_s``."""
    grammar = SymbolGrammar(text + DIGITS, start="_s")
    assert grammar.parse("12").data == "_s" and grammar.node_children["_s"] == frozenset({2})
    semantics = TreeSemantics({"_s": lambda digits: int("".join(digits))})
    reader = SymbolClassifier(list(grammar.symbols), window=28, width=8)
    assert GrammarPipeline(grammar, semantics, reader).executor.values(grammar.sentences(2, 100) or []) == [
        0, 1, 2, 10, 11, 12, 20, 21, 22,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="the semantics give no callable for the rules '_s'"):
        GrammarPipeline(grammar, TreeSemantics({}), reader)


def test_a_terminal_of_several_characters_is_refused_naming_the_rules_that_use_it():
    """An anonymous ``"sin"`` is Lark's ``SIN``, a name the grammar never wrote: the rule that uses it says where it is."""
    with pytest.raises(
        ValueError, match=r"terminals SIN \(sin, in rule start\), COS \(cos, in rule f\) match strings of several"
    ):
        SymbolGrammar('start: "sin" DIGIT | f\nf: "cos" DIGIT\n' + DIGITS)


def test_ignored_terminals_unreachable_rules_and_unused_terminals_give_the_vocabulary_no_symbol():
    text = FEATURES["%ignore, unreachable rule, unused terminal"].text
    assert SymbolGrammar(text).symbols == ("0", "1", "2", "+")
    with pytest.raises(ValueError, match=r"symbol ' ' matches only the terminals \['__IGNORE_0'\] the grammar ignores"):
        SymbolGrammar(text, symbols=[*"012+", " "])


@pytest.mark.parametrize(
    "text, message",
    [
        ('start: DIGIT E\nE: ""\n' + DIGITS, "Empty terminals are not allowed"),
        ("start: DIGIT A\nA: /a?/\n" + DIGITS, "zero-width terminals"),
        ("start: NUMBER\n%import common.NUMBER\n", r"terminals NUMBER \(.*, in rule start\) match strings of several"),
        ("start: [DIGIT] [DIGIT]\n" + DIGITS, "colliding expansion of optionals"),
    ],
)
def test_what_a_grammar_of_symbols_cannot_hold_is_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        SymbolGrammar(text)


def test_an_ambiguous_grammar_is_taken_with_a_warning_that_shows_a_sentence_of_two_trees():
    grammar, executor, _ = built("ambiguous")
    reader = SymbolClassifier(list(grammar.symbols), window=28, width=8)
    with pytest.warns(AmbiguousGrammarWarning, match="0\\+0\\+0"):
        GrammarPipeline(grammar, executor.semantics, reader)


@pytest.mark.parametrize(
    "text, terminal",
    [
        ('start: DIGIT SP DIGIT | DIGIT\nSP: " "\n%ignore SP\n' + DIGITS, "SP"),
        ('start: DIGIT " " DIGIT\n%ignore " "\n' + DIGITS, "__IGNORE_0"),
        ("start: DIGIT+\n%ignore DIGIT\n" + DIGITS, "DIGIT"),  # (in Lark's rule of the repetition, named as start)
    ],
)
def test_a_terminal_both_ignored_and_used_in_a_rule_is_refused_naming_it_and_its_rules(text, terminal):
    """No window is skipped, so no symbol is read as an ignored terminal: the alternatives using one silently had no
    sentence, or the grammar was refused as having none, or as using no terminal."""
    with pytest.raises(ValueError, match=rf"terminals {terminal} \(in rule start\) are ignored \(%ignore\) but used in rules"):
        SymbolGrammar(text)
