"""HINT generation: the released sampling procedure, the split rules, Table A1 sizes, determinism, caching."""

from __future__ import annotations

import re
import zipfile
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neurosym.data.hint import (
    MAIN_RULES,
    MAIN_VOCABULARY,
    HintSplit,
    SplitRules,
    Vocabulary,
    enumerate_prefix,
    evaluate_prefix,
    examples,
    fewshot_rules,
    fewshot_split,
    fewshot_vocabulary,
    generate_split,
    main_split,
    operator_count,
    prefix_shapes,
    sample_prefix,
)
from neurosym.data.hint.generate import _ListsOfOneSize
from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, Operator, evaluate, execute, executor
from neurosym.syntax import from_prefix, heads, infix_layout, parse

SCALE = 0.01


@pytest.fixture(scope="module")
def small_main():
    return generate_split(MAIN_RULES.with_scale(SCALE), MAIN_VOCABULARY, seed=0, progress=False)


def _peak(record, table=HINT_SEMANTICS) -> int:
    numbers = [table.numbers[c] for c in record.expr if c in table.numbers]
    return max(numbers + [v for v in record.res_all if v >= 0])


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 12), st.integers(0, 2**16), st.sampled_from(["x", "a", "c", "d"]))
def test_sampled_prefix_rows_are_trees_whose_values_match_the_executor(n_op, seed, concept):
    vocabulary = fewshot_vocabulary(concept)
    rows = sample_prefix(n_op, 40, vocabulary, np.random.default_rng(seed))
    assert rows.shape == (40, 2 * n_op + 1)
    evaluation = evaluate_prefix(rows, vocabulary)
    for prefix, value, valid, peak in zip(vocabulary.to_strings(rows), evaluation.value, evaluation.valid, evaluation.peak):
        node = from_prefix(list(prefix), HINT_FEWSHOT_SEMANTICS.concepts)
        execution = execute(node, HINT_FEWSHOT_SEMANTICS)
        assert (execution.value is not None) == bool(valid), prefix
        if valid and peak < 10_000:
            numbers = [HINT_FEWSHOT_SEMANTICS.numbers[s] for s in prefix if s in HINT_FEWSHOT_SEMANTICS.numbers]
            assert execution.value == value
            assert max(numbers + execution.res_all) == peak


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("+1+", "row 1 position 2: operator lacks operands"),
        ("1+2", "row 1 position 1: operator lacks operands"),
        ("123", "row 1 holds 3 separate expressions, not one"),
    ],
)
def test_evaluate_prefix_names_a_row_that_is_not_one_expression(row, message):
    rows = np.asarray([[MAIN_VOCABULARY.id_of(s) for s in expression] for expression in ("+12", row)], dtype=np.uint8)
    with pytest.raises(ValueError, match=message):
        evaluate_prefix(rows, MAIN_VOCABULARY)


def test_evaluate_prefix_names_ids_outside_the_vocabulary_and_wrong_arrays():
    n_symbols = len(MAIN_VOCABULARY.symbols)
    with pytest.raises(ValueError, match=f"row 0 position 1: id {n_symbols} is not in the vocabulary"):
        evaluate_prefix(np.asarray([[MAIN_VOCABULARY.id_of("+"), n_symbols, 1]]), MAIN_VOCABULARY)
    with pytest.raises(ValueError, match="integer array"):
        evaluate_prefix(np.asarray([[0.0, 1.0, 2.0]]), MAIN_VOCABULARY)
    with pytest.raises(ValueError, match="integer array"):
        evaluate_prefix(np.asarray([0, 1, 2]), MAIN_VOCABULARY)


def test_evaluate_prefix_names_the_operator_of_a_vectorised_rule_that_raises():
    def floor_divide(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, None]:  # (Python's ZeroDivisionError at b = 0)
        return np.array([x // y for x, y in zip(a.tolist(), b.tolist())], dtype=np.int64), None

    table = HINT_SEMANTICS.extend(operators={"q": Operator(2, lambda a, b: a // b, floor_divide)})
    vocabulary = replace(MAIN_VOCABULARY, operators=("q",), table=table)
    rows = np.asarray([[vocabulary.id_of(s) for s in expression] for expression in ("q82", "q80")], dtype=np.uint8)
    assert evaluate_prefix(rows[:1], vocabulary).value.tolist() == [4]
    with pytest.raises(ValueError, match="the vectorised rule of operator 'q' raised ZeroDivisionError"):
        evaluate_prefix(rows, vocabulary)


def test_a_split_names_an_invalid_expression_among_its_rows():
    rows = np.asarray([[MAIN_VOCABULARY.id_of(s) for s in "/10"]], dtype=np.uint8)  # 1/0
    with pytest.raises(ValueError, match="prefix expression '/10' is invalid"):
        HintSplit.from_prefix_rows([("SS", rows, np.zeros(1, np.int64), 1)], MAIN_VOCABULARY)


def test_a_split_lays_each_distinct_expression_out_once(monkeypatch):
    laid_out = []

    def counted(node, concepts=None):
        laid_out.append(node)
        return infix_layout(node, concepts)

    monkeypatch.setattr(examples, "infix_layout", counted)
    monkeypatch.setattr(executor, "infix_layout", counted)  # (execute laid each out a second time)
    rows = np.asarray([[MAIN_VOCABULARY.id_of(s) for s in expression] for expression in ("+12", "*34", "+12")], np.uint8)
    split = HintSplit.from_prefix_rows([("I", rows, np.array([3, 12, 3]), 1)], MAIN_VOCABULARY)
    assert len(laid_out) == 2 and [record.res_all for record in split] == [(1, 3, 2), (3, 12, 4), (1, 3, 2)]


@settings(max_examples=30, deadline=None)
@given(st.integers(-8, 8) | st.none(), st.integers(-8, 8) | st.none(), st.sampled_from([None, -2, 1, 3]))
def test_a_split_slices_as_the_list_of_its_records(start, stop, step):
    rows = np.asarray([[MAIN_VOCABULARY.id_of(s) for s in expression] for expression in ("+12", "*34", "-56", "+78", "*90")])
    split = HintSplit.from_prefix_rows([("I", rows.astype(np.uint8), np.zeros(5, np.int64), 1)], MAIN_VOCABULARY)
    records = [split[i] for i in range(len(split))]
    assert split[start:stop:step] == records[start:stop:step]
    assert split[np.int64(-1)] == records[-1]
    with pytest.raises(TypeError, match="indexed by an int or a slice, got float"):
        split[1.0]  # type: ignore[call-overload]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 14), st.integers(0, 2**16), st.sampled_from([None, "y", "b", "d"]))
def test_generated_records_round_trip_and_heads_agree_with_res_all(n_op, seed, concept):
    vocabulary = MAIN_VOCABULARY if concept is None else fewshot_vocabulary(concept)
    table = vocabulary.table
    rows = sample_prefix(n_op, 30, vocabulary, np.random.default_rng(seed))
    evaluation = evaluate_prefix(rows, vocabulary)
    keep = evaluation.valid & (evaluation.peak < 10_000)
    split = HintSplit.from_prefix_rows([("SS", rows[keep], evaluation.value[keep], n_op)], vocabulary)
    for index in range(len(split)):
        record = split[index]
        assert evaluate(record.expr, table) == record.res == split.res[index]
        assert list(record.head) == heads(parse(record.expr, table.concepts), table.concepts)
        for position, (symbol, value) in enumerate(zip(record.expr, record.res_all)):
            operands = [j for j, h in enumerate(record.head) if h == position and record.expr[j] not in "()"]
            if symbol in "()":
                assert value == -1 and record.expr[record.head[position]] in table.operators
            elif symbol in table.numbers:
                assert value == table.numbers[symbol] and not operands
            else:
                left, right = operands
                assert left < position < right
                assert value == table.operators[symbol].apply(record.res_all[left], record.res_all[right])


def test_sampling_splits_operators_uniformly_between_left_and_right():
    rows = sample_prefix(4, 20_000, MAIN_VOCABULARY, np.random.default_rng(1))
    # the number of operators in the left subtree of the root is U{0..3}: find where the left subtree ends
    left_ops = []
    for row in rows[:4000]:
        need, position = 1, 1
        while need:
            need += 1 if row[position] >= 10 else -1
            position += 1
        left_ops.append(int((row[1:position] >= 10).sum()))
    shares = np.bincount(left_ops, minlength=4) / len(left_ops)
    assert np.allclose(shares, 0.25, atol=0.03)
    operators = np.bincount(rows[rows >= 10] - 10, minlength=4) / (rows >= 10).sum()
    assert np.allclose(operators, 0.25, atol=0.01)
    digits = np.bincount(rows[rows < 10], minlength=10) / (rows < 10).sum()
    assert np.allclose(digits, 0.1, atol=0.01)


def test_enumeration_covers_every_expression_once():
    assert [len(prefix_shapes(n)) for n in range(6)] == [1, 1, 2, 5, 14, 42]
    rows = enumerate_prefix(2, MAIN_VOCABULARY)
    assert rows.shape == (2 * 4**2 * 10**3, 5)
    assert len(np.unique(rows, axis=0)) == len(rows)


def test_the_i_subsets_hold_each_result_within_the_share_cap_as_the_papers_balanced_test_lists() -> None:
    """I was the head of each training list, whose sampled order puts the most frequent results first: one result
    filled 13-26% of test I (60% of validation I) for every n from 3 to 10."""
    split = main_split(scale=0.005, seed=0, cache=False, progress=False)
    trained = set(split["train"].expr)
    for which, name in enumerate(("val", "test")):
        part = split[name]
        for n_op in range(MAIN_RULES.enumerate_up_to + 1, MAIN_RULES.max_train_ops + 1):
            seen = (part.eval == "I") & (part.n_op == n_op)
            size = MAIN_RULES.with_scale(0.005).i_sizes(n_op)[which]
            assert seen.sum() == size and {expr for expr, is_seen in zip(part.expr, seen, strict=True) if is_seen} <= trained
            assert max(Counter(part.res[seen].tolist()).values()) <= MAIN_RULES.with_scale(0.005).share_cap(size)


def test_table_a1_sizes_are_encoded_in_the_rules():
    train = sum(MAIN_RULES.train_size(n) for n in range(11))
    val_i, test_i = map(sum, zip(*(MAIN_RULES.i_sizes(n) for n in range(11))))
    assert (train, val_i, test_i) == (998_000, 998, 9_980)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 100), st.integers(1, 200_000))
@example(29, 100)
@example(35, 660)
def test_a_result_may_fill_the_exact_floor_of_the_decimal_share_as_written(percent, size):
    """A cap of 0.29 lets 29 of a list of 100 share a result (the float product 100 * 0.29 is 28.999999999999996)."""
    assert replace(MAIN_RULES, result_share_cap=percent / 100).share_cap(size) == max(1, size * percent // 100)


def test_enumerated_sizes_at_full_scale_match_table_a1():
    """n_op 0–2 are enumerated, so their full-scale lists are exact and cheap to build."""
    counts: Counter = Counter()
    distinct_train = {}
    for n_op in range(3):
        lists = _ListsOfOneSize(n_op, MAIN_RULES, MAIN_VOCABULARY, None, seed=0)
        lists.fill()
        for name, rows, _ in lists.lists():
            counts[(name, n_op)] = len(rows)
            if name == "train":
                distinct_train[n_op] = len(np.unique(rows, axis=0))
    assert [counts[("train", n)] for n in range(3)] == [20_000, 78_000, 100_000]
    assert distinct_train == {0: 10, 1: 390, 2: 29_230}
    assert [counts[("test:I", n)] for n in range(3)] == [200, 780, 1_000]
    assert [counts[("val:I", n)] for n in range(3)] == [20, 78, 100]
    assert (counts[("val:SL", 2)], counts[("test:SL", 2)]) == (100, 640)
    assert counts[("test:SS", 2)] == counts[("test:SL", 1)] == 0


def test_split_rules_hold_on_a_scaled_generation(small_main):
    train, val, test = small_main["train"], small_main["val"], small_main["test"]
    assert len(train) == sum(MAIN_RULES.with_scale(SCALE).train_size(n) for n in range(11))
    train_exprs = set(train.expr)
    for record in (train[i] for i in range(0, len(train), 7)):
        assert operator_count(record.expr) <= 10 and _peak(record) <= 100
    sampled = train.n_op >= 3
    assert (train.res[sampled] != 0).all()
    for n_op in range(3, 11):
        exprs = [e for e, n in zip(train.expr, train.n_op) if n == n_op]
        assert len(exprs) == len(set(exprs)), "sampled training expressions are distinct"
        results = Counter(train.res[train.n_op == n_op].tolist())
        assert max(results.values()) <= 0.05 * len(exprs)
    for split in (val, test):
        for index in range(len(split)):
            record = split[index]
            n_op, peak = operator_count(record.expr), _peak(record)
            short, small = n_op <= 10, peak <= 100
            expected = (
                "I"
                if record.expr in train_exprs and short and small
                else {(True, True): "SS", (False, True): "LS", (True, False): "SL", (False, False): "LL"}[(short, small)]
            )
            assert record.eval == expected, record
            assert n_op <= 20 and peak <= 10_000
    for subset in ("SS", "LS", "SL", "LL"):
        in_val = {e for e, s in zip(val.expr, val.eval) if s == subset}
        in_test = {e for e, s in zip(test.expr, test.eval) if s == subset}
        assert in_test and not in_val & in_test


def test_records_round_trip_through_the_parser(small_main):
    for split in small_main.values():
        for index in range(0, len(split), 5):
            record = split[index]
            tree = parse(record.expr)
            assert evaluate(record.expr) == record.res
            assert list(record.head) == heads(tree)
            assert list(record.res_all) == execute(tree, HINT_SEMANTICS).res_all
            assert record.res_all[record.head.index(-1)] == record.res


def test_generation_is_deterministic_per_seed():
    rules = MAIN_RULES.with_scale(0.002)
    first, again, other = (generate_split(rules, MAIN_VOCABULARY, seed=s, progress=False) for s in (0, 0, 1))
    assert again["test"].expr == first["test"].expr and again["train"].expr == first["train"].expr
    assert other["test"].expr != first["test"].expr


@settings(max_examples=6, deadline=None)
@given(st.sampled_from(["x", "y", "a", "b", "c", "d"]), st.integers(0, 2**16))
def test_small_fewshot_splits_follow_the_papers_subset_definitions(concept, seed):
    """Section 3: |x| operators, max(v) over every value; train |x| <= 10, max(v) <= 100; I seen in train, SS
    unseen and like train, LS |x| > 10, SL max(v) > 100, LL both; at most 20 operators and values 10,000;
    every expression uses the new concept; the same seed gives the same splits."""
    rules = fewshot_rules(concept).with_scale(0.01)
    split = generate_split(rules, fewshot_vocabulary(concept), seed, concept)
    again = generate_split(rules, fewshot_vocabulary(concept), seed, concept)
    trained = set(split["train"].expr)
    for name, part in split.items():
        assert part.expr == again[name].expr and np.array_equal(part.eval, again[name].eval)
        for record in part:
            n_op, peak = operator_count(record.expr), _peak(record, HINT_FEWSHOT_SEMANTICS)
            assert concept in record.expr and n_op <= 20 and peak <= 10_000
            if name == "train":
                assert n_op <= 10 and peak <= 100 and record.eval is None
                continue
            long, large = n_op > 10, peak > 100
            unseen = {(False, False): "SS", (True, False): "LS", (False, True): "SL", (True, True): "LL"}[(long, large)]
            assert record.eval == ("I" if record.expr in trained else unseen), record


@pytest.mark.parametrize(
    ("concept", "sizes", "subsets"),
    [
        ("y", (1100, 493, 4900), {"I": 1100, "SS": 900, "LS": 1000, "SL": 900, "LL": 1000}),
        ("d", (1000, 470, 4700), {"I": 1000, "SS": 900, "LS": 1000, "SL": 800, "LL": 1000}),
    ],
)
def test_fewshot_split_matches_table_a1(concept, sizes, subsets):
    split = fewshot_split(concept, cache=False, progress=False)
    assert (len(split["train"]), len(split["val"]), len(split["test"])) == sizes
    assert dict(Counter(split["test"].eval.tolist())) == subsets
    for part in split.values():
        assert all(concept in expr for expr in part.expr)
    record = split["test"][len(split["test"]) - 1]
    assert evaluate(record.expr, HINT_FEWSHOT_SEMANTICS) == record.res


def test_main_split_is_cached_on_disk(tmp_path):
    first = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"main_s0.002_seed3_v3_{s}.npz" for s in ("train", "val", "test"))
    with pytest.MonkeyPatch.context() as patch:  # the second call must read the files, not generate again
        patch.setattr("neurosym.data.hint.build.generate_split", lambda *args, **kwargs: pytest.fail("regenerated"))
        second = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    for name in ("train", "val", "test"):
        assert second[name].expr == first[name].expr and second[name].prefix == first[name].prefix
        assert np.array_equal(second[name].res, first[name].res) and np.array_equal(second[name].eval, first[name].eval)
        assert second[name][0] == first[name][0]
    train = tmp_path / "main_s0.002_seed3_v3_train.npz"
    train.write_bytes(train.read_bytes()[:300])  # cut short: a cache is made again, with a warning naming it
    with pytest.warns(UserWarning, match=f"unreadable HINT cache in {tmp_path}"):
        third = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    assert third["train"].expr == first["train"].expr and HintSplit.load(train).expr == first["train"].expr


@pytest.mark.parametrize("column", ["res", "n_op", "eval"])
def test_a_cache_with_a_column_cut_short_is_made_again(tmp_path, column):
    """A short res, n_op or eval column loaded as a split of the full length, and failed later with numpy's IndexError
    naming no file (only head and res_all were checked)."""
    first = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    test = tmp_path / "main_s0.002_seed3_v3_test.npz"
    with np.load(test) as archive:
        columns = {name: archive[name] for name in archive.files}
    columns[column] = columns[column][:-1]
    np.savez_compressed(test, **columns)
    expected = (
        rf"every column needs one entry per expression \({len(first['test'])}\), got \{{'{column}': {len(first['test']) - 1}\}}"
    )
    with pytest.raises(ValueError, match=expected):
        HintSplit.load(test)
    with pytest.warns(UserWarning, match=f"unreadable HINT cache in {tmp_path} .*every column needs one entry"):
        again = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    assert np.array_equal(again["test"].res, first["test"].res) and again["test"][-1] == first["test"][-1]


def test_a_cache_with_a_member_that_is_no_array_is_made_again(tmp_path):
    """numpy gives a member not written as .npy data as its bytes: loading failed with an AttributeError."""
    first = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    val = tmp_path / "main_s0.002_seed3_v3_val.npz"
    with np.load(val) as archive:
        columns = {name: archive[name] for name in archive.files}
    with zipfile.ZipFile(val, "w") as rewritten:
        for name, array in columns.items():
            if name == "expr":
                rewritten.writestr("expr", b"one line of text")
                continue
            with rewritten.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, array)
    with pytest.raises(ValueError, match=r"\['expr'\] are no arrays"):
        HintSplit.load(val)
    with pytest.warns(UserWarning, match=f"unreadable HINT cache in {tmp_path} .*are no arrays"):
        again = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    assert again["val"].expr == first["val"].expr


def test_a_cache_whose_compressed_bytes_changed_is_made_again(tmp_path):
    """A deflate stream damaged on disk raised zlib.error from inside numpy instead of generating the split again."""
    first = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    train = tmp_path / "main_s0.002_seed3_v3_train.npz"
    with zipfile.ZipFile(train) as archive:
        member = archive.getinfo("expr.npy")
    data = bytearray(train.read_bytes())
    header = member.header_offset  # (a local header: 30 bytes, then the name and extra field of the lengths it ends with)
    name_length, extra_length = (int.from_bytes(data[header + at : header + at + 2], "little") for at in (26, 28))
    data[header + 30 + name_length + extra_length] = 0x07  # (the first deflate block of a reserved type)
    train.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match=f"unreadable HINT cache in {tmp_path} .*invalid block type"):
        again = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    assert again["train"].expr == first["train"].expr


@pytest.mark.parametrize(("field", "value"), [(10, 9), (8, 1)])
def test_a_cache_zipfile_cannot_open_is_made_again(tmp_path, field, value):
    """A cache whose members say Deflate64 (method 9) or encryption (flag bit 0), as a tool that zipped it again
    writes: zipfile's NotImplementedError and RuntimeError escaped instead of generating the split again."""
    first = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    train = tmp_path / "main_s0.002_seed3_v3_train.npz"
    data = bytearray(train.read_bytes())
    start = data.index(b"PK\x01\x02")  # (the central directory: each entry's flags at 8, method at 10)
    while start >= 0:
        data[start + field : start + field + 2] = value.to_bytes(2, "little")
        start = data.find(b"PK\x01\x02", start + 1)
    train.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match=f"unreadable HINT cache in {tmp_path}"):
        again = main_split(scale=0.002, seed=3, cache_root=tmp_path, progress=False)
    assert again["train"].expr == first["train"].expr


def test_scales_that_differ_beyond_six_digits_have_their_own_caches(tmp_path):
    """0.1250001 read the cache of 0.125 (its six-digit name): 120 training expressions instead of 130."""
    coarse = fewshot_split("a", scale=0.125, cache_root=tmp_path, progress=False)
    fine = fewshot_split("a", scale=0.1250001, cache_root=tmp_path, progress=False)
    assert len(fine["train"]) == len(fewshot_split("a", scale=0.1250001, cache=False, progress=False)["train"])
    assert len(fine["train"]) != len(coarse["train"])
    names = {p.name for p in tmp_path.iterdir() if p.name.endswith("_train.npz")}
    assert names == {"fewshot_a_s0.125_seed0_v3_train.npz", "fewshot_a_s0.1250001_seed0_v3_train.npz"}, "0.125 keeps its name"


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="scale"):
        MAIN_RULES.with_scale(0)
    # were accepted: a size of 0 or -1 became lists of one, a fraction of -1 one item, NaN failed once generating
    for bad, match in (({"train_per_op": 0}, "train_per_op must be an int of at least 1, got 0"),
                       ({"test_per_op": 2.5}, "test_per_op must be an int of at least 1, got 2.5"),
                       ({"enumerate_up_to": -1}, "enumerate_up_to must be an int of at least 0, got -1"),
                       ({"test_i_fraction": -1.0}, "test_i_fraction must be a finite number above 0, got -1.0"),
                       ({"val_i_fraction": float("nan")}, "val_i_fraction must be a finite number above 0, got nan"),
                       ({"result_share_cap": 1.5}, r"result_share_cap must be a fraction in \(0, 1\], got 1.5")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            replace(MAIN_RULES, **bad)
    with pytest.raises(ValueError, match="few-shot concept"):
        fewshot_split("q", cache=False)


@pytest.mark.parametrize("seed", [-1, True, 1.5, None, "3"])
def test_a_seed_that_is_no_int_of_at_least_0_is_named_before_generating_or_caching(tmp_path, seed):
    """-1 failed in numpy's seeding ("expected non-negative integer"), None in a len(); True was seed 1 and "3" seed 3,
    cached under their own names ("seedTrue")."""
    rules = replace(MAIN_RULES.with_scale(0.002), max_train_ops=1, max_test_ops=2)
    for make in (
        lambda: generate_split(rules, MAIN_VOCABULARY, seed),
        lambda: main_split(scale=0.002, seed=seed, cache_root=tmp_path),
        lambda: fewshot_split("x", scale=0.01, seed=seed, cache_root=tmp_path),
    ):
        with pytest.raises(ValueError, match=f"^seed must be an int of at least 0, got {seed!r}$"):
            make()
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: sample_prefix(-1, 3, MAIN_VOCABULARY, 0), "n_op must be an int of at least 0, got -1"),
        (lambda: sample_prefix(True, 3, MAIN_VOCABULARY, 0), "n_op must be an int of at least 0, got True"),
        (lambda: sample_prefix(2, -1, MAIN_VOCABULARY, 0), "count must be an int of at least 0, got -1"),
        (lambda: sample_prefix(2, 2.5, MAIN_VOCABULARY, 0), "count must be an int of at least 0, got 2.5"),
        (lambda: enumerate_prefix(-1, MAIN_VOCABULARY), "n_op must be an int of at least 0, got -1"),
        (lambda: prefix_shapes(1.5), "n_op must be an int of at least 0, got 1.5"),
    ],
)
def test_prefix_sizes_that_are_no_ints_of_at_least_0_are_named(make, message):
    """-1 failed in numpy ("negative dimensions are not allowed", "need at least one array to concatenate"), 2.5 as a
    float that "cannot be interpreted as an integer", and True drew expressions of one operator."""
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        make()


def _lists(split: HintSplit) -> dict[tuple[str, int], list[int]]:
    """The record indices of each list of a split: ``(subset, n_op) -> indices`` (subset ``""`` for training)."""
    lists: dict[tuple[str, int], list[int]] = {}
    for index, (subset, n_op) in enumerate(zip(split.eval.tolist(), split.n_op.tolist())):
        lists.setdefault((subset, n_op), []).append(index)
    return lists


@settings(max_examples=6, deadline=None)
@given(
    concept=st.sampled_from([None, "x", "a", "d"]),
    max_train_ops=st.integers(0, 3),
    extra_ops=st.integers(1, 2),
    small_limit=st.integers(1, 60),
    large_limit=st.integers(61, 300),
    sizes=st.tuples(st.integers(1, 40), st.integers(1, 20), st.integers(1, 10)),
    enumerate_up_to=st.integers(0, 2),
    min_train_ops=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_any_rules_give_the_papers_subsets_distinct_lists_and_capped_results(
    concept, max_train_ops, extra_ops, small_limit, large_limit, sizes, enumerate_up_to, min_train_ops, seed
):
    """Section 3 for any SplitRules, not only the released ones: training expressions within the rules' operators
    and values, I seen in training, SS/LS/SL/LL unseen and by operators and largest value, every sampled list (n above
    enumerate_up_to) without repeats and no result above the share cap, validation and test disjoint per subset."""
    train_per_op, test_per_op, val_per_op = sizes
    rules = SplitRules(
        max_train_ops=max_train_ops,
        max_test_ops=max_train_ops + extra_ops,
        small_limit=small_limit,
        large_limit=large_limit,
        train_per_op=train_per_op,
        train_per_op_small={},
        test_per_op=test_per_op,
        val_per_op=val_per_op,
        enumerate_up_to=enumerate_up_to,
        min_train_ops=min(min_train_ops, max_train_ops),
    )
    vocabulary = MAIN_VOCABULARY if concept is None else fewshot_vocabulary(concept)
    split = generate_split(rules, vocabulary, seed, concept)
    trained = set(split["train"].expr)
    for name, part in split.items():
        for record in part:
            n_op, peak = operator_count(record.expr), _peak(record, vocabulary.table)
            assert (concept or "") in record.expr and evaluate(record.expr, vocabulary.table) == record.res
            if name == "train":
                assert rules.min_train_ops <= n_op <= max_train_ops and peak <= small_limit, record
            elif record.eval == "I":
                assert record.expr in trained, record
            else:
                short, small = n_op <= max_train_ops, peak <= small_limit
                expected = {(True, True): "SS", (False, True): "LS", (True, False): "SL", (False, False): "LL"}[(short, small)]
                assert record.eval == expected and record.expr not in trained and peak <= large_limit, record
        for (subset, n_op), indices in _lists(part).items():
            if n_op > enumerate_up_to:  # (an I subset was the training list's head: mostly its most frequent results)
                size = rules.train_size(n_op) if name == "train" else rules.scaled(val_per_op if name == "val" else test_per_op)
                size = rules.i_sizes(n_op)[name == "test"] if subset == "I" else size
                assert len({part.expr[i] for i in indices}) == len(indices)
                assert max(Counter(part.res[indices].tolist()).values()) <= rules.share_cap(size)
    for subset in ("SS", "LS", "SL", "LL"):
        in_val = {e for e, s in zip(split["val"].expr, split["val"].eval) if s == subset}
        assert not in_val & {e for e, s in zip(split["test"].expr, split["test"].eval) if s == subset}


def test_value_limits_at_or_above_the_samplers_ceiling_are_refused():
    """Values are clipped at 2**20: with limits above it a record of a clipped value joined the training split, its res
    contradicting its res_all (1048576 against 43046721 for 9**8)."""
    with pytest.raises(ValueError, match=r"need 0 < small_limit < large_limit < 1048576 .* got 2097152 and 2097153"):
        SplitRules(scale=0.001, small_limit=2**21, large_limit=2**21 + 1, max_train_ops=7, max_test_ops=8)
    assert SplitRules(small_limit=2**20 - 2, large_limit=2**20 - 1).large_limit == 2**20 - 1


def test_a_vocabulary_refuses_no_numbers_repeated_symbols_and_ids_outside_it():
    """An empty or repeated vocabulary failed later in numpy's sampling; id -1 was read as the last symbol."""
    with pytest.raises(ValueError, match=r"a vocabulary needs a number, got numbers \(\)"):
        Vocabulary((), ("+",), HINT_SEMANTICS)
    with pytest.raises(ValueError, match=r"a vocabulary names each symbol once, got \('1', '1', '\+'\)"):
        Vocabulary(("1", "1"), ("+",), HINT_SEMANTICS)
    vocabulary = Vocabulary(("1", "2"), ("+",), HINT_SEMANTICS)
    assert vocabulary.to_strings(np.array([[2, 0, 1]])) == ["+12"]
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 3\), got -1..2"):
        vocabulary.to_strings(np.array([[2, -1, 1]]))
