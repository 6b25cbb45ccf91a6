"""Augmentation of symbol windows: random shifts within the bound and random restyling (affine map and
stroke width), each reproducible from a seed."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from neurosym.perception.augment import MAX_ROTATION, MAX_SHEAR, augment_windows, random_shift, random_style
from neurosym.perception.strokes import StrokeNormaliser


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


def _bar_angle(window: torch.Tensor) -> float:
    """The angle in degrees, in (-90, 90], of the principal axis of a window's ink."""
    rows, columns = (window > 64).nonzero(as_tuple=True)
    covariance = np.cov(np.stack([columns.numpy(), rows.numpy()]))
    axis = np.linalg.eigh(covariance)[1][:, -1]
    angle = math.degrees(math.atan2(axis[1], axis[0]))
    return angle - 180 if angle > 90 else angle + 180 if angle <= -90 else angle


@settings(max_examples=30, deadline=None)
@given(st.floats(0.05, 1.0), st.integers(0, 2**31 - 1))
def test_style_turns_a_bar_within_the_bound_and_keeps_it_centred(strength, seed):
    windows = torch.zeros(8, 32, 32, dtype=torch.uint8)
    windows[:-1, 15:17, 6:26] = 255  # a horizontal bar through the centre; the last window is blank
    styled = random_style(windows, strength, torch.Generator().manual_seed(seed))
    assert styled.shape == windows.shape and styled.dtype == torch.uint8
    assert not styled[-1].any()  # blank stays blank
    # Rotation and shear together turn a horizontal bar by at most rotation + atan(shear · scale ratio).
    bound = math.degrees(MAX_ROTATION * strength + math.atan(MAX_SHEAR * strength * 1.5)) + 3
    for window in styled[:-1]:
        assert abs(_bar_angle(window)) <= bound
        rows, columns = window.nonzero(as_tuple=True)
        assert abs(rows.float().mean() - 15.5) < 2 and abs(columns.float().mean() - 15.5) < 2
        assert 0.25 < window.float().sum() / windows[0].float().sum() < 3  # ink neither vanishes nor floods (a 2-px bar)


def test_style_varies_between_windows_repeats_with_the_seed_and_zero_is_identity():
    windows = torch.zeros(200, 32, 32, dtype=torch.uint8)
    windows[:, 15:17, 6:26] = 255
    first = random_style(windows, 1.0, torch.Generator().manual_seed(3))
    angles = [_bar_angle(window) for window in first]
    assert max(angles) - min(angles) > 20  # windows are turned by different angles
    ink = first.float().sum((1, 2)) / windows[0].float().sum()
    assert ink.min() < 0.8 and ink.max() > 1.5  # thinner and bolder strokes both occur
    assert torch.equal(first, random_style(windows, 1.0, torch.Generator().manual_seed(3)))
    assert random_style(windows, 0.0) is windows
    floats = random_style(windows.float().unsqueeze(0) / 255, 0.5, torch.Generator().manual_seed(3))
    assert floats.shape == (1, 200, 32, 32) and floats.dtype == torch.float32
    with pytest.raises(ValueError, match="strength"):
        random_style(windows, 1.5)
    with pytest.raises(ValueError, match=r"strength must be a number in \[0, 1\], got True"):  # was read as 1
        random_style(windows, True)


def test_bad_windows_shifts_and_generators_are_named():
    windows = torch.rand(3, 8, 8)
    with pytest.raises(ValueError, match=r"windows must be images \[\.\.\., H, W\] of real numbers, got torch.float32 \(8,\)"):
        random_shift(torch.rand(8), 2)
    with pytest.raises(ValueError, match=r"max_shift must be an int >= 0, got 1.5"):
        random_shift(windows, 1.5)
    with pytest.raises(ValueError, match="generator must be a torch.Generator"):
        random_shift(windows, 1, 5)
    with pytest.raises(ValueError, match="got torch.bool"):
        random_style(windows > 0.5, 0.5)
    with pytest.raises(ValueError, match="of real numbers, got torch.complex64"):  # (failed in torch.iinfo)
        random_style(windows.to(torch.complex64), 0.5)
    with pytest.raises(ValueError, match="StrokeNormaliser expects floating-point windows in \\[0, 1\\], got torch.uint8"):
        StrokeNormaliser(2)(torch.zeros(2, 1, 8, 8, dtype=torch.uint8))


class _GeneratorOnTheGpu(torch.Generator):
    """A CPU generator that says it is on ``cuda:0`` (torch refuses a CUDA generator for a CPU draw)."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", 0)


@pytest.mark.parametrize("augment", [lambda w, g: random_shift(w, 1, g), lambda w, g: random_style(w, 0.5, g)])
def test_a_generator_off_the_cpu_is_refused_naming_both_devices(augment):
    with pytest.raises(ValueError, match="must be a CPU torch.Generator .* got one on cuda:0 for windows on cpu"):
        augment(torch.rand(2, 8, 8), _GeneratorOnTheGpu().manual_seed(0))


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(32, 16), (16, 32), (24, 20)]), st.integers(0, 2**31 - 1))
def test_a_non_square_window_is_styled_as_the_same_window_padded_square(size, seed):
    """The map is in pixels: a glyph in an H x W window comes out as it does in a square window around it."""
    height, width = size
    side, glyph = max(size), torch.rand(6, 6, generator=torch.Generator().manual_seed(seed))
    windows = torch.zeros(6, height, width)
    windows[:, height // 2 - 3 : height // 2 + 3, width // 2 - 3 : width // 2 + 3] = glyph  # it stays inside when turned
    top, left = (side - height) // 2, (side - width) // 2
    square = F.pad(windows, (left, side - width - left, top, side - height - top))
    styled = random_style(windows, 1.0, torch.Generator().manual_seed(seed))
    expected = random_style(square, 1.0, torch.Generator().manual_seed(seed))[:, top : top + height, left : left + width]
    torch.testing.assert_close(styled, expected, atol=1e-5, rtol=0)


def test_signed_and_float64_windows_keep_their_values():
    signed = torch.full((2, 8, 8), -5, dtype=torch.int8)
    assert torch.equal(random_style(signed, 1e-9, torch.Generator().manual_seed(0)), signed)  # (clamped to 0)
    windows = torch.rand(3, 8, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    styled = random_style(windows, 1e-12, torch.Generator().manual_seed(0))  # (warped in float32: errors of 1e-8)
    assert styled.dtype == torch.float64 and (styled - windows).abs().max() < 1e-10


class _Outputs(TorchDispatchMode):
    """Records the dtype and device of every tensor the operators called under it return."""

    def __init__(self) -> None:
        super().__init__()
        self.made: set[tuple[str, torch.dtype, str]] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.made |= {(str(func), t.dtype, t.device.type) for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)}
        return out


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.float16, torch.float32])
def test_style_makes_no_float64_tensor_on_the_windows_device(dtype):
    """The maps are computed in float64 on the CPU and moved cast to float32 (Apple's MPS has no float64: the float64
    draws were moved to the windows' device and turned into maps there); the ``meta`` device stands in for it."""
    windows = torch.zeros(3, 8, 6, dtype=dtype, device="meta")
    with _Outputs() as outputs:
        styled = random_style(windows, 0.5, torch.Generator().manual_seed(0))
    assert styled.device.type == "meta" and styled.dtype == dtype and styled.shape == windows.shape
    assert not {(func, made) for func, made, device in outputs.made if device == "meta" and made == torch.float64}


@pytest.mark.parametrize("windows", [[[0.0] * 8] * 8, np.zeros((2, 8, 8)), None], ids=["list", "numpy", "none"])
def test_augmentations_name_windows_that_are_no_tensor(windows):
    """They failed on a missing ``.dim()`` (AttributeError)."""
    generator = torch.Generator().manual_seed(0)
    for augment in (lambda w: random_shift(w, 1, generator), lambda w: random_style(w, 0.5, generator)):
        with pytest.raises(TypeError, match=f"windows must be a torch.Tensor, got {type(windows).__name__}"):
            augment(windows)


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(2, 9),
    st.integers(2, 9),
    st.data(),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.floats(0, 1),
    st.sampled_from([torch.float32, torch.float64]),
)
def test_style_names_a_non_finite_pixel_instead_of_spreading_it(count, height, width, data, bad, strength, dtype):
    windows = torch.rand(count, height, width, dtype=dtype)
    index = tuple(data.draw(st.integers(0, side - 1)) for side in windows.shape)
    windows[index] = bad
    with pytest.raises(ValueError, match=rf"windows' pixels must be finite, got {bad} at index \[{', '.join(map(str, index))}\]"):
        random_style(windows, strength, torch.Generator().manual_seed(0))


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), max_shift=st.integers(1, 3), strength=st.floats(0.1, 1.0))
def test_the_channels_of_a_window_are_moved_alike_and_as_the_window_alone(seed: int, max_shift: int, strength: float) -> None:
    """Colour windows [..., C, H, W] had each channel shifted and redrawn by its own draws: a dot landed at another
    pixel in each channel."""
    gray = torch.rand(2, 3, 12, 10)  # [B, T, H, W]
    colour = torch.stack([gray, gray * 0.5, gray.flip(-1)], dim=2)  # [B, T, 3, H, W]
    shifted = random_shift(colour, max_shift, torch.Generator().manual_seed(seed), channels=True)
    alone = random_shift(gray, max_shift, torch.Generator().manual_seed(seed))
    torch.testing.assert_close(shifted[:, :, 0], alone, rtol=0, atol=0)
    torch.testing.assert_close(shifted[:, :, 1], alone * 0.5, rtol=0, atol=0)
    styled = augment_windows(colour, max_shift, strength, torch.Generator().manual_seed(seed), batch_dims=2)
    expected = augment_windows(gray, max_shift, strength, torch.Generator().manual_seed(seed), batch_dims=2)
    torch.testing.assert_close(styled[:, :, 0], expected)
    torch.testing.assert_close(styled[:, :, 1], expected * 0.5, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("shape", "batch_dims"), [((4, 3, 16), 2), ((4, 3, 2, 2, 8, 8), 2), ((5, 7), 1)])
def test_windows_that_are_no_images_are_refused_by_augmentation_not_moved_as_images(shape, batch_dims) -> None:
    """Vector windows [B, T, D] were shifted as one image [T, D] per example: window 0's features slid into window 1."""
    windows = torch.rand(shape)
    with pytest.raises(ValueError, match=r"each window must be \[H, W\] or \[C, H, W\], got windows of shape"):
        augment_windows(windows, 1, 0.0, torch.Generator().manual_seed(0), batch_dims=batch_dims)
    with pytest.raises(ValueError, match=r"each window must be \[H, W\] or \[C, H, W\]"):
        augment_windows(windows, 0, 0.5, torch.Generator().manual_seed(0), batch_dims=batch_dims)
    assert augment_windows(windows, 0, 0.0, torch.Generator().manual_seed(0), batch_dims=batch_dims) is windows
