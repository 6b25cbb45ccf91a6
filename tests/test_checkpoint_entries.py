"""Every reader of a checkpoint refuses one that lacks an entry it reads (written by another program or version, or cut
short) with one ``ValueError`` naming the file and the entries it lacks, before it uses any of it: it failed with a bare
``KeyError`` naming no file once it reached the entry (a resume, after it had restored the model's weights). One whose
entry holds another kind of value than its reader reads is refused alike, naming the entry: it failed with a bare
``AttributeError`` or ``TypeError``, or (curves without one of theirs) was read as if that one were empty."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from hint_banks import prototype_bank
from hint_pipelines import short_training_records, tiny_pipeline, tiny_problem
from pvr_fakes import write_fake_mnist

from neurosym.benchmarking.arithmetic_training import GroupConfig, train_group
from neurosym.benchmarking.pvr_runs import BUDGETS, PVRRuns, RunStore
from neurosym.cli import main
from neurosym.data.mnist import load_mnist
from neurosym.data.pvr import DigitBank
from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.experiments import hint
from neurosym.experiments.hint_pipeline import trained_hint_pipeline
from neurosym.experiments.hint_pipeline.image import READER_OPTIONS, hint_reader
from neurosym.perception.cnn import SmallCNN
from neurosym.perception.saved_reader import load_reader
from neurosym.pipelines import ground_images
from neurosym.pipelines.adapt import check_adapted_reader
from neurosym.pipelines.ground_images import ImageGroundingConfig, learn_grounding_from_images, stages_checkpoint
from neurosym.pipelines.grounding import Grounding
from neurosym.pipelines.pvr import READER_WIDTH
from neurosym.pipelines.trainer import PipelineConfig, train_pipeline
from neurosym.pipelines.windows import WindowSource
from neurosym.semantics.induction import Program
from neurosym.training import CheckpointMismatch, load_checkpoint, save_checkpoint
from neurosym.training.stopping import StopRequests

CPU = torch.device("cpu")


class Refined(Exception):
    """Raised in place of the image grounding's refinement: its stages' checkpoint was read back."""


def _grounding_stages(run: Path) -> Path:
    """Learn (stages 1-3 stood in for: their checkpoint's entries as they write them) or read back the stages of an
    image grounding whose refinement checkpoints to ``run/refine.pt``; returns the stages' checkpoint."""
    grounding = Grounding(("number", "operator", "open", "close"), {0: 1}, {1: Program(("+", ("i",), ("j",)))}, {1: 1})
    source = WindowSource(short_training_records()[:8], prototype_bank(), "train", 0)
    config = ImageGroundingConfig(glyph_steps=1, restarts=1, batch_size=4, width=4, features=8, classes=4)

    def refinement(*args: Any) -> None:
        raise Refined

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ground_images, "_first_stages", lambda *args: (grounding, [[0]], {"glyphs": {}}))
        patch.setattr(ground_images, "train_pipeline", refinement)
        with pytest.raises(Refined):
            learn_grounding_from_images(source, CPU, config, run / "refine.pt")
    return stages_checkpoint(run / "refine.pt")


def _pipeline(run: Path) -> Path:
    """Train (or resume) the tiny pipeline for one step, checkpointed to ``run/pipeline.pt``; returns the checkpoint."""
    path = run / "pipeline.pt"
    train_pipeline(tiny_pipeline(), tiny_problem()[0], PipelineConfig(steps=1, batch_size=4), CPU, path, progress=False)
    return path


def _digit_reader(run: Path) -> Path:
    """Train (or load) the PVR runs' digit reader of the smoke budget on fake MNIST digits; returns its checkpoint."""
    mnist = load_mnist(write_fake_mnist(run / "mnist.pkl.gz"))
    runs = PVRRuns(CPU, BUDGETS["smoke"], RunStore(run / "out"))
    runs.digit_reader(DigitBank.from_mnist(mnist, "train"), DigitBank.from_mnist(mnist, "test"), cell=28)
    return runs.store.checkpoint(f"reader-28-n{BUDGETS['smoke'].reader_examples}-e3-seed0")


GROUP = GroupConfig("NAU", ("add",), (0,), steps=4, eval_every=2, evaluation_size=8)


def _group(run: Path) -> Path:
    """Start a group of arithmetic runs, stopped at once (its checkpoint unfinished), or resume it; returns the
    checkpoint."""
    path = run / "group.pt"
    with StopRequests(0) as stops:
        train_group(GROUP, CPU, path, resume=path.exists(), stops=stops, progress=False)
    return path


def _baseline(run: Path) -> Path:
    """Train a tiny ``neurosym hint --model gru`` run to ``run`` (or read its model back); returns its checkpoint."""
    path = run / "gru_symbol.pt"
    if path.exists():
        hint.trained_baseline(run, "gru")
        return path
    tiny = ["--scale", "0.002", "--batch-size", "8", "--eval-every", "2", "--embedding", "8", "--hidden", "8"]
    tiny += ["--encoder-layers", "1", "--eval-batch-size", "64", "--no-progress", "--device", "cpu"]
    assert main(["hint", "--model", "gru", "--steps", "2", "--out", str(run), *tiny]) == 0
    return path


READER_SETUP = {"cnn": "small", "classifier_features": 8, "classifier_width": 4, "stroke_width": None, "abduction_changes": 2}
"""A small reader's options as a ``neurosym hint --model neurosym --input image`` run keeps them."""


def _image_reader(run: Path) -> Path:
    """Write (as the run does) or read back the reader of a ``neurosym hint --model neurosym --input image`` run;
    returns its checkpoint."""
    path = run / "checkpoint.pt"
    if not path.exists():
        save_checkpoint({"setup": {"model": "neurosym", "input": "image", **READER_SETUP}, "vocabulary": list(HINT_SYMBOLS),
                         "model": hint_reader(READER_SETUP).state_dict()}, path)  # fmt: skip
    trained_hint_pipeline(run)
    return path


def _concept(run: Path) -> Path:
    """Write (as the run's few-shot stage does) or read back the model of the few-shot concept ``x`` learned at scale
    0.01; returns its checkpoint."""
    path = run / "fewshot_image_0.01_x.pt"
    if not path.exists():
        (run / "fewshot_image.json").write_text(json.dumps({"0.01": {"concepts": {"x": {"val_accuracy": 1.0}}}}))
        reader = hint_reader(READER_SETUP)
        reader.add_symbol("x")
        save_checkpoint({"setup": READER_SETUP, "vocabulary": list(reader.vocabulary), "model": reader.state_dict(),
                         "role": "number", "value": 11, "level": None, "program": None}, path)  # fmt: skip
    trained_hint_pipeline(run, "x")
    return path


def _adaptation(run: Path) -> Path:
    """Write (keeping the setup entry ``adapt_to_writer`` keeps) or check the adaptation checkpoint of a run, which
    adapted the trained reader of digest ``"trained"``; returns the checkpoint."""
    path = run / "adapt_checkpoint.pt"
    if not path.exists():
        save_checkpoint({"setup": {"trained_reader": "trained"}, "model": {}}, path)
    check_adapted_reader(run, "trained")
    return path


def _trained_reader(run: Path) -> Path:
    """Write (as a training loop does) or read back a reader's training checkpoint; returns it."""
    path = run / "reader.pt"
    if not path.exists():
        save_checkpoint({"config": {"steps": 2}, "step": 2, "model": hint_reader(READER_SETUP).state_dict()}, path)
    load_reader(path, hint_reader(READER_SETUP))
    return path


KINDS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "grounding stages": (_grounding_stages, "learn_grounding_from_images' stages 1-3"),
    "pipeline": (_pipeline, "train_pipeline"),
    "digit reader": (_digit_reader, "a PVR digit reader"),
    "arithmetic group": (_group, "train_group"),
    "hint baseline": (_baseline, "a neurosym hint run"),
    "hint reader": (_image_reader, "a neurosym hint --model neurosym --input image run"),
    "few-shot concept": (_concept, "a few-shot concept"),
    "adaptation": (_adaptation, "adapt_to_writer's adaptation"),
    "trained reader": (_trained_reader, "a reader's training"),
}
"""Per kind of checkpoint: what writes a real one to a folder and reads it back from there (returning its path), and
what its refusal says the checkpoint is not."""

ENTRIES = {
    "grounding stages": ["setup", "classifier", "grounding", "readings", "log"],
    "pipeline": ["baseline"],
    "digit reader": ["model"],
    "arithmetic group": ["curves", "generator", "curves.steps", "curves.test"],
    "hint baseline": ["loop", "step", "config", "loop.best_model", "loop.bad_evaluations", "config.max_steps", "config.patience"],
    "hint reader": [f"setup.{name}" for name in READER_OPTIONS],
    "few-shot concept": ["setup", "model", "value", "level", "program", *(f"setup.{name}" for name in READER_OPTIONS)],
}
"""Per kind of checkpoint, each entry its reader reads (``outer.inner`` for one inside another)."""


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Kind -> a folder holding a real checkpoint of that kind (written once per kind, copied for each test)."""
    folders: dict[str, Path] = {}

    def folder(kind: str) -> Path:
        if kind not in folders:
            folders[kind] = tmp_path_factory.mktemp(re.sub(r"\W", "_", kind))
            KINDS[kind][0](folders[kind])
        return folders[kind]

    return folder


def _without(saved: dict[str, Any], entry: str) -> None:
    """Remove ``entry`` (``outer.inner`` for one inside another) from the checkpoint ``saved``."""
    *outer, name = entry.split(".")
    del _inside(saved, outer)[name]


def _inside(saved: dict[str, Any], outer: list[str]) -> dict[str, Any]:
    """The entry of the checkpoint ``saved`` at the names ``outer`` (each inside the one before)."""
    for key in outer:
        saved = saved[key]
    return saved


@pytest.mark.parametrize(("kind", "entry"), [(kind, entry) for kind, entries in ENTRIES.items() for entry in entries])
def test_a_checkpoint_without_an_entry_its_reader_reads_is_named_with_it(
    written: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, entry: str
) -> None:
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(written(kind), run)
    read, what = KINDS[kind]
    path = read(run)  # (the checkpoint as written reads back)
    saved = load_checkpoint(path)
    _without(saved, entry)
    save_checkpoint(saved, path)
    *outer, name = entry.split(".")
    refused = f"{path} is not a checkpoint of {what}{f' (its {outer[0]})' if outer else ''}: it lacks {[name]}"
    with pytest.raises(ValueError, match=f"^{re.escape(refused)} "):
        read(run)


def test_a_finished_arithmetic_group_without_its_stream_state_is_still_read(tmp_path: Path) -> None:
    """A finished run needs no stream state: one without it is read, not refused."""
    path = tmp_path / "group.pt"
    short = replace(GROUP, steps=2)
    ran = train_group(short, CPU, path, progress=False)
    saved = load_checkpoint(path)
    del saved["generator"]
    save_checkpoint(saved, path)
    again = train_group(short, CPU, path, resume=True, progress=False)
    assert again.finished and again.curves.steps == ran.curves.steps


OTHER_KINDS = [
    ("arithmetic group", "curves", [1.0], "its curves is a list, not a mapping"),  # was: AttributeError, no 'items'
    ("arithmetic group", "curves.test", "x", "its test is a str, not a list of tensors"),  # AttributeError, no 'cpu'
    ("arithmetic group", "curves.extra", [], "it has ['extra'] beyond ['steps', 'validation', 'test', 'sparsity']"),
    ("hint reader", "setup", ["neurosym"], "its setup is a list, not a mapping"),  # AttributeError, no 'get'
    ("few-shot concept", "setup", "small", "its setup is a str, not a mapping"),  # read as lacking every option
    ("adaptation", "setup", "trained", "its setup is a str, not a mapping"),  # AttributeError, no 'get'
    ("trained reader", "step", "2", "its step is a str, not a number"),  # TypeError: '<' not supported
    ("trained reader", "config.steps", None, "its steps is a NoneType, not a number"),  # TypeError: '<' not supported
    ("trained reader", "config", [2], "its config is a list, not a mapping"),
    ("trained reader", "model", [], "its model is a list, not a mapping"),  # AttributeError, no 'keys'
    ("hint baseline", "loop", [1], "its loop is a list, not a mapping"),  # said to lack every entry inside it
    ("hint baseline", "config", "x", "its config is a str, not a mapping"),  # said to lack every entry inside it
    ("hint baseline", "step", "2", "its step is a str, not a number"),  # TypeError: '>=' not supported
]
"""Per kind of checkpoint: an entry (``outer.inner`` for one inside another), a value of another kind than its reader
reads, and how the refusal names it."""


@pytest.mark.parametrize(("kind", "entry", "value", "named"), OTHER_KINDS)
def test_a_checkpoint_whose_entry_holds_another_kind_of_value_is_named_with_it(
    written: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, entry: str, value: Any, named: str
) -> None:
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(written(kind), run)
    read, what = KINDS[kind]
    path = read(run)
    saved = load_checkpoint(path)
    *outer, name = entry.split(".")
    _inside(saved, outer)[name] = value
    save_checkpoint(saved, path)
    refused = f"{path} is not a checkpoint of {what}{f' (its {outer[0]})' if outer else ''}: {named}; remove it"
    with pytest.raises(ValueError, match=f"^{re.escape(refused)}$"):
        read(run)


def test_a_stored_digit_reader_of_other_sizes_is_named(written: Callable[[str], Path], tmp_path: Path) -> None:
    """It failed with load_state_dict's bare ``RuntimeError``, naming no file."""
    run = tmp_path / "run"
    shutil.copytree(written("digit reader"), run)
    path = _digit_reader(run)
    save_checkpoint({"model": SmallCNN(1, 10, input_size=28, width=2 * READER_WIDTH).state_dict()}, path)
    with pytest.raises(
        CheckpointMismatch, match=f"^{re.escape(str(path))} holds another digit reader \\(other sizes or options\\)"
    ):
        _digit_reader(run)
