"""Languages of one's own through the grammar pipeline's public API: right-associative, unary and call syntax, inverses
that fail as semantics do, and the names and symbols a grammar is given checked against what its parse trees hold."""

from __future__ import annotations

import copy
import functools
import itertools
import math
import pickle
import re
import warnings
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lark import Transformer, Tree
from torch import nn

from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.grammar_decoding import GrammarDecoder
from neurosym.pipelines.grammar_pipeline import GrammarPipeline, evaluate_grammar_pipeline
from neurosym.pipelines.sentences import READ, ImageSentences, SentenceBatch
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax import ParseError
from neurosym.syntax.symbol_grammar import SymbolGrammar

PRODUCT = 'start: number "*" number\nnumber: DIGIT+\nDIGIT: "0".."9"\n'
# Right-associative power, prefix negation, postfix factorial and max called with a comma, through ?rules and aliases.
CALCULATOR = r"""
?start: sum
?sum: sum "+" power | power
?power: unary "^" power | unary
?unary: "~" unary -> neg | post
?post: post "!" -> fact | atom
?atom: number | "m" "(" sum "," sum ")" -> max
number: DIGIT+
DIGIT: "0".."1"
"""


def digits_of(value: object, digits: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The digits of a natural number ``value`` written with ``len(digits)`` of them (none where it does not fit)."""
    if value != int(value) or not 0 <= value < 10 ** len(digits):  # type: ignore[call-overload]
        return []
    return [tuple(str(int(value)).zfill(len(digits)))]  # type: ignore[call-overload]


def quotients(wanted: int, factors: tuple[int, int]) -> Iterator[tuple[object, object]]:
    """Each factor solved for as the wanted value over the other one: a division by a factor of 0 raises."""
    yield Fraction(wanted, factors[1]), factors[1]
    yield factors[0], Fraction(wanted, factors[0])


def product_semantics() -> TreeSemantics:
    return TreeSemantics(
        {"start": lambda factors: factors[0] * factors[1], "number": lambda digits: int("".join(digits))},
        {"start": quotients, "number": digits_of},
    )


def confident(grammar: SymbolGrammar, sentence: str) -> np.ndarray:
    """Log-probabilities ``[n, V]`` that read ``sentence`` at 0.5 each symbol, the others alike."""
    log_probs = np.full((len(sentence), len(grammar.symbols)), np.log(0.5 / (len(grammar.symbols) - 1)))
    log_probs[range(len(sentence)), [grammar.symbols.index(s) for s in sentence]] = np.log(0.5)
    return log_probs


@pytest.mark.parametrize("chain_sweeps", [0, 2])
def test_an_inverse_that_raises_an_arithmetic_error_offers_nothing_more_as_a_rule_that_raises_one_is_invalid(chain_sweeps):
    """``000 * 7`` must become ``123 * 7``: the inverse solves the first number as 861 / 7, then divides by the 0 read
    as the first number (ZeroDivisionError escaped abduction and stopped training)."""
    grammar, semantics = SymbolGrammar(PRODUCT), product_semantics()
    assert list(semantics.preimages("start", 861, (0, 7))) == [(123, 7)]
    abducer = GrammarAbducer(
        Executor(grammar, semantics), AbductionBudget(max_changes=3, max_candidates=5, chain_sweeps=chain_sweeps)
    )
    log_probs = confident(grammar, "000*7")
    found = abducer.abduce("000*7", log_probs, 861, fixed=[3])
    assert found is not None and found.sentence == "123*7"  # three changes: beyond the enumeration's 5 candidates
    explained = abducer.explanations("000*7", log_probs, 861, fixed=[3])
    assert explained and all(abducer.executor.value(c.sentence) == 861 for c in explained)


@pytest.mark.parametrize(
    ("inverse", "error", "message"),
    [
        (lambda wanted, factors: None, TypeError, r"inverse of rule 'start' must return an iterable .* returned NoneType"),
        (lambda wanted, factors: [wanted], TypeError, r"inverse of rule 'start' must offer tuples .* offered int 861"),
        (lambda wanted, factors: ["ab"], TypeError, r"must offer tuples .* offered str 'ab'"),  # (was read as 'a', 'b')
        (lambda wanted, factors: [{3: 0, 287: 0}], TypeError, r"must offer tuples .* offered dict"),  # (was its keys)
        (
            lambda wanted, factors: [(wanted,)],
            ValueError,
            r"inverse of rule 'start' offered 1 children values \(861,\) .* 2 children",
        ),
    ],
)
def test_an_inverse_that_offers_no_tuples_of_its_rules_children_is_named(inverse, error, message):
    """A tuple of another length was cut to the children's (zip), and anything else failed deep inside abduction."""
    grammar = SymbolGrammar(PRODUCT)
    semantics = TreeSemantics(product_semantics().rules, {"start": inverse, "number": digits_of})
    abducer = GrammarAbducer(Executor(grammar, semantics), AbductionBudget(max_changes=3))
    with pytest.raises(error, match=message):
        abducer.abduce("000*7", confident(grammar, "000*7"), 861)


def test_an_error_the_semantics_raise_is_noted_with_the_rule_or_inverse_that_raised_it():
    """``lambda c: c[0] + None`` raised a bare ``TypeError`` from inside the executor (at the first check of the targets
    or a training step), naming neither the rule nor the sentence; arithmetic and value errors still make a value
    invalid, and an inverse's still offer nothing."""
    grammar = SymbolGrammar(BOOLEAN)
    rules = {"or_": any, "and_": lambda children: children[0] + None, "VAL": lambda symbol: symbol == "T"}
    semantics = TreeSemantics(rules)
    with pytest.raises(TypeError) as raised:
        Executor(grammar, semantics).value("T|F&T")
    rule = "raised by the semantics of rule 'and_' on the children values [False, True]"
    assert raised.value.__notes__ == [f"{rule}, reading the sentence 'T|F&T'"]
    with pytest.raises(TypeError) as raised:
        semantics.evaluate(grammar.parse("F&T"))
    assert raised.value.__notes__ == [rule]
    terminal = TreeSemantics({**rules, "and_": all, "VAL": lambda symbol: {"T": True}[symbol]})
    with pytest.raises(KeyError) as raised:
        Executor(grammar, terminal).value("T&F")
    assert raised.value.__notes__ == ["raised by the semantics of terminal 'VAL' at position 2, reading the sentence 'T&F'"]
    for inverse in (lambda wanted, children: [children[2]], lambda wanted, children: (children[2] for _ in "1")):
        with pytest.raises(IndexError) as raised:
            list(TreeSemantics(rules, {"or_": inverse}).preimages("or_", True, (False, False)))
        assert raised.value.__notes__ == [
            "raised by the inverse of rule 'or_' for the value wanted True and the children values (False, False)"
        ]
    invalid = TreeSemantics({**rules, "and_": lambda children: 1 / 0}, {"or_": lambda wanted, children: [1 / 0]})
    assert Executor(grammar, invalid).value("T|F&T") is None and not list(invalid.preimages("or_", True, (False, False)))


class Nodes(Transformer):
    """Semantics of any grammar: every rule's callable, a node's value is the tuple of its children's values."""

    def __default__(self, data, children, meta):
        return tuple(children)


class Uniform(nn.Module):
    """A reader that reads every window as every symbol alike."""

    def __init__(self, vocabulary: list[str]):
        super().__init__()
        self.vocabulary = vocabulary

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return torch.zeros(len(windows), len(self.vocabulary)).log_softmax(-1)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ('start: _number "+" _number\n_number: DIGIT+\nDIGIT: "0".."9"\n', "_number"),  # inlined into start
        ('start: number _PLUS number\nnumber: DIGIT+\nDIGIT: "0".."9"\n_PLUS: "+"\n', "_PLUS"),  # dropped from start
        ('start: number "+" number\nnumber: DIGIT+\nDIGIT: "0".."9"\n', "PLUS"),  # anonymous: dropped
    ],
)
def test_semantics_named_after_what_no_parse_tree_holds_are_refused(text, name):
    """A ``_rule``'s callable was never called (``12+3`` gave the digits ['1', '2', '3']), nor a dropped terminal's."""
    grammar = SymbolGrammar(text)
    rules = {"start": sum, name: lambda anything: 0}
    with pytest.raises(ValueError, match=rf"the semantics name \['{name}'\], which no node or token .* carries"):
        GrammarPipeline(grammar, TreeSemantics(rules), Uniform(list("0123456789")))
    kept = SymbolGrammar("!" + text)  # a rule that keeps all its tokens holds the dropped ones; an inlined rule stays so
    tree = kept.parse("12+3")
    held = {str(node.data) for node in tree.iter_subtrees()} | {token.type for token in tree.scan_values(bool)}
    assert (name in kept.names) == (name in held) == (name != "_number")


TEMPLATE = 'list{item}: item ("," item)*\nstart: list{DIGIT} ";" list{DIGIT}\nDIGIT: "0".."9"\n'


@settings(max_examples=20, deadline=None)
@given(left=st.lists(st.integers(0, 9), min_size=1, max_size=4), right=st.lists(st.integers(0, 9), min_size=1, max_size=4))
def test_a_templates_instances_carry_the_templates_name_as_lark_gives_it(left, right):
    """Nodes of ``list{DIGIT}`` are named ``list``: semantics for ``list`` were refused as naming what no parse tree
    holds, and semantics for ``list{DIGIT}``, accepted, were never called ("no callable for rule 'list'")."""
    grammar = SymbolGrammar(TEMPLATE)
    assert {"list", "start", "DIGIT"} <= grammar.names and "list{DIGIT}" not in grammar.names
    semantics = TreeSemantics({"list": lambda digits: sum(map(int, digits)), "start": lambda sums: sums[0] * sums[1]})
    pipeline = GrammarPipeline(grammar, semantics, Uniform(list(grammar.symbols)))
    sentence = ",".join(map(str, left)) + ";" + ",".join(map(str, right))
    assert pipeline.executor.value(sentence) == sum(left) * sum(right)
    with pytest.raises(ValueError, match=r"the semantics name \['list\{DIGIT\}'\], which no node"):
        GrammarPipeline(grammar, TreeSemantics({"list{DIGIT}": sum, "start": sum}), Uniform(list(grammar.symbols)))


BOOLEAN = '?start: disj\n?disj: disj "|" conj -> or_ | conj\n?conj: conj "&" atom -> and_ | atom\n?atom: VAL | "(" disj ")"\nVAL: "T" | "F"\n'


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (BOOLEAN, "atom"),  # each alternative has one child, which takes its place
        (BOOLEAN, "disj"),  # each alternative has an alias or one child
        ('start: expr\nexpr: n "+" n -> add | n "-" n -> sub\nn: DIGIT\nDIGIT: "0".."9"\n', "expr"),  # aliases alone
    ],
)
def test_semantics_named_after_a_rule_whose_alternatives_all_give_other_nodes_are_refused(text, name):
    """``atom: lambda c: c[0] == "T"`` was accepted and never called: ``F`` gave the symbol ``'F'``, and ``F&T``
    gave ``'T'`` (a string is truthy)."""
    grammar = SymbolGrammar(text)
    held = {
        str(node.data)
        for sentence in ("T", "F&T", "(T|F)&T", "1+2", "1-2")
        if grammar.accepts(sentence) and isinstance(tree := grammar.parse(sentence), Tree)
        for node in tree.iter_subtrees()
    }
    assert name not in held and name not in grammar.names and held <= grammar.names
    with pytest.raises(ValueError, match=rf"the semantics name \['{name}'\], which no node or token .* carries"):
        GrammarPipeline(grammar, TreeSemantics({name: lambda children: children[0]}), Uniform(list(grammar.symbols)))
    semantics = TreeSemantics({"or_": any, "and_": all, "VAL": lambda symbol: symbol == "T"})
    assert Executor(SymbolGrammar(BOOLEAN), semantics).values(["F", "F&T", "(T|F)&T", "!"]) == [False, False, True, None]


DIGIT_ATOMS = 'start: atom "+" atom\n?atom: _digit | "(" start ")"\n_digit: ONE | TWO\nONE: "1"\nTWO: "2"\n'


def held_names(grammar: SymbolGrammar, sentences: list[str]) -> set[str]:
    """The names of the nodes and tokens of the parse trees of ``sentences``."""
    trees = [grammar.parse(sentence) for sentence in sentences]
    return {str(node.data) for tree in trees for node in tree.iter_subtrees()} | {
        token.type for tree in trees for token in tree.scan_values(bool)
    }


def test_a_rule_whose_one_child_always_comes_from_an_inlined_rule_is_no_name():
    """``?atom: _digit`` with ``_digit: ONE | TWO`` is always replaced by its one token: semantics for ``atom`` were
    accepted and never called (``1+2`` then summed the symbols: a TypeError from deep inside)."""
    grammar = SymbolGrammar(DIGIT_ATOMS)
    held = held_names(grammar, ["1+2", "(1+2)+1", "2+(1+1)"])
    assert "atom" not in held and "atom" not in grammar.names and held <= grammar.names
    with pytest.raises(ValueError, match=r"the semantics name \['atom'\], which no node or token .* carries"):
        GrammarPipeline(grammar, TreeSemantics({"start": sum, "atom": int}), Uniform(list(grammar.symbols)))
    several = SymbolGrammar(DIGIT_ATOMS.replace("ONE | TWO", "ONE | TWO | ONE TWO"))  # "12": an atom of two children
    assert "atom" in held_names(several, ["12+1"]) and "atom" in several.names


def test_alternatives_that_differ_only_in_dropped_tokens_are_refused_where_semantics_name_their_rule():
    """``e: n "+" n | n "-" n`` gives both ``e(n, n)``: semantics for ``e`` computed one of them for the other."""
    text = 'start: e\ne: n "+" n | n "-" n | n\nn: DIGIT\nDIGIT: "0".."9"\n'
    rules = {"start": lambda v: v[0], "e": sum, "n": lambda v: v[0], "DIGIT": int}
    with pytest.raises(ValueError, match=r"the alternatives n PLUS n \| n MINUS n of rule 'e' give parse-tree nodes alike"):
        GrammarPipeline(SymbolGrammar(text), TreeSemantics(rules), Uniform(list("0123456789+-")))
    aliased = SymbolGrammar(text.replace('n "+" n |', 'n "+" n -> add |').replace('"-" n |', '"-" n -> sub |'))
    assert aliased.indistinct_alternatives == {}
    named = SymbolGrammar(text.replace('"+" n | n "-" n', "OP n") + 'OP: "+" | "-"\n')
    assert named.indistinct_alternatives == {}
    inlined = SymbolGrammar('start: a\n?a: "(" n ")" | "[" n "]" | n "+" n\nn: DIGIT\nDIGIT: "0".."9"\n')
    assert inlined.indistinct_alternatives == {}  # (a ?rule's alternative of one child is its child)
    rules.pop("e")  # no semantics of its own: nothing to tell apart, where its nodes of one child pass their value up
    signed = SymbolGrammar('start: e\ne: "+" n | "-" n | n\nn: DIGIT\nDIGIT: "0".."9"\n')
    assert signed.indistinct_alternatives == {"e": ["PLUS n", "MINUS n", "n"]}
    GrammarPipeline(signed, TreeSemantics(rules), Uniform(list("0123456789+-")))


def test_alternatives_alike_through_an_inlined_rule_of_several_children_are_refused():
    """``?e: _p "+" | _p "-"`` with ``_p: N N`` gives ``e(N, N)`` for both (the ?rule keeps its node: two children),
    but each alternative was taken for one of a single child, replaced by it, and went unnamed."""
    grammar = SymbolGrammar('start: e\n?e: _p "+" | _p "-"\n_p: N N\nN: "1" | "2"\n')
    assert grammar.parse("12+") == grammar.parse("12-")
    assert grammar.indistinct_alternatives == {"e": ["_p PLUS", "_p MINUS"]}
    with pytest.raises(ValueError, match=r"the alternatives _p PLUS \| _p MINUS of rule 'e' give parse-tree nodes alike"):
        GrammarPipeline(grammar, TreeSemantics({"start": sum, "e": sum, "N": int}), Uniform(list(grammar.symbols)))
    single = SymbolGrammar('start: e\n?e: _p "+" | _p "-"\n_p: N\nN: "1" | "2"\n')  # e is replaced by its one N
    assert single.indistinct_alternatives == {}


@pytest.mark.parametrize(
    ("text", "rules", "shown"),
    [
        (BOOLEAN, {"and_": all, "VAL": lambda symbol: symbol == "T"}, "'or_' (2+ children)"),  # an operator forgotten
        ('start: e\ne: "(" ")" | D\nD: "0".."9"\n', {"D": int}, "'e' (no or 1 children)"),  # "()": a node of none
        ('start: D+\nD: "0".."9"\n', {"D": int}, "'start' (1 or 2+ children)"),
    ],
)
def test_semantics_without_a_callable_for_a_rule_of_no_or_several_children_are_refused(text, rules, shown):
    """Semantics that forgot an operator were accepted, and failed only where a sentence holding it was first executed
    (without true sentences to check, in a training step: "no callable for rule 'or_'"); a rule whose nodes have one
    child passes its value up and needs none."""
    grammar = SymbolGrammar(text)
    with pytest.raises(ValueError, match=rf"the semantics give no callable for the rules {re.escape(shown)} of the grammar"):
        GrammarPipeline(grammar, TreeSemantics(rules), Uniform(list(grammar.symbols)))
    GrammarPipeline(grammar, TreeSemantics(Nodes()), Uniform(list(grammar.symbols)))  # (a callable for every rule)
    trees = [grammar.parse(sentence) for sentence in ("T", "F|T", "T&(F|T)", "()", "7", "12") if grammar.accepts(sentence)]
    for node in (node for tree in trees if isinstance(tree, Tree) for node in tree.iter_subtrees()):
        assert min(len(node.children), 2) in grammar.node_children[str(node.data)]


def test_a_grammar_files_relative_imports_look_beside_it_and_one_lark_does_not_find_is_named(tmp_path, monkeypatch):
    """``%import .defs (DIGIT)`` in ``grammars/sum.lark`` looked for ``defs.lark`` in the working folder, and a missing
    import escaped as a bare ``FileNotFoundError: 'defs.lark'`` from inside Lark."""
    folder = tmp_path / "grammars"
    folder.mkdir()
    (folder / "defs.lark").write_text('DIGIT: "0".."9"\nPLUS: "+"\n')
    (folder / "sum.lark").write_text("%import .defs (DIGIT, PLUS)\nstart: DIGIT PLUS DIGIT\n")
    monkeypatch.chdir(tmp_path)
    for path in (folder / "sum.lark", "grammars/sum.lark"):
        grammar = SymbolGrammar(path)
        assert grammar.symbols == tuple("0123456789+") and grammar.accepts("1+2") and not grammar.accepts("12")
        assert GrammarDecoder(grammar).decode(torch.zeros(1, 3, 11), torch.tensor([3])).sentences(grammar.symbols) == ["0+0"]
    (folder / "defs.lark").unlink()
    with pytest.raises(ValueError, match=r"the grammar imports 'defs.lark', which Lark does not find: .* looks in the folder of"):
        SymbolGrammar(folder / "sum.lark")
    with pytest.raises(ValueError, match=r"the grammar imports 'nothere.lark', which Lark does not find"):
        SymbolGrammar("%import nothere (X)\nstart: X\n")


@given(st.sampled_from(["\n", "\r\n"]), st.booleans())
@settings(max_examples=8, deadline=None)
def test_a_grammar_file_saved_on_windows_reads_as_its_text(tmp_path_factory, line_end, bom):
    """A UTF-8 byte-order mark (a Windows editor's) was refused by Lark as unexpected input at line 1, column 1."""
    path = tmp_path_factory.mktemp("grammar") / "calc.lark"
    text = line_end.join(['start: n "+" n', 'n: "0" | "1"  // a comment: ´', ""])
    path.write_bytes(b"\xef\xbb\xbf" * bom + text.encode())
    grammar = SymbolGrammar(path)
    assert grammar.symbols == tuple("01+") and grammar.accepts("1+0") and grammar.text == text


def test_a_grammar_file_that_is_not_utf8_is_named_with_the_line_and_column(tmp_path):
    """A UnicodeDecodeError named neither the file nor where in it."""
    path = tmp_path / "calc.lark"
    path.write_bytes('start: n "+" n\nn: "0" | "1"  // a comment: ´\n'.encode("latin-1"))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}:2:29: byte 0xb4 is not UTF-8 text \(invalid start byte\)"):
        SymbolGrammar(path)


def test_a_grammar_pickles_and_copies_and_the_copy_parses_as_it_does(tmp_path, monkeypatch):
    """A deep copy's LALR parser failed inside Lark ("'int' object has no attribute 'expansion'"), and so did a copied
    pipeline's first reading; pickling raised "Can't pickle local object 'SymbolGrammar._parser.<locals>.SymbolLexer'"."""
    folder = tmp_path / "grammars"
    folder.mkdir()
    (folder / "defs.lark").write_text('DIGIT: "0".."1"\n')
    (folder / "calc.lark").write_text(
        "%import .defs (DIGIT)\n" + CALCULATOR.replace('number: DIGIT+\nDIGIT: "0".."1"\n', "number: DIGIT+\n")
    )
    monkeypatch.chdir(tmp_path)
    sentences = ["10^1^1", "~1+m(1,10)!", "1+", "m(1)"]
    for grammar in (SymbolGrammar(CALCULATOR), SymbolGrammar("grammars/calc.lark", symbols=list("01+^~!m(,)"))):
        monkeypatch.chdir(folder)  # (the file's imports are found beside it, wherever the copy is made)
        for duplicate in (copy.deepcopy, lambda original: pickle.loads(pickle.dumps(original))):
            twin = duplicate(grammar)
            assert (twin.text, twin.symbols, twin.start, twin.source_path) == (
                grammar.text,
                grammar.symbols,
                grammar.start,
                grammar.source_path,
            )
            assert [twin.accepts(s) for s in sentences] == [grammar.accepts(s) for s in sentences] == [True, True, False, False]
            assert twin.parse(sentences[1]) == grammar.parse(sentences[1])
    pipeline = GrammarPipeline(SymbolGrammar(PRODUCT), product_semantics(), Uniform(list("0123456789*")))
    batch = SentenceBatch(torch.zeros(1, 3, 1), torch.tensor([3]), torch.full((1, 3), READ))
    assert copy.deepcopy(pipeline).predict(batch) == pipeline.predict(batch) == [0]


PRODUCTS = 'start: VAR (TIMES VAR)*\nTIMES.2: "x"\nVAR: /[a-z]/\n'


@settings(max_examples=30, deadline=None)
@given(sentence=st.text(alphabet="abxyz", min_size=1, max_size=7))
def test_a_symbol_that_several_terminals_match_is_read_as_the_one_of_the_highest_priority(sentence):
    """``x`` is the product's cross, not a variable: ``TIMES.2: "x"`` over ``VAR: /[a-z]/``, as Lark's basic lexer
    reads it. Such a grammar was refused ("symbol 'x' matches several terminals")."""
    grammar = SymbolGrammar(PRODUCTS)
    assert grammar.terminal_of["x"] == "TIMES" and {grammar.terminal_of[s] for s in "abyz"} == {"VAR"}
    is_product = sentence[::2].count("x") == 0 and set(sentence[1::2]) == ({"x"} if len(sentence) > 1 else set())
    assert grammar.accepts(sentence) == (len(sentence) % 2 == 1 and is_product)
    log_probs = torch.full((1, 3, len(grammar.symbols)), -10.0)
    log_probs[0, :, grammar.symbols.index("x")] = 0.0  # a cross is read everywhere, but only the middle may hold one
    log_probs[0, :, grammar.symbols.index("y")] = -1.0
    assert GrammarDecoder(grammar).decode(log_probs, torch.tensor([3])).sentences(grammar.symbols) == ["yxy"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('start: A | B\nA: "a"\nB: /[a-c]/\n', r"symbol 'a' matches several terminals \(A, B\) .* of priority 0: .*A\.1"),
        ('start: A | B\nA.2: "a"\nB.2: /[a-c]/\n', r"symbol 'a' matches several terminals \(A, B\) .* of priority 2"),
        ('start: A | B\nA.2: /[a-c]/\nB: "b"\n', r"terminals \['B'\] match only symbols read as terminals of a higher"),
    ],
)
def test_a_symbol_that_terminals_of_one_priority_match_or_a_terminal_read_from_no_symbol_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        SymbolGrammar(text)


def test_a_terminal_that_none_of_the_symbols_given_matches_is_refused():
    """Decoding then named a length no sentence fits, not the terminal no symbol was given for."""
    with pytest.raises(ValueError, match=r"the grammar's terminals \['PLUS'\] match none of the symbols \['0', '1'"):
        SymbolGrammar('start: DIGIT "+" DIGIT\nDIGIT: "0".."9"\n', symbols=list("0123456789"))


@functools.cache
def calculator() -> tuple[SymbolGrammar, Executor]:
    grammar = SymbolGrammar(CALCULATOR)
    semantics = TreeSemantics(
        {
            "sum": lambda terms: terms[0] + terms[1],
            "power": lambda parts: parts[0] ** parts[1] if abs(parts[1]) <= 64 else None,
            "neg": lambda parts: -parts[0],
            "fact": lambda parts: 1 if parts[0] in (0, 1) else None,  # 0! = 1! = 1; larger ones are unread
            "max": max,
            "number": lambda digits: int("".join(digits), 2),
        },
        {
            "sum": lambda wanted, terms: [(wanted - terms[1], terms[1]), (terms[0], wanted - terms[0])],
            "neg": lambda wanted, _: [(-wanted,)],
        },
    )
    return grammar, Executor(grammar, semantics)


def test_the_calculator_parses_as_its_grammar_says():
    _, executor = calculator()
    assert executor.values(["10^1^0", "~1^10", "m(1,~10)", "11!", "1!!+1", "m(1,11)+~1"]) == [2, 1, 1, None, 2, 2]


@functools.cache
def calculator_sentences(length: int) -> list[str]:
    grammar, _ = calculator()
    return [s for s in map("".join, itertools.product(grammar.symbols, repeat=length)) if grammar.accepts(s)]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), length=st.integers(3, 4))
def test_a_calculator_of_ones_own_is_decoded_and_abduced_exactly(seed, length):
    """The most probable sentence of each length, and the most probable one within two changes of it that gives a
    value, against every sentence of that length."""
    grammar, executor = calculator()
    rng = np.random.default_rng(seed)
    log_probs = np.log(rng.dirichlet(np.full(len(grammar.symbols), 0.3), size=length))
    sentences = calculator_sentences(length)
    score = {s: float(log_probs[range(length), [grammar.symbols.index(c) for c in s]].sum()) for s in sentences}
    decoded = GrammarDecoder(grammar).decode(torch.from_numpy(log_probs)[None].float(), torch.tensor([length]))
    read = decoded.sentences(grammar.symbols)[0]
    assert score[read] == pytest.approx(max(score.values()), abs=1e-4)
    budget = AbductionBudget(max_changes=2, max_candidates=100_000, max_patterns=100_000, alternatives=len(grammar.symbols))
    abducer = GrammarAbducer(executor, budget)
    for target in {executor.value(s) for s in sentences} - {None, executor.value(read)}:
        reachable = [s for s in sentences if executor.value(s) == target and sum(map(str.__ne__, s, read)) <= 2]
        found = abducer.abduce(read, log_probs, target)
        assert (found is None) == (not reachable)
        assert found is None or found.log_prob == pytest.approx(max(score[s] for s in reachable))


FRACTIONS = '?start: sum\n?sum: sum "+" term -> add | term\n?term: term "/" DIGIT -> div | DIGIT\nDIGIT: "0".."9"\n'


def divide(left: object, right: object) -> object:
    """``left / right``, a ``ZeroDivisionError`` where a component of ``right`` is 0 (numpy only warns)."""
    if np.any(np.asarray(right) == 0):
        raise ZeroDivisionError("division by zero")
    return left / right  # type: ignore[operator]


@functools.cache
def fractions_executor(vectors: bool) -> Executor:
    """Digits, ``+`` and ``/`` over floats, or over the vectors ``(x, x)`` (numpy arrays: ``==`` elementwise)."""
    digit = (lambda d: np.full(2, float(d))) if vectors else float
    semantics = TreeSemantics(
        {"add": lambda parts: parts[0] + parts[1], "div": lambda parts: divide(*parts), "DIGIT": digit},
        {
            "add": lambda wanted, parts: [(wanted - parts[1], parts[1]), (parts[0], wanted - parts[0])],
            "div": lambda wanted, parts: [(wanted * parts[1], parts[1]), (parts[0], divide(parts[0], wanted))],
        },
    )
    return Executor(SymbolGrammar(FRACTIONS), semantics)


def within_two_changes(grammar: SymbolGrammar, read: str) -> list[str]:
    """Every grammatical sentence that differs from ``read`` in one or two positions."""
    found = set()
    for size in (1, 2):
        for positions in itertools.combinations(range(len(read)), size):
            for symbols in itertools.product(grammar.symbols, repeat=size):
                sentence = list(read)
                for position, symbol in zip(positions, symbols):
                    sentence[position] = symbol
                found.add("".join(sentence))
    return sorted(s for s in found - {read} if grammar.accepts(s))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), vectors=st.booleans())
def test_values_with_a_tolerance_are_abduced_and_explained_through_equal_as_brute_force_finds_them(seed, vectors):
    """A target off the sentences' floats by rounding (as computed elsewhere) is found through ``equal``, which the
    top-down search and the chain used only for the result: they compared parts with ``==``, which failed on arrays
    ("the truth value of an array is ambiguous"). Against every sentence within two changes."""
    executor = fractions_executor(vectors)
    grammar = executor.grammar
    equal = functools.partial(np.allclose, rtol=1e-9, atol=0.0) if vectors else math.isclose
    rng = np.random.default_rng(seed)
    read = str(rng.choice(["1/3+4", "7+2/6", "9/7/2", "5/3+1"]))
    log_probs = np.log(rng.dirichlet(np.full(len(grammar.symbols), 0.3), size=len(read)))
    log_probs[range(len(read)), [grammar.symbols.index(c) for c in read]] = np.log(0.6)
    nearby = [s for s in within_two_changes(grammar, read) if executor.value(s) is not None]
    target = executor.value(nearby[rng.integers(len(nearby))]) * (1 + 1e-12)
    score = {s: float(log_probs[range(len(read)), [grammar.symbols.index(c) for c in s]].sum()) for s in nearby}
    best = max(score[s] for s in nearby if equal(executor.value(s), target))
    budget = AbductionBudget(max_changes=2, max_candidates=10_000, max_patterns=10_000, alternatives=len(grammar.symbols))
    for chain_sweeps in (0, 2):
        abducer = GrammarAbducer(executor, AbductionBudget(**{**vars(budget), "chain_sweeps": chain_sweeps}), equal)
        found = abducer.abduce(read, log_probs, target)
        assert found is not None and found.log_prob == pytest.approx(best)
        explained = abducer.explanations(read, log_probs, target)
        assert explained and all(equal(executor.value(c.sentence), target) for c in explained)
    top_down = GrammarAbducer(executor, AbductionBudget(max_changes=2, max_candidates=1), equal)
    found = top_down.abduce(read, log_probs, target)
    assert found is None or equal(executor.value(found.sentence), target)


@pytest.mark.parametrize(
    ("target", "error", "message"),
    [
        (None, TypeError, r"target is None: no sentence's value is None"),
        (np.array([5.0, 5.0]), TypeError, r"target ndarray .* compares with == elementwise \(to a ndarray"),
        (torch.tensor([5.0, 5.0]), TypeError, r"target Tensor .* compares with == elementwise \(to a Tensor"),
        (float("nan"), ValueError, r"target nan is not equal to itself under =="),
        (torch.tensor(5.0), TypeError, r"target tensor\(5.\) is a 0-d Tensor, .* give the targets as Python values"),
    ],
)
def test_a_target_no_sentence_can_give_is_refused_by_name(target, error, message):
    """``None`` was searched for in vain, and an array's ``==`` failed deep in the search with "the truth value of an
    array is ambiguous"; an ``equal`` for such values takes them (``None`` still not)."""
    executor = fractions_executor(False)
    log_probs = confident(executor.grammar, "1/3+4")
    for search in (GrammarAbducer(executor).abduce, GrammarAbducer(executor).explanations):
        with pytest.raises(error, match=message):
            search("1/3+4", log_probs, target)
    vectors = fractions_executor(True)
    abducer = GrammarAbducer(vectors, equal=lambda value, wanted: bool(np.allclose(value, np.asarray(wanted))))
    if target is None:
        with pytest.raises(TypeError, match="target is None"):
            abducer.abduce("1/3+4", log_probs, target)
    elif isinstance(target, np.ndarray):
        found = abducer.abduce("1/3+4", log_probs, target)
        assert found is not None and np.allclose(vectors.value(found.sentence), [5.0, 5.0])
    found = GrammarAbducer(executor).abduce("1/3+4", log_probs, np.float64(5.0))  # (its == gives an np.bool_)
    assert found is not None and found.changes == 1 and executor.value(found.sentence) == 5.0


def test_results_given_as_a_tensor_are_taken_as_their_python_numbers():
    """Each item of a tensor is a 0-d tensor, whose ``==`` gives a tensor: every target was refused as one that
    compares elementwise, to be given an ``equal`` such as numpy.array_equal."""
    executor = fractions_executor(False)
    pipeline = GrammarPipeline(executor.grammar, executor.semantics, Uniform(list(executor.grammar.symbols)))
    truths = ["1/3+4", "7+2/6", "5/3+1"]
    targets = [executor.value(t) for t in truths]
    layout = (np.zeros((1, 2, 2), np.uint8), np.zeros((3, 5), int), np.full((3, 5), READ), np.full(3, 5))
    sentences = ImageSentences(*layout, torch.tensor(targets, dtype=torch.float64), truths)
    assert sentences.targets == targets and all(type(target) is float for target in sentences.targets)
    assert evaluate_grammar_pipeline(pipeline, sentences, "cpu") == evaluate_grammar_pipeline(
        pipeline, ImageSentences(*layout, targets, truths), "cpu"
    )


class _BitSums:
    """Two binary numbers and the ``+`` between them, given: a source of one's own whose ids come in ``dtype``."""

    truths, targets, lengths = ["01+01", "1+10", "1+1"], [4, 3, 2], np.array([5, 4, 3])

    def __init__(self, dtype: torch.dtype) -> None:
        self.dtype = dtype

    def __len__(self) -> int:
        return len(self.targets)

    def batch(self, indices: list[int]) -> SentenceBatch:
        steps = int(self.lengths[indices].max())
        given = torch.full((len(indices), steps), READ)
        for row, index in enumerate(indices):
            given[row, self.truths[index].index("+")] = 2
        windows = torch.zeros(len(indices), steps, 2, 2, dtype=torch.uint8)
        return SentenceBatch(windows, torch.from_numpy(self.lengths[indices]).to(self.dtype), given.to(self.dtype))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64])
def test_a_sources_symbol_ids_and_lengths_of_any_integer_width_are_read(dtype):
    """int32 ids (numpy's default on some platforms) failed in ``one_hot``: "only applicable to index tensor of type
    LongTensor"."""
    grammar = SymbolGrammar('start: BIT+ "+" BIT+\nBIT: "0" | "1"\n')
    pipeline = GrammarPipeline(grammar, TreeSemantics({"start": len}), Uniform(["0", "1"]))
    assert evaluate_grammar_pipeline(pipeline, _BitSums(dtype), "cpu") == {"accuracy": 1.0, "symbol": 3 / 9}
    for kind in (torch.float32, torch.bool):
        with pytest.raises(TypeError, match=f"SentenceBatch's given must be an integer tensor, got a {kind} tensor"):
            SentenceBatch(torch.zeros(1, 3, 2, 2), torch.tensor([3]), torch.zeros(1, 3, dtype=kind))
    with pytest.raises(TypeError, match="SentenceBatch's lengths must be an integer tensor, got list"):
        SentenceBatch(torch.zeros(1, 3, 2, 2), [3], torch.zeros(1, 3, dtype=torch.long))


@pytest.mark.parametrize(
    ("windows", "lengths", "given", "problem"),
    [
        ((3, 2, 2), (1,), (1, 3), "disagree: windows [3, 2, 2], lengths [1] and given [1, 3]"),  # no batch axis
        ((1, 3, 2, 2), (1,), (1, 2), "disagree"),
        ((1, 3, 2, 2), (2,), (1, 3), "disagree"),
        ((1, 3, 2, 2), (1, 1), (1, 3), "takes windows"),
        ((1,), (1,), (1, 3), "takes windows"),
        ((0, 3, 2, 2), (0,), (0, 3), "at least one example"),
    ],
)
def test_a_batch_whose_shapes_do_not_fit_is_named_before_anything_reads_it(windows, lengths, given, problem):
    """An expression's windows without the batch axis, ids of another width or more lengths than examples failed in
    torch's indexing ("the shape of the mask [3] at index 0 does not match"), an empty batch in einops ("integer
    modulo by zero")."""
    grammar = SymbolGrammar('start: BIT+ "+" BIT+\nBIT: "0" | "1"\n')
    pipeline = GrammarPipeline(grammar, TreeSemantics({"start": len}), Uniform(["0", "1"]))
    with pytest.raises(ValueError, match=re.escape(problem)):
        pipeline.predict(
            SentenceBatch(torch.zeros(windows), torch.ones(lengths, dtype=torch.long), torch.zeros(given, dtype=torch.long))
        )
    with pytest.raises(TypeError, match="windows must be a torch.Tensor"):
        SentenceBatch(np.zeros((1, 3, 2, 2)), torch.tensor([3]), torch.zeros(1, 3, dtype=torch.long))


def test_a_white_on_black_pipeline_refuses_a_read_window_with_a_bright_border_and_no_other():
    """A reader trained on white ink on black (MNIST, the shipped handwriting) read black-on-white digits as other
    digits without a word; a pipeline made ``white_on_black`` names the first such read window. Given and padding
    windows are not read, so not checked; a pipeline that knows nothing of its images reads them all."""
    grammar = SymbolGrammar('start: BIT+ "+" BIT+\nBIT: "0" | "1"\n')
    pipeline = GrammarPipeline(grammar, TreeSemantics({"start": len}), Uniform(["0", "1"]), white_on_black=True)
    windows = torch.zeros(2, 4, 28, 28, dtype=torch.uint8)
    windows[0, 1] = windows[1, 3] = 255  # the given + of the first example, padding of the second
    given = torch.tensor([[READ, 2, READ, READ], [READ, 2, READ, READ]])
    assert pipeline.predict(SentenceBatch(windows, torch.tensor([4, 3]), given)) == [3, 2]
    windows[1, 2] = 255 - windows[1, 2]
    with pytest.raises(ValueError, match=r"window 2 of expression 1 has a bright border \(mean intensity 1.00\)"):
        pipeline.predict(SentenceBatch(windows, torch.tensor([4, 3]), given))
    with pytest.raises(ValueError, match="window 2 of expression 1 has a bright border"):
        pipeline.read(SentenceBatch(windows[:, :, None].float() / 255, torch.tensor([4, 3]), given))
    with pytest.raises(ValueError, match="must be finite"):  # (NaN intensities named as such, not as a border)
        pipeline.predict(SentenceBatch(windows.float().fill_(math.nan), torch.tensor([4, 3]), given))
    unknowing = GrammarPipeline(grammar, TreeSemantics({"start": len}), Uniform(["0", "1"]))
    assert unknowing.predict(SentenceBatch(windows, torch.tensor([4, 3]), given)) == [3, 2]


def test_the_shipped_tasks_images_are_white_on_black_as_their_tasks_say():
    """``trained_pipeline`` makes its pipeline ``white_on_black`` where the task says so: each shipped task's training
    windows have dark borders."""
    from neurosym.pipelines.pipeline import check_white_on_black
    from neurosym.tasks.hwf import build

    task = build()
    batch = task.train.batch(list(range(64)))
    assert task.white_on_black
    check_white_on_black(batch.windows, batch.given == READ)


class _Sums:
    """A source's truths, targets and lengths alone: what the pipeline checks before training."""

    def __init__(self, targets: list) -> None:
        self.truths, self.targets, self.lengths = ["1/3+4"] * len(targets), targets, np.full(len(targets), 5)

    def __len__(self) -> int:
        return len(self.targets)


def test_targets_no_value_can_equal_are_refused_before_training():
    """An array target failed inside the check of the first truths with "the truth value of an array is ambiguous"."""
    from neurosym.pipelines.grammar_pipeline import _check_targets

    executor = fractions_executor(False)
    pipeline = GrammarPipeline(executor.grammar, executor.semantics, Uniform(list(executor.grammar.symbols)))
    _check_targets(pipeline, _Sums([1 / 3 + 4.0]))
    with pytest.raises(TypeError, match="compares with == elementwise"):
        _check_targets(pipeline, _Sums([1 / 3 + 4.0, np.array([5.0, 5.0])]))
    rounded = _Sums([round(1 / 3 + 4.0, 4)] * 3)  # (the message named no way to count a value near its result)
    with pytest.raises(
        ValueError, match=r"gives 4.333333333333333 \(float\), its target is 4.3333 .* under the pipeline's equal"
    ):
        _check_targets(pipeline, rounded)
    close = GrammarPipeline(executor.grammar, executor.semantics, pipeline.reader, equal=lambda a, b: abs(a - b) < 1e-3)
    _check_targets(close, rounded)


DIGIT_SUM = GrammarPipeline(
    SymbolGrammar('start: DIGIT "+" DIGIT\nDIGIT: "0".."9"\n'),
    TreeSemantics({"start": lambda digits: int(digits[0]) + int(digits[1])}),
    Uniform(list("0123456789")),
)


def digit_sums(targets: list) -> ImageSentences:
    """Sums of two digits shown as images, the ``+`` given, with ``targets`` alone (no true sentences)."""
    count = len(targets)
    picks = np.tile([0, -1, 0], (count, 1))
    given = np.tile([READ, 10, READ], (count, 1))
    return ImageSentences(np.zeros((1, 2, 2), np.uint8), picks, given, np.full(count, 3), targets)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 18), min_size=1, max_size=6),
    st.data(),
    st.one_of(st.integers(-30, 40), st.sampled_from([2.5, -1.0, 7.0, 18.0001, "7", (3,)])),
)
def test_targets_no_sentence_of_their_length_gives_are_refused_naming_the_example(targets, data, wrong):
    """A source of targets alone was not checked at all: a negative sum, a fraction or text trained on examples that
    no reading explains. Where a length has few sentences, their values say which targets can be met."""
    from neurosym.pipelines.grammar_pipeline import train_grammar_pipeline
    from neurosym.pipelines.trainer import PipelineConfig

    index = data.draw(st.integers(0, len(targets)))
    targets = [*targets[:index], wrong, *targets[index:]]
    source = digit_sums(targets)
    if wrong in range(19):  # (7.0 == 7: a value of a sentence)
        assert evaluate_grammar_pipeline(DIGIT_SUM, source, "cpu")["accuracy"] >= 0
        return
    message = rf"the target of example {index}, {re.escape(repr(wrong))}, is no value of the 100 sentences of length 3"
    with pytest.raises(ValueError, match=message):
        evaluate_grammar_pipeline(DIGIT_SUM, source, "cpu")
    with pytest.raises(ValueError, match=message):
        train_grammar_pipeline(DIGIT_SUM, source, PipelineConfig(steps=1, batch_size=2), "cpu")


def test_targets_of_lengths_with_many_sentences_are_left_to_abduction(monkeypatch):
    """Where a length has more sentences than are run to learn their values, no target of that length is refused."""
    from neurosym.pipelines import grammar_pipeline

    monkeypatch.setattr(grammar_pipeline, "SENTENCES_ENUMERATED", 99)
    assert evaluate_grammar_pipeline(DIGIT_SUM, digit_sums([-1, 3]), "cpu")["accuracy"] == 0.0
    with pytest.raises(TypeError, match="the target of example 1: target is None"):  # (every target is checked)
        evaluate_grammar_pipeline(DIGIT_SUM, digit_sums([3, None]), "cpu")


@pytest.mark.parametrize(
    ("truth", "error"),
    [
        ("01 + 01", r"symbol ' ' at position 2 is not in the grammar's vocabulary; expected BIT \('0', '1'\) or '\+'"),
        ("0101", r"the sentence ends too early at position 4; expected BIT \('0', '1'\) or '\+'"),
    ],
)
def test_true_sentences_that_are_no_sentences_of_the_grammar_are_named_with_their_parse_error(truth, error):
    """Such a true sentence gave the value None, and the message spoke of the targets' kind though they were right."""
    grammar = SymbolGrammar('start: BIT+ PLUS BIT+\nBIT: "0" | "1"\nPLUS: "+"\n')
    pipeline = GrammarPipeline(grammar, TreeSemantics({"start": len}), Uniform(["0", "1"]))
    source = _BitSums(torch.int64)
    source.truths = [truth] * len(source)  # (an instance's own: the class's stay as they are)
    with pytest.raises(
        ValueError,
        match=rf"true sentences executes to its target: '{re.escape(truth)}' is no sentence of the grammar \({error}\)",
    ):
        evaluate_grammar_pipeline(pipeline, source, "cpu")


@pytest.mark.parametrize("text", ['start: z\nx:\n?z: "a" x\n', 'start: z "b"\nx: "c"?\n?z: "a" x\n'])
def test_a_rule_replaced_by_an_empty_rules_node_is_placed_where_the_rule_is(text):
    """Lark placed the empty ``x`` that takes the place of ``?z`` at the start of ``a`` but not to its end, then read
    that end: ``a`` raised ``AttributeError: 'Meta' object has no attribute 'end_line'`` from parse and accepts."""
    grammar = SymbolGrammar(text)
    sentence = "a" if grammar.accepts("a") else "ab"
    tree = grammar.parse(sentence)
    (x, *_) = tree.children
    assert (x.data, x.children, x.meta.start_pos, x.meta.end_pos) == ("x", [], 0, 1)
    assert (tree.meta.start_pos, tree.meta.end_pos) == (0, len(sentence))


RULE_ITEMS = ["x", "y", "z", '"a"', "B", '"a"?', "y*", "[z]"]


@settings(max_examples=60, deadline=None)
@given(
    alternatives=st.lists(
        st.lists(st.lists(st.sampled_from(RULE_ITEMS), max_size=3), min_size=1, max_size=3), min_size=3, max_size=3
    ),
    inlined=st.lists(st.booleans(), min_size=3, max_size=3),
)
@example(alternatives=[[["z"]], [[]], [['"a"', "y"]]], inlined=[False, False, True])  # ?z: "a" y, with y empty
def test_any_grammar_parses_every_sentence_or_names_the_parse_error(alternatives, inlined):
    """Rules of any shape (empty ones, ?rules, repeats): each short sentence parses, or its ParseError is raised."""
    rules = [
        f"{'?' * mark}{name}: " + " | ".join(" ".join(items) for items in bodies)
        for name, bodies, mark in zip("xyz", alternatives, inlined, strict=True)
    ]
    try:
        grammar = SymbolGrammar("start: x\n" + "\n".join(rules) + '\nB: "b"\n')
    except ValueError:  # a grammar without a sentence of some terminal
        return
    for length in range(4):
        for sentence in map("".join, itertools.product(grammar.symbols, repeat=length)):
            try:
                grammar.parse(sentence)
            except ParseError:
                assert not grammar.accepts(sentence)
            else:
                assert grammar.accepts(sentence)


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ('start: e\ne: e "+" e | e "*" e | N | "(" e ")"\nN: "1" | "2"\n', "1+1+1"),  # (1+1)+1 or 1+(1+1)
        ('start: s\ns: "i" s | "i" s "e" s | "x"\n', "iixex"),  # the dangling else
        ('start: e\ne: "-" e | e "+" e | D\nD: "0".."9"\n', "-0+0"),  # -(0+0) or (-0)+0
    ],
)
def test_an_ambiguous_grammar_is_warned_of_with_a_sentence_of_several_trees(text, sentence):
    """Lark's Earley parser took one of a sentence's trees by its own order, silently: the values of such sentences
    could be other than meant."""
    from neurosym.syntax import AmbiguousGrammarWarning

    grammar = SymbolGrammar(text)
    with pytest.warns(AmbiguousGrammarWarning, match=rf"the grammar is ambiguous: {re.escape(repr(sentence))} has several"):
        GrammarPipeline(grammar, TreeSemantics(Nodes()), Uniform(list(grammar.symbols)))
    found, trees = grammar.ambiguous_sentence
    assert found == sentence and len(trees) == 2 and trees[0] != trees[1]


@pytest.mark.parametrize(
    "text",
    [
        'start: a | b\na: "x" a "y" | "x" "y"\nb: "x" b "y" "y" | "x" "y" "y"\n',  # Earley (not LALR(1)), one tree each
        'start: "a" start "a" | "b" start "b" | "a" | "b" |\n',  # Earley, one tree each
        'start: x+ x+\nx: "a"\n',  # several derivations of "aaa", all one tree: start(x, x, x)
        'start: e\n?e: e "+" t | t\n?t: D | "(" e ")"\nD: "0".."9"\n',  # LALR(1): never ambiguous
    ],
)
def test_a_grammar_whose_sentences_have_one_tree_each_is_not_warned_of(text):
    grammar = SymbolGrammar(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        GrammarPipeline(grammar, TreeSemantics(Nodes()), Uniform(list(grammar.symbols)))
    assert grammar.ambiguous_sentence is None
