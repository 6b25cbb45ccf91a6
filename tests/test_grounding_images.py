"""Learning perception and semantics together from images and results: on a bank whose glyphs are
permuted (the images of one digit stand for another), the learned grounding shows the permutation."""

import re
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hint_banks import prototype_bank
from hint_pipelines import check_reads_in_evaluation_mode_and_keeps_training_mode, short_training_records, tiny_pipeline

from neurosym.data.hint import fewshot_split, main_split
from neurosym.data.symbol_images import HINT_SYMBOLS, SymbolBank
from neurosym.pipelines import ground_images
from neurosym.pipelines.concepts import ConceptNotLearned
from neurosym.pipelines.fewshot import FewShotConfig, learn_concept_from_images
from neurosym.pipelines.ground_images import (
    ImageGroundingConfig,
    glyph_grid,
    kmeans,
    learn_grounding_from_images,
    read_classes,
    save_glyph_grid,
    stages_checkpoint,
    symbol_accuracy,
)
from neurosym.pipelines.ground_symbols import GroundingConfig
from neurosym.pipelines.grounding import Grounding, compare_grounding
from neurosym.pipelines.trainer import evaluate_pipeline, evaluate_pipeline_on_each
from neurosym.pipelines.windows import WindowSource
from neurosym.semantics import HINT_SEMANTICS
from neurosym.semantics.induction import Program
from neurosym.training.checkpoint import CheckpointMismatch
from neurosym.training.stopping import TrainingInterrupted

CPU = torch.device("cpu")
DIGIT_PERMUTATION = dict(zip("0123456789", "7305896421"))


def _permuted_bank() -> tuple[SymbolBank, dict[str, str]]:
    """Prototype glyphs where each digit's images are labelled with another digit (and glyphs of the few-shot
    concepts ``x`` and ``a``, never seen while the grounding is learned); returns the bank and, per label,
    the symbol whose prototype its images show."""
    bank = prototype_bank(per_symbol=30, seed=3, symbols=[*HINT_SYMBOLS, "x", "a"])
    labels = np.array([DIGIT_PERMUTATION.get(label, label) for label in bank.labels])
    shown = {DIGIT_PERMUTATION.get(s, s): s for s in HINT_SYMBOLS}
    return SymbolBank(bank.images, labels, bank.pools, bank.paths), shown


SMALL = ImageGroundingConfig(  # (one round of re-reading the operators runs the code of two, in fewer seconds)
    glyph_steps=50, glyph_batch=64, restarts=2, operator_rounds=1, refine_steps=5, batch_size=16, width=8, features=32,
    max_reading_length=7,
)  # fmt: skip


@pytest.fixture(scope="session")  # (not per module: the slow test, collected first, would have it learned twice)
def learned():
    torch.manual_seed(0)
    records = [r for r in main_split(scale=0.002, seed=0, cache=False, progress=False)["train"] if len(r.expr) <= 7]
    bank, shown = _permuted_bank()
    source = WindowSource(records, bank, "train", 0)
    return learn_grounding_from_images(source, CPU, SMALL), source, shown, bank


def test_the_grounding_of_a_permuted_bank_shows_the_permutation(learned):
    result, source, shown, _ = learned
    assert not result.pipeline.classifier.training  # returned ready to read
    accuracy, matching = symbol_accuracy(result.pipeline, source, CPU)
    assert accuracy > 0.95
    class_symbols = [matching.get(c, "") for c in range(result.grounding.size)]
    assert compare_grounding(result.grounding, HINT_SEMANTICS, class_symbols).equal
    # the class that reads the images labelled 3 (the glyph drawn for 1) has the value 3
    three = next(c for c, s in matching.items() if s == "3")
    assert shown["3"] == "1" and result.grounding.values[three] == 3


def test_glyph_grid_shows_each_class_and_plots(learned, tmp_path):
    result, source, _, _ = learned
    result.pipeline.classifier.train()
    grid = glyph_grid(result.pipeline, source, 3, CPU)
    assert result.pipeline.classifier.training  # (a report left the reader in evaluation mode)
    result.pipeline.classifier.eval()
    assert grid.shape == (16, 3, 32, 32) and (grid.reshape(16, -1).max(axis=1) > 0).all()
    save_glyph_grid(grid, result.grounding.symbols, tmp_path / "glyphs.png")
    assert (tmp_path / "glyphs.png").stat().st_size > 0


@pytest.mark.cuda
def test_reports_read_on_the_device_and_give_the_pipeline_back_where_it_was(learned, accelerator):
    result, source, _, _ = learned
    expected = symbol_accuracy(result.pipeline, source, CPU), glyph_grid(result.pipeline, source, 3, CPU)
    assert symbol_accuracy(result.pipeline, source, accelerator)[0] == pytest.approx(expected[0][0])
    assert glyph_grid(result.pipeline, source, 3, accelerator).shape == expected[1].shape
    scores = evaluate_pipeline(result.pipeline, source, CPU)
    assert evaluate_pipeline(result.pipeline, source, accelerator)["avg"] == pytest.approx(scores["avg"])
    assert evaluate_pipeline_on_each(result.pipeline, {"train": source}, accelerator)["train"]["avg"] == pytest.approx(
        scores["avg"]
    )
    assert {p.device.type for p in result.pipeline.classifier.parameters()} == {"cpu"}  # (was left on the device)


@pytest.mark.parametrize(("concept", "role", "meaning"), [("x", "number", "= 11"), ("a", "operator", "level 1: max(i, j)")])
def test_after_learning_everything_a_new_concept_is_learned_from_eleven_results(learned, concept, role, meaning):
    result, source, _, bank = learned
    assert concept not in result.grounding.symbols  # display symbols never take a few-shot concept's name
    split = fewshot_split(concept, scale=0.01, seed=0, cache=False, progress=False)
    config = FewShotConfig(glyph_steps=60, abduction_steps=30)
    new = learn_concept_from_images(result.pipeline, concept, list(split["train"]), source.records[:40], bank, CPU, config)
    assert new.role == role and new.learned.meaning == meaning
    test = [r for r in split["test"] if len(r.expr) <= 7]
    assert evaluate_pipeline(new.pipeline, WindowSource(test, bank, "test"), CPU)["avg"] >= 0.8


class Refined(Exception):
    """Raised in place of the refinement, once the test has seen what it was given."""


def test_the_refinement_gets_what_stages_1_to_3_left_of_the_time_limit(monkeypatch):
    clock, limits = [0.0], []
    monkeypatch.setattr(ground_images, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    grounding = Grounding(("number", "operator", "open", "close"), {0: 1}, {1: Program(("+", ("i",), ("j",)))}, {1: 1})

    def first_stages(*args):
        clock[0] += 100.0  # stages 1-3 take 100 s of the 150
        return grounding, [], {}

    def refinement(*args):
        limits.append(args[6])
        raise Refined

    monkeypatch.setattr(ground_images, "_first_stages", first_stages)
    monkeypatch.setattr(ground_images, "train_pipeline", refinement)
    source = WindowSource(short_training_records()[:8], prototype_bank(), "train", 0)
    with pytest.raises(Refined):
        learn_grounding_from_images(source, CPU, replace(SMALL, classes=4), time_limit=150.0)
    assert limits == [50.0]  # (was 150: the refinement's clock started afresh after stages 1-3)


@pytest.mark.slow
def test_the_refinement_stops_at_a_time_limit_and_a_rerun_continues_it_from_the_stages_kept(learned, tmp_path, monkeypatch):
    result, source, _, bank = learned
    checkpoint = tmp_path / "refine.pt"
    with pytest.raises(TrainingInterrupted) as stopped:
        learn_grounding_from_images(source, CPU, SMALL, checkpoint, time_limit=0)
    assert stopped.value.step == 1 and checkpoint.is_file() and stages_checkpoint(checkpoint) == tmp_path / "refine_stages.pt"

    def relearned(*args):
        raise AssertionError("stages 1-3 learned again though they were kept")  # (a rerun repeated them: minutes)

    monkeypatch.setattr(ground_images, "_first_stages", relearned)
    resumed = learn_grounding_from_images(source, CPU, SMALL, checkpoint)
    assert torch.load(checkpoint, weights_only=False)["step"] == SMALL.refine_steps
    assert resumed.grounding.to_json() == result.grounding.to_json()
    untimed = [
        {stage: {k: v for k, v in entry.items() if k != "seconds"} for stage, entry in run.log.items()}
        for run in (result, resumed)
    ]
    assert untimed[0] == untimed[1]
    other = replace(SMALL, glyph_steps=51, refine_steps=SMALL.refine_steps + 1)  # (the refinement's own fields may change)
    with pytest.raises(
        CheckpointMismatch,
        match=r"refine_stages.pt was written for another model or data \(config.glyph_steps differ\): config.glyph_steps 50 there, 51",
    ):
        learn_grounding_from_images(source, CPU, other, checkpoint)
    with pytest.raises(CheckpointMismatch, match=r"\(data, expressions, images differ\)"):
        learn_grounding_from_images(WindowSource(source.records[:-1], bank, "train", 0), CPU, SMALL, checkpoint)
    other_images = SymbolBank(255 - bank.images, bank.labels, bank.pools, bank.paths)
    with pytest.raises(CheckpointMismatch, match=r"\(images differ\)"):
        learn_grounding_from_images(WindowSource(source.records, other_images, "train", 0), CPU, SMALL, checkpoint)
    with pytest.raises(CheckpointMismatch, match=r"\(images differ\)"):  # the same bank, other images drawn
        learn_grounding_from_images(WindowSource(source.records, bank, "train", 7), CPU, SMALL, checkpoint)
    swapped = [replace(r, expr=r.expr[::-1]) if re.fullmatch(r"\d[+*]\d", r.expr) else r for r in source.records]
    assert swapped != source.records  # other expressions, the same results and lengths
    with pytest.raises(CheckpointMismatch, match=r"\(data, images differ\)"):
        learn_grounding_from_images(WindowSource(swapped, bank, "train", 0), CPU, SMALL, checkpoint)


def test_grounding_without_one_symbol_expressions_is_refused_and_leaves_the_random_stream_alone():
    records = [r for r in main_split(scale=0.002, seed=0, cache=False, progress=False)["train"] if len(r.expr) == 3]
    torch.manual_seed(5)
    before = torch.get_rng_state()
    with pytest.raises(ConceptNotLearned, match="no one-symbol expression"):  # was numpy's "high <= 0"
        learn_grounding_from_images(WindowSource(records, prototype_bank(), "train", 0), CPU, SMALL)
    assert torch.equal(torch.get_rng_state(), before)  # (was reseeded with config.seed)


def test_reading_classes_reads_in_evaluation_mode_and_leaves_the_reader_in_the_callers_mode():
    pipeline, source = tiny_pipeline(), WindowSource(short_training_records()[:20], prototype_bank(), "train")
    check_reads_in_evaluation_mode_and_keeps_training_mode(
        pipeline.classifier, lambda: read_classes(pipeline, source, range(20), CPU)
    )


def test_kmeans_separates_far_apart_blobs():
    generator = torch.Generator().manual_seed(0)
    centres = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    points = torch.cat([c + torch.randn(20, 2, generator=generator) for c in centres])
    assignment, inertia = kmeans(points, 3, 10, seed=0)
    groups = assignment.view(3, 20)
    assert all(len(set(g.tolist())) == 1 for g in groups) and len(set(groups[:, 0].tolist())) == 3
    assert inertia < 3 * 20 * 2 * 2
    for bad, clusters, message in ((points, 0, "clusters must be an int of at least 1, got 0"),  # labels were all 0
                                   (points[:, 0], 2, r"floating-point tensor \[N, D\], got torch.float32 \[60\]"),
                                   (points.long(), 2, "floating-point tensor"), (points.tolist(), 2, "torch.Tensor")):  # fmt: skip
        with pytest.raises((ValueError, TypeError), match=message):
            kmeans(bad, clusters, 10, seed=0)


def test_config_is_checked():
    with pytest.raises(ValueError, match="classes"):
        ImageGroundingConfig(classes=3)
    with pytest.raises(ValueError, match="min_agreement"):
        ImageGroundingConfig(programs=GroundingConfig(min_agreement=0))
    for bad, message in (({"glyph_batch": 2.5}, "glyph_batch must be an int of at least 1, got 2.5"),  # was accepted
                         ({"refine_steps": -1}, "refine_steps must be an int of at least 0"),
                         ({"learning_rate": float("nan")}, "learning_rate must be a finite number above 0")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            ImageGroundingConfig(**bad)
