"""Glyphs of any size and place come out in MNIST's convention: longer side 20 pixels, centred."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.symbol_images import DIGITS, SymbolBank, handwritten_symbols, with_drawn_digits
from neurosym.data.symbol_images.normalise import glyph_window, mnist_box, normalise_glyphs


def _ink_box(image: np.ndarray, threshold: int = 32) -> tuple[int, int, float, float]:
    """Height and width of the ink's bounding box and its centre of mass (row, column)."""
    rows, columns = np.nonzero(image > threshold)
    weights = image.astype(float)
    total = weights.sum()
    centre = ((weights.sum(1) * np.arange(28)).sum() / total, (weights.sum(0) * np.arange(28)).sum() / total)
    return rows.max() - rows.min() + 1, columns.max() - columns.min() + 1, *centre


@settings(max_examples=40, deadline=None)
@given(height=st.integers(6, 28), width=st.integers(6, 28), top=st.integers(0, 22), left=st.integers(0, 22))
def test_a_block_of_ink_is_scaled_to_20_pixels_and_centred(height, width, top, left):
    image = np.zeros((1, 28, 28), np.uint8)
    image[0, top : top + height, left : left + width] = 255  # clipped at the border
    box_height, box_width = min(height, 28 - top), min(width, 28 - left)
    out = normalise_glyphs(image)[0]
    got_height, got_width, row, column = _ink_box(out)
    longer = max(box_height, box_width)
    blur = 1 + 20 / longer  # bilinear resampling spreads an edge over about one input pixel
    assert abs(max(got_height, got_width) - 20) <= blur
    assert abs(min(got_height, got_width) - 20 * min(box_height, box_width) / longer) <= blur
    assert abs(row - 13.5) < 0.75 and abs(column - 13.5) < 0.75


def test_an_empty_image_is_kept_and_bad_input_is_refused():
    images = np.zeros((3, 28, 28), np.uint8)
    images[1, 5:9, 5:20] = 200
    out = normalise_glyphs(images)
    assert out.shape == images.shape and out.dtype == np.uint8
    assert not out[0].any() and out[1].any()
    with pytest.raises(ValueError, match="uint8"):
        normalise_glyphs(images.astype(np.float32))
    with pytest.raises(ValueError, match="box"):
        normalise_glyphs(images, box=40)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"chunk": -1}, "chunk must be an int of at least 1, got -1"),  # (every image came back unchanged)
        ({"chunk": 0}, "chunk must be an int of at least 1, got 0"),
        ({"box": True}, r"box must be an int in 1..28, got True"),  # (a box of 1 pixel)
        ({"box": 10.5}, r"box must be an int in 1..28, got 10.5"),
        ({"threshold": 255}, r"threshold must be a number in \[0, 255\), got 255"),  # (no ink: images unchanged)
        ({"threshold": float("nan")}, r"threshold must be a number in \[0, 255\), got nan"),
        ({"threshold": -1}, r"threshold must be a number in \[0, 255\), got -1"),
    ],
)
def test_options_that_would_leave_the_glyphs_unchanged_or_misshapen_are_named(options, message):
    images = np.zeros((3, 28, 28), np.uint8)
    images[:, 5:15, 5:10] = 200
    with pytest.raises(ValueError, match=message):
        normalise_glyphs(images, **options)


def test_images_of_no_pixels_are_named():  # (the box was refused as out of 1..0)
    with pytest.raises(ValueError, match=r"images must be uint8 \[N, H, W\] with H, W >= 1, got uint8 of shape \[2, 0, 5\]"):
        normalise_glyphs(np.zeros((2, 0, 5), np.uint8))


def _longest_ink_side(image: np.ndarray, threshold: int = 32) -> int:
    rows, columns = np.nonzero(image > threshold)
    return max(rows.max() - rows.min(), columns.max() - columns.min()) + 1


@settings(max_examples=20, deadline=None)
@given(side=st.integers(8, 84), ink=st.integers(3, 6))
def test_the_box_is_20_of_28_pixels_in_proportion_to_the_images_side(side, ink):
    image = np.zeros((1, side, side), np.uint8)
    image[0, 1 : 1 + ink, 2 : 2 + ink] = 255
    box = mnist_box(side)
    assert box == round(20 * side / 28)
    assert abs(_longest_ink_side(normalise_glyphs(image)[0]) - box) <= 1 + box / ink  # (bilinear blur at the edges)


def _blank_bank(side: int) -> SymbolBank:
    labels = np.array(DIGITS)
    return SymbolBank(np.zeros((10, side, side), np.uint8), labels, np.full(10, "train"), [f"{d}/a.jpg" for d in DIGITS])


def test_28_pixel_glyphs_keep_the_fixed_20_pixel_box():
    """The default and every bank built at 28 pixels (the shipped one, drawn digits) stay as before: box 20."""
    rng = np.random.default_rng(0)
    images = (rng.random((6, 28, 28)) > 0.9).astype(np.uint8) * 255
    assert mnist_box(28) == 20
    assert np.array_equal(normalise_glyphs(images), normalise_glyphs(images, box=20))


@pytest.mark.parametrize("side", [14, 56])
def test_drawn_digits_fill_the_same_share_of_any_banks_images(side):
    """Drawn digits were scaled to 20 pixels whatever the bank's size: half the glyph of MNIST's in a 56-pixel bank."""
    bank = with_drawn_digits(_blank_bank(side), 2, seed=0)
    sides = [_longest_ink_side(image) for image in bank.images[bank.sources == "drawn"]]
    assert all(abs(longest - 20 * side / 28) <= 1 + side / 28 for longest in sides), sides


def test_the_shipped_read_only_images_are_normalised_without_a_warning() -> None:
    """torch warned, from torch.from_numpy and torch.as_tensor, that the shipped images are not writable."""
    images = handwritten_symbols().images[:5]
    assert not images.flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        normalised = normalise_glyphs(images)
        window = glyph_window(images[0], window=28)
    assert np.array_equal(normalised, normalise_glyphs(images.copy()))
    assert torch.equal(window, glyph_window(images[0].copy(), window=28)) and not images.flags.writeable
