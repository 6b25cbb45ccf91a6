"""Options that a run would ignore are usage errors (exit status 2, one line naming the option, before any work): the
``--adapt-*`` options without ``--adapt`` and the few-shot ones with ``--fewshot-scales none`` (``neurosym hint``), the
options of PVR sweeps not selected, the training options of a Mathematics run of the symbolic route alone,
``--time-limit`` where nothing trains (an ``--ensemble`` read without a refit, the noise sweep alone, the symbol-input
pipeline without its few-shot stage); given at any value, its default too (on the command line or in a ``--config``
file). The same command without the option (or with it where the run reads it) is not refused: the runner is never reached by the
refused ones, and its ``run`` is replaced by a no-op for the others, so nothing trains."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from neurosym.cli import COMMANDS, main

HINT = "hint --model neurosym --input image --scale 0.001 --steps 3 --fewshot-scales none"
PVR = "pvr --preset smoke --sweeps vector"
MATHEMATICS = "mathematics --preset smoke --models symbolic"
ENSEMBLE = "hint --model neurosym --input image --scale 0.001 --fewshot-scales none --ensemble r0 r1"
SYMBOLS = HINT.replace("image", "symbol").replace(" --steps 3", "")
LEARNED = HINT + " --semantics learned"
MNIST = "mnist.pkl.gz"
"""A file written in each test's folder (``--mnist`` takes an existing file; no sweep here reads it)."""

TRANSFORMER = "hint --model transformer --steps 1"
IGNORED = [
    (TRANSFORMER, "--relative shaw"),  # the plain Transformer has no relative encoding
    (TRANSFORMER.replace("transformer", "transformer_rel"), "--step-embedding"),  # transformer_rel_uni's
    (TRANSFORMER.replace("transformer", "gru"), "--heads 8"),  # at the Transformers' default
    (HINT, "--adapt-steps 10"),
    (HINT, "--adapt-steps 2400"),  # at its default: given, and ignored all the same
    (HINT, "--adapt-distill 2"),
    (HINT, "--adapt-replay 5"),
    (HINT, "--adapt-lr 1e-4"),
    (HINT, "--adapt-refit 0"),
    (HINT, "--adapt-examples 10"),
    (HINT.replace("none", "0.01"), "--adapt-steps 10"),  # with the few-shot stage, as without it
    (HINT, "--fewshot-concepts x"),
    (HINT, "--fewshot-steps 3,4"),
    (HINT, "--fewshot-steps 150,100"),  # at its default
    (HINT, "--fewshot-replay 10"),
    (HINT, "--fewshot-only-new-class none"),
    (HINT, "--fewshot-bank other-writers"),
    (SYMBOLS, "--fewshot-concepts x"),
    (SYMBOLS, "--eval-batch-size 8"),  # no reader decodes the expressions
    (LEARNED, "--augment-shift 2"),  # its grounding draws the windows as they are
    (LEARNED, "--augment-style 0.5"),
    (ENSEMBLE, "--time-limit 5"),  # nothing trains, so nothing is stopped
    (SYMBOLS, "--time-limit 5"),  # the operators' meanings are found by a search
    (SYMBOLS + " --semantics learned", "--time-limit 5"),
    ("pipeline --ensemble r0 r1", "--time-limit 5"),
    ("pipeline --ensemble r0 r1", "--augment-shift 1"),  # only a refit's windows are shifted
    (PVR.replace("vector", "noise"), "--time-limit 5"),
    (PVR, "--ns-samples 10"),
    (PVR, "--ns-samples 10000"),  # at its default
    (PVR, "--ns-repeats 2"),
    (PVR, "--ns-max-complexity 1"),
    (PVR, f"--mnist {MNIST}"),
    (PVR, "--visual-epochs 2"),
    (PVR, "--rule-examples 50"),
    (PVR, "--holdout-model mlp"),
    (PVR, "--sequence-length 5"),
    (PVR.replace("vector", "noise"), "--vector-models mlp"),
    (PVR.replace("vector", "noise"), "--aggregation max"),
    (PVR.replace("vector", "noise,block"), "--sequential-models vgg11bn"),
    ("arithmetic --speed", "--resume"),  # the speed test keeps no checkpoint
    ("arithmetic --speed", "--time-limit 5"),
    (MATHEMATICS, "--steps 5"),
    (MATHEMATICS, "--batch-size 8"),
    (MATHEMATICS, "--learning-rate 1e-3"),  # (--lr: the message names --learning-rate)
    (MATHEMATICS, "--clip 1"),
    (MATHEMATICS, "--train-per-module 100"),
    (MATHEMATICS, "--eval-batch-size 8"),
    (MATHEMATICS, "--checkpoint-every 10"),
    (MATHEMATICS, "--compile"),
]
"""(a command that runs, an option it would ignore)."""

READ = [
    (TRANSFORMER.replace("transformer", "transformer_rel_uni"), "--relative shaw --step-embedding"),
    (HINT.replace("none", "0.01"), "--fewshot-concepts x --fewshot-steps 3,4 --fewshot-replay 10"),
    (HINT, "--adapt other-writers --adapt-steps 10 --adapt-distill 2 --adapt-examples 10 --adapt-route 5"),
    (HINT, "--extra-test-bank other-writers --adapt-examples 10"),
    (SYMBOLS.replace("none", "0.01"), "--fewshot-concepts x --time-limit 5"),
    (HINT, "--time-limit 5"),
    (HINT, "--eval-batch-size 8 --augment-shift 2 --augment-style 0.5"),
    (LEARNED.replace("none", "0.01"), "--augment-shift 2 --augment-style 0.5"),  # the few-shot stage shifts and restyles
    (LEARNED, "--eval-batch-size 8"),
    (TRANSFORMER.replace("transformer", "gru"), "--time-limit 5"),
    ("pipeline --ensemble r0 r1 --refit-epochs 1", "--time-limit 5 --augment-shift 1"),  # the refit trains a fresh reader
    (PVR.replace("vector", "noise,vector"), "--time-limit 5"),
    (PVR.replace("vector", "noise"), "--ns-samples 10 --ns-repeats 2 --ns-max-complexity 1"),
    (PVR.replace("vector", "block"), f"--mnist {MNIST} --visual-epochs 2 --rule-examples 50"),
    (PVR.replace("vector", "sequential"), f"--mnist {MNIST} --sequence-length 5 --sequential-models vgg11bn"),
    (PVR.replace("vector", "holdout_i"), "--holdout-model mlp --aggregation max --vector-epochs 2"),
    (PVR, "--vector-models mlp --aggregation max"),
    (MATHEMATICS.replace("symbolic", "symbolic,transformer"), "--steps 5 --batch-size 8 --lr 1e-3 --compile"),
    (MATHEMATICS, "--test-per-module 5 --modules arithmetic__mixed"),
]
"""(a command, options that it reads)."""


def _argv(command: str, options: str, folder: Path) -> list[str]:
    (folder / MNIST).touch()
    return [*command.split(), *options.replace(MNIST, str(folder / MNIST)).split(), "--out", str(folder / "out")]


def _no_work(monkeypatch: pytest.MonkeyPatch, command: str) -> list[object]:
    """Replace the runner's ``run`` of ``command`` by one that only records the options it is given."""
    given: list[object] = []
    monkeypatch.setattr(importlib.import_module(COMMANDS[command][0]), "run", given.append)
    return given


@pytest.mark.parametrize(("command", "option"), IGNORED, ids=[f"{c.split()[0]} {o}" for c, o in IGNORED])
def test_an_option_the_run_would_ignore_is_a_usage_error(command, option, capsys, monkeypatch, tmp_path) -> None:
    given = _no_work(monkeypatch, command.split()[0])
    with pytest.raises(SystemExit) as stopped:
        main(_argv(command, option, tmp_path))
    error = capsys.readouterr().err
    assert stopped.value.code == 2 and not given
    assert f"error: {option.split()[0]} is used by " in error and "this run would ignore it (drop it)" in error
    assert main(_argv(command, "", tmp_path)) == 0 and len(given) == 1  # the same command without it runs


@pytest.mark.parametrize(("command", "options"), READ, ids=[f"{c.split()[0]} {o}" for c, o in READ])
def test_options_the_run_reads_are_taken(command, options, monkeypatch, tmp_path) -> None:
    given = _no_work(monkeypatch, command.split()[0])
    assert main(_argv(command, options, tmp_path)) == 0 and len(given) == 1


def test_an_ignored_option_from_a_config_file_is_a_usage_error_too(capsys, monkeypatch, tmp_path) -> None:
    given = _no_work(monkeypatch, "pvr")
    config = tmp_path / "noise.toml"
    config.write_text('sweeps = "vector"\nns-samples = 10000\n')  # (at its default)
    with pytest.raises(SystemExit) as stopped:
        main(["pvr", "--config", str(config), "--out", str(tmp_path)])
    assert stopped.value.code == 2 and "--ns-samples is used by the noise sweep (--sweeps) only" in capsys.readouterr().err
    assert main(["pvr", "--config", str(config), "--sweeps", "noise,vector", "--out", str(tmp_path)]) == 0 and given
