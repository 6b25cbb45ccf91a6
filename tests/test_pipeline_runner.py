"""The `neurosym hint --model neurosym` runner end to end on symbol input (tiny scale)."""

import json

import pytest

from neurosym.cli import main


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    return tmp_path


def test_symbol_input_run_induces_semantics_and_learns_concepts(private_cache, capsys):
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "0.01"]
    assert main([*argv, "--speed-samples", "5", "--out", str(out), "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["programs"]["+"] == "(i + j)"
    assert results["test"]["avg"] == 1.0
    fewshot = results["fewshot"]["0.01"]["concepts"]
    assert fewshot["x"]["learned"] == "= 11" and fewshot["a"]["learned"].startswith("level 1: max")
    assert results["abduction_speed"]["samples"] == 5
    assert (out / "hint_neurosym_fewshot_symbol.png").is_file()
    printed = capsys.readouterr().out
    assert "| induced semantics |" in printed and "paper Table 4" in printed
