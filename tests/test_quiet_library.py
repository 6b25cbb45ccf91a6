"""Library calls are quiet: by default they draw no progress bar and print nothing; only the command-line
runners (``neurosym.experiments``) turn progress on."""

from __future__ import annotations

import pytest
import torch

from neurosym.data.hint import fewshot_split, main_split
from neurosym.training.classifier import fit_classifier
from neurosym.training.loop import TrainConfig

SCALE = 0.002


@pytest.fixture
def hint_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "hint"


def test_hint_splits_are_generated_and_loaded_without_output(hint_cache, capfd):
    splits = main_split(scale=SCALE, seed=5)
    fewshot = fewshot_split("x", scale=SCALE, seed=5)
    assert len(splits["train"]) > 0 and len(fewshot["train"]) > 0
    assert any(hint_cache.glob("main_*_train.npz"))  # generated and cached ...
    assert len(main_split(scale=SCALE, seed=5)["test"]) == len(splits["test"])  # ... then loaded from the cache
    assert capfd.readouterr() == ("", "")


def test_hint_generation_shows_progress_when_asked(hint_cache, capfd):
    main_split(scale=SCALE, seed=6, progress=True)
    assert "HINT main" in capfd.readouterr().err  # the capture above would see a bar


def test_training_is_quiet_by_default(capfd):
    torch.manual_seed(0)
    inputs = torch.randn(32, 4)
    model = torch.nn.Linear(4, 2)
    fit_classifier(model, inputs, (inputs[:, 0] > 0).long(), TrainConfig(max_steps=5, batch_size=8), torch.device("cpu"))
    assert capfd.readouterr() == ("", "")
