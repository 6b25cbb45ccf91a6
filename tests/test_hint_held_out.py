"""Validation and test subsets keep their meaning for a run trained on part of a training list: ``I`` holds
expressions the run trained on, ``SS``/``LS``/``SL``/``LL`` expressions it did not (generated splits tested at
another scale, and a release whose training list is subsampled)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neurosym.cli import build_parser
from neurosym.data.hint import (
    EVAL_SUBSETS,
    HintRecord,
    held_out_for,
    load_release,
    main_split,
    read_release,
    write_release,
)
from neurosym.experiments.hint_sources import load_hint_data


@pytest.fixture()
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    return tmp_path


def record(index: int, expr: str, subset: str) -> HintRecord:
    return HintRecord(str(index), expr, (-1,), int(expr), (int(expr),), subset)


@given(st.lists(st.tuples(st.sampled_from("0123456789"), st.sampled_from(EVAL_SUBSETS))), st.sets(st.sampled_from("0123456789")))
def test_held_out_records_are_seen_in_i_and_unseen_elsewhere_in_their_order(pairs, trained) -> None:
    records = [record(i, expr, subset) for i, (expr, subset) in enumerate(pairs)]
    kept = held_out_for(records, trained)
    assert kept == [r for r in records if r in kept]  # order kept, nothing added
    assert all((r.expr in trained) == (r.eval == "I") for r in kept)
    assert len(kept) == sum((expr in trained) == (subset == "I") for expr, subset in pairs)


def test_splits_of_another_scale_test_i_on_trained_expressions_and_the_rest_on_unseen_ones(private_cache: Path) -> None:
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "none"]
    args = build_parser().parse_args([*argv, "--test-scale", "0.004"])
    small, large = main_split(scale=0.002, progress=False), main_split(scale=0.004, progress=False)
    splits = load_hint_data(args, image_input=False, test_scale=args.test_scale).splits
    trained = {r.expr for r in small["train"]}
    assert [r.expr for r in splits["train"]] == [r.expr for r in small["train"]]
    for name in ("val", "test"):
        chosen = splits[name]
        assert all((r.expr in trained) == (r.eval == "I") for r in chosen)
        own_i = [r.expr for r in small[name] if r.eval == "I"]
        assert [r.expr for r in chosen[: len(own_i)]] == own_i  # the run's own I subset first
        large_kept = [(r.expr, r.eval) for r in large[name] if (r.expr in trained) == (r.eval == "I")]
        rest = [(r.expr, r.eval) for r in chosen[len(own_i) :]]
        assert rest == [(e, s) for e, s in large_kept if not (s == "I" and e in own_i)]
        assert {r.eval for r in chosen} == set(EVAL_SUBSETS)
    unseen = [r for r in large["test"] if r.eval == "I" and r.expr not in trained]
    assert unseen  # the larger split's I subset holds expressions this run never trained on: they are left out


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
    # at one scale for all splits the I records are those of the sample, not sampled again
    same, _ = load_release(generated_release, dict.fromkeys(("train", "val", "test"), 0.5), seed=2, images=False)
    test_i = [r for r in same["test"] if r.eval == "I"]
    assert test_i == [r for r in full["test"] if r.eval == "I" and r.expr in trained]


def test_a_sample_that_holds_no_i_expression_is_refused_naming_the_split(generated_release: Path) -> None:
    with pytest.raises(ValueError, match=r"expr_val.json: no I record .*training records sampled at scale 0.001"):
        load_release(generated_release, dict.fromkeys(("train", "val", "test"), 0.001), images=False)
