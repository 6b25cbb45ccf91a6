"""Glyphs of any size and place come out in MNIST's convention: longer side 20 pixels, centred."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.symbol_images.normalise import normalise_glyphs


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
