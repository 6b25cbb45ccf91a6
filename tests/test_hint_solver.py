"""The fast batch solver agrees with Lark parse + execute on every input."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest
from hint_strategies import trees
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.semantics import (
    FEWSHOT_OPERATORS,
    HINT_FEWSHOT_SEMANTICS,
    HINT_SEMANTICS,
    RATIONAL_SEMANTICS,
    Operator,
    evaluate,
)
from neurosym.semantics.batch import VECTOR_OPERAND_LIMIT, BatchSolver, solve_batch
from neurosym.semantics.operators import CEIL_DIVIDE
from neurosym.syntax import ParseError, to_infix


def reference(sentence: str, table=HINT_SEMANTICS):
    """The Lark path: None for ungrammatical sentences, as the solver documents."""
    try:
        return evaluate(sentence, table)
    except ParseError:
        return None


def grammatical(sentence: str, table=HINT_SEMANTICS) -> bool:
    try:
        evaluate(sentence, table)
    except ParseError:
        return False
    return True


@settings(max_examples=40, deadline=None)
@given(st.lists(trees(max_leaves=16), min_size=1, max_size=40))
def test_agrees_on_random_expressions(batch):
    sentences = [to_infix(tree) for tree in batch]
    assert solve_batch(sentences) == [reference(s) for s in sentences]


# Strings over the language's alphabet plus whitespace of several kinds (ignored as the parser ignores it) and a few
# strangers (beyond Latin-1, a lone surrogate that failed the whole batch): mostly ungrammatical, some not.
ALPHABET = "0123456789+-*/()" * 3 + "  \t\n\r\xa0\u3000×÷−x&\0é😀\ud800"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, max_size=14), min_size=1, max_size=60))
def test_agrees_on_arbitrary_strings(sentences):
    solver = BatchSolver()
    assert solver.solve(sentences) == [reference(s) for s in sentences]
    assert solver.grammatical(sentences).tolist() == [grammatical(s) for s in sentences]


def test_adversarial_inputs():
    deep = "(" * 200 + "7-(" * 50 + "3/(2-2)" + ")" * 50 + "+1" + ")" * 200
    long_chain = "+".join(["9*8/7-6"] * 100)
    huge = "*".join("9" * 40)  # beyond int64: exact fallback
    huge_then_small = f"({huge})/({huge})+(9*9*9*9*9*9*9*9*9*9)/(9*9*9*9*9*9*9*9*9)"
    sentences = [
        deep,
        "(" * 300 + "1+2*3" + ")" * 300,
        "1+(" * 150 + "2" + ")" * 150,
        long_chain,
        huge,
        huge_then_small,
        "9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9",
        "(5/(3-3))*0",
        "0*(5/0)",
        "8-9-1",
        "7/2/2",
        "3 × (4 ÷ 2) − 1",
        "3\t× (4 ÷ 2)\u00a0− 1\r\n",
        "",
        " ",
        "12",
        "3+",
        "(2",
        "2)",
        ")(",
        "(1))(2",
        "((1)",
        "1\0",
        "1+é",
        "3-5*2",
    ]
    expected = [reference(s) for s in sentences]
    assert expected[:3] == [None, 7, 152] and expected[4] == 9**40 and expected[5] == 1 + 9
    assert solve_batch(sentences) == expected
    assert solve_batch(sentences[::-1]) == expected[::-1]  # independent of batch order and padding


def test_values_beyond_the_vector_limit_are_exact():
    big = "*".join("9" * 10)  # 9**10 > 2**30
    sentences = [big, f"{big}-({big})", f"({big})/({big})", f"{big}/0", "2*" + big]
    assert 9**10 > VECTOR_OPERAND_LIMIT
    assert solve_batch(sentences) == [9**10, 0, 1, None, 2 * 9**10]


def test_duplicates_empty_batch_and_types():
    assert solve_batch([]) == []
    assert solve_batch(["1+1", "2/0", "1+1", "x", "2/0"]) == [2, None, 2, None, None]
    with pytest.raises(TypeError, match="not one string"):
        solve_batch("1+2")
    with pytest.raises(TypeError, match="expects strings, got NoneType None"):
        solve_batch(["1+2", None])


@settings(max_examples=30, deadline=None)
@given(st.text(alphabet="0123456789+-*/()", min_size=1, max_size=12))
def test_one_string_is_refused_not_read_as_one_sentence_per_character(sentence):
    solver = BatchSolver()
    for call in (solver.grammatical, solver.encode, solver.solve):
        with pytest.raises(TypeError, match="not one string"):
            call(sentence)


@pytest.mark.parametrize(
    ("sentences", "message"),
    [
        ([["1", "+", "2"]], "solve expects strings, got an item of unhashable type: 'list'"),
        (None, "a sequence of sentences \\(str\\), got NoneType"),
        (5, "a sequence of sentences \\(str\\), got int"),
    ],
)
def test_sentences_that_are_no_strings_are_named(sentences, message):
    with pytest.raises(TypeError, match=message):
        solve_batch(sentences)


@pytest.mark.parametrize("sentences", [[1, "2"], ["1+2", b"3"], [["1", "+", "2"]]])
def test_grammatical_and_encode_name_the_sentence_that_is_no_string(sentences):
    index = next(i for i, s in enumerate(sentences) if not isinstance(s, str))
    for call in (BatchSolver().grammatical, BatchSolver().encode):
        with pytest.raises(TypeError, match=f"sentence {index} must be a str, got {type(sentences[index]).__name__}"):
            call(sentences)


def test_grammatical_takes_a_numpy_array_of_sentences():
    assert BatchSolver().grammatical(np.array(["1+2", "3+"])).tolist() == [True, False]


@pytest.mark.parametrize("strict", ["no", 0, None])
def test_a_strict_that_is_no_bool_is_refused(strict):
    with pytest.raises(ValueError, match="strict must be True or False"):
        solve_batch(["1+"], strict=strict)


def test_strict_mode_raises_the_parse_error():
    with pytest.raises(ParseError, match="position 2: unexpected end of input"):
        solve_batch(["1+2", "3+"], strict=True)
    assert solve_batch(["1+2", "4/0"], strict=True) == [3, None]


@settings(max_examples=25, deadline=None)
@given(st.lists(trees(numbers="0123456789xy", operators="+-*/abcd", max_leaves=16), min_size=1, max_size=30))
def test_fewshot_concepts(batch):
    table = HINT_FEWSHOT_SEMANTICS
    sentences = [to_infix(tree, table.concepts) for tree in batch] + ["0d0", "xa(yc3)", "1b9d9", "x+"]
    assert solve_batch(sentences, table) == [reference(s, table) for s in sentences]


def test_operators_with_only_a_scalar_rule_and_big_concept_numbers():
    modulo = Operator(2, lambda a, b: None if b == 0 else a % b)
    halve = Operator(1, lambda a, b: (a + b) // 2 if a != b else None)
    table = HINT_SEMANTICS.extend(numbers={"g": 2**40, "n": -3}, operators={"%": modulo, "h": halve})
    sentences = ["7%4+1", "9%0", "1+7%4*3", "ghg", "g%7", "n*n", "n-1", "n/2", "3h3", "(9%5)h(2*3)", "g/g", "1%"]
    # Scalar rules whose values leave the vectorised range: 2**32 * 2**32 would wrap to 0 in int64.
    sentences += ["9p9p9*9*9", "(9p9p9)*(9p9p9)", "(9p9p9)/(9p9p8)", "9p0", "2p3-1", "(1q1)*(1q1)", "1q1-1"]
    table = table.extend(operators={"p": Operator(2, lambda a, b: a * b * 10**6), "q": Operator(2, lambda a, b: 2**32 + a - b)})
    assert BatchSolver(table).solve(sentences) == [reference(s, table) for s in sentences]


def test_scalar_rules_never_see_the_placeholders_of_invalid_or_overflowed_rows():
    """A scalar rule defined on HINT's values (the non-negative integers) and failing elsewhere, as ``isqrt`` does:
    it was applied to every reduced row, so an invalid row's placeholder (here -1) or an overflowed row's wrapped
    int64 (9^20) failed the whole batch, though neither row's result is read from the vectorised path."""
    divide = Operator(2, CEIL_DIVIDE.apply, lambda a, b: (np.where(b != 0, -(-a // np.where(b != 0, b, 1)), -1), b != 0))
    root_plus = Operator(1, lambda a, b: math.isqrt(a) + b)  # (ValueError for a < 0)
    table = HINT_SEMANTICS.extend(operators={"q": divide, "r": root_plus})
    sentences = ["7q0r2", "7q2r2", "*".join("9" * 20) + "r1", "4r5", "(7q0)r(7q0)"]
    assert BatchSolver(table).solve(sentences) == [reference(s, table) for s in sentences] == [None, 4, 9**10 + 1, 7, None]


def test_a_scalar_rule_that_raises_is_undefined_where_it_raises():
    """``a // b`` raises for ``b = 0``: ``None`` on the scalar path and on the exact one (values beyond the limit)."""
    table = HINT_SEMANTICS.extend(operators={"/": Operator(2, lambda a, b: a // b)})
    sentences = ["8/0", "8/3", "1+8/0*0", "*".join("9" * 20) + "/0", "*".join("9" * 20) + "/9"]
    expected = [None, 2, None, None, 9**19]
    assert BatchSolver(table).solve(sentences) == solve_batch(sentences, table, strict=True) == expected
    assert solve_batch([*sentences, "8/"], table) == [*expected, None]


def test_concepts_outside_latin_1():
    table = HINT_SEMANTICS.extend(numbers={"α": 7}, operators={"β": Operator(1, max)})
    sentences = ["α+1", "α×2", "αβ3", "3βα*2", "α+é", "€", "αα", "β"]
    assert (
        BatchSolver(table).solve(sentences) == [reference(s, table) for s in sentences] == [8, 14, 7, 14, None, None, None, None]
    )


def test_more_vectorised_operators_than_numpy_chooses_among():
    # np.choose takes at most 64 arrays: a table of 70 operators with vectorised rules failed every batch
    rules = list(FEWSHOT_OPERATORS.values())
    symbols = [chr(0x100 + k) for k in range(70)]
    table = HINT_SEMANTICS.extend(operators={s: rules[k % len(rules)] for k, s in enumerate(symbols)})
    mixed = [f"8{symbols[-1]}0+2{symbols[-2]}9*3", "9/0", f"(5{symbols[3]}0)", f"1+0{symbols[67]}0"]  # 0 d 0 is invalid
    sentences = [f"7{s}3" for s in symbols] + mixed
    assert BatchSolver(table).solve(sentences) == [reference(s, table) for s in sentences]


def test_solver_needs_integer_numbers():
    with pytest.raises(ValueError, match="integer number values"):
        BatchSolver(RATIONAL_SEMANTICS)
    with pytest.raises(TypeError, match="BatchSolver takes an OperatorTable \\(e.g. HINT_SEMANTICS\\), got str"):
        solve_batch(["1"], table="hint")


def test_a_vectorised_rule_of_fractional_results_is_named_instead_of_truncated():
    divide = Operator(1, lambda a, b: None if b == 0 else a // b, lambda a, b: (a / b, b != 0))
    table = HINT_SEMANTICS.extend(operators={"q": divide})
    with pytest.raises(ValueError, match="the vectorised rule of operator 'q' returned float64 values"):
        solve_batch(["1q3", "5q2"], table)
    scalar_only = HINT_SEMANTICS.extend(operators={"q": Operator(1, divide.apply)})
    assert solve_batch(["1q3", "5q2"], scalar_only) == [0, 2]


def _floor_divide_in_python(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, None]:
    """A vectorised rule that raises ``ZeroDivisionError`` for ``b = 0``, as Python's (or torch's) integers do."""
    return np.array([x // y for x, y in zip(a.tolist(), b.tolist())], dtype=np.int64), None


def test_a_vectorised_rule_that_raises_is_named_with_its_error_as_the_cause():
    """A vectorised rule sees operand pairs no sentence holds, so its exception is no result for any row: it was a
    traceback from deep inside the solver (a scalar rule's arithmetic error marks that one result undefined)."""
    table = HINT_SEMANTICS.extend(operators={"q": Operator(2, lambda a, b: a // b, _floor_divide_in_python)})
    assert solve_batch(["8q2", "9q4+1"], table) == [4, 3]
    with pytest.raises(ValueError, match=r"the vectorised rule of operator 'q' raised ZeroDivisionError: integer division "
                       r"or modulo by zero; a vectorised rule must not raise on any int64 operands") as raised:  # fmt: skip
        solve_batch(["8q2", "8q0"], table)
    assert isinstance(raised.value.__cause__, ZeroDivisionError)
    assert solve_batch(["8q2", "8q0"], HINT_SEMANTICS.extend(operators={"q": Operator(2, lambda a, b: a // b)})) == [4, None]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (lambda a, b: a + b, r"returned ndarray .*, not a tuple \(values, valid\)"),
        (lambda a, b: (a[:1] + b[:1], None), r"returned values of shape \[1\] for 3 operand pairs"),
        (
            lambda a, b: (a + b, (b != 0).astype(np.int64)),
            r"returned a validity mask of int64 shape \[3\]; it is None or 3 bools",
        ),
        (lambda a, b: (a + b, b[-1:] != 0), r"returned a validity mask of bool shape \[1\]"),
    ],
)
def test_a_vectorised_rule_that_returns_no_pair_of_results_and_mask_is_named(rule, message):
    """Each of these was read without a word: a plain array (one of two rows was unpacked into results and mask), a
    short array or mask (broadcast over every row: 8q0 read as 8), a mask of ints (inverted bitwise into row indices:
    7q1 read as invalid)."""
    scalar = lambda a, b: a + b if b else None
    sentences = ["8q2", "8q0", "7q1"]
    with pytest.raises(ValueError, match=rf"the vectorised rule of operator 'q' {message}"):
        solve_batch(sentences, HINT_SEMANTICS.extend(operators={"q": Operator(1, scalar, rule)}))
    assert solve_batch(sentences, HINT_SEMANTICS.extend(operators={"q": Operator(1, scalar)})) == [10, None, 8]


def test_chunking_keeps_order_and_strict_reports_the_first_bad_sentence(monkeypatch):
    from neurosym.semantics import batch

    monkeypatch.setattr(batch, "CHUNK_ROWS", 3)
    monkeypatch.setattr(batch, "CHUNK_CELLS", 12)
    sentences = ["1+2*3", "(" * 20 + "4" + ")" * 20, "9/0", "2)", "8-3", "7", "((1+1))*3", "5+", "6/4"]
    assert BatchSolver().solve(sentences) == [reference(s) for s in sentences]
    with pytest.raises(ParseError, match="position 1: unexpected character '\\)'") as raised:
        BatchSolver().solve(sentences, strict=True)  # "2)" comes before "5+"
    assert raised.value.__notes__ == ["in sentence 3 of the 9 given"]  # (which of thousands it is: it was not said)
    with pytest.raises(ParseError) as raised:
        BatchSolver().solve(["7", "5+", "7", "5+"] * 3 + ["2)"], strict=True)  # repeats count by their first place
    assert raised.value.__notes__ == ["in sentence 1 of the 13 given"]


def test_agrees_on_mutated_sentences():
    """Valid sentences with one character deleted, duplicated or replaced: a mix near the grammar's edge."""
    import random

    import numpy as np

    from neurosym.data.hint import random_sentences

    rng = random.Random(3)
    sampled = [text for n_op in range(6) for text in random_sentences(n_op, 250, np.random.default_rng(n_op))]
    sentences = []
    for text in sampled:
        at = rng.randrange(len(text))
        edit = rng.randrange(3)
        if edit == 0:
            text = text[:at] + text[at + 1 :]
        elif edit == 1:
            text = text[:at] + text[at] + text[at:]
        else:
            text = text[:at] + rng.choice("0123456789+-*/() ") + text[at + 1 :]
        sentences.append(text)
    expected = [reference(s) for s in sentences]
    grammatical_count = sum(grammatical(s) for s in sentences)
    assert 100 < grammatical_count < 1400  # both kinds are well represented
    assert solve_batch(sentences) == expected


def test_solver_speed_runner_writes_table_json_and_plot(tmp_path, capsys):
    import json

    from neurosym.cli import main

    assert main(["solver-speed", "--preset", "smoke", "--rounds", "1", "--batch-sizes", "16,256", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "solver_speed.json").read_text())
    paths = [(r["path"], r["batch_size"]) for r in report["runs"]]
    assert paths == [("lark", 1), ("batch", 16), ("batch", 256)]
    assert report["runs"][0]["agrees_with_lark"] and all(r["per_second"] > 0 for r in report["runs"])
    assert (tmp_path / "solver_speed.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "| n_op | path" in printed and printed.endswith(f"Results in {tmp_path}: solver_speed.json, solver_speed.png\n")


@pytest.mark.filterwarnings("ignore:Attempting to set identical:UserWarning")  # (matplotlib, on the plot of no rate)
def test_work_a_clock_reads_no_time_for_has_no_rate_and_shows_as_a_dash(tmp_path, monkeypatch, capsys):
    import json

    from neurosym.benchmarking import solver_speed
    from neurosym.cli import main

    monkeypatch.setattr(solver_speed, "timed", lambda work: (work(), 1e-3, 0.0)[1:])  # (a coarse CPU clock: 0 s)
    assert main(["solver-speed", "--preset", "smoke", "--rounds", "1", "--batch-sizes", "16", "--out", str(tmp_path)]) == 0
    runs = json.loads((tmp_path / "solver_speed.json").read_text())["runs"]
    assert [(r["per_cpu_second"], r["cpu_speedup"]) for r in runs] == [(None, None)] * 2 and runs[0]["per_second"] > 0
    table = [
        [cell.strip() for cell in line.split("|")[1:-1]] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")
    ]
    assert [row[-2:] for row in table[1:]] == [["—", "—"]] * 2  # (was ZeroDivisionError)


def test_solver_timing_refuses_fewer_expressions_than_it_counts():
    from neurosym.benchmarking.solver_speed import measure_solvers

    sentences = {1: ["1+2"] * 50}
    with pytest.raises(ValueError, match=r"n_op=1: 50 expressions given, the timing solves 4096"):
        measure_solvers(sentences, lark_count=10, batch_sizes=[16, 4096], repeats=1)  # reported 4,096 solved
    assert [run["expressions"] for run in measure_solvers(sentences, 10, [16], 1)] == [10, 16]


def test_a_lone_surrogate_is_an_invalid_sentence_of_its_batch():
    assert solve_batch(["1+\ud800", "1+2", "\udfff"]) == [None, 3, None]


@settings(max_examples=20, deadline=None)
@given(st.lists(trees(numbers="0123456789xy", operators="+-*/abcd", max_leaves=12), min_size=1, max_size=20))
def test_a_solver_pickles_and_copies_and_solves_as_the_original(batch):
    # (pickle raised "cannot pickle 'mappingproxy' object", then on the vectorised rules, lambdas, it held)
    solver = BatchSolver(HINT_FEWSHOT_SEMANTICS)
    sentences = [to_infix(tree, HINT_FEWSHOT_SEMANTICS.concepts) for tree in batch] + ["1+", "(0d0)", "9*" * 30 + "9"]
    for twin in (pickle.loads(pickle.dumps(solver)), copy.deepcopy(solver), copy.copy(solver)):
        assert type(twin) is BatchSolver and twin.table.operators["a"] is FEWSHOT_OPERATORS["a"]
        assert twin.solve(sentences) == solver.solve(sentences)
