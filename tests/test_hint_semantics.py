"""HINT semantics: exact executor, res_all, operator tables and run-time concepts."""

from __future__ import annotations

import copy
import math
import pickle
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from hint_strategies import trees
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.semantics import (
    HINT_FEWSHOT_SEMANTICS,
    HINT_SEMANTICS,
    RATIONAL_SEMANTICS,
    Operator,
    OperatorTable,
    evaluate,
    execute,
    solve_batch,
)
from neurosym.semantics import operators as operator_module
from neurosym.semantics.executor import subexpression_values
from neurosym.semantics.preimage import Interval, operand_preimages
from neurosym.syntax import Node, ParseError, heads, parse, to_infix, tokens
from neurosym.syntax.printing import infix_layout

BRACKETS = ("(", ")")


NINES = "*".join("9" * 40)  # 9**40, beyond int64 and float precision


class Invalid(Exception):
    """Raised by the reference evaluator for an undefined result."""


def reference_hint(node: Node) -> int:
    """The paper's semantics written directly from its definitions, with fractions and math.ceil."""
    if not node.children:
        return int(node.symbol)
    a, b = (reference_hint(child) for child in node.children)
    if node.symbol == "+":
        return a + b
    if node.symbol == "-":
        return max(0, a - b)
    if node.symbol == "*":
        return a * b
    if b == 0:
        raise Invalid
    return math.ceil(Fraction(a, b))


def reference_or_none(node: Node) -> int | None:
    try:
        return reference_hint(node)
    except Invalid:
        return None


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3-5*2", 0),
        ("7/(2-2)", None),
        ("7/2", 4),
        ("6/3", 2),
        ("0/5", 0),
        ("9/2/2", 3),
        ("2-7", 0),
        ("(1-3)*4+1", 1),
        ("1+(3/(2-2))*0", None),
        ("9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9", 9**21),
        ("((4))", 4),
        (f"({NINES}+1)/({NINES})", 2),  # a float quotient of 9**40 + 1 and 9**40 is 1.0
        (f"({NINES})-({NINES}+1)", 0),
        (f"{NINES}/({NINES}*9-1)", 1),
    ],
)
def test_evaluate_examples(text, value):
    assert evaluate(text) == value


def test_evaluate_rejects_non_expressions():
    with pytest.raises(ParseError, match="position 2"):
        evaluate("3+")
    with pytest.raises(ParseError, match="position 1"):
        evaluate("12")


def test_a_sentence_where_a_tree_belongs_and_a_missing_table_are_named():
    for call in (lambda: execute("1+2"), lambda: to_infix("1+2"), lambda: tokens("1+2")):
        with pytest.raises(TypeError, match=r"takes a parse tree \(neurosym.syntax.parse\(text\)\), got str '1\+2'"):
            call()
    with pytest.raises(TypeError, match="expected an OperatorTable .* got NoneType"):
        evaluate("1+2", None)
    assert execute(parse("1+2")).value == evaluate("1+2") == 3


def test_subexpression_values_names_a_missing_layout_and_table():
    """``None`` failed as "'NoneType' object has no attribute 'tokens'" (or 'numbers')."""
    layout = infix_layout(parse("1+2"), HINT_SEMANTICS.concepts)
    with pytest.raises(TypeError, match=r"expected an InfixLayout \(infix_layout\(tree, concepts\)\), got NoneType None"):
        subexpression_values(None)
    with pytest.raises(TypeError, match="expected an OperatorTable .* got NoneType"):
        subexpression_values(layout, None)
    assert subexpression_values(layout) == [1, 3, 2]


def test_res_all_of_a_known_expression():
    run = execute(parse("3-(5+2)*4"))
    assert run.value == 0
    assert run.res_all == [3, 0, -1, 5, 7, 2, -1, 28, 4]
    assert execute(parse("5/0+1")).res_all is None


@settings(max_examples=200, deadline=None)
@given(trees())
def test_executor_matches_reference_and_never_uses_floats(tree):
    expected = reference_or_none(tree)
    run = execute(tree)
    assert run.value == expected
    assert evaluate(to_infix(tree)) == expected
    if expected is not None:
        assert type(run.value) is int and all(type(v) is int for v in run.res_all)


@settings(max_examples=150, deadline=None)
@given(trees())
def test_res_all_is_consistent_with_heads(tree):
    run = execute(tree)
    if run.value is None:
        return
    infix, parent_of = tokens(tree), heads(tree)
    assert len(run.res_all) == len(infix)
    for index, symbol in enumerate(infix):
        operands = [j for j, p in enumerate(parent_of) if p == index and infix[j] not in BRACKETS]
        if symbol in BRACKETS:
            assert run.res_all[index] == -1
        elif not operands:
            assert run.res_all[index] == int(symbol)
        else:
            left, right = operands
            assert left < index < right
            a, b = run.res_all[left], run.res_all[right]
            assert run.res_all[index] == HINT_SEMANTICS.operators[symbol].apply(a, b)
    assert run.res_all[parent_of.index(-1)] == run.value


def test_rational_semantics_is_exact():
    assert evaluate("7/2-5", RATIONAL_SEMANTICS) == Fraction(-3, 2)
    assert evaluate("1/3+1/3+1/3", RATIONAL_SEMANTICS) == 1
    assert isinstance(evaluate("1/3", RATIONAL_SEMANTICS), Fraction)
    assert evaluate("4/(2-2)", RATIONAL_SEMANTICS) is None


def test_fewshot_concepts():
    table = HINT_FEWSHOT_SEMANTICS
    assert evaluate("x*y", table) == 132 and evaluate("y-x", table) == 1
    assert evaluate("3a7", table) == 7 and evaluate("3b7", table) == 3
    assert evaluate("3c4", table) == 4 and evaluate("3c5", table) == 4  # ⌈7/2⌉, ⌈8/2⌉
    assert evaluate("3d6", table) == 4  # ⌈36/9⌉
    assert evaluate("2d3", table) == 3  # ⌈12/5⌉
    assert evaluate("0d0", table) is None
    assert evaluate("1b9d9", table) == 1  # min(1, d(9, 9)): d binds tighter than b
    assert evaluate("(1b9)d9", table) == 2  # d(1, 9) = ⌈18/10⌉
    assert evaluate("9-2a5", table) == 7  # left-associative at the + − level
    with pytest.raises(ParseError):
        evaluate("3a7")  # the base table does not know the concept


def test_custom_operator_and_number_at_run_time():
    modulo = Operator(2, lambda a, b: None if b == 0 else a % b, description="a mod b")
    table = HINT_SEMANTICS.extend(numbers={"t": 10}, operators={"%": modulo})
    assert evaluate("7%4+1", table) == 4
    assert evaluate("1+7%4", table) == 4
    assert evaluate("t%3", table) == 1
    assert evaluate("t%0", table) is None
    assert to_infix(parse("(7%4)%3", table.concepts), table.concepts) == "7%4%3"
    assert to_infix(Node("%", (Node("7"), Node("+", (Node("1"), Node("2"))))), table.concepts) == "7%(1+2)"


def test_a_rule_that_raises_an_arithmetic_or_value_error_is_undefined_there():
    """``a // b`` as written raises for ``b = 0`` (and ``isqrt`` for a negative operand): the result is ``None``, as
    for a rule returning ``None``; an error of another kind (a programming error) still propagates."""
    rules = {"/": Operator(2, lambda a, b: a // b), "r": Operator(1, lambda a, b: math.isqrt(a - b))}
    table = HINT_SEMANTICS.extend(operators=rules)
    assert evaluate("8/3", table) == 2 and evaluate("9r5", table) == 2
    assert evaluate("8/0", table) is None and evaluate("1+8/0*0", table) is None and evaluate("5r9", table) is None
    assert execute(parse("8/0+1", table.concepts), table) == execute(parse("8/0+1"))
    mistyped = HINT_SEMANTICS.extend(operators={"/": Operator(2, lambda a, b: a // str(b))})
    with pytest.raises(TypeError):
        evaluate("8/2", mistyped)


@pytest.mark.parametrize("symbols", [["x"], [("x", 11)], "x", None, 11])
def test_numbers_and_operators_that_are_no_mapping_are_named(symbols):
    """A list failed inside dict() ("cannot convert dictionary update sequence element") or in extend ("'list' object
    is not a mapping"), without naming the argument."""
    if symbols is not None:  # (extend reads None as no symbols added)
        for field_name in ("numbers", "operators"):
            with pytest.raises(TypeError, match=f"extend: {field_name} must be a mapping symbol -> meaning, got"):
                HINT_SEMANTICS.extend(**{field_name: symbols})
    with pytest.raises(TypeError, match="operator table 'custom': numbers must be a mapping symbol -> meaning, got"):
        OperatorTable(symbols, dict(HINT_SEMANTICS.operators))
    with pytest.raises(TypeError, match="operator table 'custom': operators must be a mapping symbol -> meaning, got"):
        OperatorTable(dict(HINT_SEMANTICS.numbers), symbols)


def test_operator_table_validation():
    with pytest.raises(ValueError, match="lacks the built-in symbols"):
        OperatorTable({"0": 0}, dict(HINT_SEMANTICS.operators))
    with pytest.raises(ValueError, match="must keep precedence level 1"):
        HINT_SEMANTICS.extend(operators={"+": Operator(2, lambda a, b: a + b)})
    with pytest.raises(ValueError, match="level must be the int 1"):
        HINT_SEMANTICS.extend(operators={"q": Operator(3, max)})
    for level, shown in [(True, "bool True"), (1.0, "float 1.0"), (2.0, "float 2.0")]:  # (equal 1 or 2)
        with pytest.raises(ValueError, match=rf"operator 'q': level must be the int 1 .* or 2 .*, got {shown}"):
            HINT_SEMANTICS.extend(operators={"q": Operator(level, max)})
    assert HINT_SEMANTICS.extend(operators={"q": Operator(np.int64(2), max)}).concepts.multiplicative == ("q",)
    with pytest.raises(ValueError, match=r"operator 'q' must be an Operator\(level, apply\), got <built-in function max>"):
        HINT_SEMANTICS.extend(operators={"q": max})
    with pytest.raises(ValueError, match=r"operator '\+' must be an Operator\(level, apply\), got <built-in function max>"):
        HINT_SEMANTICS.extend(operators={"+": max})  # a built-in symbol redefined by a bare function
    with pytest.raises(ValueError, match="reserved"):
        HINT_SEMANTICS.extend(numbers={"(": 5})
    # (failed at the first evaluation as "'int' object is not callable", and at a batch's first solve as a rule that
    # raised: the description taken for a vectorised rule)
    for operator, role, rule in [
        (Operator(1, 5), r"scalar rule \(apply\)", "int 5"),
        (Operator(1, None, HINT_SEMANTICS.operators["+"].vectorised), r"scalar rule \(apply\)", "NoneType None"),
        (Operator(1, max, "max(a, b)"), "vectorised rule", "str 'max\\(a, b\\)'"),
    ]:
        with pytest.raises(ValueError, match=rf"operator 'q': its {role} must be callable, got {rule} \(an Operator is"):
            HINT_SEMANTICS.extend(operators={"q": operator})
    assert HINT_SEMANTICS.extend(operators={"q": Operator(1, max)}).operators["q"].vectorised is None
    with pytest.raises(ValueError, match="both numbers and operators"):
        HINT_SEMANTICS.extend(numbers={"q": 1}, operators={"q": Operator(1, max)})
    for value in ("five", None, math.nan, True):  # each failed later, or computed NaN
        with pytest.raises(ValueError, match="number 'q': its value must be an int or a Fraction"):
            HINT_SEMANTICS.extend(numbers={"q": value})
    assert HINT_SEMANTICS.extend(numbers={"q": Fraction(1, 2)}).numbers["q"] == Fraction(1, 2)
    with pytest.raises(ValueError, match="unknown symbol 'x'"):
        execute(Node("x"))


def test_a_numpy_int_is_a_number_value_stored_as_a_python_int() -> None:
    table = HINT_SEMANTICS.extend(numbers={"z": np.int64(5)})  # was refused: "must be an int or a Fraction"
    assert type(table.numbers["z"]) is int
    assert execute(parse("z*3", table.concepts), table).value == 15
    for value in (np.True_, np.float64(5.0)):
        with pytest.raises(ValueError, match=r"number 'z': its value must be an int or a Fraction, got "):
            HINT_SEMANTICS.extend(numbers={"z": value})


@settings(max_examples=100, deadline=None)
@given(
    st.integers(-(2**30), 2**30),
    st.integers(-(2**30), 2**30),
    st.sampled_from(sorted(HINT_FEWSHOT_SEMANTICS.operators)),
)
def test_vectorised_rules_equal_scalar_rules(a, b, symbol):
    np = pytest.importorskip("numpy")
    operator = HINT_FEWSHOT_SEMANTICS.operators[symbol]
    values, valid = operator.vectorised(np.array([a, b, 0], dtype=np.int64), np.array([b, 0, a], dtype=np.int64))
    valid = np.ones(3, dtype=bool) if valid is None else valid  # None: defined everywhere
    for (x, y), value, ok in zip([(a, b), (b, 0), (0, a)], values.tolist(), valid.tolist()):
        expected = operator.apply(x, y)
        assert ok == (expected is not None)
        if ok:
            assert value == expected


def test_a_numpy_integer_from_an_operator_rule_is_read_as_a_python_int():
    # (it was passed on: the operators above it wrapped around at 2**63, and the batch solver returned np.int64)
    table = HINT_SEMANTICS.extend(operators={"q": Operator(2, lambda a, b: np.int64(a + b))})
    sentence = "(1q0)*" + "*".join("9" * 25)
    run = execute(parse(sentence, table.concepts), table)
    assert run.value == 9**25 and all(type(value) is int for value in run.res_all)
    assert solve_batch([sentence, "2q3"], table) == [9**25, 5]
    assert [type(value) for value in solve_batch([sentence, "2q3"], table)] == [int, int]


def test_an_operator_rule_that_returns_a_float_is_named_not_passed_on():
    true_divide = HINT_SEMANTICS.extend(operators={"q": Operator(1, lambda a, b: a / b)})
    for solve in (lambda: evaluate("3q2", true_divide), lambda: solve_batch(["1+1", "3q2"], true_divide)):
        with pytest.raises(ValueError, match=r"operator 'q' gave 1.5 for 3 and 2: an operator's rule returns an int, a Fraction"):
            solve()
    exact = HINT_SEMANTICS.extend(operators={"q": Operator(1, lambda a, b: Fraction(a, b))})
    assert evaluate("3q2", exact) == Fraction(3, 2) and solve_batch(["3q2", "4q2"], exact) == [Fraction(3, 2), 2]


def _modulo(a, b):
    """A user's rule that pickles (a module-level function): ``a mod b``, undefined for ``b = 0``."""
    return None if b == 0 else a % b


MODULO_TABLE = HINT_FEWSHOT_SEMANTICS.extend({"t": 10}, {"%": Operator(2, _modulo, description="a mod b")}, "modulo")
TABLES = (HINT_SEMANTICS, HINT_FEWSHOT_SEMANTICS, RATIONAL_SEMANTICS, MODULO_TABLE)
COPIERS = {"pickle": lambda table: pickle.loads(pickle.dumps(table)), "deepcopy": copy.deepcopy, "copy": copy.copy}


@pytest.mark.parametrize("copier", sorted(COPIERS))
@pytest.mark.parametrize("table", TABLES, ids=lambda table: table.name)
def test_a_table_pickles_and_copies_its_built_in_operators_as_themselves(table, copier):
    # (pickle and deepcopy raised "cannot pickle 'mappingproxy' object"; a copied operator of this module was a new
    # object, whose closed-form preimages, recognised by identity, were lost)
    twin = COPIERS[copier](table)
    assert twin is not table and twin.name == table.name and dict(twin.numbers) == dict(table.numbers)
    assert twin.operators.keys() == table.operators.keys() and twin.concepts == table.concepts
    for symbol, operator in table.operators.items():
        assert twin.operators[symbol] == operator
        built_in = any(operator is meaning for meaning in vars(operator_module).values())
        assert (twin.operators[symbol] is operator) == (built_in or copier == "copy")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_copied_table_evaluates_and_solves_as_the_original(data):
    table = data.draw(st.sampled_from(TABLES), "table")
    twin = COPIERS[data.draw(st.sampled_from(sorted(COPIERS)), "copier")](table)
    operators = "".join(table.operators)
    tree = data.draw(trees("".join(table.numbers), operators.replace("/", "") if table is RATIONAL_SEMANTICS else operators))
    assert execute(tree, twin) == execute(tree, table)
    if table is not RATIONAL_SEMANTICS:  # (the batch solver takes integer numbers)
        sentence = to_infix(tree, table.concepts)
        assert solve_batch([sentence], twin) == solve_batch([sentence], table)


def test_a_copied_table_keeps_the_closed_form_preimages():
    # (a scan stops at 100 here: min(a, 5) = 5 for every a >= 5, max(0, 3 - b) = 0 for every b >= 3)
    for twin in (copier(table) for table in TABLES for copier in COPIERS.values()):
        if "b" in twin.operators:
            assert operand_preimages(twin.operators["b"], Interval.point(5), 7, 5) == (Interval(5), Interval(5, 5))
        if twin.operators["-"] is operator_module.CLAMPED_MINUS:
            assert operand_preimages(twin.operators["-"], Interval.point(0), 3, 7) == (Interval(0, 7), Interval(3))


def test_every_operator_of_the_operators_module_pickles_and_copies_as_itself():
    meanings = {name: value for name, value in vars(operator_module).items() if isinstance(value, Operator)}
    assert {"PLUS", "CLAMPED_MINUS", "TIMES", "CEIL_DIVIDE", "MAXIMUM", "MINIMUM", "CEIL_HARMONIC"} <= meanings.keys()
    for meaning in meanings.values():
        assert all(copier(meaning) is meaning for copier in COPIERS.values())
    mine = Operator(1, _modulo)
    assert all(copier(mine) == mine and copier(mine) is not mine for copier in COPIERS.values())


def test_a_table_unpickled_in_a_fresh_interpreter_keeps_the_closed_form_preimages():
    # (as a spawned DataLoader worker or multiprocessing pool reads it: its operators are that interpreter's own)
    script = (
        "import pickle, sys\n"
        "from neurosym.semantics.preimage import Interval, operand_preimages\n"
        "from neurosym.semantics.operators import MINIMUM\n"
        "table = pickle.loads(sys.stdin.buffer.read())\n"
        "assert table.operators['b'] is MINIMUM\n"
        "print(operand_preimages(table.operators['b'], Interval.point(5), 7, 5))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], input=pickle.dumps(HINT_FEWSHOT_SEMANTICS), capture_output=True, check=True
    )
    assert run.stdout.decode().strip() == repr((Interval(5), Interval(5, 5)))
