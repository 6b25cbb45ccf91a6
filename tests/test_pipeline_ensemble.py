"""``neurosym pipeline --ensemble`` over runs of a small task of one's own: each member is read with the reader its
run scored, an ensemble that refit a reader is read back and counted as that reader, and the members' folders are
kept wherever the run is read back from."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import torch
from test_tasks import BINARY_TASK

from neurosym.cli import main
from neurosym.experiments.pipeline import trained_pipeline
from neurosym.perception.ensemble import ReaderEnsemble
from neurosym.pipelines import evaluate_grammar_pipeline
from neurosym.training.checkpoint import load_checkpoint

COMMON = ["pipeline", "--task", "my_binary_task", "--no-progress", "--device", "cpu"]
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def refit_member(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run that refit its reader (``refit.pt`` beside ``checkpoint.pt``), in the folder of its task module."""
    folder = tmp_path_factory.mktemp("ensemble")
    (folder / "my_binary_task.py").write_text(BINARY_TASK)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "path", [str(folder), *sys.path])
        assert main([*COMMON, "--refit-epochs", "1", "--out", str(folder / "member")]) == 0
    return folder / "member"


@pytest.fixture
def task_module(refit_member: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The task module importable (and ``sys.path`` as it was afterwards)."""
    monkeypatch.setattr(sys, "path", [str(refit_member.parent), *sys.path])


def results_of(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())


def test_a_member_that_refit_its_reader_is_read_with_the_refit_reader(refit_member, task_module, tmp_path):
    member = results_of(refit_member)
    assert member["validation"] != member["refit"]["validation_before"]  # the reader before the refit reads otherwise
    assert main([*COMMON, "--ensemble", str(refit_member), "--out", str(tmp_path / "alone")]) == 0
    alone = results_of(tmp_path / "alone")
    assert (alone["validation"], alone["test"]) == (member["validation"], member["test"])  # what the run scored
    _, rebuilt = trained_pipeline(tmp_path / "alone")
    assert isinstance(rebuilt.reader, ReaderEnsemble)
    (reader,) = rebuilt.reader.readers
    refit = load_checkpoint(refit_member / "refit.pt")["model"]
    assert all(torch.equal(value, refit[name]) for name, value in reader.state_dict().items())


def test_an_ensemble_that_refit_a_reader_is_read_back_and_counted_as_that_reader(refit_member, task_module, tmp_path):
    out = tmp_path / "refit"
    assert main([*COMMON, "--ensemble", str(refit_member), str(refit_member), "--refit-epochs", "1", "--out", str(out)]) == 0
    results = results_of(out)
    task, rebuilt = trained_pipeline(out)
    assert not isinstance(rebuilt.reader, ReaderEnsemble)  # the reader refit to the members' labels, not the members
    fitted = load_checkpoint(out / "refit.pt")["model"]
    assert all(torch.equal(value, fitted[name]) for name, value in rebuilt.reader.state_dict().items())
    assert evaluate_grammar_pipeline(rebuilt, task.validation, CPU) == results["validation"]
    # the parameters of the reader scored: one reader, not the two members it was refit from
    assert results["reader_parameters"] == sum(parameter.numel() for parameter in rebuilt.reader.parameters())


def test_an_ensemble_refit_with_no_resume_fits_afresh(refit_member, task_module, tmp_path):
    out = tmp_path / "refit"
    command = [*COMMON, "--ensemble", str(refit_member), "--refit-epochs", "1", "--out", str(out)]
    assert main(command) == 0
    first = load_checkpoint(out / "refit.pt")
    (out / "refit.pt").write_bytes((refit_member / "refit.pt").read_bytes())  # another run's refit in its place
    assert main([*command, "--no-resume"]) == 0
    again = load_checkpoint(out / "refit.pt")
    assert all(torch.equal(value, first["model"][name]) for name, value in again["model"].items())


def test_an_ensemble_keeps_its_members_folders_wherever_it_is_read_back(refit_member, task_module, tmp_path, monkeypatch):
    monkeypatch.chdir(refit_member.parent)
    assert main([*COMMON, "--ensemble", refit_member.name, "--out", str(tmp_path / "ensemble")]) == 0
    results = results_of(tmp_path / "ensemble")
    assert results["ensemble"] == [str(refit_member.resolve())]
    monkeypatch.chdir(tmp_path)  # read back from elsewhere, where a folder of the member's name is no run
    (tmp_path / refit_member.name).mkdir()
    task, rebuilt = trained_pipeline(tmp_path / "ensemble")
    assert evaluate_grammar_pipeline(rebuilt, task.validation, CPU) == results["validation"]


def test_members_of_another_task_are_refused_and_of_another_seed_where_the_seed_assigns_the_splits(
    refit_member, task_module, tmp_path, capsys
):
    assert main([*COMMON, "--ensemble", str(refit_member), "--seed", "1", "--out", str(tmp_path / "seed1")]) == 0
    # a task whose seed draws which images go to which split: another seed's member trained on this seed's test images
    (refit_member.parent / "my_seeded_task.py").write_text(
        BINARY_TASK.replace('data_note="four handwritten bits"', 'data_note="four handwritten bits", seed_assigns_splits=True')
    )
    seeded = ["pipeline", "--task", "my_seeded_task", "--no-progress", "--device", "cpu"]
    assert main([*seeded, "--ensemble", str(refit_member), "--out", str(tmp_path / "other_task")]) == 1
    assert "--task my_binary_task there, my_seeded_task here" in capsys.readouterr().err  # (was read as its own)
    assert main([*seeded, "--out", str(tmp_path / "member")]) == 0
    assert main([*seeded, "--ensemble", str(tmp_path / "member"), "--seed", "1", "--out", str(tmp_path / "other_seed")]) == 1
    assert "--seed 0 there, 1 here" in capsys.readouterr().err
    assert main([*seeded, "--ensemble", str(tmp_path / "member"), "--out", str(tmp_path / "same")]) == 0


FOREIGN_RESULTS = [
    ("ensemble", None, "is not the results of a neurosym pipeline run: it lacks ['ensemble']"),  # was: KeyError
    ("abduction", None, "is not the results of a neurosym pipeline run: it lacks ['abduction']"),  # KeyError
    ("config", [1], "is not the results of a neurosym pipeline run: its config is a list, not a mapping"),  # AttributeError
    ("ensemble", [1], "is not the results of a neurosym pipeline run: its ensemble is a list, not a list of paths"),
    ("abduction", {"max_changes": 1, "new_option": 2}, "records an abduction budget this version cannot take"),  # TypeError
]
"""An entry of a run's ``results.json`` (a value, or ``None`` for none), as another program or version may write it,
and how reading the run back names it."""


@pytest.mark.parametrize(("entry", "value", "named"), FOREIGN_RESULTS)
def test_results_of_another_program_or_version_are_named_where_the_run_is_read_back(
    refit_member, task_module, tmp_path, entry, value, named
):
    run = tmp_path / "run"
    shutil.copytree(refit_member, run)
    results = results_of(run)
    if value is None:
        del results[entry]
    else:
        results[entry] = value
    (run / "results.json").write_text(json.dumps(results))
    with pytest.raises(ValueError, match=f"^{re.escape(str(run / 'results.json'))} {re.escape(named)}"):
        trained_pipeline(run)


def test_an_ensemble_member_whose_results_lack_an_entry_is_named(refit_member, task_module, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(refit_member, run)
    results = results_of(run)
    del results["train_seconds"]
    (run / "results.json").write_text(json.dumps(results))
    assert main([*COMMON, "--ensemble", str(run), "--out", str(tmp_path / "ensemble")]) == 1
    named = f"--ensemble: {run / 'results.json'} is not the results of a neurosym pipeline run: it lacks ['train_seconds']"
    assert named in capsys.readouterr().err  # was: "neurosym pipeline: train_seconds", a bare KeyError
