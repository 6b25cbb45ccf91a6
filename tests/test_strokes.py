"""Stroke-width normalisation: Zhang–Suen skeletons (thin, inside the ink, connected, stable) and glyphs
redrawn at one pen width whatever width they were written with."""

import itertools
import math

import networkx as nx
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.perception.strokes import _NEIGHBOURS, StrokeNormaliser, _neighbour_codes, skeletonise
from neurosym.perception.symbol_classifier import SymbolClassifier


def _components(ink: torch.Tensor) -> int:
    """8-connected components of a bool image ``[H, W]``."""
    pixels = {tuple(p) for p in ink.nonzero().tolist()}
    graph = nx.Graph()
    graph.add_nodes_from(pixels)
    for row, column in pixels:
        for d_row in (-1, 0, 1):
            for d_column in (-1, 0, 1):
                if (row + d_row, column + d_column) in pixels:
                    graph.add_edge((row, column), (row + d_row, column + d_column))
    return nx.number_connected_components(graph)


def _stroke(points: list[tuple[int, int]], width: int, size: int = 32) -> torch.Tensor:
    """A polyline through ``points`` drawn ``width`` pixels wide: bool ``[size, size]``."""
    line = torch.zeros(size, size)
    for (r0, c0), (r1, c1) in itertools.pairwise(points):
        for t in torch.linspace(0, 1, 4 * size):
            line[round(float(r0 + t * (r1 - r0))), round(float(c0 + t * (c1 - c0)))] = 1
    before, after = (width - 1) // 2, width // 2
    return F.max_pool2d(F.pad(line[None, None], (before, after, before, after)), width, stride=1)[0, 0] > 0


strokes = st.lists(st.tuples(st.integers(6, 25), st.integers(6, 25)), min_size=2, max_size=4)


@settings(max_examples=40, deadline=None)
@given(strokes, st.integers(1, 6))
def test_a_skeleton_lies_in_the_ink_keeps_its_connectivity_and_is_stable(points, width):
    ink = _stroke(points, width)
    skeleton = skeletonise(ink[None])[0]
    assert skeleton.any() and not (skeleton & ~ink).any()
    assert _components(skeleton) == _components(ink) == 1
    assert torch.equal(skeletonise(skeleton[None])[0], skeleton)


@settings(max_examples=40, deadline=None)
@given(strokes, st.integers(1, 4), st.lists(st.tuples(st.integers(1, 27), st.integers(1, 27), st.integers(1, 4)), max_size=3))
def test_every_piece_of_ink_keeps_a_skeleton_dots_of_any_size_too(points, width, dots):
    ink = _stroke(points, width)
    for row, column, size in dots:  # the dots of ÷: a 2x2 one vanished whole
        ink[row : row + size, column : column + size] = True
    skeleton = skeletonise(ink[None])[0]
    assert not (skeleton & ~ink).any() and _components(skeleton) == _components(ink)


def test_a_square_dot_of_two_pixels_stays_and_so_do_the_dots_of_a_division_sign():
    ink = torch.zeros(1, 12, 12, dtype=torch.bool)
    ink[0, 3:5, 3:5] = True
    assert torch.equal(skeletonise(ink), ink)  # (all four pixels were removed in one parallel step)
    obelus = torch.zeros(1, 1, 32, 32)
    obelus[0, 0, 15:17, 8:24] = obelus[0, 0, 9:11, 15:17] = obelus[0, 0, 21:23, 15:17] = 1.0  # bar, dot above, dot below
    inked_rows = (StrokeNormaliser(width=3)(obelus)[0, 0] > 0.05).any(dim=1)
    assert inked_rows[9:11].all() and inked_rows[21:23].all()


def test_a_thick_bar_thins_to_a_one_pixel_line_of_its_length():
    bar = torch.zeros(1, 20, 30, dtype=torch.bool)
    bar[0, 8:13, 4:26] = True  # 5 rows by 22 columns
    skeleton = skeletonise(bar)[0]
    assert skeleton.sum(dim=0).max() == 1  # one pixel per column
    columns = skeleton.any(dim=0).nonzero().flatten()
    assert columns.min() <= 7 and columns.max() >= 22  # ends shortened by at most half the width
    with pytest.raises(ValueError, match="bool images"):
        skeletonise(bar.float())


@settings(max_examples=25, deadline=None)
@given(strokes)
def test_glyphs_written_thin_or_bold_are_redrawn_alike(points):
    thin, bold = _stroke(points, 1).float(), _stroke(points, 5).float()
    normalise = StrokeNormaliser(width=3)
    redrawn = normalise(torch.stack([thin, bold])[:, None])
    assert redrawn.shape == (2, 1, 32, 32) and redrawn.min() >= 0 and redrawn.amax(dim=(1, 2, 3)).tolist() == [1.0, 1.0]
    difference = (redrawn[0] - redrawn[1]).abs().sum()
    assert difference < 0.5 * (bold - thin).abs().sum()


def test_blank_windows_stay_blank_and_bad_arguments_are_refused():
    windows = torch.zeros(3, 1, 32, 32)
    windows[1, 0, 10:14, 5:25] = 0.7
    redrawn = StrokeNormaliser(width=2)(windows)
    assert torch.equal(redrawn[0], windows[0]) and torch.equal(redrawn[2], windows[2])
    assert redrawn[1].amax() == 1 and not torch.isnan(redrawn).any()
    with pytest.raises(ValueError, match="stroke width"):
        StrokeNormaliser(width=0)
    with pytest.raises(ValueError, match=r"the stroke width \(pixels\) must be an int of at least 1, got 2.5"):
        StrokeNormaliser(width=2.5)
    with pytest.raises(ValueError, match=r"\[N, 1, S, S\]"):
        StrokeNormaliser()(torch.zeros(2, 32, 32))
    with pytest.raises(ValueError, match=r"\[N, 1, S, S\], got \(2, 1, 0, 32\)"):
        StrokeNormaliser()(torch.zeros(2, 1, 0, 32))
    for blur in (math.nan, math.inf, True):  # (NaN and infinity failed in round(), True was read as 1)
        with pytest.raises(ValueError, match=r"blur \(pixels\) must be a finite number above 0"):
            StrokeNormaliser(blur=blur)
    with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\), got '0.5'"):
        StrokeNormaliser(threshold="0.5")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_iterations must be an int of at least 0, got -1"):
        skeletonise(windows[:, 0] > 0, max_iterations=-1)  # (returned the ink unthinned)


def test_a_nan_or_out_of_range_pixel_is_refused_not_read_as_a_blank_window():
    windows = torch.zeros(2, 1, 16, 16)
    windows[:, 0, 4:12, 7:9] = 1.0
    windows[1, 0, 0, 0] = math.nan  # (its window came out blank)
    with pytest.raises(ValueError, match=r"images must be finite, got nan at index \[1, 0, 0, 0\]"):
        StrokeNormaliser()(windows)
    with pytest.raises(ValueError, match=r"intensities in \[0, 1\], got values in \[0.0, 255.0\]"):
        StrokeNormaliser()(windows.nan_to_num() * 255)


def test_a_classifier_with_stroke_normalisation_reads_a_glyph_the_same_at_any_width():
    torch.manual_seed(0)
    classifier = SymbolClassifier(list("0123456789"), stroke_width=3, width=4, features=8).eval()
    points = [(8, 10), (24, 20), (10, 24)]
    windows = torch.stack([_stroke(points, w) for w in (2, 3, 4, 5)]).to(torch.uint8) * 255
    log_probabilities = classifier(windows)
    assert log_probabilities.shape == (4, 10)
    torch.testing.assert_close(log_probabilities[1:], log_probabilities[0].expand(3, 10), atol=0.1, rtol=0)


@settings(max_examples=20, deadline=None)
@given(strokes, st.integers(1, 6), st.integers(1, 5))
def test_the_pen_and_the_blur_equal_a_max_pool_and_a_separable_gaussian_convolution(points, written, pen):
    window = _stroke(points, written)[None, None].float()
    normalise = StrokeNormaliser(width=pen)
    torch.testing.assert_close(normalise(window), _redrawn_by_convolution(window, pen, normalise.gaussian), atol=1e-6, rtol=0)


def _redrawn_by_convolution(window: torch.Tensor, pen: int, gaussian: torch.Tensor) -> torch.Tensor:
    """``window [1, 1, H, W]``'s skeleton widened by a ``pen``×``pen`` max-pool and blurred by a separable convolution
    with ``gaussian [2r + 1]``, scaled to a brightest pixel of 1: ``[1, 1, H, W]`` in ``window``'s dtype."""
    skeleton = skeletonise(window[:, 0] > 0)[:, None].to(window.dtype)
    before, after = (pen - 1) // 2, pen // 2
    widened = F.max_pool2d(F.pad(skeleton, (before, after, before, after)), pen, stride=1)
    row = gaussian.to(window.dtype).view(1, 1, 1, -1)
    radius = row.shape[-1] // 2
    soft = F.conv2d(F.conv2d(widened, row, padding=(0, radius)), row.view(1, 1, -1, 1), padding=(radius, 0))
    return soft / soft.amax()


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_each_pixel_codes_its_eight_neighbours_clockwise_from_north(seed):
    ink = torch.rand(2, 6, 7, generator=torch.Generator().manual_seed(seed)) > 0.5
    codes = _neighbour_codes(ink)
    for n, row, column in itertools.product(range(2), range(6), range(7)):
        expected = sum(
            1 << bit
            for bit, (d_row, d_column) in enumerate(_NEIGHBOURS)
            if 0 <= row + d_row < 6 and 0 <= column + d_column < 7 and ink[n, row + d_row, column + d_column]
        )
        assert codes[n, row, column] == expected


@settings(max_examples=20, deadline=None)
@given(strokes, st.integers(1, 6), st.integers(1, 4), st.floats(0.3, 2.0))
def test_a_float64_window_is_blurred_in_float64(points, written, pen, blur):
    window = _stroke(points, written)[None, None].double()
    radius = max(1, round(2 * blur))
    gaussian = torch.exp(-(torch.arange(-radius, radius + 1, dtype=torch.float64) ** 2) / (2 * blur**2))
    redrawn = StrokeNormaliser(width=pen, blur=blur)(window)  # (its Gaussian was float32's: up to 4e-8 off)
    assert redrawn.dtype == torch.float64
    torch.testing.assert_close(redrawn, _redrawn_by_convolution(window, pen, gaussian / gaussian.sum()), atol=1e-12, rtol=0)


@pytest.mark.parametrize("images", [[[True] * 8] * 8, None], ids=["list", "none"])
def test_stroke_functions_name_images_that_are_no_tensor(images):
    """They failed on a missing ``.dtype`` or ``.dim()`` (AttributeError)."""
    with pytest.raises(TypeError, match=f"skeletonise's ink must be a torch.Tensor, got {type(images).__name__}"):
        skeletonise(images)
    with pytest.raises(TypeError, match=f"StrokeNormaliser's windows must be a torch.Tensor, got {type(images).__name__}"):
        StrokeNormaliser()(images)


def test_a_state_of_another_blur_is_refused_and_one_of_the_same_blur_loads_in_any_dtype():
    """The taps were loaded into the buffer and the forward went on blurring at its own (outputs 0.07 apart)."""
    saved = StrokeNormaliser(blur=0.8).state_dict()
    with pytest.raises(RuntimeError, match=r"gaussian holds the taps of another blur than this StrokeNormaliser's \(1 pixels\)"):
        StrokeNormaliser(blur=1.0).load_state_dict(saved)
    for dtype in (torch.float64, torch.bfloat16):
        StrokeNormaliser(blur=0.8, dtype=dtype).load_state_dict(saved)
        StrokeNormaliser(blur=0.8).load_state_dict(StrokeNormaliser(blur=0.8, dtype=dtype).state_dict())
