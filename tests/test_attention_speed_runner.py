"""The attention-speed runner: a tiny end-to-end run through the CLI."""

from __future__ import annotations

import json

import pytest

from neurosym.cli import main


def test_attention_speed_runner_writes_table_json_and_plot(tmp_path, capsys) -> None:
    out = tmp_path / "speed"
    argv = ["attention-speed", "--lengths", "4,8", "--batch-size", "2", "--dim", "16", "--heads", "2"]
    argv += ["--position-dim", "6", "--decode-batch", "2", "--source-length", "3", "--min-time", "0.001", "--rounds", "2"]
    assert main([*argv, "--device", "cpu", "--out", str(out)]) == 0
    results = json.loads((out / "attention_speed.json").read_text())
    assert (out / "attention_speed.png").stat().st_size > 0
    assert results["position_dim"] == 6
    assert set(results["attention_seconds"]) == {"vanilla", "xl", "xl_clipped", "shaw"}
    for times in results["attention_seconds"].values():
        assert set(times) == {"4", "8"} and all(t > 0 for t in times.values())
    assert results["decoding_speedup"] > 0
    assert results["rounds"] == 2
    printed = capsys.readouterr().out
    speedup = results["decoding_speedup"]  # (0.75 was printed as "cached decoding is 0.75x faster")
    assert f"cached decoding takes {1 / speedup:.2f}x the time of uncached decoding ({speedup:.2f}x as fast)" in printed
    assert "| XL / vanilla" in printed and "clipped XL / vanilla" in printed
    assert printed.endswith(f"Results in {out}: attention_speed.json, attention_speed.png\n")


def test_attention_speed_rejects_bad_rounds(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["attention-speed", "--rounds", "0", "--out", str(tmp_path)])
    assert stopped.value.code == 2 and "argument --rounds: expected a positive integer" in capsys.readouterr().err
