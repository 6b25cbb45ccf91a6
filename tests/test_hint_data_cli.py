"""The ``neurosym hint-data`` command: a tiny generation written in the official format, with statistics."""

from __future__ import annotations

import json

import numpy as np

from neurosym.cli import main
from neurosym.data.hint import read_release


def test_hint_data_command_writes_release_table_and_plot(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    labels = np.repeat(list("0123456789+-*/()"), 20)
    images = np.random.default_rng(0).integers(0, 256, (len(labels), 28, 28), dtype=np.uint8)  # (copies share a pool)
    np.savez(tmp_path / "bank.npz", images=images, labels=labels)
    out = tmp_path / "out"
    assert main(["hint-data", "--scale", "0.0005", "--bank", str(tmp_path / "bank.npz"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| test  | LL" in printed and "KL(train symbols || test symbols)" in printed
    assert printed.endswith(f"Results in {out}: release/, hint_data.json, statistics.png\n")
    summary = json.loads((out / "hint_data.json").read_text())
    release = read_release(out / "release")
    assert summary["sizes"] == {name: len(records) for name, records in release.items()}
    assert set(summary["subsets"]["test"]) == {"I", "SS", "LS", "SL", "LL"}
    assert all(record.img_paths for record in release["test"])
    assert (out / "statistics.png").stat().st_size > 10_000
    assert min(p.name for p in (tmp_path / "cache" / "hint").iterdir()).startswith("main_s0.0005_seed0")


def test_ctrl_c_outside_a_training_loop_exits_130_with_a_message(tmp_path, monkeypatch, capsys):
    import neurosym.experiments.hint_data as runner

    def interrupted_generation(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "main_split", interrupted_generation)
    assert main(["hint-data", "--scale", "0.0005", "--out", str(tmp_path / "out")]) == 130
    assert "neurosym hint-data: interrupted" in capsys.readouterr().err


def test_a_file_where_the_release_folder_goes_is_refused_before_the_generation(tmp_path, capsys) -> None:
    """It was found after the splits were generated, as "[Errno 17] File exists"."""
    (tmp_path / "release").write_text("")
    try:
        main(["hint-data", "--out", str(tmp_path), "--preset", "smoke", "--bank", "none"])
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("the command ran")
    assert f"--out {tmp_path} holds a file 'release' where the release folder is to be written" in capsys.readouterr().err
