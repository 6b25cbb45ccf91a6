"""Random shifts of symbol windows: a translation within the bound, reproducible from a seed."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.perception.augment import random_shift


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 3), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_each_window_is_translated_within_the_bound(max_shift, count, seed):
    generator = torch.Generator().manual_seed(seed)
    windows = torch.zeros(count, 12, 12, dtype=torch.uint8)
    windows[:, 5, 6] = torch.arange(1, count + 1, dtype=torch.uint8)  # one lit pixel, far from the border
    shifted = random_shift(windows, max_shift, generator)
    assert shifted.shape == windows.shape and shifted.dtype == torch.uint8
    for n in range(count):
        ((row, column),) = shifted[n].nonzero().tolist()
        assert abs(row - 5) <= max_shift and abs(column - 6) <= max_shift
        assert shifted[n, row, column] == n + 1


def test_shifts_cover_every_offset_and_repeat_with_the_seed():
    windows = torch.zeros(2000, 9, 9, dtype=torch.uint8)
    windows[:, 4, 4] = 255
    first = random_shift(windows, 2, torch.Generator().manual_seed(7))
    positions = {tuple(p) for p in first.nonzero()[:, 1:].tolist()}
    assert positions == {(r, c) for r in range(2, 7) for c in range(2, 7)}
    torch.testing.assert_close(first, random_shift(windows, 2, torch.Generator().manual_seed(7)))
    assert torch.equal(random_shift(windows, 0), windows)


def test_batch_dimensions_are_kept_and_bad_bounds_refused():
    windows = torch.rand(2, 3, 32, 32)
    assert random_shift(windows, 1, torch.Generator().manual_seed(0)).shape == (2, 3, 32, 32)
    with pytest.raises(ValueError, match="max_shift"):
        random_shift(windows, -1)
