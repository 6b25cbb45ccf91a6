"""The figures' shared pieces: grouped bars against published numbers carry their values."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("matplotlib")

from neurosym.plots.figure import bar_vs_published, pyplot


def test_bars_against_published_numbers_are_labelled_with_their_values_and_nan_draws_no_label() -> None:
    figure, axis = pyplot().subplots()
    bar_vs_published(axis, ["I", "SS"], {"ours": [99.35, 20.5], "paper": [math.nan, 30.0]}, "accuracy %")
    written = sorted(text.get_text() for text in axis.texts)
    pyplot().close(figure)
    assert written == ["", "20.5", "30", "99.35"]  # (at one decimal 99.35 read 99.3)
