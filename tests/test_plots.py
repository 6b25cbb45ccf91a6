"""The figures: grouped bars against published numbers carry their values; a figure of nothing to draw (no series, zeros,
NaN or ``None`` only) is written without a matplotlib warning."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("matplotlib")

from neurosym.benchmarking.arithmetic_training import Curves, GroupConfig, GroupRun
from neurosym.pipelines.curriculum import UNBOUNDED, Curriculum
from neurosym.plots import arithmetic, hint_pipeline, mathematics, pipeline, speed
from neurosym.plots.arithmetic import plot_learning_curves, plot_speedups, plot_success_rates
from neurosym.plots.figure import bar_vs_published, legend, log_scale, optional_figure, plot_vs_published, pyplot, save_figure
from neurosym.plots.hint_data import plot_statistics
from neurosym.plots.hint_pipeline import plot_fewshot, plot_training
from neurosym.plots.mathematics import REGIMES, plot_module_accuracies
from neurosym.plots.pipeline import plot_grammar_pipeline
from neurosym.plots.pvr import plot_holdouts, plot_noise_sensitivity, plot_vector_sweep
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


NAN = math.nan
SOLVER_ZEROS = [{"n_operators": 1, "path": path, "batch_size": 1, "per_second": 0.0} for path in ("batch", "lark")]
NOISE = {f"{a}/0": {"mean": np.full(1, NAN), "std": np.zeros(1), "average": NAN} for a in ("mod_sum", "min")}
MODULES = {
    "modules": {"interpolate": ["m"], "extrapolate": []},
    "models": {"t": {r: {"per_module": {"m": NAN}} for r in REGIMES}},
}
HOLDOUT_I = {"complexity": 1, "runs": [{"model": "m", "i": 1, "holdout_accuracy": None, "neurosymbolic_holdout_accuracy": None}]}
EMPTY_GROUP = GroupRun(GroupConfig("NAU", ("add",), (0,), steps=10, eval_every=10), Curves(), 0, 0.0)
ZERO_LOSS = [{"step": 0, "loss": 0.0, "max_length": 5}]
UNMEASURED_CELL = {"operation": "add", "model": "NAU", "success_rate": None, "interval": None, "published": None}
DEGENERATE = {
    "vs published, nothing": (plot_vs_published, ([], {}, "accuracy", "none")),
    "vs published, None": (plot_vs_published, (["I"], {"ours": [None], "paper": [NAN]}, "accuracy", "missing")),
    "success rates, none": (plot_success_rates, ([],)),
    "success rates, None": (plot_success_rates, ([UNMEASURED_CELL, UNMEASURED_CELL | {"interval": [None, None]}],)),
    "learning curves, no group": (plot_learning_curves, ([], {})),
    "learning curves, not evaluated": (plot_learning_curves, ([EMPTY_GROUP], {"add": 0.0})),
    "speed-ups, none": (plot_speedups, ([], [], 10.0, "none")),
    "HINT statistics, no split": (plot_statistics, ({},)),
    "HINT training, zero loss": (plot_training, (ZERO_LOSS, ["I"], {"ours": [None]})),
    "HINT training, no curriculum": (plot_training, ([{"step": 0, "loss": None, "max_length": UNBOUNDED}], ["I"], {})),
    "HINT few-shot, no concept": (plot_fewshot, ({}, [], {})),
    "mathematics, NaN": (plot_module_accuracies, (MODULES, {"interpolate": NAN, "extrapolate": NAN})),
    "pipeline, no history": (plot_grammar_pipeline, ([], NAN, "ours", [], "none")),
    "PVR noise, NaN, no aggregation": (plot_noise_sensitivity, (np.ones(1), NOISE, [], 0)),
    "PVR sweep, zero examples": (plot_vector_sweep, ([{"model": "m", "complexity": 0, "train_size": 0, "test_accuracy": NAN}],)),
    "PVR holdouts, no run": (plot_holdouts, ({"runs": []}, {"complexity": 1, "runs": []})),
    "PVR holdouts, None": (plot_holdouts, (None, HOLDOUT_I)),
    "unit ratios, none": (plot_unit_ratios, ([], "linear", {})),
    "unit ratios, a pair missing and None": (
        plot_unit_ratios,
        (
            [{"shape": "2→1", "unit": "NAU", "ratio_to_linear": 2.0}, {"shape": "3→1", "unit": "NMU", "ratio_to_linear": None}],
            "Linear",
            {},
        ),
    ),
    "attention times, none": (plot_times_over_length, ({}, [], "none")),
    "attention times, zero and NaN": (plot_times_over_length, ({"vanilla": {8: 0.0, 16: NAN}}, [8, 16], "zero")),
    "attention times, one NaN": (plot_times_over_length, ({"vanilla": {8: NAN}}, [8], "NaN")),
    "attention times, None": (plot_times_over_length, ({"vanilla": {8: None}, "relative": {}}, [8], "None")),
    "solver throughput, none": (plot_solver_throughput, ([],)),
    "solver throughput, zero": (plot_solver_throughput, (SOLVER_ZEROS,)),
}
"""Each figure on input with nothing to draw: no series, one point, zeros only, NaN or ``None`` only."""


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("case", DEGENERATE)
def test_a_figure_of_nothing_to_draw_is_written_without_a_warning_and_closed(case: str, tmp_path) -> None:
    plot, args = DEGENERATE[case]
    opened = pyplot().get_fignums()
    plot(*args, path=tmp_path / "figure.png")
    assert (tmp_path / "figure.png").stat().st_size > 0 and pyplot().get_fignums() == opened
    assert [p.name for p in tmp_path.iterdir()] == ["figure.png"]  # no temporaries


@pytest.mark.filterwarnings("error")
@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=False, width=32), max_size=4))
def test_an_axis_is_logarithmic_exactly_when_it_has_a_positive_value(values: list[float]) -> None:
    figure, axis = pyplot().subplots(figsize=(1, 1), dpi=20)
    axis.plot(range(len(values)), values, label="values")
    log_scale(axis, "y")
    legend(axis)
    figure.canvas.draw()  # (matplotlib's warnings come when drawing)
    pyplot().close(figure)
    assert axis.get_yscale() == ("log" if any(value > 0 for value in values) else "linear")


def test_a_legend_is_drawn_only_when_something_is_labelled() -> None:
    figure, axis = pyplot().subplots()
    axis.plot([1, 2])
    legend(axis)
    unlabelled = axis.get_legend()
    axis.plot([2, 1], label="labelled")
    legend(axis)
    pyplot().close(figure)
    assert unlabelled is None and [text.get_text() for text in axis.get_legend().get_texts()] == ["labelled"]


def _drawn(module, monkeypatch) -> list:
    """The figures ``module``'s plots draw, kept open (its ``save_figure`` only collects them)."""
    figures: list = []
    monkeypatch.setattr(module, "save_figure", lambda figure, path, **_: figures.append(figure) or path)
    return figures


def test_times_and_success_rates_with_missing_values_draw_the_others(tmp_path, monkeypatch) -> None:
    figures = _drawn(speed, monkeypatch)  # (a None raised TypeError, a length left out KeyError)
    plot_times_over_length({"vanilla": {8: 0.001, 16: None}, "relative": {8: 0.002}}, [8, 16], "missing", tmp_path / "t.png")
    drawn = [line.get_ydata() for line in figures.pop().axes[0].lines]
    assert np.array_equal(drawn, [[1.0, NAN], [2.0, NAN]], equal_nan=True)
    figures = _drawn(arithmetic, monkeypatch)
    measured = {"operation": "sub", "model": "NAU", "success_rate": 0.5, "interval": [0.25, 0.75], "published": 0.4}
    plot_success_rates([UNMEASURED_CELL | {"published": 0.1}, measured], tmp_path / "s.png")  # (None - None raised)
    axis = figures.pop().axes[0]
    heights = [bar.get_height() for bar in axis.patches]
    assert heights[1] == 0.5 and math.isnan(heights[0])
    assert [tuple(point) for point in axis.collections[-1].get_offsets()] == [(0.0, 0.1), (1.0, 0.4)]  # both published
    pyplot().close("all")


def test_holdouts_without_either_sweep_is_an_error_naming_both(tmp_path) -> None:
    with pytest.raises(ValueError, match="neither block nor holdout_i"):
        plot_holdouts(None, None, tmp_path / "holdout.png")
    assert not list(tmp_path.iterdir())


def test_a_module_a_model_was_not_scored_on_draws_no_bar(tmp_path, monkeypatch) -> None:
    """The symbolic route is scored on arithmetic modules only: its table shows ``n/a`` elsewhere, and its figure
    draws no bar there (a bar of height 0 read as an accuracy of 0)."""
    figures = _drawn(mathematics, monkeypatch)
    scored = {"transformer": {"arithmetic__mul": 0.5, "algebra__linear_1d": 0.25}, "symbolic": {"arithmetic__mul": 1.0}}
    results = {
        "modules": {"interpolate": ["arithmetic__mul", "algebra__linear_1d"], "extrapolate": []},
        "models": {name: {regime: {"per_module": accuracies} for regime in REGIMES} for name, accuracies in scored.items()},
    }
    plot_module_accuracies(results, {"interpolate": 0.76, "extrapolate": 0.5}, tmp_path / "accuracy.png")
    heights = [bar.get_height() for bar in figures.pop().axes[0].patches]
    pyplot().close("all")
    assert heights[:3] == [0.5, 0.25, 1.0] and math.isnan(heights[3])


def test_published_rates_are_in_the_legend_when_the_first_model_has_none(tmp_path, monkeypatch) -> None:
    figures = _drawn(arithmetic, monkeypatch)  # NMU has no published rate on +, NAU has: its crosses were unlabelled
    cells = [
        {"operation": "add", "model": "NMU", "success_rate": 0.5, "interval": [0.2, 0.8], "published": None},
        {"operation": "add", "model": "NAU", "success_rate": 1.0, "interval": [0.8, 1.0], "published": 1.0},
    ]
    plot_success_rates(cells, tmp_path / "s.png")
    axis = figures.pop().axes[0]
    pyplot().close("all")
    assert sorted(text.get_text() for text in axis.get_legend().get_texts()) == ["NAU", "NMU", "published"]
    assert [tuple(point) for point in axis.collections[-1].get_offsets()] == [(0.2, 1.0)]


@pytest.mark.filterwarnings("error")
def test_learning_curves_mark_the_evaluations_where_a_seed_diverged(tmp_path, monkeypatch) -> None:
    """A NaN or infinite extrapolation MSE (a diverged NALU) has no point on a line: crosses along the panel's top
    show where, without moving its limits."""
    figures = _drawn(arithmetic, monkeypatch)
    config = GroupConfig("NALU", ("mul", "div"), (0, 1), steps=30, eval_every=10)
    mse = [[1.0, 1.0, 1.0, 1.0], [0.5, NAN, 2.0, 0.5], [0.1, NAN, math.inf, 0.2]]  # mul: seed 1 NaN at 20 and 30
    rows = [torch.tensor(row, dtype=torch.float64) for row in mse]
    curves = Curves([10, 20, 30], rows, rows, [torch.full((4,), 0.1)] * 3)
    plot_learning_curves([GroupRun(config, curves, 30, 1.0)], {"mul": 0.16, "div": 1e-11}, tmp_path / "curves.png")
    figure = figures.pop()
    figure.canvas.draw()
    mul, div = figure.axes[:2]
    pyplot().close("all")
    assert [(line.get_label(), list(line.get_xdata())) for line in mul.lines if line.get_marker() == "x"] == [
        ("NaN or inf (1 seed)", [20, 30])
    ]
    assert [list(line.get_xdata()) for line in div.lines if line.get_marker() == "x"] == [[30]]
    assert mul.get_ylim()[1] < 2 and div.get_ylim()[1] < 10  # the finite values' limits: the crosses sit on the top


@pytest.mark.filterwarnings("error")
def test_hint_training_labels_its_axes_and_legend_and_draws_no_cap_for_the_unbounded_stage(tmp_path, monkeypatch) -> None:
    """The loss axis is labelled, its lines are in a legend, and the steps of the ``all`` stage (no length cap) have
    no max-length point (a cap of 41 was drawn there) but a shaded span."""
    figures = _drawn(hint_pipeline, monkeypatch)
    curriculum = Curriculum(((1, 2), (3, 2), (UNBOUNDED, UNBOUNDED)))
    history = [{"step": step, "loss": 1 / (step + 1), "max_length": curriculum.max_length(step)} for step in range(6)]
    plot_training(history, ["I"], {"ours": [50.0]}, tmp_path / "t.png")
    figure = figures.pop()
    figure.canvas.draw()
    curve, _, twin = figure.axes
    pyplot().close("all")
    assert curve.get_ylabel() == "pseudo-label loss"
    assert [text.get_text() for text in curve.get_legend().get_texts()] == [
        "pseudo-label loss",
        "no length cap ('all' stage)",
        "max length",
    ]
    assert np.array_equal(twin.lines[0].get_ydata(), [1, 1, 3, 3, NAN, NAN], equal_nan=True)


def test_the_pipeline_figure_names_the_run_as_it_is_told(tmp_path, monkeypatch) -> None:
    figures = _drawn(pipeline, monkeypatch)
    history = [{"step": step, "correct": 0.5, "labelled": 1.0} for step in range(3)]
    published = [SimpleNamespace(method="ABL", accuracy=98.1)]
    plot_grammar_pipeline(history, 90.0, "neurosym, supervised by the true symbols", published, "hwf", tmp_path / "p.png")
    curve, bars = figures.pop().axes
    pyplot().close("all")
    assert [text.get_text() for text in bars.get_legend().get_texts()] == ["neurosym, supervised by the true symbols", "ABL"]
    # the reading is scored by its result, not symbol by symbol
    assert [text.get_text() for text in curve.get_legend().get_texts()] == ["reading gives the result", "abduced"]


def _outside(figure) -> list[str]:
    """The texts of ``figure``, laid out as it is saved, that reach past its edges (cut off in the written image)."""
    figure.tight_layout()
    figure.canvas.draw()  # (the labels take their places when drawn)
    renderer = figure.canvas.get_renderer()
    edges = figure.bbox
    texts = [text for axis in figure.axes for text in (axis.title, axis.xaxis.label, axis.yaxis.label)]
    return [
        text.get_text()
        for text in texts
        if text.get_text()
        and not (edges.x0 <= (box := text.get_window_extent(renderer)).x0 and box.x1 <= edges.x1 and box.y1 <= edges.y1)
    ]


@pytest.mark.parametrize("shapes", [["100→2"], ["100→2", "512→512"]])
def test_unit_ratios_of_any_number_of_shapes_keep_their_title_and_labels_inside_the_figure(shapes, tmp_path, monkeypatch):
    figures = _drawn(speed, monkeypatch)  # (one shape cut the title off at "(black ticks: g")
    records = [{"shape": s, "unit": u, "ratio_to_linear": 2.0} for s in shapes for u in ("NAU", "NMU")]
    plot_unit_ratios(records, "Linear", {"NAU": 1.5, "NMU": 3.0}, tmp_path / "u.png")
    figure = figures.pop()
    outside = _outside(figure)
    pyplot().close(figure)
    assert outside == []


def test_a_pvr_sweep_draws_chance_only_where_the_labels_are_uniform():
    from neurosym.plots.pvr import chance_level

    run = {"model": "mlp", "complexity": 1, "train_size": 10, "test_accuracy": 0.5}
    assert chance_level([run | {"aggregation": "mod_sum"}] * 2) == 0.1
    # min's labels: a constant 0 reads about 47 % of them at m = 5, far above 0.1
    assert chance_level([run | {"aggregation": "mod_sum"}, run | {"aggregation": "min"}]) is None
    assert chance_level([run]) is None and chance_level([]) is None  # (results written before runs named it)
