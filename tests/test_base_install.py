"""A base install (no matplotlib) runs every benchmark command to the end: only the figures are skipped."""

import sys

import pytest

from neurosym.cli import main


@pytest.fixture
def no_matplotlib(monkeypatch):
    for name in [name for name in sys.modules if name == "matplotlib" or name.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # ``import matplotlib`` now raises ImportError


def test_commands_finish_without_matplotlib_and_say_the_figure_is_skipped(tmp_path, capsys, no_matplotlib):
    arithmetic = ["arithmetic", "--models", "nau", "--ops", "add", "--steps", "200", "--seeds", "2", "--eval-every", "100",
                  "--evaluation-size", "100", "--threshold-samples", "2000", "--out", str(tmp_path / "a"), "--no-progress"]  # fmt: skip
    assert main(arithmetic) == 0
    pipeline = ["pipeline", "--task", "hwf", "--epochs", "0.01", "--reader-width", "8", "--device", "cpu"]
    pipeline += ["--out", str(tmp_path / "p"), "--no-progress"]
    assert main(pipeline) == 0
    errors = capsys.readouterr().err
    assert errors.count("figures need matplotlib: pip install 'neurosym[plots]' (figure skipped)") >= 3
    assert (tmp_path / "a" / "results.json").exists() and (tmp_path / "p" / "results.json").exists()
    assert not list(tmp_path.rglob("*.png"))
