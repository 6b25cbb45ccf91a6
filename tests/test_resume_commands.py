"""Every training command, stopped part-way by a stop request and run again as it was, writes what an uninterrupted
run writes: the same files, the same results (timings aside) and the same checkpoints (their generators aside)."""

from __future__ import annotations

import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hint_banks import prototype_bank
from mathematics_release import released_folder

from neurosym.cli import main
from neurosym.data.symbol_images import FEWSHOT_CONCEPTS, HINT_SYMBOLS
from neurosym.experiments import hint_sources
from neurosym.training.stopping import EXIT_TRY_AGAIN, TIME_LIMIT, StopRequests

SMALL_SEQ2SEQ = ["--scale", "0.002", "--batch-size", "8", "--eval-every", "2", "--embedding", "16", "--hidden", "32",
                 "--encoder-layers", "1", "--eval-batch-size", "64"]  # fmt: skip
SMALL_READER = ["--cnn", "small", "--scale", "0.002", "--batch-size", "4", "--classifier-features", "8",
                "--classifier-width", "4", "--speed-samples", "1"]  # fmt: skip
COMMANDS: dict[str, tuple[list[str], int]] = {
    "arithmetic": (["arithmetic", "--steps", "300", "--seeds", "2", "--models", "nau", "--operations", "add",
                    "--eval-every", "100", "--evaluation-size", "100", "--threshold-samples", "1000"], 150),
    "hint, transformer": (["hint", "--model", "transformer", "--steps", "6", *SMALL_SEQ2SEQ, "--dim", "16",
                           "--heads", "2"], 3),
    "hint, neurosym, symbols": (["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002",
                                 "--fewshot-scales", "0.01", "--fewshot-concepts", "x,a", "--speed-samples", "1"], 1),
    "hint, neurosym, images": (["hint", "--model", "neurosym", "--input", "image", *SMALL_READER, "--steps", "4",
                                "--curriculum", "3:2,7:2", "--fewshot-scales", "0.01", "--fewshot-concepts", "x",
                                "--fewshot-steps", "4,1", "--fewshot-replay", "10", "--augment-style", "0.5"], 6),
    "pipeline": (["pipeline", "--task", "hwf", "--epochs", "1.2", "--reader-width", "8", "--refit-epochs", "2"], 6),
    "mathematics": (["mathematics", "--preset", "smoke", "--modules", "arithmetic__mixed,arithmetic__div",
                     "--models", "lstm_att", "--steps", "7", "--checkpoint-every", "3"], 4),
    "pvr": (["pvr", "--preset", "smoke", "--sweeps", "vector", "--train-sizes", "64", "--complexities", "0",
             "--vector-models", "mlp,mixer"], 5),
}  # fmt: skip
"""Each command at a tiny budget, and the question to its stop requests (one after each step or few-shot concept, counted
over all of them) from which on it is asked to stop: between checkpoints and evaluations, in a later stage where it has
several (the few-shot concepts, a concept's glyph training, which keeps no checkpoint, the refit) or in a later model."""
STOPPED = re.compile(
    r"neurosym [a-z]+: training stopped after (step|few-shot concept) \d+ of \d+ \(time limit\); "
    r"(\S+ holds it: run the same command again to continue|this training had no checkpoint, so running it again starts "
    r"it afresh)"
)
"""The one line every command ends with when a stop request (here as the time limit's) stops it: in a stage without a
checkpoint (a few-shot concept's glyph training) the second ending."""
TIMED = re.compile(r"second|timings|speed|steps_this_call")
"""The entries of what a run writes that are timings (compared nowhere)."""


def untimed(value: Any) -> Any:
    """``value`` with every entry whose key :data:`TIMED` matches left out and every tensor and array as its dtype and its values,
    at any depth, so that ``==`` compares two runs' writings exactly."""
    if isinstance(value, dict):
        return {key: untimed(item) for key, item in value.items() if not TIMED.search(str(key))}
    if isinstance(value, list | tuple):
        return [untimed(item) for item in value]
    if isinstance(value, torch.Tensor | np.ndarray):
        return str(value.dtype), value.tolist()
    return value


def written(out: Path) -> dict[str, Any]:
    """What a run wrote into ``out``: each file by its path, JSON and checkpoints by their :func:`untimed` contents
    (a checkpoint's global generators, ``random``, left out: no result draws from them), other files as present."""
    found: dict[str, Any] = {}
    for path in sorted(item for item in out.rglob("*") if item.is_file()):
        name = str(path.relative_to(out))
        if path.suffix == ".json":
            found[name] = untimed(json.loads(path.read_text()))
        elif path.suffix == ".pt":
            found[name] = untimed({key: value for key, value in torch.load(path, weights_only=False).items() if key != "random"})
        else:
            found[name] = True
    return found


def asked_to_stop_from(question: int) -> Any:
    """:meth:`StopRequests.reason` answering :data:`TIME_LIMIT` from its ``question``-th call on (over every instance)."""
    asked, reason = itertools.count(1), StopRequests.reason

    def answer(self: StopRequests) -> str | None:
        found = reason(self)
        return TIME_LIMIT if found is None and next(asked) >= question else found

    return answer


@pytest.fixture
def command(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """The command of ``request.param`` (a key of :data:`COMMANDS`) on small stand-ins of its data, with ``--out``,
    and the question to stop from."""
    argv, question = COMMANDS[request.param]
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    bank = prototype_bank(symbols=[*HINT_SYMBOLS, *FEWSHOT_CONCEPTS])
    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: bank)
    if argv[0] == "pipeline":
        request.getfixturevalue("tiny_hwf")
    if argv[0] == "mathematics":
        argv = [*argv, "--data", str(released_folder(tmp_path / "data"))]
    return [*argv, "--device", "cpu", "--threads", "1", "--no-progress", "--out", str(tmp_path / "out")], question


@pytest.mark.parametrize("command", list(COMMANDS), indirect=True)
def test_a_run_stopped_and_run_again_writes_what_an_uninterrupted_run_writes(command, tmp_path, monkeypatch, capsys):
    argv, question = command
    out = tmp_path / "out"
    assert main(argv) == 0
    straight = written(out)
    shutil.rmtree(out)
    capsys.readouterr()
    with monkeypatch.context() as stopping:
        stopping.setattr(StopRequests, "reason", asked_to_stop_from(question))
        assert main(argv) == EXIT_TRY_AGAIN
    assert STOPPED.fullmatch(capsys.readouterr().err.splitlines()[-1]), argv[0]  # (arithmetic's said "the same command")
    assert written(out) != straight  # (stopped before its end)
    assert main(argv) == 0
    assert written(out) == straight
