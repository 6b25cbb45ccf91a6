"""The layer-speed runner: a tiny end-to-end run through the CLI, and its argument checks."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neurosym.cli import main
from neurosym.experiments import layer_speed
from neurosym.experiments.options import add_options


def test_layer_speed_runner_writes_table_json_and_plot(tmp_path, capsys) -> None:
    out = tmp_path / "speed"
    argv = ["layer-speed", "--shapes", "6x2,3x3", "--units", "NAU,NMU", "--batch-size", "4"]
    assert main([*argv, "--rounds", "1", "--min-time", "0.001", "--out", str(out)]) == 0
    results = json.loads((out / "layer_speed.json").read_text())
    assert (out / "layer_speed.png").stat().st_size > 0
    records = {(r["shape"], r["unit"]): r for r in results["records"]}
    assert set(records) == {(s, u) for s in ("6→2", "3→3") for u in ("Linear", "NAU", "NMU")}
    assert all(r["microseconds"] > 0 for r in records.values())
    assert records[("6→2", "Linear")]["ratio_to_linear"] == 1.0
    nmu = records[("3→3", "NMU")]
    assert nmu["goal"] == 3.0 and nmu["meets_goal"] == (nmu["ratio_to_linear"] <= 3.0)
    printed = capsys.readouterr().out
    assert "| 3→3   | NMU" in printed and printed.endswith(f"Results in {out}: layer_speed.json, layer_speed.png\n")


@pytest.mark.parametrize("text", ["100", "ax2", "0x3", "2x-1", "１００x2", "1_0x2", "2x3x4"])
def test_shape_argument_rejects_malformed_text(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="shape"):
        layer_speed._shape(text)


def test_non_positive_settings_are_usage_errors(tmp_path, capsys) -> None:
    parser = argparse.ArgumentParser()
    add_options(parser, layer_speed.OPTIONS)
    for option in ("--rounds", "--batch-size"):
        with pytest.raises(SystemExit):
            parser.parse_args([option, "0", "--out", str(tmp_path)])
        assert f"argument {option}: expected a positive integer" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["--threads", "-1"])
    assert "argument --threads: expected an integer of at least 0" in capsys.readouterr().err


@given(st.sampled_from(["NAU", "NMU", "NMU-compiled", "iNALU", "RealNPU"]), st.data())
def test_units_are_named_in_any_case(unit: str, data) -> None:
    """``--units nmu`` was refused as unknown, while ``arithmetic --models nmu`` takes it."""
    flips = data.draw(st.lists(st.booleans(), min_size=len(unit), max_size=len(unit)))
    written = "".join(char.swapcase() if flip else char for char, flip in zip(unit, flips, strict=True))
    parser = argparse.ArgumentParser()
    add_options(parser, layer_speed.OPTIONS)
    assert parser.parse_args(["--units", f"nau,{written}" if unit != "NAU" else written]).units[-1] == unit


def test_an_unknown_unit_is_refused_naming_the_nearest(capsys) -> None:
    parser = argparse.ArgumentParser()
    add_options(parser, layer_speed.OPTIONS)
    with pytest.raises(SystemExit):
        parser.parse_args(["--units", "NAU,nmx"])
    error = capsys.readouterr().err
    assert "argument --units: unknown unit 'nmx': choose from NAC, NACMul, " in error and error.endswith("(did you mean NMU?)\n")
    with pytest.raises(SystemExit):
        parser.parse_args(["--units", "nmu,NMU"])  # (one unit, timed once)
    assert "argument --units: unit 'NMU' given twice" in capsys.readouterr().err
