"""What leaves the Python process that made it: checkpoints a user loads by hand with ``torch.load``'s default
``weights_only=True``, and data sets, collate functions, layers and pipelines pickled into ``spawn`` workers or
copied."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from neurosym.training import TrainConfig, load_checkpoint, save_checkpoint
from neurosym.training.classifier import fit_classifier

CPU = torch.device("cpu")


@pytest.fixture
def spawned_workers() -> Iterator[None]:
    """Data-loading workers started by ``spawn`` (macOS's and Windows' default), which pickle what they are sent."""
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)


def test_a_classifier_trains_with_a_spawned_worker_as_without_one(spawned_workers: None) -> None:
    """fit_classifier's collate function was a local closure: a spawned worker could not be sent it (``Can't pickle
    local object``), so ``num_workers`` failed wherever workers are spawned."""
    inputs, labels = torch.randn(16, 3), torch.arange(16) % 2
    weights = []
    for workers in (0, 1):
        torch.manual_seed(0)
        model = nn.Linear(3, 2)
        fit_classifier(model, inputs, labels, TrainConfig(max_steps=3, batch_size=4, num_workers=workers), CPU)
        weights.append(model.weight.detach())
    assert torch.equal(weights[0], weights[1])


def test_a_training_checkpoint_at_a_path_object_loads_weights_only_and_resumes(tmp_path: Path) -> None:
    """The configuration saved in a checkpoint held its ``checkpoint`` path as a ``PosixPath``, which
    ``torch.load(..., weights_only=True)`` (torch's default) refuses: a user's own look into the file failed."""
    inputs, labels = torch.randn(8, 3), torch.arange(8) % 2
    path = tmp_path / "run.pt"
    fit_classifier(nn.Linear(3, 2), inputs, labels, TrainConfig(max_steps=2, batch_size=4, checkpoint=path), CPU)
    saved = torch.load(path, weights_only=True)
    assert saved["config"]["checkpoint"] == str(path) and saved["step"] == 2
    again = TrainConfig(max_steps=2, batch_size=4, checkpoint=str(path))  # the path's text: the same run, finished
    resumed = fit_classifier(nn.Linear(3, 2), inputs, labels, again, CPU)
    assert (resumed.steps, resumed.steps_this_call) == (2, 0)


def test_saved_paths_become_text_at_any_depth_and_the_rest_stays_as_it_was(tmp_path: Path) -> None:
    model = nn.Linear(2, 1)
    state = {"setup": {"data": [tmp_path / "a", (tmp_path / "b", 1)]}, "model": model.state_dict(), "name": "x"}
    save_checkpoint(state, tmp_path / "c.pt")
    saved = torch.load(tmp_path / "c.pt", weights_only=True)
    assert saved["setup"] == {"data": [str(tmp_path / "a"), (str(tmp_path / "b"), 1)]} and saved["name"] == "x"
    assert saved["model"]._metadata == model.state_dict()._metadata  # (load_state_dict reads the versions there)
    assert state["setup"]["data"][0] == tmp_path / "a"  # the caller's own state is left as it was


def test_a_checkpoint_written_with_a_path_object_still_loads(tmp_path: Path) -> None:
    """Files written before paths were saved as text hold a ``PosixPath``: :func:`load_checkpoint` still reads them."""
    torch.save({"config": {"checkpoint": tmp_path / "old.pt"}}, tmp_path / "old.pt")
    assert load_checkpoint(tmp_path / "old.pt") == {"config": {"checkpoint": tmp_path / "old.pt"}}
