"""Validation and test subsets keep their meaning for a run trained on part of a training list: ``I`` holds
expressions the run trained on, ``SS``/``LS``/``SL``/``LL`` expressions it did not (generated splits tested at
another scale, and a release whose training list is subsampled)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neurosym.cli import build_parser
from neurosym.data.hint import (
    EVAL_SUBSETS,
    MAIN_RULES,
    MAIN_VOCABULARY,
    HintRecord,
    SplitRules,
    fewshot_split,
    generate_split,
    held_out_for,
    load_release,
    main_split,
    operator_count,
    read_release,
    seen_records,
    subsample,
    write_release,
)
from neurosym.experiments import CommandFailed
from neurosym.experiments.hint_options import HintOptions
from neurosym.experiments.hint_sources import load_hint_data
from neurosym.experiments.options import options_from


@pytest.fixture()
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    return tmp_path


def record(index: int, expr: str, subset: str | None) -> HintRecord:
    return HintRecord(str(index), expr, (-1,), 0, (0,), subset)


def strata(records: list[HintRecord]) -> Counter:
    """How many records of each subset and number of operators."""
    return Counter((r.eval, operator_count(r.expr)) for r in records)


EXPRESSIONS = ("1", "2", "3", "1+2", "2*3", "3-1", "1+2*3", "(1+2)*3")


@given(st.lists(st.tuples(st.sampled_from(EXPRESSIONS), st.sampled_from(EVAL_SUBSETS))), st.sets(st.sampled_from(EXPRESSIONS)))
def test_held_out_records_are_seen_in_i_and_unseen_elsewhere_in_their_order(pairs, trained) -> None:
    records = [record(i, expr, subset) for i, (expr, subset) in enumerate(pairs)]
    kept = held_out_for(records, trained)
    assert kept == [r for r in records if r in kept]  # order kept, nothing added
    assert all((r.expr in trained) == (r.eval == "I") for r in kept)
    assert len(kept) == sum((expr in trained) == (subset == "I") for expr, subset in pairs)


@given(
    st.lists(st.tuples(st.sampled_from(EXPRESSIONS), st.sampled_from((None, *EVAL_SUBSETS))), max_size=60),
    st.none() | st.sets(st.sampled_from(EXPRESSIONS)),
    st.sampled_from((0.05, 0.25, 0.5, 0.75, 1.0)),
    st.integers(0, 3),
)
def test_a_sample_keeps_each_subset_and_operator_counts_share_of_the_records_that_keep_their_meaning(
    pairs, trained, scale, seed
) -> None:
    records = [record(i, expr, subset) for i, (expr, subset) in enumerate(pairs)]
    chosen = subsample(records, scale, seed, trained)
    assert chosen == subsample(records, scale, seed, trained)  # a fixed seed gives one sample
    kept = records if trained is None else held_out_for(records, trained)
    assert chosen == [r for r in kept if r in chosen]  # drawn from those that keep their meaning, in order, once each
    available, full = strata(kept), strata(records)
    # each subset and number of operators: its share of the whole list (at least one), all where fewer keep their meaning
    assert strata(chosen) == {key: min(count, max(1, round(scale * full[key]))) for key, count in available.items()}


def test_splits_of_another_scale_test_i_on_trained_expressions_and_the_rest_on_unseen_ones(private_cache: Path) -> None:
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "none"]
    args = options_from(HintOptions, build_parser().parse_args([*argv, "--test-scale", "0.004"]))
    small, large = main_split(scale=0.002, progress=False), main_split(scale=0.004, progress=False)
    splits = load_hint_data(args, image_input=False, test_scale=args.test_scale).splits
    trained = {r.expr for r in small["train"]}
    assert [r.expr for r in splits["train"]] == [r.expr for r in small["train"]]
    for name in ("val", "test"):
        chosen = splits[name]
        assert all((r.expr in trained) == (r.eval == "I") for r in chosen)
        # I as the generator draws it at the test scale (as many of each number of operators), from the run's own list
        seen = [r for r in chosen if r.eval == "I"]
        assert strata(seen) == strata([r for r in large[name] if r.eval == "I"])
        assert seen == seen_records(small["train"], MAIN_RULES.with_scale(0.004), name)
        unseen = [(r.expr, r.eval) for r in chosen if r.eval != "I"]
        assert unseen == [(r.expr, r.eval) for r in large[name] if r.eval != "I" and r.expr not in trained]
        assert {r.eval for r in chosen} == set(EVAL_SUBSETS)
    unseen_i = [r for r in large["test"] if r.eval == "I" and r.expr not in trained]
    assert unseen_i  # the larger split's I subset holds expressions this run never trained on: they are left out


@pytest.mark.parametrize("scale", [0.002, 0.004])
def test_the_i_subset_of_a_training_list_at_its_own_scale_is_the_generated_one(private_cache: Path, scale: float) -> None:
    split = main_split(scale=scale, progress=False)
    for name in ("val", "test"):
        expected = [(r.expr, r.eval) for r in split[name] if r.eval == "I"]
        assert [(r.expr, r.eval) for r in seen_records(list(split["train"]), MAIN_RULES.with_scale(scale), name)] == expected
    with pytest.raises(ValueError, match="split must be 'val' or 'test', got 'train'"):
        seen_records(list(split["train"]), MAIN_RULES, "train")


@pytest.fixture()
def generated_release(private_cache: Path) -> Path:
    return write_release(private_cache / "release", {name: list(s) for name, s in main_split(scale=0.004).items()})


def test_a_subsampled_release_tests_i_on_the_expressions_of_its_sample(generated_release: Path) -> None:
    full = read_release(generated_release)
    whole, _ = load_release(generated_release, dict.fromkeys(("train", "val", "test"), 1.0), images=False)
    assert whole == full  # at scale 1 every record stays
    splits, _ = load_release(generated_release, {"train": 0.5, "val": 1.0, "test": 1.0}, seed=2, images=False)
    trained = {r.expr for r in splits["train"]}
    assert len(splits["train"]) < len(full["train"])
    for name in ("val", "test"):
        assert all((r.expr in trained) == (r.eval == "I") for r in splits[name])
        # test scale 1: every record that keeps its meaning, I ones included, is tested
        assert splits[name] == held_out_for(full[name], trained)
        assert 0 < sum(r.eval == "I" for r in splits[name]) < sum(r.eval == "I" for r in full[name])


@pytest.fixture()
def repeating_release(private_cache: Path) -> Path:
    """A release whose training list repeats its short expressions as the released one does (scale 1's 20,000 records
    with no operator hold 10 expressions), at a test's size."""
    rules = SplitRules(train_per_op=200, train_per_op_small={0: 1000, 1: 2000}, test_per_op=4, val_per_op=2,
                       max_train_ops=4, max_test_ops=6, test_i_fraction=0.02, val_i_fraction=0.01)  # fmt: skip
    splits = generate_split(rules, MAIN_VOCABULARY, seed=0)
    return write_release(private_cache / "repeating", {name: list(split) for name, split in splits.items()})


def test_a_release_sampled_at_one_scale_keeps_each_operator_counts_share_of_i(repeating_release: Path) -> None:
    full = read_release(repeating_release)
    splits, _ = load_release(repeating_release, dict.fromkeys(("train", "val", "test"), 0.1), seed=1, images=False)
    trained = {r.expr for r in splits["train"]}
    for name in ("val", "test"):
        seen = [r for r in splits[name] if r.eval == "I"]
        assert all(r.expr in trained for r in seen)
        available = strata([r for r in full[name] if r.eval == "I" and r.expr in trained])
        share = {key: max(1, round(0.1 * count)) for key, count in strata([r for r in full[name] if r.eval == "I"]).items()}
        assert strata(seen) == {key: min(count, share[key]) for key, count in available.items()}
    # every short expression was sampled for training, yet I keeps its tenth of them: 2 of the 20 without operators
    assert strata(splits["test"])[("I", 0)] == 2 and strata(full["test"])[("I", 0)] == 20
    # the training list keeps each number of operators' tenth
    assert strata(splits["train"]) == {key: round(0.1 * count) for key, count in strata(full["train"]).items()}


def test_a_sample_that_holds_no_i_expression_is_refused_naming_the_split(generated_release: Path) -> None:
    with pytest.raises(ValueError, match=r"expr_val.json: no I record .*training records sampled at scale 0.001"):
        load_release(generated_release, dict.fromkeys(("train", "val", "test"), 0.001), images=False)


def test_a_releases_fewshot_concept_tests_i_on_the_expressions_it_learned_from(private_cache: Path) -> None:
    main = {name: list(s) for name, s in main_split(scale=0.002).items()}
    fewshot = {"x": {name: list(s) for name, s in fewshot_split("x", scale=0.2).items()}}
    release = write_release(private_cache / "release", main, fewshot=fewshot)
    argv = ["hint", "--data", str(release), "--model", "neurosym", "--input", "symbol", "--fewshot-scales", "0.1"]
    with pytest.raises(CommandFailed, match=r"fewshot_dataset.json holds no lists of the few-shot concepts \['y', 'a', 'b', "):
        load_hint_data(options_from(HintOptions, build_parser().parse_args(argv)), image_input=False, fewshot=True)
    argv += ["--fewshot-concepts", "x"]  # (the release holds x alone: all six, the default, failed on y after x was learned)
    data = load_hint_data(options_from(HintOptions, build_parser().parse_args(argv)), image_input=False, fewshot=True)
    split = data.fewshot("x", 0.1)
    trained = {r.expr for r in split["train"]}
    assert 0 < len(split["train"]) < len(fewshot["x"]["train"])
    for name in ("val", "test"):
        assert all((r.expr in trained) == (r.eval == "I") for r in split[name])
        assert any(r.eval == "I" for r in split[name]) and any(r.eval != "I" for r in split[name])
    assert data.fewshot("x", 1.0) == fewshot["x"]  # at scale 1 the release's lists as written
