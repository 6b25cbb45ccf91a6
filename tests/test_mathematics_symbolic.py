"""The symbolic route answers DeepMind Mathematics arithmetic questions exactly as the generator does."""

from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.mathematics import read_module_file
from neurosym.semantics.mathematics_arithmetic import (
    ARITHMETIC_MODULES,
    QuestionError,
    answer_question,
    answer_tree,
    evaluate,
    format_in_base,
    format_rational,
    parse_question,
    symbolic_answers,
    to_sympy,
)
from neurosym.syntax import Node

FIXTURES = Path(__file__).resolve().parent / "data" / "mathematics"
MODULE_FILES = [(regime, module) for regime, modules in ARITHMETIC_MODULES.items() for module in modules]


def test_fixture_covers_big_and_longer_modules():
    names = {module for _, module in MODULE_FILES}
    assert {"arithmetic__add_or_sub_big", "arithmetic__mul_big", "arithmetic__div_big"} <= names
    assert {"arithmetic__add_sub_multiple_longer", "arithmetic__mixed_longer", "arithmetic__mul_div_multiple_longer"} <= names


@pytest.mark.parametrize(("regime", "module"), MODULE_FILES)
def test_answers_generated_questions_exactly(regime, module):
    pairs = read_module_file(FIXTURES / regime / f"{module}.txt")
    assert len(pairs) == 20
    assert [answer_question(question) for question, _ in pairs] == [answer for _, answer in pairs]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("What is 2 less than 5?", "3"),
        ("Subtract 0.5 from -1.", "-1.5"),
        ("What is the difference between -2 and 3?", "5"),
        ("What is the distance between 3 and -2?", "5"),
        ("Total of 0.1 and 0.2.", "0.3"),
        ("What is 4 take away -1.5?", "5.5"),
        ("Multiply 140 and 16.45.", "2303"),
        ("3+-2", "1"),
        ("Calculate 6 divided by -4.", "-3/2"),
        ("What is the value of 2 - (3 - 5)*-2/8?", "3/2"),
        ("In base 16, what is a + -1f?", "-15"),
        ("In base 2, what is 1 - 100?", "-11"),
        ("What is the square root of 17 to the nearest integer?", "4"),
        ("What is 26 to the power of 1/3, to the nearest integer?", "3"),
        ("What is the fifth root of 0 to the nearest integer?", "0"),
        ("What is -2**2 + 2**-1?", "-7/2"),
        ("What is sqrt(9/4)*2?", "3"),
        ("Simplify sqrt(8) + sqrt(2)*-1.", "sqrt(2)"),
        ("Simplify (1 + sqrt(3))**2.", "2*sqrt(3) + 4"),
    ],
)
def test_phrasings(question, answer):
    assert answer_question(question) == answer


def test_tree_is_canonical():
    assert parse_question("Subtract 3 from 10.") == Node("-", (Node("10"), Node("3")))
    assert parse_question("Put together 1 and -2.") == Node("+", (Node("1"), Node("neg", (Node("2"),))))
    question = "What is (1 + 2)*3?"
    tree = parse_question(question)
    assert tree.symbol == "*" and tree.children[0].symbol == "+"
    start, end = tree.children[0].span
    assert question[start:end] == "1 + 2" and question[slice(*tree.span)] == "(1 + 2)*3"


@pytest.mark.parametrize(
    ("question", "message"),
    [
        ("What is 5 +?", "column 12"),
        ("Compute 2 + 2.", "column 1"),
        ("What is 3/(2 - 2)?", "division by zero"),
        ("In base 2, what is 3 + 1?", "not a number in base 2"),
        ("In base 16, what is 0x1f + 1?", "'0x1f' at characters .* is not a number in base 16"),  # (Python's prefixes)
        ("In base 8, what is 1 - 0o7?", "'0o7' at characters .* is not a number in base 8"),
        # (digits beyond 9 in base 10: "1e5" was answered as 100000, "562c" raised ValueError from Fraction)
        ("In base 10, what is 1e5 + 1?", r"'1e5' at characters \(20, 23\) is not a number in base 10"),
        ("In base 10, what is -562c - 7146?", r"'562c' at characters \(21, 25\) is not a number in base 10"),
        ("What is 3 +", r"column 12 \(the question ends too early\)"),  # (Lark named the '+' at column 11)
        ("Calculate 3 + 4", r"column 16 \(the question ends too early\)"),
        ("", r"column 1 \(the question ends too early\)"),
        ("In base 1.5, what is 1 + 1?", "base '1.5'"),
        # (a decimal of integer value where an integer belongs: int("2.0") raised ValueError, 16.0 was answered 4)
        ("In base 2.0, what is 1 + 1?", r"base '2.0' at characters \(8, 11\) must be an integer in digits, at least 2"),
        ("What is the square root of 16.0 to the nearest integer?", "radicand '16.0' .* must be an integer in digits"),
        ("What is 26 to the power of 1/3.0, to the nearest integer?", "root degree '3.0' .* must be an integer in digits"),
        ("What is 8 to the power of 2/3, to the nearest integer?", "only powers 1/k"),
        ("What is sqrt(2)?", "not rational"),
        ("What is 0**-1?", "zero to the negative power"),
        ("What is 2**(1/2)?", "must be an integer"),
        ("Simplify 1/(sqrt(2) - sqrt(2)).", "division by zero"),
        # (answered "zoo", complex infinity: a zero that sympy does not write as 0, to a negative power)
        ("Simplify ((1 + sqrt(2))**2 - 3 - 2*sqrt(2))**-1.", r"zero to the negative power -1 at characters \(45, 47\)"),
        ("Simplify sqrt(-4).", r"sqrt of -4 at characters \(14, 16\) is not real"),  # (answered "2*I")
        ("Simplify sqrt(1 - sqrt(2)**2).", r"sqrt of -1 at characters \(14, 28\) is not real"),  # (answered "I")
        # a fractional power of a negative base, as sqrt: answered "2*I", "-8*I", "2*(-1)**(1/3)", "sqrt(1 - sqrt(2))"
        ("Simplify (-4)**(1/2).", r"-4 to the power 1/2 at characters \(16, 19\) is not real"),
        ("Simplify (-4)**(3/2).", r"-4 to the power 3/2 at characters \(16, 19\) is not real"),
        ("Simplify (-8)**(1/3).", "-8 to the power 1/3 .* is not real"),
        ("Simplify (1-sqrt(2))**(1/2).", r"1 - sqrt\(2\) to the power 1/2 at characters \(23, 26\) is not real"),
        # powers of sums that expand into more terms than a question may take (79 s, and 53 s as a power of a power)
        (
            "Simplify (sqrt(2)+sqrt(3)+sqrt(5)+sqrt(7))**100.",
            "the power at characters .* expands into 176851 terms, more than 20000",
        ),
        ("Simplify ((sqrt(2)+sqrt(3)+sqrt(5)+sqrt(7))**30)**3.", "expands into 129766 terms, more than 20000"),
    ],
)
def test_bad_questions_raise_clear_errors(question, message):
    with pytest.raises(QuestionError, match=message):
        answer_question(question)


def test_decimal_formatting():
    assert format_rational(Fraction(-1, 20), as_decimal=True) == "-0.05"
    assert format_rational(Fraction(12345, 1000), as_decimal=True) == "12.345"
    assert format_rational(Fraction(-2, 3)) == "-2/3"
    with pytest.raises(QuestionError, match="no terminating decimal"):
        format_rational(Fraction(1, 3), as_decimal=True)


@settings(max_examples=100, deadline=None)
@given(numerator=st.integers(-(10**15), 10**15), twos=st.integers(0, 12), fives=st.integers(0, 12))
def test_decimal_formatting_is_exact_and_minimal(numerator, twos, fives):
    value = Fraction(numerator, 2**twos * 5**fives)
    text = format_rational(value, as_decimal=True)
    assert Fraction(text) == value
    assert not text.endswith("0") or "." not in text
    assert not text.startswith(("-.", ".")) and text.count(".") == (value.denominator != 1)


@settings(max_examples=100, deadline=None)
@given(value=st.integers(-(10**12), 10**12), base=st.integers(2, 36))
def test_base_formatting_round_trips(value, base):
    assert int(format_in_base(value, base), base) == value


def test_a_base_tree_whose_value_is_no_integer_is_refused_not_truncated():
    half = Node("base", (Node("2"), Node("/", (Node("1"), Node("10")))))  # 1/10 in base 2: a half (was answered "0")
    with pytest.raises(QuestionError, match="the base question at characters None has the value 1/2, which is no integer"):
        answer_tree(half)
    assert answer_tree(Node("base", (Node("2"), Node("/", (Node("110"), Node("10")))))) == "11"


@pytest.mark.parametrize("base", [-2, 0, 1, True, 37, 2.0])
def test_a_base_that_is_no_int_in_2_to_36_is_refused(base):
    # (1 and True looped forever, -2 wrote 5 as "zzzz", 0 and 37 failed deep inside as ZeroDivisionError, IndexError)
    with pytest.raises(ValueError, match="base must be"):
        format_in_base(5, base)


@pytest.mark.parametrize("value", [2.5, Fraction(5), "5", None])
def test_a_value_that_is_no_int_is_refused_in_any_base(value):
    with pytest.raises(ValueError, match="format_in_base writes an int, got"):
        format_in_base(value, 2)


@settings(max_examples=200, deadline=None)
@given(root=st.integers(0, 10**120), degree=st.integers(1, 12), offset=st.integers(-(10**6), 10**6))
def test_nearest_integer_roots_are_exact_for_radicands_of_any_size(root, degree, offset):
    """The root was taken in floats: a radicand beyond float range raised OverflowError."""
    radicand = max(0, root**degree + offset)
    for question in (
        f"What is {radicand} to the power of 1/{degree}, to the nearest integer?",
        f"What is the square root of {radicand} to the nearest integer?",
    ):
        wanted = degree if "power" in question else 2
        nearest = int(answer_question(question))
        assert nearest >= 0 and (2 * nearest + 1) ** wanted > 2**wanted * radicand  # radicand ** (1/k) < nearest + 1/2
        assert nearest == 0 or (2 * nearest - 1) ** wanted < 2**wanted * radicand  # and > nearest - 1/2


def _sum_chain(depth: int) -> Node:
    """``1 + (1 + (... + 1))``: a tree ``depth`` levels deep, built by hand (parsed questions are capped)."""
    tree = Node("1")
    for _ in range(depth - 1):
        tree = Node("+", (Node("1"), tree))
    return tree


@pytest.mark.parametrize("walk", [evaluate, to_sympy, answer_tree])
def test_a_tree_built_too_deep_is_refused_with_its_depth_before_any_recursion(walk):
    """A hand-built tree deeper than Python's recursion limit failed with RecursionError from deep inside each walk
    (caught here: pytest took minutes to report a traceback that deep)."""
    try:
        walk(_sum_chain(3000))
        refusal = "no error"
    except QuestionError as error:
        refusal = str(error)
    except RecursionError:
        refusal = "RecursionError"
    assert refusal == "the tree is 3000 levels deep, more than the 200 levels evaluated"


@settings(max_examples=10, deadline=None)
@given(depth=st.integers(1, 260))
def test_trees_up_to_the_parse_depth_cap_are_evaluated_and_deeper_ones_refused(depth):
    tree = _sum_chain(depth)
    for walk in (evaluate, to_sympy, answer_tree):
        if depth <= 200:
            assert walk(tree) == (str(depth) if walk is answer_tree else depth)
        else:
            with pytest.raises(QuestionError, match=rf"^the tree is {depth} levels deep, more than the 200 levels evaluated$"):
                walk(tree)


def test_a_root_of_a_huge_degree_is_answered_at_once():
    assert answer_question("What is 5 to the power of 1/1000000000, to the nearest integer?") == "1"
    assert answer_question("What is 7 to the power of 1/4, to the nearest integer?") == "2"  # 1.63


def test_a_question_nested_too_deep_is_a_question_error_and_a_miss_in_a_batch():
    """Deep questions exceeded Python's recursion limit, and symbolic_answers failed for the whole batch."""
    deep = "What is " + "+".join(["1"] * 3000) + "?"
    with pytest.raises(QuestionError, match=r"nested more than 200 levels deep \(at characters \(8, \d+\)\)"):
        answer_question(deep)
    assert answer_question("What is " + "+".join(["1"] * 199) + "?") == "199"
    huge = "What is the square root of " + "9" * 400 + " to the nearest integer?"
    assert symbolic_answers([deep, huge, "What is 2 less than 5?"]) == ["", "1" + "0" * 200, "3"]


@pytest.mark.parametrize(
    "question",
    [
        "What is 10**5000?",  # (an answer too long to write raised ValueError)
        "(9**9999)**99",
        "1" * 4400 + " + 1",  # (a literal too long to read raised ValueError)
        "In base 3, what is " + "1" * 4400 + " + 1?",
        "Simplify 3**20000.",
        "Simplify sqrt(2)**1000000.",
        "What is 0.5**10000?",  # (a decimal of 10,000 digits, from a fraction of 3,011: raised ValueError when written)
        "0.5**6000",  # (answered with 6,002 characters)
    ],
)
def test_numbers_too_long_to_write_are_question_errors_and_misses(question):
    with pytest.raises(QuestionError, match="digits, more than the 4000 answered|larger than 10000"):
        answer_question(question)
    assert symbolic_answers([question, "1 + 1"]) == ["", "2"]


@given(digits=st.integers(3990, 4010))
def test_numbers_of_up_to_4000_digits_are_answered_and_longer_ones_refused(digits):
    """10**4000 (4,001 digits) and 4,000 nines plus 1 were answered: a float logarithm counted their digits."""
    power, nines = f"What is 10**{digits - 1}?", f"What is {'9' * (digits - 1)} plus 1?"
    if digits <= 4000:
        assert answer_question(power) == answer_question(nines) == "1" + "0" * (digits - 1)
        return
    with pytest.raises(QuestionError, match=f"the power .* has {digits} digits, more than the 4000 answered"):
        answer_question(power)
    written = "the answer has 4001" if digits == 4001 else f"the number at characters .* has {digits - 1}"
    with pytest.raises(QuestionError, match=f"{written} digits, more than the 4000 answered"):
        answer_question(nines)


def test_numbers_up_to_the_digit_cap_are_answered():
    assert answer_question("What is 10**3999?") == "1" + "0" * 3999
    assert answer_question("Simplify (1 + sqrt(2))**2.") == "2*sqrt(2) + 3"
    assert answer_question("Simplify 2**-3.") == "1/8"


@settings(max_examples=20, deadline=None)
@given(exponent=st.integers(1, 6000), sign=st.sampled_from(["", "-"]))
def test_decimal_answers_are_bounded_by_their_own_digits(exponent, sign):
    """A decimal answer was bounded by its fraction's digits: 2**-k has k decimal places but about 0.3 k digits."""
    question = f"What is {sign}0.5**{exponent}?"
    if exponent > 4000:
        with pytest.raises(QuestionError, match=f"the answer as a decimal has {exponent} digits, more than the 4000"):
            answer_question(question)
        return
    answer = answer_question(question)
    assert Fraction(answer) == Fraction(-1 if sign else 1, 2**exponent)  # (-0.5**k is -(0.5**k))
    assert answer.lstrip("-").startswith("0.") and len(answer.lstrip("-")) == exponent + 2


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.binary(max_size=20), st.lists(st.text(max_size=3), max_size=3)))
def test_a_question_that_is_no_string_is_named(question):
    """It failed inside Lark's lexer: "'NoneType' object has no attribute 'char_pos'", "Cannot lex"."""
    for call in (parse_question, answer_question):
        with pytest.raises(TypeError, match=f"a question is a str, got {type(question).__name__}"):
            call(question)
