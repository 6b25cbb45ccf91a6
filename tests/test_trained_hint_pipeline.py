"""What :func:`~neurosym.experiments.hint_pipeline.trained_hint_pipeline` says of a folder that holds no run, and of
options that do not fit the call, before it reads anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.experiments.hint_pipeline import trained_hint_pipeline
from neurosym.experiments.hint_pipeline.image import hint_reader
from neurosym.training import save_checkpoint

SETUP = {"cnn": "small", "classifier_features": 8, "classifier_width": 4, "stroke_width": None, "abduction_changes": 2}
"""A small reader's options as a ``neurosym hint --model neurosym --input image`` run keeps them."""


def _run(folder: Path) -> Path:
    """``folder`` holding the checkpoint of a finished image run (an untrained small reader); returns ``folder``."""
    folder.mkdir()
    save_checkpoint({"setup": {"model": "neurosym", "input": "image", **SETUP}, "vocabulary": list(HINT_SYMBOLS),
                     "model": hint_reader(SETUP).state_dict()}, folder / "checkpoint.pt")  # fmt: skip
    return folder


@pytest.mark.parametrize(("concept", "adapted"), [(None, False), ("x", False), (None, True)])
def test_a_missing_folder_is_named_as_missing(tmp_path, concept, adapted):
    """(was: "learned no few-shot concept 'x' (fewshot_image.json lists none)" for a concept, "holds no checkpoint.pt"
    otherwise)"""
    with pytest.raises(ValueError, match=r"/nowhere does not exist: give the --out folder of a neurosym hint"):
        trained_hint_pipeline(tmp_path / "nowhere", concept, adapted=adapted)


def test_the_checkpoint_given_for_its_folder_is_named_as_a_file(tmp_path):
    run = _run(tmp_path / "run")
    with pytest.raises(ValueError, match=r"checkpoint.pt is a file: give the --out folder"):  # (was: "holds no checkpoint.pt")
        trained_hint_pipeline(run / "checkpoint.pt")
    assert trained_hint_pipeline(str(run)).classifier.vocabulary == list(HINT_SYMBOLS)


def test_a_scale_without_a_concept_is_refused(tmp_path):
    run = _run(tmp_path / "run")
    with pytest.raises(ValueError, match=r"scale=0.01 picks the few-shot scale of a concept: give the concept too"):
        trained_hint_pipeline(run, scale=0.01)  # (was: the main reader, the scale ignored)


def test_a_concept_of_a_run_without_few_shot_stage_names_the_missing_record(tmp_path):
    run = _run(tmp_path / "run")
    with pytest.raises(ValueError, match=r"learned no few-shot concept 'x' from images \(it holds no fewshot_image.json: its"):
        trained_hint_pipeline(run, "x")  # (was: "(fewshot_image.json lists none)", of a file it lacks)
