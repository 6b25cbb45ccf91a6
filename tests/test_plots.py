"""The figures' shared pieces: grouped bars against published numbers carry their values."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("matplotlib")

from neurosym.plots.figure import bar_vs_published, optional_figure, pyplot, save_figure
from neurosym.plots.speed import plot_solver_throughput, plot_times_over_length, plot_unit_ratios


def test_bars_against_published_numbers_are_labelled_with_their_values_and_nan_draws_no_label() -> None:
    figure, axis = pyplot().subplots()
    bar_vs_published(axis, ["I", "SS"], {"ours": [99.35, 20.5], "paper": [math.nan, 30.0]}, "accuracy %")
    written = sorted(text.get_text() for text in axis.texts)
    pyplot().close(figure)
    assert written == ["", "20.5", "30", "99.35"]  # (at one decimal 99.35 read 99.3)


def test_a_figure_whose_drawing_fails_is_closed(tmp_path) -> None:
    plt = pyplot()
    opened = plt.get_fignums()

    @optional_figure
    def failing(path):
        plt.subplots()
        raise RuntimeError("bad data")

    with pytest.raises(RuntimeError, match="bad data"):
        failing(tmp_path / "f.png")
    (tmp_path / "file").write_text("")
    figure, _ = plt.subplots()
    with pytest.raises(ValueError, match="lies under"):
        save_figure(figure, tmp_path / "file" / "f.png")  # (nothing can be written there)
    assert plt.get_fignums() == opened and not list(tmp_path.glob("*.png"))


@pytest.mark.filterwarnings("ignore::UserWarning")  # (matplotlib's notes on empty legends and log axes of no data)
def test_speed_figures_of_empty_zero_and_nan_series_are_written_and_closed(tmp_path) -> None:
    opened = pyplot().get_fignums()
    nan_ratio = [{"shape": "8x8", "unit": "NAU", "ratio_to_linear": math.nan}]
    paths = [
        plot_unit_ratios([], "linear", {}, tmp_path / "empty.png"),
        plot_unit_ratios(nan_ratio, "linear", {"NAU": 2.0}, tmp_path / "nan.png"),
        plot_times_over_length({"vanilla": {8: 0.0, 16: math.nan}}, [8, 16], "zero", tmp_path / "zero.png"),
        plot_solver_throughput([], tmp_path / "none.png"),
    ]
    assert all(path.stat().st_size > 0 for path in paths) and pyplot().get_fignums() == opened
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.png", "nan.png", "none.png", "zero.png"]  # no temporaries
