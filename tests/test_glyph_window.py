"""glyph_window: a glyph image of one's own, of any size and either polarity, as the banks' windows show their symbols."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.symbol_images import glyph_window, handwritten_symbols, render_windows, resize_images
from neurosym.data.symbol_images.normalise import normalise_glyphs

CLOSE = 0.08
"""Largest mean absolute difference allowed between a redrawn glyph's window and its bank window. Measured over 300
shipped glyphs drawn 1.5 to 5 times larger, shifted in a larger canvas and inverted: at most 0.072, 0.028 on average;
two different glyphs' windows differ by 0.126 on average (0.039 at the least)."""
CLOSE_ON_AVERAGE = 0.04
"""Largest mean of those differences over a set of glyphs."""


@functools.cache
def bank_glyphs() -> np.ndarray:
    """40 shipped glyphs in the banks' convention (uint8 ``[40, 28, 28]``, white on black), as ``default_bank`` holds them."""
    real = handwritten_symbols()
    picked = np.random.default_rng(0).choice(len(real.images), 40, replace=False)
    return normalise_glyphs(real.images[picked])


def redrawn(glyph: np.ndarray, scale: float, top: int, left: int, bottom: int, right: int) -> np.ndarray:
    """``glyph [28, 28]`` drawn ``scale`` times larger, black on white, with margins around it (uint8)."""
    side = round(28 * scale)
    big = resize_images(glyph[None], (side, side))[0]
    return 255 - np.pad(big, ((top, bottom), (left, right)))


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 39),
    st.floats(0.8, 5),
    st.lists(st.integers(0, 90), min_size=4, max_size=4),
    st.sampled_from([None, True]),
    st.booleans(),
)
def test_a_bank_glyph_drawn_larger_shifted_and_inverted_comes_back_close(index, scale, margins, black_on_white, floats):
    glyph = bank_glyphs()[index]
    image = redrawn(glyph, scale, *margins)
    given_image = torch.from_numpy(image).float() / 255 if floats else image
    window = glyph_window(given_image, black_on_white=black_on_white)
    assert window.shape == (32, 32) and window.dtype == torch.float32
    assert 0 <= float(window.min()) and float(window.max()) <= 1
    assert float((window - render_windows(glyph[None])[0, 0]).abs().mean()) <= CLOSE


def test_glyphs_come_back_close_on_average_and_white_on_black_ones_unchanged_in_polarity():
    glyphs = bank_glyphs()
    windows = render_windows(glyphs)[:, 0]
    redrawn_windows = torch.stack([glyph_window(redrawn(g, 3.0, 20, 5, 40, 70)) for g in glyphs])
    assert float((redrawn_windows - windows).abs().mean()) <= CLOSE_ON_AVERAGE
    white_on_black = torch.stack([glyph_window(255 - redrawn(g, 3.0, 20, 5, 40, 70), black_on_white=False) for g in glyphs])
    torch.testing.assert_close(white_on_black, redrawn_windows, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("image", "black_on_white"),
    [
        (np.zeros((40, 30), np.uint8), None),
        (np.zeros((40, 30), np.uint8), False),
        (torch.ones(17, 50), None),  # (white paper, read as black on white)
        (np.full((40, 30), 255, np.uint8), True),
        (np.full((40, 30), 20, np.uint8), False),  # (faint: no pixel above the ink threshold)
    ],
)
def test_a_blank_image_is_refused(image, black_on_white):
    with pytest.raises(ValueError, match="the glyph image holds no ink"):
        glyph_window(image, black_on_white=black_on_white)


def test_images_that_are_no_grey_glyph_are_refused():
    with pytest.raises(ValueError, match=r"a glyph image must be grey \[H, W\] with H, W >= 1, got shape \(3, 20, 20\)"):
        glyph_window(np.zeros((3, 20, 20), np.uint8))
    with pytest.raises(ValueError, match=r"got shape \(0, 20\)"):
        glyph_window(np.zeros((0, 20), np.uint8))
    with pytest.raises(ValueError, match=r"float images must hold intensities in \[0, 1\]"):
        glyph_window(np.full((20, 20), 255.0))
    with pytest.raises(ValueError, match="images must be finite"):
        glyph_window(np.full((20, 20), np.nan))
    with pytest.raises(ValueError, match="black_on_white must be True, False or None"):
        glyph_window(np.zeros((20, 20), np.uint8), black_on_white="yes")


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 39), st.floats(0.8, 5), st.lists(st.integers(0, 90), min_size=4, max_size=4))
def test_a_glyph_comes_back_in_mnists_convention_for_readers_of_28_pixel_windows(index, scale, margins):
    """The readers of mnist-add and hwf read MNIST's ``[28, 28]``: a 32-pixel window was refused by them, and no function
    brought one's own glyph to their convention."""
    glyph = bank_glyphs()[index]
    window = glyph_window(redrawn(glyph, scale, *margins), window=28)
    assert window.shape == (28, 28) and window.dtype == torch.float32
    assert 0 <= float(window.min()) and float(window.max()) <= 1
    assert float((window - torch.from_numpy(glyph).float() / 255).abs().mean()) <= CLOSE


@pytest.mark.parametrize("window", [27, 64, 28.0, True, "28"])
def test_a_window_other_than_the_banks_or_mnists_is_refused(window):
    with pytest.raises(ValueError, match="window must be 32 or 28 pixels"):
        glyph_window(np.eye(30, dtype=np.uint8) * 255, window=window)


@pytest.mark.parametrize(("paper", "black_on_white"), [(60, True), (150, None), (200, None)])  # (dark paper: told)
def test_a_glyph_on_grey_paper_comes_back_as_on_clean_paper_and_a_blank_grey_page_is_refused(paper, black_on_white):
    """The paper's level is taken off first: every pixel of grey paper counted as ink (the whole page was the glyph's
    box), and a blank grey page was read as a glyph."""
    glyph = redrawn(bank_glyphs()[0], 2.0, 20, 5, 40, 70)  # black on white
    ink = 255 - glyph.astype(np.int64)  # [H, W] of 0..255
    on_grey = (paper - ink * paper // 255).astype(np.uint8)  # black ink on paper of level `paper`
    window = glyph_window(on_grey, black_on_white=black_on_white)
    assert float((window - glyph_window(glyph)).abs().mean()) <= CLOSE_ON_AVERAGE
    blank = np.full((40, 30), paper, np.uint8)
    for polarity in (None, True, False):
        with pytest.raises(ValueError, match="the glyph image holds no ink"):
            glyph_window(blank, black_on_white=polarity)
