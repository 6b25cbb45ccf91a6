"""HINT grammar and syntax: parsing, errors, minimal parentheses, heads, conversions, concepts."""

from __future__ import annotations

import copy
import pickle

import networkx as nx
import pytest
from hint_strategies import trees
from hypothesis import given, settings

from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, Operator, evaluate, execute, solve_batch
from neurosym.syntax import (
    ADDITIVE,
    ALIASES,
    BUILTIN_OPERATORS,
    ConceptTable,
    Node,
    ParseError,
    UnexpectedCharacterError,
    UnexpectedEndError,
    UnexpectedSymbolError,
    canonical_sentence,
    from_prefix,
    grammar_text,
    heads,
    infix_layout,
    lark_parser,
    parse,
    to_infix,
    to_networkx,
    to_postfix,
    to_prefix,
    tokens,
)

LEVEL = {"+": 1, "-": 1, "*": 2, "/": 2}
CONCEPTS = ConceptTable(numbers=("x", "y"), additive=("a", "b"), multiplicative=("c", "d"))
CONCEPT_LEVEL = LEVEL | {"a": 1, "b": 1, "c": 2, "d": 2}


def reference_layout(node: Node, level: dict[str, int]) -> tuple[list[str], list[int]]:
    """An independent recursive printer: (tokens, heads) with the release's bracketing rule."""
    out_tokens: list[str] = []
    out_heads: list[int] = []

    def emit(current: Node, parent: int, bracketed: bool) -> int:
        if not current.children:
            out_tokens.append(current.symbol)
            out_heads.append(parent)
            return len(out_tokens) - 1
        open_at = None
        if bracketed:
            out_tokens.append("(")
            out_heads.append(None)
            open_at = len(out_tokens) - 1
        left, right = current.children
        mine = level[current.symbol]
        left_at = emit(left, None, left.children != () and level[left.symbol] < mine)
        out_tokens.append(current.symbol)
        out_heads.append(parent)
        me = len(out_tokens) - 1
        emit(right, me, right.children != () and level[right.symbol] <= mine)
        out_heads[left_at] = me
        if bracketed:
            out_tokens.append(")")
            out_heads.append(me)
            out_heads[open_at] = me
        return me

    emit(node, -1, False)
    return out_tokens, out_heads


@pytest.mark.parametrize(
    ("text", "kind", "position", "char", "expected"),
    [
        ("3+", UnexpectedEndError, 2, None, ("a number", "'('")),
        ("(2", UnexpectedEndError, 2, None, ("an operator", "')'")),
        ("12", UnexpectedSymbolError, 1, "2", ("an operator", "the end of input")),
        ("", UnexpectedEndError, 0, None, ("a number", "'('")),
        ("   ", UnexpectedEndError, 3, None, ("a number", "'('")),
        ("3&4", UnexpectedCharacterError, 1, "&", ("an operator", "the end of input")),
        ("x+1", UnexpectedCharacterError, 0, "x", ("a number", "'('")),
        ("3+4)", UnexpectedSymbolError, 3, ")", ("an operator", "the end of input")),
        ("()", UnexpectedSymbolError, 1, ")", ("a number", "'('")),
        ("3++4", UnexpectedSymbolError, 2, "+", ("a number", "'('")),
        ("(3+4)(5)", UnexpectedSymbolError, 5, "(", ("an operator", "the end of input")),
        ("2 * ( 3 ", UnexpectedEndError, 8, None, ("an operator", "')'")),
    ],
)
def test_bad_input_names_position_character_and_expectation(text, kind, position, char, expected):
    with pytest.raises(kind) as caught:
        parse(text)
    error = caught.value
    assert isinstance(error, ParseError) and isinstance(error, ValueError)
    assert (error.position, error.char, error.expected) == (position, char, expected)
    message = str(error)
    assert message.startswith(f"position {position}: unexpected ")
    assert ("end of input" if char is None else repr(char)) in message
    assert all(word in message for word in expected)


def test_an_error_deep_in_a_long_text_quotes_only_the_last_characters_before_it():
    """The message quoted the whole text before the error: 100,000 characters for a text that long."""
    with pytest.raises(UnexpectedSymbolError) as caught:
        parse("1+" * 50_000 + "+")
    message = str(caught.value)
    assert caught.value.position == 100_000 and len(message) < 200
    assert "after '…" + "1+" * 20 + "'" in message


@pytest.mark.parametrize("text", ["3+", "12", "3&4"])
def test_parse_errors_pickle_and_copy_with_their_fields(text):
    # (each failed: ParseError.__init__() missing 3 required positional arguments, so one raised in a worker process
    # could not reach the parent)
    with pytest.raises(ParseError) as caught:
        parse(text)
    error = caught.value
    for twin in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
        assert type(twin) is type(error) and str(twin) == str(error)
        assert (twin.position, twin.char, twin.expected) == (error.position, error.char, error.expected)


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        ("", 0, "is empty"),
        (" ", 1, "holds only whitespace"),
        ("   ", 3, "holds only whitespace"),
        ("\n\t", 2, "holds only whitespace"),
    ],
)
def test_an_empty_sentence_is_named_empty(text, position, problem):
    """The end of a text of spaces was said to be "at the start", at a position past it."""
    with pytest.raises(UnexpectedEndError) as caught:
        parse(text)
    assert str(caught.value) == f"position {position}: unexpected end of input: the sentence {problem}, expected a number or '('"
    assert caught.value.position == position


def test_message_reads_naturally():
    with pytest.raises(ParseError, match=r"^position 2: unexpected end of input after '3\+', expected a number or '\('$"):
        parse("3+")


def test_parse_builds_left_associative_tree_with_token_spans():
    tree = parse("3-(5+2)*4")
    five_plus_two = Node("+", (Node("5"), Node("2")))
    assert tree == Node("-", (Node("3"), Node("*", (five_plus_two, Node("4")))))
    assert tree.span == (0, 9)
    assert tree.children[1].span == (2, 9)
    assert tree.children[1].children[0].span == (2, 7)  # brackets included
    assert parse("8-4-2") == Node("-", (Node("-", (Node("8"), Node("4"))), Node("2")))
    assert parse("8/4*2") == Node("*", (Node("/", (Node("8"), Node("4"))), Node("2")))


def test_spaces_are_ignored_and_spans_count_tokens():
    spaced = parse(" 3 -  ( 5+2 ) * 4 ")
    assert spaced == parse("3-(5+2)*4")
    assert [spaced.span, spaced.children[0].span, spaced.children[1].children[0].span] == [(0, 9), (0, 1), (2, 7)]


@pytest.mark.parametrize("blank", ["\t", "\n", "\r\n", "\u00a0", "\u3000", "\x0b\x0c"])
def test_whitespace_of_every_kind_is_ignored_as_spaces_are(blank):
    """A line read from a file ends in a line end, and a tab or a no-break space separates symbols as a space does: each
    was an UnexpectedCharacterError. Spans still count tokens, and an error's position counts every character."""
    text = f"{blank}3{blank}-(5+2){blank}*4{blank}"
    tree = parse(text)
    assert tree == parse("3-(5+2)*4") and tree.span == (0, 9) and tree.children[1].children[0].span == (2, 7)
    assert evaluate(text) == solve_batch([text])[0] == 0
    assert canonical_sentence(text) == "3-(5+2)*4"
    with pytest.raises(UnexpectedSymbolError) as caught:
        parse(f"3{blank}4")
    assert caught.value.position == 1 + len(blank) and caught.value.char == "4"


@pytest.mark.parametrize("bad", [5, None, ["3", "+", "4"], b"3+4"])
def test_canonical_sentence_names_text_that_is_no_str(bad):
    """re's "expected string or bytes-like object, got 'int'" named neither the function nor its argument."""
    with pytest.raises(TypeError, match=rf"^canonical_sentence takes a sentence \(str\), got {type(bad).__name__}"):
        canonical_sentence(bad)


def test_typeset_operators_are_normalised():
    assert parse("6×(4÷2)−1") == parse("6*(4/2)-1")
    assert to_infix(parse("6×(4÷2)−1")) == "6*(4/2)-1"
    assert set(ALIASES.values()) <= set(BUILTIN_OPERATORS)


@pytest.mark.parametrize("symbol", sorted(BUILTIN_OPERATORS) + sorted(ALIASES))
def test_grammar_and_python_agree_on_precedence(symbol):
    canonical = ALIASES.get(symbol, symbol)
    tree = parse(f"1+2{symbol}3")
    if BUILTIN_OPERATORS[canonical] == 2:  # binds tighter than +
        assert tree == Node("+", (Node("1"), Node(canonical, (Node("2"), Node("3")))))
    else:  # same level as +: left-associative
        assert tree == Node(canonical, (Node("+", (Node("1"), Node("2"))), Node("3")))


def test_redundant_brackets_and_deep_nesting():
    assert parse("((7))") == Node("7")
    depth = 600
    assert parse("(" * depth + "1+2" + ")" * depth) == Node("+", (Node("1"), Node("2")))
    chain = parse("+".join("9" * 800))
    assert to_infix(chain) == "+".join("9" * 800)
    spaced = parse(" + ".join("9" * 1500))  # spans re-indexed without recursion
    assert spaced.span == (0, 2999) and spaced.children[1].span == (2998, 2999)
    right_nested = parse("1-(" * 400 + "1" + ")" * 400)  # the innermost "(1)" is redundant
    assert to_infix(right_nested) == "1-(" * 399 + "1-1" + ")" * 399
    assert len(heads(right_nested)) == 4 * 399 + 3


@settings(max_examples=150, deadline=None)
@given(trees())
def test_round_trip_infix_parse(tree):
    text = to_infix(tree)
    assert parse(text) == tree
    assert tokens(tree) == list(text)


@settings(max_examples=150, deadline=None)
@given(trees())
def test_heads_and_tokens_match_an_independent_printer(tree):
    expected_tokens, expected_heads = reference_layout(tree, LEVEL)
    assert tokens(tree) == expected_tokens
    assert heads(tree) == expected_heads
    assert heads(tree).count(-1) == 1


def _bracket_pairs(text: str) -> list[tuple[int, int]]:
    pairs, open_at = [], []
    for index, char in enumerate(text):
        if char == "(":
            open_at.append(index)
        elif char == ")":
            pairs.append((open_at.pop(), index))
    return pairs


@settings(max_examples=100, deadline=None)
@given(trees())
def test_parentheses_are_minimal(tree):
    text = to_infix(tree)
    for start, end in _bracket_pairs(text):
        reduced = text[:start] + text[start + 1 : end] + text[end + 1 :]
        try:
            assert parse(reduced) != tree
        except ParseError:
            pass


def test_known_bracketing():
    cases = {
        "(2*3)*4": "2*3*4",
        "2*(3*4)": "2*(3*4)",
        "(1+2)*3": "(1+2)*3",
        "1-(2+3)": "1-(2+3)",
        "(1-2)+3": "1-2+3",
        "1+(2*3)": "1+2*3",
        "(8/4)/(2/1)": "8/4/(2/1)",
    }
    for source, minimal in cases.items():
        assert to_infix(parse(source)) == minimal


@settings(max_examples=100, deadline=None)
@given(trees())
def test_prefix_and_postfix(tree):
    prefix, postfix = to_prefix(tree), to_postfix(tree)
    assert from_prefix(prefix) == tree
    assert sorted(prefix) == sorted(postfix) == sorted(t for t in tokens(tree) if t not in "()")
    stack: list[Node] = []
    for symbol in postfix:  # rebuild from postfix independently
        if symbol in LEVEL:
            right, left = stack.pop(), stack.pop()
            stack.append(Node(symbol, (left, right)))
        else:
            stack.append(Node(symbol))
    assert stack == [tree]


def test_prefix_examples_and_errors():
    tree = parse("3-(5+2)*4")
    assert to_prefix(tree) == ["-", "3", "*", "+", "5", "2", "4"]
    assert to_postfix(tree) == ["3", "5", "2", "+", "4", "*", "-"]
    with pytest.raises(ValueError, match="lacks operands"):
        from_prefix(["+", "3"])
    with pytest.raises(ValueError, match="2 separate expressions"):
        from_prefix(["3", "4"])
    with pytest.raises(ValueError, match="no symbols"):
        from_prefix([])
    with pytest.raises(ValueError, match="unknown symbol 'q'"):
        from_prefix(["q"])
    for symbols, named in (
        (None, "got NoneType"),
        (5, "got int"),
        ([["+"], "1", "2"], r"position 0: a symbol must be a str, got list \['\+'\]"),
    ):
        with pytest.raises(TypeError, match=named):  # (None and 5 failed on len(), a list as unhashable)
            from_prefix(symbols)  # type: ignore[arg-type]
    assert from_prefix(iter(["+", "1", "2"])) == from_prefix("+12") == parse("1+2")
    for convert in (to_prefix, to_postfix):  # (wrote ['+', '1'], which from_prefix cannot rebuild)
        with pytest.raises(ValueError, match="operator '\\+' needs 2 operands, got 1"):
            convert(Node("+", (Node("1"),)))
        with pytest.raises(ValueError, match="number '1' cannot have operands"):
            convert(Node("1", (Node("2"), Node("3"))))
    concepts = ConceptTable(additive=("@",))
    assert to_prefix(Node("@", (Node("1"), Node("2"))), concepts) == ["@", "1", "2"]


@settings(max_examples=60, deadline=None)
@given(trees())
def test_networkx_graph_is_the_tree(tree):
    graph = to_networkx(tree)
    infix = tokens(tree)
    symbols = [t for t in infix if t not in "()"]
    assert graph.number_of_nodes() == len(symbols)
    assert nx.is_arborescence(graph)
    for index, data in graph.nodes(data=True):
        assert infix[index] == data["symbol"]
        assert graph.out_degree(index) == (2 if data["symbol"] in LEVEL else 0)
    for parent, child in graph.edges:
        assert heads(tree)[child] == parent


def test_networkx_attributes_carry_spans_and_values():
    tree = parse("3-(5+2)*4")
    values = [3, 0, -1, 5, 7, 2, -1, 28, 4]
    graph = to_networkx(tree, values=values)
    assert graph.nodes[1] == {"symbol": "-", "span": (0, 9), "value": 0}
    assert graph.nodes[4] == {"symbol": "+", "span": (2, 7), "value": 7}
    assert graph.graph["infix"] == "3-(5+2)*4"
    with pytest.raises(ValueError, match="values has 2 entries for 9"):
        to_networkx(tree, values=[1, 2])
    with pytest.raises(TypeError, match="values must be a sequence of one value per infix token, got list_iterator"):
        to_networkx(tree, values=iter(values))  # (was len()'s TypeError, naming no argument)


def test_concepts_extend_the_language_at_both_levels():
    tree = parse("x a 3 c y", CONCEPTS)
    assert tree == Node("a", (Node("x"), Node("c", (Node("3"), Node("y")))))
    assert parse("1b2d3-4", CONCEPTS) == Node("-", (Node("b", (Node("1"), Node("d", (Node("2"), Node("3"))))), Node("4")))
    low_under_high = Node("c", (Node("a", (Node("1"), Node("2"))), Node("3")))
    assert to_infix(low_under_high, CONCEPTS) == "(1a2)c3"
    assert heads(low_under_high, CONCEPTS) == [2, 2, 5, 2, 2, -1, 5]
    with pytest.raises(UnexpectedCharacterError, match="position 1"):
        parse("1a2")  # not in the base language
    with pytest.raises(UnexpectedEndError) as caught:
        parse("1a2+", CONCEPTS)
    assert caught.value.expected == ("a number", "'('")
    with pytest.raises(UnexpectedEndError) as caught:
        parse("(1a2", CONCEPTS)
    assert caught.value.expected == ("an operator", "')'")


def test_a_tree_of_added_concepts_read_without_them_is_told_to_take_them():
    """Printed or executed without the concepts it was parsed with, such a tree met only "unknown symbol 'a': neither a
    number nor an operator of this language"."""
    tree = parse("x a 3", CONCEPTS)
    expected = (
        r"unknown symbol 'a'.* \(numbers 0123456789, operators \+-\*/\).* concepts=table.concepts, or execute\(tree, table\)$"
    )
    for read in (to_infix, heads, to_prefix, to_networkx, lambda tree: execute(tree)):
        with pytest.raises(ValueError, match=expected):
            read(tree)
    with pytest.raises(ValueError, match=r"unknown symbol '\^'.* \(numbers 0123456789xy, operators \+-\*/abcd\)"):
        to_infix(Node("^", (Node("1"), Node("2"))), CONCEPTS)
    assert execute(tree, HINT_FEWSHOT_SEMANTICS).value == 11 and to_infix(tree, CONCEPTS) == "xa3"


def test_concept_symbols_beyond_the_basic_plane_parse_as_the_solver_reads_them():
    table = HINT_SEMANTICS.extend({"😀": 5}, {"é": Operator(ADDITIVE, lambda a, b: a * 10 + b)})
    assert parse("😀é1", table.concepts) == Node("é", (Node("😀"), Node("1")))
    assert evaluate("😀é1", table) == solve_batch(["😀é1"], table)[0] == 51


@settings(max_examples=80, deadline=None)
@given(trees(numbers="0123456789xy", operators="+-*/abcd"))
def test_concept_round_trip_and_heads(tree):
    text = to_infix(tree, CONCEPTS)
    assert parse(text, CONCEPTS) == tree
    assert (tokens(tree, CONCEPTS), heads(tree, CONCEPTS)) == reference_layout(tree, CONCEPT_LEVEL)


@pytest.mark.parametrize("field_name", ["numbers", "additive", "multiplicative"])
@pytest.mark.parametrize("symbols", [None, 5, 1.5])
def test_concept_symbols_that_are_no_iterable_are_named(field_name, symbols):
    """They failed in tuple() as "'NoneType' object is not iterable", naming neither the table nor the field."""
    with pytest.raises(TypeError, match=f"ConceptTable's {field_name} must be symbols .*, got {symbols!r}"):
        ConceptTable(**{field_name: symbols})


def test_concept_table_validation_and_parser_cache():
    assert lark_parser(ConceptTable(("x",))) is lark_parser(ConceptTable(("x",)))
    with pytest.raises(ValueError, match="single character"):
        ConceptTable(numbers=("xy",))
    with pytest.raises(ValueError, match="reserved"):
        ConceptTable(additive=("+",))
    with pytest.raises(ValueError, match="reserved"):
        ConceptTable(numbers=("7",))
    with pytest.raises(ValueError, match="declared twice"):
        ConceptTable(numbers=("x",), multiplicative=("x",))
    assert ConceptTable(numbers="xy", additive=["a"]) == ConceptTable(numbers=("x", "y"), additive=("a",))  # (hashable)
    with pytest.raises(ValueError, match="unknown symbol 'q'"):
        to_infix(Node("q"))
    with pytest.raises(ValueError, match="needs 2 operands"):
        to_infix(Node("+", (Node("1"),)))
    with pytest.raises(TypeError, match="expects a string"):
        parse(12)


@pytest.mark.parametrize("table", [ConceptTable(), CONCEPTS, HINT_FEWSHOT_SEMANTICS.concepts])
def test_concept_tables_pickle_and_copy_once_their_operators_are_read(table):
    # (each failed once parsing or printing had read table.operators: cannot pickle 'mappingproxy' object)
    to_infix(parse("1+2*3", table), table)
    assert table.operators["+"] == ADDITIVE
    for twin in (pickle.loads(pickle.dumps(table)), copy.copy(table), copy.deepcopy(table)):
        assert twin == table and hash(twin) == hash(table) and dict(twin.operators) == dict(table.operators)
        assert lark_parser(twin) is lark_parser(table)


SYNTAX_CALLS = {  # every function of the syntax that takes a ConceptTable, called with ``table`` in its place
    "parse": lambda table: parse("x+1", table),
    "to_infix": lambda table: to_infix(parse("x+1", CONCEPTS), table),
    "tokens": lambda table: tokens(parse("x+1", CONCEPTS), table),
    "heads": lambda table: heads(parse("x+1", CONCEPTS), table),
    "infix_layout": lambda table: infix_layout(parse("x+1", CONCEPTS), table),
    "to_networkx": lambda table: to_networkx(parse("x+1", CONCEPTS), table),
    "to_prefix": lambda table: to_prefix(parse("x+1", CONCEPTS), table),
    "to_postfix": lambda table: to_postfix(parse("x+1", CONCEPTS), table),
    "from_prefix": lambda table: from_prefix(["+", "x", "1"], table),
    "grammar_text": grammar_text,
    "lark_parser": lark_parser,
}


@pytest.mark.parametrize("call", SYNTAX_CALLS.values(), ids=SYNTAX_CALLS.keys())
def test_an_operator_table_where_a_concept_table_belongs_is_named(call):
    # each raised AttributeError: 'OperatorTable' object has no attribute 'grammar_extension' (or 'precedence')
    with pytest.raises(
        TypeError, match=r"^expected a ConceptTable \(e.g. HINT_SEMANTICS.concepts\), got OperatorTable; pass its .concepts$"
    ):
        call(HINT_FEWSHOT_SEMANTICS)
    with pytest.raises(TypeError, match=r"^expected a ConceptTable \(e.g. HINT_SEMANTICS.concepts\), got dict$"):
        call({"numbers": ("x",)})
    call(HINT_FEWSHOT_SEMANTICS.concepts)  # what the message says to pass


@settings(max_examples=60, deadline=None)
@given(trees(), trees())
def test_trees_are_equal_and_hash_alike_exactly_when_their_prefix_forms_agree(first, second):
    assert (first == second) == (to_prefix(first) == to_prefix(second))
    assert first == parse(to_infix(first)) and hash(first) == hash(parse(to_infix(first)))


def test_trees_of_any_depth_compare_and_hash():
    sentence = "+".join(["1"] * 3000)  # 2,999 levels: the generated dataclass methods recursed past Python's limit
    assert parse(sentence) == parse(sentence) and len({parse(sentence), parse(sentence)}) == 1
    assert parse(sentence) != parse(sentence[:-1] + "2")
    assert repr(parse(sentence)).startswith("Node(symbol='+', children=(Node(symbol='+'")  # (repr recursed too)
    assert copy.deepcopy(parse(sentence)) == pickle.loads(pickle.dumps(parse(sentence))) == parse(sentence)  # (and these)


@given(trees())
def test_a_trees_repr_is_the_dataclass_form(tree):
    def dataclass_form(node):  # what @dataclass's recursive __repr__ prints
        children = ", ".join(map(dataclass_form, node.children)) + ("," if len(node.children) == 1 else "")
        return f"Node(symbol={node.symbol!r}, children=({children}), span={node.span!r})"

    assert repr(tree) == dataclass_form(tree)
    shared = Node("+", (tree, tree))  # one subtree object twice (the repr lost track of it: KeyError)
    assert repr(shared) == dataclass_form(shared)
    assert repr(pickle.loads(pickle.dumps(tree))) == repr(copy.deepcopy(tree)) == repr(tree)  # spans kept
    assert repr(Node("x", (Node("7"),))) == "Node(symbol='x', children=(Node(symbol='7', children=(), span=None),), span=None)"
