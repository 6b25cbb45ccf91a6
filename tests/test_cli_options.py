"""Option types of the benchmark commands: a bad value is a one-line usage error naming the option."""

from __future__ import annotations

import argparse
import importlib
import math
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from neurosym.cli import COMMANDS, STATED_DEFAULT, build_parser, main
from neurosym.experiments.options import (
    comma_list,
    default_text,
    existing_file,
    existing_folder,
    existing_path,
    fraction_up_to_one,
    non_negative_float,
    non_negative_int,
    output_folder,
    positive_float,
    positive_int,
    preset_option,
    probability_below_one,
    time_limit_minutes,
)


@given(st.integers(-(10**20), 10**20))
def test_integer_options_take_exactly_the_integers_in_range(value: int) -> None:
    for parse, smallest in ((positive_int, 1), (non_negative_int, 0)):
        if value >= smallest:
            assert parse(str(value)) == value
        else:
            with pytest.raises(argparse.ArgumentTypeError, match="expected"):
                parse(str(value))


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_number_options_take_exactly_their_ranges(value: float) -> None:
    text = repr(value)
    checks = (
        (positive_float, value > 0 and math.isfinite(value)),
        (probability_below_one, 0 <= value < 1),
        (fraction_up_to_one, 0 < value <= 1),
    )
    for parse, accepted in checks:
        if accepted:
            assert parse(text) == value
        else:
            with pytest.raises(argparse.ArgumentTypeError, match="expected"):
                parse(text)


def test_integer_options_accept_exponent_notation_but_not_fractions() -> None:
    assert positive_int("5e6") == 5_000_000 and positive_int("+7") == 7
    for text in ("1.5", "abc", "", "inf", "nan"):
        with pytest.raises(argparse.ArgumentTypeError, match="expected an integer"):
            positive_int(text)


@given(st.integers(0, 10**9), st.data())
def test_numbers_are_read_in_ascii_digits_alone(value: int, data) -> None:
    text = str(value)
    at = data.draw(st.integers(0, len(text) - 1))
    digit = data.draw(st.characters(categories=["Nd"]).filter(lambda character: not character.isascii()))
    spellings = [text[:at] + digit + text[at + 1 :], text[:at] + "\N{FULLWIDTH DIGIT ONE}" + text[at:]]
    spellings += [text[:at] + "_" + text[at:]] if 0 < at else []
    for spelled in spellings:
        float(spelled)  # (Python reads it as a number: ٣ and ３ as 3, 1_000 as 1000)
        for parse in (non_negative_int, non_negative_float, time_limit_minutes):
            with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"got {spelled!r} (numbers are written in ASCII")):
                parse(spelled)
    assert non_negative_int(f" {text}\t") == value and time_limit_minutes(f"{text}e-3") == value / 1000


@given(st.lists(st.integers(0, 3), min_size=1, max_size=6))
def test_a_list_of_distinct_values_refuses_any_value_given_twice_zero_too(values: list[int]) -> None:
    parse, text = comma_list(non_negative_int, what="count", distinct=True), ",".join(map(str, values))
    if len(set(values)) == len(values):
        assert parse(text) == values
    else:
        repeated = next(value for i, value in enumerate(values) if value in values[:i])
        with pytest.raises(argparse.ArgumentTypeError, match=f"^count {repeated} given twice"):
            parse(text)


def test_a_number_in_other_digits_is_a_usage_error_naming_the_option_and_the_text(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        build_parser("hint").parse_args(["hint", "--steps", "\N{FULLWIDTH DIGIT THREE}"])  # (parsed: was read as 3)
    message = "argument --steps: expected an integer, got '３' (numbers are written in ASCII: the digits 0-9, no '_')"
    assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_path_options_name_the_missing_path(tmp_path) -> None:
    archive = tmp_path / "bank.npz"
    archive.write_bytes(b"")
    assert existing_file(str(archive)) == archive and existing_folder(str(tmp_path)) == tmp_path
    with pytest.raises(argparse.ArgumentTypeError, match="no such file: '.*missing.npz'"):
        existing_file(str(tmp_path / "missing.npz"))
    with pytest.raises(argparse.ArgumentTypeError, match="no such folder: '.*missing'"):
        existing_folder(str(tmp_path / "missing"))
    with pytest.raises(argparse.ArgumentTypeError, match="'.*bank.npz' is a file, not a folder"):  # (was "no such folder")
        existing_folder(str(archive))
    with pytest.raises(argparse.ArgumentTypeError, match=f"'{re.escape(str(tmp_path))}' is a folder, not a file"):
        existing_file(str(tmp_path))  # (was "no such file")
    assert existing_path(str(archive)) == archive and existing_path(str(tmp_path)) == tmp_path  # (--mnist: pickle or folder)
    with pytest.raises(argparse.ArgumentTypeError, match="no such file or folder: '.*missing'"):
        existing_path(str(tmp_path / "missing"))


def test_a_config_file_that_is_a_folder_is_named_as_one(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["pipeline", "--config", str(tmp_path)])
    assert stopped.value.code == 2 and f"argument --config: '{tmp_path}' is a folder, not a file" in capsys.readouterr().err


def test_an_output_folder_must_not_be_or_lie_under_a_file(tmp_path, capsys) -> None:
    taken = tmp_path / "taken.txt"
    taken.write_text("")
    assert output_folder(str(tmp_path)) == tmp_path and output_folder(str(tmp_path / "new" / "run")) == tmp_path / "new" / "run"
    for out in (taken, taken / "run"):
        with pytest.raises(SystemExit) as stopped:
            main(["pipeline", "--out", str(out)])
        assert stopped.value.code == 2
        assert f"argument --out: '{out}' cannot be an output folder: '{taken}' is a file" in capsys.readouterr().err


@pytest.mark.parametrize("command", COMMANDS)
def test_the_default_output_folder_is_checked_before_any_work(command, tmp_path, capsys, monkeypatch) -> None:
    """Was found at the first write, after the work: ``results`` a file in the working folder."""
    runner = importlib.import_module(COMMANDS[command][0])
    monkeypatch.setattr(runner, "run", lambda options: pytest.fail(f"ran with {options}"))
    monkeypatch.chdir(tmp_path)
    Path("results").write_text("")
    with pytest.raises(SystemExit) as stopped:
        main([command])
    out = Path("results") / command.replace("-", "_")
    assert stopped.value.code == 2
    assert f"argument --out: '{out}' cannot be an output folder: 'results' is a file" in capsys.readouterr().err


def test_an_output_folder_must_lie_in_a_folder_this_process_may_write(tmp_path, capsys, monkeypatch) -> None:
    """A read-only folder (whose mode bits do not stop root, so its refusal is played here) was found at the first write."""
    from neurosym.experiments import solver_speed

    monkeypatch.setattr(solver_speed, "run", lambda options: pytest.fail(f"ran with {options}"))
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(["solver-speed", "--out", str(tmp_path / "run")])
    assert stopped.value.code == 2
    assert f"argument --out: '{tmp_path / 'run'}' cannot be an output folder: '{tmp_path}' is not writable" in (
        capsys.readouterr().err
    )


CONTINUES = "interrupted; what it saved is whole (written atomically): the same command continues from there"
STARTS_OVER = "interrupted before it wrote its results (it writes them at its end): the same command starts over"
AFTER_CTRL_C = {
    "hint-data": CONTINUES,
    "hint-data --no-cache": STARTS_OVER,
    "pvr": CONTINUES,
    "arithmetic --models nau": CONTINUES,
    "arithmetic --speed": STARTS_OVER,
    "solver-speed": STARTS_OVER,
    "layer-speed": STARTS_OVER,
    "attention-speed": STARTS_OVER,
}
"""What a command says after a Ctrl-C outside a training loop: a timing, which writes nothing before its end, said
that the same command continued from what it saved."""


@pytest.mark.parametrize("command", AFTER_CTRL_C)
def test_ctrl_c_outside_a_training_loop_exits_130_and_says_what_the_same_command_does(
    command: str, capsys, monkeypatch, tmp_path
) -> None:
    from neurosym.cli import COMMANDS, INTERRUPTED

    def interrupted(options) -> None:
        raise KeyboardInterrupt

    name, *options = command.split()
    monkeypatch.setattr(importlib.import_module(COMMANDS[name][0]), "run", interrupted)
    assert main([name, *options, "--out", str(tmp_path)]) == INTERRUPTED == 130
    assert capsys.readouterr().err.splitlines()[-1] == f"neurosym {name}: {AFTER_CTRL_C[command]}"


def test_ctrl_c_while_the_command_loads_exits_130_without_a_traceback(capsys, monkeypatch) -> None:
    """Was a KeyboardInterrupt traceback: the runner's import (torch) takes seconds."""
    import importlib as importer

    from neurosym.cli import INTERRUPTED

    def interrupted(name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(importer, "import_module", interrupted)
    try:
        status = main(["solver-speed"])
    except KeyboardInterrupt:  # (pytest would stop the whole session)
        pytest.fail("Ctrl-C while the command loads escaped main")
    assert status == INTERRUPTED
    assert capsys.readouterr().err == "neurosym solver-speed: interrupted before it began\n"


def test_a_cuda_device_that_this_machine_lacks_is_a_usage_error(capsys) -> None:
    import torch

    missing = "cuda" if not torch.cuda.is_available() else f"cuda:{torch.cuda.device_count()}"
    for command in ("pipeline", "hint", "arithmetic"):
        with pytest.raises(SystemExit) as stopped:
            main([command, "--device", missing])
        assert stopped.value.code == 2 and f"argument --device: device '{missing}'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ("hint --scale 0", "argument --scale: expected a number in (0, 1]"),
        ("hint --dropout 1", "argument --dropout: expected a number in [0, 1)"),
        ("hint --lr nan", "argument --lr: expected a finite number"),
        ("hint --num-workers -1", "argument --num-workers: expected an integer of at least 0"),
        ("hint --bank missing.npz", "argument --bank: 'missing.npz' is neither a bank (default, other-writers"),
        ("hint --model neurosym --curriculum 1:abc", "argument --curriculum: curriculum stage '1:abc'"),
        (
            "pipeline --curriculum 3:100,1:50,all",
            "argument --curriculum: stages must be (max_length>0, steps>0) pairs with growing",
        ),
        (
            "hint --model neurosym --fewshot-concepts x,q",
            "argument --fewshot-concepts: unknown concept 'q': choose from x, y, a, b, c, d",
        ),
        (
            "hint --model neurosym --fewshot-steps 5",
            "argument --fewshot-steps: expected two positive step counts 'GLYPH,ABDUCTION', got '5'",
        ),
        (
            "hint --model neurosym --fewshot-scales 0.1,-1",
            "argument --fewshot-scales: expected a number in (0, 1], got '-1'",
        ),
        ("hint --model neurosym --fewshot-scales 1.5", "argument --fewshot-scales: expected a number in (0, 1], got '1.5'"),
        ("hint-data --bank missing", "argument --bank: expected 'default', 'none'"),
        ("hint-data --drawn-per-symbol 19", "argument --drawn-per-symbol: expected an integer of at least 20, got '19'"),
        ("mathematics --steps -5", "argument --steps: expected a positive integer"),
        # (1 passed the parser, and the run failed with exit status 1 on "samples must be an int of at least 2")
        ("arithmetic --threshold-samples 1", "argument --threshold-samples: expected an integer of at least 2, got '1'"),
        ("mathematics --data-root missing", "argument --data-root: no such folder"),
        ("pvr --complexities 1,-1", "argument --complexities: expected an integer in 0..9, got '-1'"),
        ("pvr --vector-models mlp,,lstm", "argument --vector-models: unknown vector model 'lstm'"),
        ("pvr --complexities 0,50", "argument --complexities: expected an integer in 0..9, got '50'"),
        ("pvr --holdout-complexity 10", "argument --holdout-complexity: expected an integer in 0..9, got '10'"),
        ("hint --model gru --dim 64", "--dim is used by the Transformers only; this run would ignore it"),
        ("hint --model gru --cnn small", "--cnn is used by --input image only"),
        ("hint --model neurosym --input symbol --curriculum 1:5", "--curriculum is used by --input image only"),
        ("pvr --ns-max-complexity 12", "argument --ns-max-complexity: expected an integer in 0..9, got '12'"),
        ("pvr --sequence-length 1", "argument --sequence-length: expected an integer of at least 2, got '1'"),
        ("pvr --sequential-models small_cnn", "argument --sequential-models: unknown visual model 'small_cnn'"),
        ("hint --model neurosym --augment-style 1.5", "argument --augment-style: expected a number in [0, 1], got '1.5'"),
        ("hint --model neurosym --stroke-width 0", "argument --stroke-width: expected a positive integer"),
        ("hint --model neurosym --fewshot-replay 0", "argument --fewshot-replay: expected a positive integer"),
        ("hint --model neurosym --fewshot-only-new-class bracket", "argument --fewshot-only-new-class: unknown role 'bracket'"),
        ("hint --device gpu", "argument --device: unknown device 'gpu': use 'auto', 'cpu' or 'cuda[:N]'"),
        ("arithmetic --preset full", "argument --preset: invalid choice: 'full'"),
        ("pvr --mnist missing.pkl.gz", "argument --mnist: no such file or folder: 'missing.pkl.gz'"),
        ("arithmetic --threads -2", "argument --threads: expected an integer of at least 0"),
        ("attention-speed --lengths 64,0", "argument --lengths: expected a positive integer, got '0'"),
        ("layer-speed --min-time 0", "argument --min-time: expected a finite positive number"),
        ("solver-speed --repeats 0", "argument --repeats: expected a positive integer"),
        ("pipeline --max-patterns 0", "argument --max-patterns: expected a positive integer, got '0'"),
        # run twice, reported twice, or ignored
        ("mathematics --modules arithmetic__mul,arithmetic__mul", "module 'arithmetic__mul' given twice: each is run once"),
        ("arithmetic --operations add,sub,add", "argument --operations: operation 'add' given twice"),
        ("pvr --vector-models mlp,mlp", "argument --vector-models: vector model 'mlp' given twice"),
        ("pvr --complexities 0,1,0", "argument --complexities: complexity 0 given twice"),
        ("pvr --complexities ,", "argument --complexities: expected a comma-separated list of complexities, got ','"),
        ("pvr --train-sizes 500,500", "argument --train-sizes: training-set size 500 given twice"),
        ("solver-speed --operator-counts 10,10", "argument --operator-counts: operator count 10 given twice"),
        ("solver-speed --batch-sizes 16,1,16", "argument --batch-sizes: batch size 16 given twice"),
        ("layer-speed --shapes 4x2,4X2", "argument --shapes: shape (4, 2) given twice"),
        ("layer-speed --units NAU,NAU", "argument --units: unit 'NAU' given twice"),
        ("attention-speed --lengths 64,64", "argument --lengths: length 64 given twice"),
        ("hint --model neurosym --fewshot-scales 0.1,0.10", "argument --fewshot-scales: scale 0.1 given twice"),
        ("mathematics --train-per-module 2", "--train-per-module is split over easy/medium/hard: at least 3, got 2"),
        ("mathematics --models symbolic --time-limit 5", "--time-limit is used by the neural models"),
        ("hint --model gru --input symbol --drawn-digits 500", "--drawn-digits is used by --input image only"),
        ("hint --model neurosym --input image --semantics learned --lr 0.05", "is used by --semantics given only"),  # was ignored
        ("hint --model neurosym --input image --semantics learned --cnn small", "--cnn is used by --semantics given only"),
        ("arithmetic --models NAU --operations add,div --ranges [-2,2]", "'div' needs inputs of one sign"),  # was exit 1,
        ("arithmetic --operations sub --overlap-ratio 1", "the perturbed solution of 'sub' is exact"),  # after thresholds
        ("arithmetic --preset paper --ranges [-2,2]", "'div' needs inputs of one sign"),  # (the preset's cells: ÷ too)
        ("hint --seed 4294967296", "argument --seed: expected a seed in 0..4294967295, got '4294967296'"),  # failed in torch
        ("hint --model neurosym --data-seed 1e19", "argument --data-seed: expected a seed in 0..4294967295"),
        ("hint --model neurosym --input image --classes 12", "--classes is used by --semantics learned only"),
        ("hint --model neurosym --semantics learned --classes 12", "--classes is used by --input image only"),  # failed late
    ],
)
def test_commands_reject_bad_values_before_running(argv: str, message: str, capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # relative 'missing' paths really are missing
    with pytest.raises(SystemExit) as stopped:
        main(argv.split())
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_string_options_arrive_parsed() -> None:
    args = build_parser("hint").parse_args(
        ["hint", "--model", "neurosym", "--curriculum", "1:5,all", "--fewshot-scales", "none", "--fewshot-steps", "3,4"]
    )
    assert args.curriculum == ((1, 5), (10**9, 10**9)) and args.fewshot_scales == [] and args.fewshot_steps == (3, 4)
    defaults = build_parser("hint").parse_args(["hint", "--model", "neurosym"])
    assert defaults.fewshot_concepts == ["x", "y", "a", "b", "c", "d"] and defaults.fewshot_scales == [0.01, 0.1, 1.0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ("hint --dim 128 --heads 3", "--dim (128) must be a multiple of --heads (3)"),
        ("hint --model gru --ensemble a b", "--ensemble reads with trained symbol readers: --model neurosym --input image only"),
        ("hint --model neurosym --input image --adapt-route 5", "--adapt-route reads with two readers"),
        ("hint --model neurosym --drawn-digits 5 --data .", "--drawn-digits adds to --bank's images"),
        # (were a missing image once the main training had run: a release's records name the images that show them)
        ("hint --model neurosym --adapt test-writers --data .", "--adapt shows the expressions with another bank's images"),
        ("hint --model neurosym --extra-test-bank test-writers --data .", "--extra-test-bank shows the expressions with"),
        ("hint --model neurosym --fewshot-bank other-writers --data .", "--fewshot-bank shows the expressions with"),
        ("hint --model neurosym --heads 4", "--heads is used by the seq2seq baselines (--model other than neurosym) only"),
        ("hint --model neurosym --compile", "--compile is used by the seq2seq baselines"),
        ("hint --model gru --semantics learned", "--semantics is used by --model neurosym only; this run would ignore it"),
        ("hint --model transformer --fewshot-scales none", "--fewshot-scales is used by --model neurosym only"),
    ],
)
def test_hint_rules_between_options_are_usage_errors(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv.split())
    assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_solver_speed_rejects_inconsistent_counts(capsys) -> None:
    from neurosym.cli import _parsed
    from neurosym.experiments.options import options_from
    from neurosym.experiments.solver_speed import SolverSpeedOptions

    with pytest.raises(SystemExit) as stopped:  # a usage error, before any work
        main(["solver-speed", "--count", "10", "--lark-count", "20", "--batch-sizes", "4"])
    assert stopped.value.code == 2 and "--lark-count 20 exceeds --count 10" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["solver-speed", "--preset", "smoke", "--batch-sizes", "600,1000"])
    assert "--batch-sizes 600, 1000 exceed the --preset smoke's count 512" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # one too large among others was dropped without a word
        main(["solver-speed", "--count", "10", "--lark-count", "5", "--batch-sizes", "1,1000"])
    assert "--batch-sizes 1000 exceeds --count 10" in capsys.readouterr().err
    smoke = options_from(SolverSpeedOptions, _parsed(build_parser("solver-speed"), ["solver-speed", "--preset", "smoke"]))
    given = _parsed(build_parser("solver-speed"), ["solver-speed", "--preset", "smoke", "--count", "64", "--lark-count", "50"])
    assert smoke.budget()[:2] == (512, 100) and options_from(SolverSpeedOptions, given).budget()[:2] == (64, 50)  # (were 512)


def test_arithmetic_ratios_are_checked_by_argparse(capsys) -> None:
    for option, value, message in (
        ("--subset-ratio", "0", "argument --subset-ratio: expected a number in (0, 1]"),
        ("--overlap-ratio", "1.5", "argument --overlap-ratio: expected a number in [0, 1]"),
    ):
        with pytest.raises(SystemExit) as stopped:
            main(["arithmetic", option, value])
        assert stopped.value.code == 2 and message in capsys.readouterr().err


SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.name)
def test_a_benchmark_script_names_itself_in_its_usage_as_invoked(script: Path, capsys, monkeypatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(script), run_name="__main__")
    shown = capsys.readouterr().out
    assert stopped.value.code == 0 and shown.startswith(f"usage: {script.name} [-h]") and "neurosym" not in shown.split("\n")[0]
    own = re.compile(rf"neurosym {script.stem.replace('_', '-')}(?![\w-])")  # (the command the script runs)
    assert not own.search(shown), own.search(shown)  # (a group titled "The options of neurosym hint" under hint.py)
    if script.stem.replace("_", "-") in COMMANDS:
        assert f"The options of {script.name}" in shown


@pytest.mark.parametrize(
    ("argv", "prog", "message"),
    [
        (["pvr", "--models", "x"], "neurosym pvr", "--models x (did you mean --visual-models?)"),
        (["arithmetic", "--sed=3"], "arithmetic.py", "--sed=3 (did you mean --seed?)"),
        (["hint", "--clasess", "3"], "neurosym hint", "--clasess 3 (did you mean --classes?)"),  # (a study knob)
        (["hint-data", "extra"], "neurosym hint-data", "extra\n"),
    ],
)
def test_an_unknown_argument_is_a_usage_error_of_the_command_naming_the_nearest_option(argv, prog, message, capsys) -> None:
    """Was ``neurosym``'s usage and ``neurosym: error: ...``, under ``pvr.py`` too, with no hint of the option meant."""
    with pytest.raises(SystemExit) as stopped:
        main(argv, prog=None if prog.startswith("neurosym") else prog)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.startswith(f"usage: {prog} ")
    assert f"{prog}: error: unrecognized arguments: {message}" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["solver-speed", "--progres"], "--progres (did you mean --progress?)"),
        (["hint", "--eval-ev", "3"], "--eval-ev 3 (did you mean --eval-every?)"),
        (["layer-speed", "--round=3"], "--round=3 (did you mean --rounds?)"),
    ],
)
def test_an_abbreviated_option_is_an_unknown_argument_naming_the_option(argv, message, capsys, monkeypatch) -> None:
    """``--progres`` was taken as ``--progress``, the option it begins (and a new option could change its meaning)."""
    runner = importlib.import_module(COMMANDS[argv[0]][0])
    monkeypatch.setattr(runner, "run", lambda options: pytest.fail(f"ran with {options}"))
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2 and f"neurosym {argv[0]}: error: unrecognized arguments: {message}" in capsys.readouterr().err


def test_the_command_list_takes_no_abbreviated_option(capsys) -> None:
    """``neurosym --vers`` printed the version, as ``--version`` does."""
    with pytest.raises(SystemExit) as stopped:
        main(["--vers"])
    shown = capsys.readouterr()
    assert stopped.value.code == 2 and "--vers" in shown.err and shown.out == ""


def test_a_named_command_names_its_errors_by_that_name(capsys, monkeypatch, tmp_path) -> None:
    from neurosym.experiments import solver_speed

    def failing(options) -> None:
        raise ValueError("bad data")

    monkeypatch.setattr(solver_speed, "run", failing)
    assert main(["solver-speed", "--out", str(tmp_path)], prog="solver_speed.py") == 1
    assert capsys.readouterr().err.startswith("solver_speed.py: bad data")
    with pytest.raises(SystemExit):
        main(["solver-speed", "--count", "0"], prog="solver_speed.py")
    assert capsys.readouterr().err.startswith("usage: solver_speed.py [-h]")


def test_a_benchmark_script_names_itself_in_a_failure_its_runner_found(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "mnist.pkl.gz").write_text("hello")
    script = next(path for path in SCRIPTS if path.name == "pipeline.py")
    monkeypatch.setattr(sys, "argv", [str(script), "--mnist", str(tmp_path / "mnist.pkl.gz"), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as stopped:
        runpy.run_path(str(script), run_name="__main__")
    message = capsys.readouterr().err  # (was "neurosym pipeline: ...")
    assert stopped.value.code == 1 and re.fullmatch(r"pipeline\.py: .*mnist\.pkl\.gz is not an MNIST pickle.*\n", message)


def test_a_failure_its_runner_found_ends_the_command_as_a_failed_check_does(capsys, monkeypatch, tmp_path) -> None:
    from neurosym.experiments import CommandFailed, solver_speed

    def failing(options) -> None:
        raise CommandFailed("data.json is empty")

    monkeypatch.setattr(solver_speed, "run", failing)
    assert main(["solver-speed", "--out", str(tmp_path)], prog="solver_speed.py") == 1  # (raised SystemExit)
    assert capsys.readouterr().err == "solver_speed.py: data.json is empty (NEUROSYM_TRACEBACK=1 shows where)\n"
    monkeypatch.setenv("NEUROSYM_TRACEBACK", "1")
    with pytest.raises(CommandFailed, match="data.json is empty"):  # (the traceback asked for: was the one line)
        main(["solver-speed", "--out", str(tmp_path)])


def test_a_place_the_command_may_not_write_ends_it_in_one_line(capsys, monkeypatch, tmp_path) -> None:
    """Was a traceback ending in PermissionError (``--out /sys/run``: a read-only file system)."""
    from neurosym.experiments import solver_speed

    def unwritable(options) -> None:
        raise PermissionError(13, "Permission denied", str(options.out / "solver_speed.json"))

    monkeypatch.setattr(solver_speed, "run", unwritable)
    assert main(["solver-speed", "--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"neurosym solver-speed: [Errno 13] Permission denied: '{tmp_path / 'solver_speed.json'}' "
        "(NEUROSYM_TRACEBACK=1 shows where)\n"
    )


@pytest.mark.parametrize(
    ("allocation", "said"),
    [
        (lambda: torch.empty(2**61, dtype=torch.uint8), "the CPU cannot allocate memory: you tried to allocate"),
        (lambda: np.empty(2**61, dtype=np.uint8), "Unable to allocate 2.00 EiB"),
        (lambda: _raise(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB.")), "CUDA out of memory."),
    ],
)
def test_a_size_the_machine_cannot_hold_ends_the_command_in_one_line(allocation, said, capsys, monkeypatch, tmp_path):
    """Were tracebacks from deep inside torch or numpy (``arithmetic --batch-size 1e9``)."""
    from neurosym.experiments import solver_speed

    monkeypatch.setattr(solver_speed, "run", lambda options: allocation())
    assert main(["solver-speed", "--out", str(tmp_path)]) == 1
    message = capsys.readouterr().err
    assert message.startswith(f"neurosym solver-speed: out of memory: {said}") and message.count("\n") == 1
    assert message.endswith("; smaller sizes fit (NEUROSYM_TRACEBACK=1 shows where)\n")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (RuntimeError("[enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried to "
                      "allocate 911360 bytes."), "the CPU cannot allocate memory: you tried to allocate 911360 bytes."),
        (MemoryError(), "MemoryError"),
        (RuntimeError("a bug"), None),
        (ValueError("DefaultCPUAllocator: can't allocate memory: 4 bytes"), None),
    ],
)  # fmt: skip
def test_out_of_memory_reads_every_allocator_failure_and_nothing_else(error, said) -> None:
    """torch on Windows says "not enough memory": that one kept its traceback."""
    from neurosym.training.device import out_of_memory

    assert out_of_memory(error) == said


def _raise(error: BaseException) -> None:
    raise error


def test_a_runtime_error_other_than_memory_is_not_taken_for_one(monkeypatch, tmp_path) -> None:
    from neurosym.experiments import solver_speed

    def failing(options) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(solver_speed, "run", failing)
    with pytest.raises(RuntimeError, match="a bug"):  # (a bug keeps its traceback)
        main(["solver-speed", "--out", str(tmp_path)])


def test_no_runner_writes_a_program_name_of_its_own() -> None:
    sources = sorted((Path(__file__).resolve().parents[1] / "neurosym" / "experiments").rglob("*.py"))
    quoted = re.compile(r"[\"']neurosym [a-z-]+: ")  # a message that begins with a command's name
    named = [f"{path.name}: {match[0]}" for path in sources for match in quoted.finditer(path.read_text())]
    assert not named  # (the command names it: neurosym COMMAND, or the script as run)


def test_python_dash_m_neurosym_runs_the_command_line() -> None:
    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "neurosym", *argv], check=False, capture_output=True, text=True, timeout=120)

    done = run("hint", "--help")
    assert done.returncode == 0 and "--dim" in done.stdout and "--source-boundaries" not in done.stdout
    assert "Study knobs, set in a --config file" in done.stdout and "source_boundaries" in done.stdout
    bad = run("hint", "--steps", "0")
    assert bad.returncode == 2 and "--steps" in bad.stderr


def test_the_command_list_and_its_errors_load_no_runner() -> None:
    probe = (
        "import sys\nfrom neurosym.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit as stop:\n    print(stop.code, 'torch' in sys.modules)\n"
    )
    for argv, status in ((["--help"], "0"), (["--version"], "0"), (["no-such-command"], "2"), ([], "2")):
        done = subprocess.run([sys.executable, "-c", probe, *argv], check=True, capture_output=True, text=True, timeout=120)
        assert done.stdout.split()[-2:] == [status, "False"], argv
    listed = subprocess.run([sys.executable, "-m", "neurosym", "--help"], check=True, capture_output=True, text=True, timeout=120)
    assert all(name in listed.stdout for name in COMMANDS)


def test_fewshot_only_new_class_takes_roles_or_none() -> None:
    parser = build_parser()
    parse = lambda *extra: parser.parse_args(["hint", "--model", "neurosym", *extra]).fewshot_only_new_class
    assert parse() == ("operator", "number") and parse("--fewshot-only-new-class", "none") == ()
    assert parse("--fewshot-only-new-class", "operator,number") == ("operator", "number")


def test_a_config_file_gives_defaults_that_the_command_line_overrides(tmp_path) -> None:
    from neurosym.cli import _parsed
    from neurosym.experiments.options import options_from
    from neurosym.experiments.pipeline import PipelineOptions

    config = tmp_path / "run.toml"
    config.write_text('task = "hwf"\nepochs = 3\naugment-shift = 1\ncurriculum = "1:50,all"\nprogress = false\n')
    args = _parsed(build_parser("pipeline"), ["pipeline", "--config", str(config), "--epochs", "2", "--lr", "0.01"])
    options = options_from(PipelineOptions, args)
    assert (options.task, options.epochs, options.augment_shift, options.progress) == ("hwf", 2.0, 1, False)
    assert options.curriculum == ((1, 50), (10**9, 10**9)) and options.learning_rate == 0.01  # --lr: the old spelling
    assert options.batch_size is None and options.out.as_posix() == "results/pipeline"  # untouched: the task's


def test_a_second_config_file_is_a_usage_error(tmp_path, capsys) -> None:
    """Was the second file's values alone: the first file's were silently dropped."""
    first, second = tmp_path / "a.toml", tmp_path / "b.toml"
    first.write_text("epochs = 3\n")
    second.write_text('task = "sudoku"\n')  # (without the check, this file alone was read)
    with pytest.raises(SystemExit) as stopped:
        main(["pipeline", "--config", str(first), "--config", str(second)])
    assert stopped.value.code == 2 and f"--config given twice ({first}, {second})" in capsys.readouterr().err


def test_a_config_file_may_open_with_a_utf8_byte_order_mark(tmp_path) -> None:
    """Was 'Invalid statement (at line 1, column 1)': tomllib reads no mark, which Windows editors write."""
    from neurosym.cli import _parsed

    config = tmp_path / "run.toml"
    config.write_bytes("\N{BYTE ORDER MARK}epochs = 3\n".encode())
    assert _parsed(build_parser("pipeline"), ["pipeline", "--config", str(config)]).epochs == 3


def test_a_config_file_names_its_paths_relative_to_its_own_folder(tmp_path, monkeypatch) -> None:
    """Paths in a --config file name the files beside it from any working folder (was: relative to the working
    folder, so that the file named others, or none, once run from elsewhere); on the command line they stay relative
    to the working folder, and an absolute path is itself."""
    import numpy as np

    from neurosym.cli import _parsed

    study = tmp_path / "study"
    for folder in ("release", "r0", "r1", "reader"):
        (study / folder).mkdir(parents=True)
    (study / "reader" / "checkpoint.pt").write_bytes(b"")
    (study / "mnist.pkl.gz").write_bytes(b"")
    np.savez(study / "mine.npz", images=np.zeros((1, 28, 28), np.uint8), labels=np.array(["1"]))
    (tmp_path / "here.pkl.gz").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    config = study / "pipeline.toml"
    config.write_text('mnist = "mnist.pkl.gz"\nout = "runs/a"\ninit-reader = "reader"\nensemble = ["r0", "r1"]\n')
    args = _parsed(build_parser("pipeline"), ["pipeline", "--config", "study/pipeline.toml"])
    beside = Path("study")  # (the config file's folder, as --config names it)
    assert (args.mnist, args.out) == (beside / "mnist.pkl.gz", beside / "runs/a")
    assert args.init_reader == beside / "reader/checkpoint.pt" and args.ensemble == [beside / "r0", beside / "r1"]
    args = _parsed(build_parser("pipeline"), ["pipeline", "--config", "study/pipeline.toml", "--mnist", "here.pkl.gz"])
    assert args.mnist == Path("here.pkl.gz")
    config.write_text(f"mnist = {str(tmp_path / 'here.pkl.gz')!r}\n")
    assert _parsed(build_parser("pipeline"), ["pipeline", "--config", str(config)]).mnist == tmp_path / "here.pkl.gz"
    (study / "hint.toml").write_text('model = "neurosym"\ndata = "release"\nbank = "mine.npz"\nadapt = "default"\n')
    args = _parsed(build_parser("hint"), ["hint", "--config", "study/hint.toml"])
    assert (args.data, args.bank, args.adapt) == (beside / "release", beside / "mine.npz", "default")
    (study / "hint_data.toml").write_text('bank = "release"\n')
    assert _parsed(build_parser("hint-data"), ["hint-data", "--config", "study/hint_data.toml"]).bank == str(beside / "release")


def test_a_path_opening_with_a_tilde_is_under_the_home_folder(tmp_path, monkeypatch) -> None:
    """``--data=~/x`` (which no shell expands) and a config file's ``"~/x"`` named a folder ``~`` in the working or
    the config file's folder: a run's --out was written there, and a data folder in the home folder was not found."""
    from neurosym.cli import _parsed

    home, work = tmp_path / "home", tmp_path / "work"
    (home / "mathematics_dataset-v1.0").mkdir(parents=True)
    (work / "study").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    args = _parsed(build_parser("mathematics"), ["mathematics", "--data=~/mathematics_dataset-v1.0", "--out=~/runs/a"])
    assert (args.data, args.out) == (home / "mathematics_dataset-v1.0", home / "runs/a")
    (work / "study" / "run.toml").write_text('data = "~/mathematics_dataset-v1.0"\nout = "~/runs/b"\n')
    args = _parsed(build_parser("mathematics"), ["mathematics", "--config", "study/run.toml"])
    assert (args.data, args.out) == (home / "mathematics_dataset-v1.0", home / "runs/b")
    assert _parsed(build_parser("mathematics"), ["mathematics", "--out", "~nosuchuser/a"]).out == work / "~nosuchuser/a"
    # a folder named ~ stays one where the library is given the path again (it reads a leading ~ as the home folder)
    assert _parsed(build_parser("mathematics"), ["mathematics", "--out", "./~/a"]).out == work / "~/a"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("epochs = -1\n", "epochs: expected a finite positive number, got '-1'"),
        ("epochs = 0\n", "epochs: expected a finite positive number, got '0'"),  # (it trained one step)
        ("epoch = 3\n", "unknown option 'epoch' (did you mean epochs?)"),
        ("augment-shfit = 1\n", "unknown option 'augment-shfit' (did you mean augment-shift?)"),
        ("sudoku = 1\n", "unknown option 'sudoku'\n"),
        ('config = "other.toml"\n', "unknown option 'config' (--config is given on the command line only)"),
        ("augment-shift = 1\naugment_shift = 3\n", "'augment-shift' and 'augment_shift' are one option (--augment-shift)"),
        (
            'task = "sudoku"\n',
            "task: unknown task 'sudoku': neither one of ['hint-grammar', 'hwf', 'mnist-add'] nor an importable module",
        ),
        ('progress = "no"\n', "progress must be true or false"),
        ("epochs = [3]\n", "epochs takes one value, got the list [3]"),  # (was epochs 3)
        ('task = ["hwf", "mnist-add"]\n', "task takes one value, got the list ['hwf', 'mnist-add']"),
        ("epochs = 3 3\n", "run.toml: Expected newline or end of document after a statement (at line 1, column 12)"),
        (
            "curriculum = [[1, 50], [3, 80]]\n",
            "curriculum: [[1, 50], [3, 80]] is not an option value; write its command-line text",
        ),
        ("curriculum = {stages = 2}\n", "curriculum: {'stages': 2} is not an option value"),
    ],
)
def test_a_config_file_with_a_bad_entry_is_a_one_line_usage_error(text, message, tmp_path, capsys) -> None:
    config = tmp_path / "run.toml"
    config.write_text(text)
    with pytest.raises(SystemExit) as stopped:
        main(["pipeline", "--config", str(config)])
    assert stopped.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["pipeline", "hint --model neurosym --input image --fewshot-scales none"])
def test_a_config_file_list_of_no_runs_is_refused_as_the_command_line_refuses_it(command, tmp_path, capsys, monkeypatch) -> None:
    ran: list[object] = []
    monkeypatch.setattr(importlib.import_module(COMMANDS[command.split()[0]][0]), "run", ran.append)  # (else it trained)
    config = tmp_path / "run.toml"
    config.write_text("ensemble = []\n")
    for argv in ([*command.split(), "--config", str(config)], [*command.split(), "--ensemble"]):
        with pytest.raises(SystemExit) as stopped:
            main([*argv, "--out", str(tmp_path / "out")])
        assert stopped.value.code == 2 and not ran
    assert "ensemble: expected at least one value, got []" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ("hint-data --bank none --drawn-per-symbol 50", "--drawn-per-symbol is used by --bank default only"),
        ("arithmetic --speed --steps 5", "--steps is used by the table (not --speed) only; this run would ignore it"),
        ("arithmetic --speed-seeds 3", "--speed-seeds is used by --speed only"),
        ("pipeline --ensemble r0 r1 --epochs 7", "--epochs is used by a run that trains its reader (not --ensemble) only"),
        ("pipeline --task hwf --digits 3", "--digits is used by --task mnist-add only; this run would ignore it"),
        (
            "pipeline --task hint --epochs 2 --reader-width 8",
            "--task hint takes only the shared options, not --epochs, --reader-width",
        ),
        ("pipeline --task hint --digits 1", "--task hint takes only the shared options, not --digits"),  # (its default)
        ("pipeline --task hwf --digits 1", "--digits is used by --task mnist-add only; this run would ignore it"),
        ("pipeline --task mnist-add --reader-convs 1,2", "--reader-convs takes three counts, one per stage, got 1,2"),
    ],
)
def test_rules_between_options_are_checked_before_any_work(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv.split())
    assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_generated_help_groups_the_options_and_hides_old_spellings(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["pipeline", "--help"])
    text = capsys.readouterr().out
    assert text.index("The options of neurosym pipeline:") < text.index("options shared with other commands:")
    assert "--learning-rate" in text and "--lr" not in text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_options_help_names_its_default_once(command, capsys) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert text.count("(default:") >= 3  # (said twice, e.g. "(default: the task's) (default: None)", in 36 options)
    assert not re.search(r"\(default: [^()]*(\([^()]*\)[^()]*)*\) \(default:", text)
    assert "(default: None)" not in text  # (an option left out: its help says in words what the command does then)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_options_help_states_its_default_twice(command, capsys) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    paragraphs = [" ".join(part.split()) for part in re.split(r"\n  (?=-)", capsys.readouterr().out)]
    twice = [text for text in paragraphs if len(re.findall(r"\(default:|\bby default\b", text)) > 1]
    assert not twice  # (was: "--amp ... (off by default: ...) (default: False)")


@pytest.mark.parametrize("command", ["hint", "hint-data"])
def test_a_default_named_default_is_shown(command, capsys) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    bank = capsys.readouterr().out.split("\n  --bank BANK")[1].split("\n  --")[0]  # the option's help paragraph
    assert " ".join(bank.split()).endswith("(default: default)")  # its value is named 'default', and shown


PYTHON_WRITING = re.compile(r"\d\.0\b|e[+-]?0\d|e\+|\w\(|\[|'")
"""How Python writes a value that no command line gives: ``0.0``, ``1e-05``, ``1e+20``, ``PosixPath('x')``, ``['a']``."""


@pytest.mark.parametrize("command", COMMANDS)
def test_every_default_is_shown_as_the_text_that_gives_it(command) -> None:
    """Was Python's writing, which no option reads back or no one types: ``['NAU', 'NMU']``, ``[(100, 2), (512, 512)]``,
    the curriculum's ``((1, 150), ..., (1000000000, 1000000000))`` for ``1:150,...,all``, ``0.0`` for ``--refit-epochs``
    (0: no refit), ``1e-05`` and ``0.01,0.1,1.0``."""
    child = build_parser(command).parse_args([command])._parser
    formatter = child._get_formatter()
    for action in child._actions:
        if action.type is None or action.help == argparse.SUPPRESS or STATED_DEFAULT.search(action.help or ""):
            continue  # (a switch: on or off; not in the help; or its help says its default in words)
        shown = re.search(r"\(default: (.*)\)$", formatter._get_help_string(action) % dict(vars(action), prog=command))
        if shown is None:  # (a default of None: the option left out)
            continue
        text, default = shown.group(1), action.default
        wanted = action.type(default) if isinstance(default, str) else default  # (argparse reads a text default too)
        read = action.type(text)
        if isinstance(default, list | tuple):
            read, wanted = list(read), list(wanted)
        assert read == wanted, (action.dest, text)
        assert text in (action.choices or ()) or not PYTHON_WRITING.search(text), (action.dest, text)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_default_is_shown_as_a_number_that_reads_back(value: float) -> None:
    text = default_text(value)
    assert float(text) == value and not PYTHON_WRITING.search(text)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_preset_names_its_default_as_every_option_does(command, capsys) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    preset = capsys.readouterr().out.split("\n  --preset ")
    if len(preset) > 1:  # (was, for pvr: "cpu: ... (the default without CUDA); paper: ... (the default on CUDA)")
        assert re.search(r"\) \(default: [^()]+\)$", " ".join(preset[1].split("\n  --")[0].split()))


def test_a_preset_left_to_the_command_says_which_it_takes() -> None:
    with pytest.raises(ValueError, match="a preset's default is a name or, left to the command, the words chosen"):
        preset_option({"smoke": "a few steps"}, None)
    with pytest.raises(ValueError, match="'smoke' and 'the smoke preset'"):
        preset_option({"smoke": "a few steps"}, "smoke", chosen="the smoke preset")


def test_hint_seed_help_leaves_the_data_to_data_seed(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["hint", "--help"])
    seed = " ".join(capsys.readouterr().out.split("\n  --seed SEED")[1].split("\n  --")[0].split())
    assert "initial weights" in seed and "data too unless --data-seed is given" in seed


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_lists_at_most_30_options(command, capsys) -> None:
    """docs/contributing.md's rule: a study knob few runs need is left out of --help (the help's last line names it)."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    listed = set(re.findall(r"^  (--[a-z-]+)", capsys.readouterr().out, flags=re.MULTILINE)) - {"--config"}
    assert 10 <= len(listed) <= 30, sorted(listed)


CONFIGS = Path(__file__).resolve().parents[1] / "benchmarks" / "configs"
LONG = ["--model", "neurosym", "--input", "image", "--batch-size", "32", "--cnn", "small", "--classifier-width", "32",
        "--classifier-features", "128", "--curriculum", "1:150,3:250,7:400,15:800,all", "--lr-schedule", "cosine",
        "--augment-shift", "2", "--threads", "1", "--scale", "0.02", "--steps", "7200", "--fewshot-scales", "none"]  # fmt: skip
WRITERS = [*LONG, "--bank", "train-writers", "--drawn-digits", "3000", "--extra-test-bank", "test-writers",
           "--adapt", "test-writers", "--adapt-examples", "1000", "--adapt-steps", "2400"]  # fmt: skip
PLAIN = ["--adapt-distill", "0", "--adapt-refit", "0"]
DRAWN = [*LONG[:-6], "--scale", "0.01", "--test-scale", "0.1", "--steps", "2400", "--fewshot-scales", "none", "--bank",
         "train-writers", "--drawn-digits", "3000", "--stroke-width", "3", "--extra-test-bank", "test-writers"]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "flags"),
    [
        ("hint_long.toml", [*LONG, "--test-scale", "0.1"]),
        ("hint_writers_drawn.toml", DRAWN),
        ("hint_writers_long.toml", [*WRITERS, *PLAIN]),
        (
            "hint_writers_drawn_routed.toml",
            DRAWN
            + ["--adapt", "test-writers", "--adapt-examples", "1000", "--adapt-steps", "2400", "--adapt-distill", "1"]
            + ["--adapt-refit", "1600", "--adapt-route", "2000"],
        ),
        (
            "hint_writers_routed.toml",
            [
                *WRITERS,
                "--adapt-distill",
                "1",
                "--adapt-refit",
                "1600",
                "--adapt-route",
                "2000",
                "--test-scale",
                "0.1",
                "--threads",
                "2",
            ],
        ),
    ],
)
def test_each_study_config_file_is_the_command_line_it_names(name, flags) -> None:
    from neurosym.cli import _parsed
    from neurosym.experiments.hint_options import HintOptions
    from neurosym.experiments.options import options_from

    from_file = options_from(HintOptions, _parsed(build_parser("hint"), ["hint", "--config", str(CONFIGS / name)]))
    assert from_file == options_from(HintOptions, _parsed(build_parser("hint"), ["hint", *flags]))
    assert sorted(path.name for path in CONFIGS.glob("*.toml")) == [
        "hint_long.toml",
        "hint_writers_drawn.toml",
        "hint_writers_drawn_routed.toml",
        "hint_writers_long.toml",
        "hint_writers_routed.toml",
    ]


def test_hint_data_takes_every_bank_that_hint_takes(tmp_path) -> None:
    from neurosym.experiments.hint_sources import BANKS

    parse = lambda value: build_parser("hint-data").parse_args(["hint-data", "--bank", value]).bank
    assert [parse(name) for name in BANKS] == list(BANKS) and parse("none") == "none" and parse(str(tmp_path)) == str(tmp_path)


def test_version_prints_the_package_version(capsys) -> None:
    import importlib.metadata

    import neurosym

    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0 and capsys.readouterr().out.strip() == f"neurosym {neurosym.__version__}"
    try:  # (the device check runs the suite from the source tree, nothing installed)
        installed = importlib.metadata.version("neurosym")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("neurosym is not installed: no metadata to compare")
    assert installed == neurosym.__version__  # pyproject reads it from there


RESUMING = [
    name for name, (module, _) in COMMANDS.items() if "resume" in importlib.import_module(module).OPTIONS.__dataclass_fields__
]


@pytest.mark.parametrize(
    ("argv", "checkpoint", "written"),
    [
        (["arithmetic"], "checkpoints", "checkpoints/nau.pt"),
        (["mathematics"], "", "lstm_att/checkpoint.pt"),
        (["hint", "--model", "lstm"], "lstm_symbol.pt", "lstm_symbol.pt"),
        (["hint", "--model", "neurosym"], "", "fewshot_symbol.json"),
        (["pipeline"], "", "checkpoint.pt"),
        (["pvr"], "", "runs/mlp.json"),
    ],
)
def test_resume_without_a_checkpoint_says_the_run_starts_from_step_0(
    argv, checkpoint, written, tmp_path, capsys, monkeypatch
) -> None:
    """Was silent: a run meant to continue started afresh without a word (a mistyped --out, say)."""
    runner = importlib.import_module(COMMANDS[argv[0]][0])
    monkeypatch.setattr(runner, "run", lambda options: None)
    assert main([*argv, "--out", str(tmp_path)]) == 0
    place = tmp_path / checkpoint if checkpoint else tmp_path
    expected = f"no checkpoint to resume at {place}: training starts from step 0\n"
    assert capsys.readouterr() == (expected, "")
    assert main([*argv, "--out", str(tmp_path), "--no-resume"]) == 0 and capsys.readouterr().out == ""
    (tmp_path / "gru_symbol.pt").write_text("")  # (another baseline's: resumes none of the others)
    assert main([*argv, "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ("" if argv[0] in ("mathematics", "pipeline", "pvr") or "neurosym" in argv else expected)
    (tmp_path / written).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / written).write_text("")
    assert main([*argv, "--out", str(tmp_path)]) == 0 and capsys.readouterr().out == ""


def test_only_the_first_process_of_a_torchrun_job_says_it_found_no_checkpoint(tmp_path, capsys, monkeypatch) -> None:
    """Every process of ``torchrun --nproc_per_node N`` printed the line."""
    from neurosym.experiments import pipeline

    monkeypatch.setattr(pipeline, "run", lambda options: None)
    for rank, shown in (("1", ""), ("0", f"no checkpoint to resume at {tmp_path}: training starts from step 0\n")):
        monkeypatch.setenv("RANK", rank)
        assert main(["pipeline", "--out", str(tmp_path)]) == 0 and capsys.readouterr().out == shown


def test_every_command_that_resumes_says_where_it_found_no_checkpoint() -> None:
    tested = {argv[0] for argv, _, _ in test_resume_without_a_checkpoint_says_the_run_starts_from_step_0.pytestmark[0].args[1]}
    assert tested == set(RESUMING)


@pytest.mark.parametrize(
    "argv",
    [
        ["arithmetic", "--speed"],
        ["mathematics", "--models", "symbolic"],  # (these two said training starts from step 0: nothing trains)
        ["hint", "--model", "neurosym", "--input", "image", "--fewshot-scales", "none", "--ensemble", "r0", "r1"],
        ["pipeline", "--ensemble", "r0", "r1"],
        ["hint", "--model", "neurosym", "--fewshot-scales", "none"],  # symbol input: a search, nothing trains
        ["hint", "--model", "neurosym", "--semantics", "learned", "--fewshot-scales", "none"],
    ],
)
def test_a_run_that_keeps_no_checkpoint_says_nothing_of_one(argv, tmp_path, capsys, monkeypatch) -> None:
    runner = importlib.import_module(COMMANDS[argv[0]][0])
    monkeypatch.setattr(runner, "run", lambda options: None)
    assert main([*argv, "--out", str(tmp_path)]) == 0 and capsys.readouterr().out == ""
