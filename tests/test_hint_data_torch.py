"""HINT PyTorch datasets, collate, and Figure A2-style statistics."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
import torch
from hint_banks import POOL_SHADES, pool_shaded_bank, prototype_bank
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neurosym.data.hint import (
    IGNORE_INDEX,
    PAD_ID,
    HintImageDataset,
    HintRecord,
    HintSymbolDataset,
    collate_hint,
    dependency_range,
    main_split,
    operator_count,
    random_sentences,
    result_digits,
    split_statistics,
    split_summary,
    symbol_kl_divergence,
    tree_depth,
)
from neurosym.plots.hint_data import plot_statistics
from neurosym.semantics import execute
from neurosym.syntax import heads, parse


def _record(expr: str, eval_: str | None = None) -> HintRecord:
    tree = parse(expr)
    execution = execute(tree)
    return HintRecord("0", expr, tuple(heads(tree)), int(execution.value), tuple(execution.res_all), eval_)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10**7))
def test_result_digits_are_reversed_decimal_digits(result):
    digits = result_digits(result)
    assert int("".join(map(str, reversed(digits)))) == result
    assert all(0 <= d <= 9 for d in digits)


def test_negative_results_are_rejected():
    with pytest.raises(ValueError, match="non-negative"):
        result_digits(-3)


@pytest.mark.parametrize("head", [[5, -1], [0], [1, 0], [2, -1, 0]])
def test_dependency_range_names_a_head_list_that_is_no_tree(head):
    """It measured any list: a parent beyond the symbols ([5, -1] gave 5), a symbol its own parent ([0] gave 0) or a
    cycle, where tree_depth of the same list raised."""
    with pytest.raises(ValueError, match=r"is not one tree rooted at -1"):
        dependency_range(head)
    assert dependency_range([1, -1, 1]) == 1


def test_result_digits_name_a_result_that_is_no_int_and_read_any_length():
    """2.0 failed as "invalid literal for int() with base 10: '.'", True on its 'e', "12" in a comparison; a result of
    5,000 digits in str's limit on integer text."""
    for bad in (2.0, True, "12", None):
        with pytest.raises(TypeError, match=f"^a HINT result is an int, got {type(bad).__name__}"):
            result_digits(bad)
    assert result_digits(10**5000) == [0] * 5000 + [1]
    assert result_digits(np.int64(120)) == [0, 2, 1]


def test_symbol_dataset_items_and_unknown_symbols():
    dataset = HintSymbolDataset([_record("9*(8+7)", "SL")])
    item = dataset[0]
    assert item["tokens"].tolist() == [10, 13, 15, 9, 11, 8, 16]
    assert item["res"].item() == 135 and item["res_digits"].tolist() == [5, 3, 1]
    assert item["head"].tolist() == [1, -1, 4, 4, 1, 4, 4] and item["eval"] == "SL"
    with pytest.raises(ValueError, match="symbol '%' at position 2"):
        dataset.encode("3+%")


@pytest.mark.parametrize("pool", ["train", "val", "test"])
def test_image_dataset_draws_windows_from_its_pool(pool):
    shade = POOL_SHADES[pool]
    dataset = HintImageDataset([_record("3+4*(2-1)"), _record("7")], pool_shaded_bank(), pool=pool, seed=5)
    item = dataset[0]
    assert item["images"].shape == (9, 1, 32, 32)
    assert torch.allclose(item["images"], torch.full((9, 1, 32, 32), shade / 255))
    assert torch.equal(dataset[0]["images"], item["images"])


@pytest.mark.parametrize(
    ("symbols", "problem"),
    [
        ("3+", r"record 0 \(id '0'\): 2 img_paths for the 3 symbols of '3\+4'"),
        ("3+5", r"img_paths\[2\] '5/\d+.jpg' shows '5', not '4'"),
    ],
)
def test_image_dataset_refuses_img_paths_that_do_not_match_the_symbols(symbols, problem):
    bank = pool_shaded_bank()
    path_of = {label: path for path, label in zip(bank.paths.tolist(), bank.labels.tolist())}
    record = dataclasses.replace(_record("3+4"), img_paths=tuple(path_of[symbol] for symbol in symbols))
    with pytest.raises(ValueError, match=problem):
        HintImageDataset([record], bank, pool="train")[0]
    right = dataclasses.replace(record, img_paths=tuple(path_of[symbol] for symbol in "3+4"))
    indices = HintImageDataset([right], bank, pool="train").image_indices(0, right)
    assert bank.paths[indices].tolist() == list(right.img_paths)


def test_a_negative_index_gives_the_item_of_the_records_position():
    """dataset[-1] is dataset[len - 1], its images too (they are drawn with the seed and the record's position)."""
    records = [_record(expr) for expr in ("3+4", "7", "(1+2)*3", "9-8")]
    dataset = HintImageDataset(records, prototype_bank(), pool="test", seed=2)
    for index in range(-len(records), 0):
        item, same = dataset[index], dataset[index + len(records)]
        assert torch.equal(item["images"], same["images"]) and torch.equal(item["tokens"], same["tokens"])
    with pytest.raises(IndexError):
        dataset[len(records)]


def test_image_dataset_picks_images_of_the_right_symbols():
    bank = pool_shaded_bank()
    dataset = HintImageDataset([_record("3+4*(2-1)")], bank, pool="train", seed=0)
    chosen = dataset.image_indices(0, dataset.records[0])
    assert bank.labels[chosen].tolist() == list("3+4*(2-1)")
    assert (bank.pools[chosen] == "train").all()
    with pytest.raises(ValueError, match="unknown pool"):
        HintImageDataset([], bank, pool="dev")
    for seed in (-1, 1.5, "1", True):  # -1 and 1.5 failed at the first item, in numpy's seeding; "1" and True drew as 1
        with pytest.raises(ValueError, match=f"^seed must be an int of at least 0, got {seed!r}$"):
            HintImageDataset([_record("7")], bank, pool="train", seed=seed)


def test_collate_pads_every_field():
    dataset = HintImageDataset([_record("3+4*(2-1)"), _record("7", "I")], pool_shaded_bank(), pool="test")
    batch = collate_hint([dataset[0], dataset[1]])
    assert batch["tokens"].shape == (2, 9) and batch["images"].shape == (2, 9, 1, 32, 32)
    assert batch["mask"].tolist()[1] == [True] + [False] * 8
    assert (batch["tokens"][1, 1:] == PAD_ID).all() and (batch["head"][1, 1:] == IGNORE_INDEX).all()
    assert batch["res_digits"].tolist() == [[7], [7]] and batch["res"].tolist() == [7, 7]
    assert batch["images"][1, 1:].abs().sum() == 0 and batch["eval"] == ["", "I"]
    with pytest.raises(ValueError, match="empty batch"):
        collate_hint([])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2**16)), min_size=1, max_size=5))
def test_collated_targets_line_up_with_every_token(shapes):
    sentences = [random_sentences(n_op, 1, seed)[0] for n_op, seed in shapes]
    records = [_record(s) for s in sentences if execute(parse(s)).value is not None]
    assume(records)
    dataset = HintSymbolDataset(records)
    batch = collate_hint([dataset[i] for i in range(len(records))])
    width = max(len(r.expr) for r in records)
    assert batch["tokens"].shape == batch["res_all"].shape == batch["head"].shape == batch["mask"].shape
    for row, record in enumerate(records):
        n = len(record.expr)
        assert batch["mask"][row].tolist() == [True] * n + [False] * (width - n)
        assert "".join(dataset.symbols[t - 1] for t in batch["tokens"][row, :n].tolist()) == record.expr
        values = batch["res_all"][row].tolist()
        assert values[n:] == [IGNORE_INDEX] * (width - n) and values[record.head.index(-1)] == record.res
        for symbol, value in zip(record.expr, values):  # digits head their value, brackets -1, operators a result
            assert value == int(symbol) if symbol.isdigit() else value == -1 if symbol in "()" else value >= 0


@pytest.mark.parametrize(
    ("head", "res_all", "counts"), [((1, -1), (3, 5, 2), "head 2 and res_all 3"), ((1, -1, 1), (3, 5), "head 3 and res_all 2")]
)
def test_a_record_whose_targets_do_not_match_its_symbols_is_named(head, res_all, counts):
    """Such a record was padded as it was: its res_all shifted against the tokens without a word."""
    dataset = HintSymbolDataset([_record("7"), HintRecord("r9", "3+2", head, 5, res_all)])
    with pytest.raises(ValueError, match=rf"record 1 \(id 'r9'\): expr '3\+2' has 3 symbols but {counts}"):
        dataset[1]


def test_tree_measures_of_known_expressions():
    record = _record("3-(5+2)*4")
    assert operator_count(record.expr) == 3
    assert tree_depth(record.expr, record.head) == 4
    assert dependency_range(record.head) == 6  # '*' (token 7) depends on '-' (token 1)
    single = _record("7")
    assert (operator_count("7"), tree_depth("7", single.head), dependency_range(single.head)) == (0, 1, 0)
    with pytest.raises(ValueError, match="not one tree"):
        tree_depth("34", [1, 0])


def test_split_statistics_and_plot(tmp_path):
    records = [_record(e) for e in ("3-(5+2)*4", "7", "9*9+9", "1+1")]
    stats = split_statistics(records)
    assert stats["symbol"]["9"] == 3 and sum(stats["symbol"].values()) == 9 + 1 + 5 + 3
    assert stats["n_op"] == Counter({3: 1, 0: 1, 2: 1, 1: 1})
    assert stats["result"] == Counter({"[0, 10)": 3, "[10, 100)": 1})
    sample = split_statistics(records, max_records=2)
    assert sum(sample["length"].values()) == 2
    assert symbol_kl_divergence(stats["symbol"], stats["symbol"]) == pytest.approx(0.0)
    assert symbol_kl_divergence(Counter("11+"), Counter("1+")) > 0
    with pytest.raises(ValueError, match="infinite"):
        symbol_kl_divergence(Counter("1*"), Counter("1+"))
    with pytest.raises(ValueError, match=r"negative counts \{'a': -1\}"):  # (was 0.0: a number for no frequencies)
        symbol_kl_divergence(Counter({"a": -1}), Counter("a"))
    with pytest.raises(ValueError, match="negative counts"):
        symbol_kl_divergence(Counter("ab"), Counter({"a": 2, "b": -1}))
    plot_statistics({"train": stats, "test": sample}, tmp_path / "stats.png")
    assert (tmp_path / "stats.png").stat().st_size > 10_000


def test_statistics_name_a_sample_size_that_is_no_int_of_at_least_1():
    """0 gave the statistics (and summary rows) of no record, -1 and 2.5 failed inside numpy."""
    records = [_record(e) for e in ("3-(5+2)*4", "7", "9*9+9", "1+1")]
    split = main_split(scale=0.001, cache=False)["test"]
    for size in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match=f"^max_records must be an int of at least 1, got {size!r}$"):
            split_statistics(records, max_records=size)
        with pytest.raises(ValueError, match=f"^sample must be an int of at least 1, got {size!r}$"):
            split_summary("test", split, size, 0)
    assert split_statistics(records, max_records=None)["n_op"] == split_statistics(records, max_records=4)["n_op"]


def test_a_bank_without_symbols_is_named():
    """HintImageDataset read its first symbol: an IndexError."""
    bank = pool_shaded_bank()
    empty = type(bank)(bank.images[:0], bank.labels[:0], bank.pools[:0], bank.paths[:0])
    with pytest.raises(ValueError, match="the bank holds no symbol"):
        HintImageDataset([_record("7")], empty, pool="train")


def test_a_value_beyond_int64_is_named_with_its_record():
    """torch failed with "Overflow when unpacking long", naming no record."""
    big = dataclasses.replace(_record("9*9"), res=2**64, res_all=(9, 2**64, 9))  # (as a release may hold it)
    with pytest.raises(ValueError, match=r"record 1 \(id '0'\): a value of '9\*9' does not fit an int64 tensor"):
        HintSymbolDataset([_record("7"), big])[1]
