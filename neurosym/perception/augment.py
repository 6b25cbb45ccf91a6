"""Training-time augmentation of symbol windows."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange

from neurosym.layers.shape_checks import check_tensor
from neurosym.layers.value_checks import check_finite
from neurosym.training.checks import check_flags, fraction, is_int


def _check_inputs(windows: torch.Tensor, generator: torch.Generator | None) -> None:
    """Raise ``ValueError`` unless ``windows`` is ``[..., H, W]`` of real numbers and ``generator`` a CPU
    ``torch.Generator`` (the draws are made on the CPU and moved to the windows' device, so a seed gives the same
    windows on any device; torch's own error for a generator on another device came from deep inside the draw);
    ``TypeError`` for windows that are no tensor (a list failed on ``.dim()``)."""
    check_tensor(windows, "windows")
    if windows.dim() < 2 or windows.dtype == torch.bool or windows.is_complex():
        raise ValueError(f"windows must be images [..., H, W] of real numbers, got {windows.dtype} {tuple(windows.shape)}")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator (torch.Generator().manual_seed(seed)), got {generator!r}")
    if generator is not None and generator.device.type != "cpu":
        raise ValueError(
            f"generator must be a CPU torch.Generator (torch.Generator().manual_seed(seed)), whatever the windows' device: "
            f"got one on {generator.device} for windows on {windows.device}"
        )


def _flat_windows(windows: torch.Tensor, channels: bool) -> torch.Tensor:
    """``windows [..., H, W]`` as ``[N, 1, H, W]``, or with ``channels`` ``[..., C, H, W]`` as ``[N, C, H, W]``: one
    row per window, whose channels then share its transform."""
    check_flags(channels=channels)
    if channels and windows.dim() < 3:
        raise ValueError(f"windows with channels must be [..., C, H, W], got shape {tuple(windows.shape)}")
    return rearrange(windows, "... c h w -> (...) c h w") if channels else rearrange(windows, "... h w -> (...) 1 h w")


def random_shift(
    windows: torch.Tensor, max_shift: int, generator: torch.Generator | None = None, *, channels: bool = False
) -> torch.Tensor:
    """Translate each window by its own random whole-pixel offset in ``[-max_shift, max_shift]`` on both
    axes, filling with zeros (background): ``[..., H, W]`` -> ``[..., H, W]``, same dtype and device; with
    ``channels=True`` the windows are ``[..., C, H, W]``, a window's channels shifted alike.

    The offsets are drawn from ``generator``, a CPU one, so a seeded generator gives the same shifts on any device
    (``None``: torch's global generator).
    """
    if not is_int(max_shift) or max_shift < 0:  # (True passed, and failed in F.pad)
        raise ValueError(f"max_shift must be an int >= 0, got {max_shift!r}")
    _check_inputs(windows, generator)
    flat = _flat_windows(windows, channels)  # [N, C, H, W]
    if max_shift == 0 or windows.numel() == 0:
        return windows
    count, _, height, width = flat.shape
    offsets = torch.randint(0, 2 * max_shift + 1, (2, count), generator=generator).to(windows.device)
    padded = rearrange(F.pad(flat, (max_shift, max_shift, max_shift, max_shift)), "n c h w -> n h w c")
    rows = offsets[0, :, None] + torch.arange(height, device=windows.device)  # [N, H] source rows
    columns = offsets[1, :, None] + torch.arange(width, device=windows.device)  # [N, W]
    shifted = padded[torch.arange(count, device=windows.device)[:, None, None], rows[:, :, None], columns[:, None, :]]
    return rearrange(shifted, "n h w c -> n c h w").reshape(windows.shape)


MAX_ROTATION = math.radians(15.0)
"""Rotation of :func:`random_style` at strength 1, either way."""
MAX_SCALE_CHANGE = 0.2
"""Relative change of each axis' scale at strength 1."""
MAX_SHEAR = 0.3
"""Horizontal shear (x moves by this times y) at strength 1."""


def _pixel_aspect(height: int, width: int) -> torch.Tensor:
    """``[2, 2]`` float64 factors (on the CPU) that turn a map of pixel offsets from the centre of ``H x W`` windows into
    ``affine_grid``'s, whose coordinates run over ``[-1, 1]`` on each axis: the off-diagonal entries scale by ``H / W``
    and ``W / H`` (all exactly 1 for square windows; without them non-square windows were stretched as they turned)."""
    return torch.tensor([[1.0, height / width], [width / height, 1.0]], dtype=torch.float64)


def _style_draws(
    count: int, strength: float, height: int, width: int, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The random part of :func:`random_style` for ``count`` windows of ``H x W`` pixels, computed in float64 on the
    CPU (Apple's MPS has no float64): ``theta [N, 2, 3]``, each window's map from output to input coordinates in
    ``affine_grid``'s convention, and ``stroke [N]`` in ``[-1, 1)``, whose ends choose a bolder or thinner stroke."""
    draws = torch.rand(5, count, generator=generator, dtype=torch.float64) * 2 - 1  # [5, N] in [-1, 1)
    angle, scale_x, scale_y, shear, stroke = draws
    angle, shear = angle * MAX_ROTATION * strength, shear * MAX_SHEAR * strength
    scale_x, scale_y = 1 + scale_x * MAX_SCALE_CHANGE * strength, 1 + scale_y * MAX_SCALE_CHANGE * strength
    cos, sin = angle.cos(), angle.sin()
    # The map from output to input coordinates (affine_grid's convention): the inverse of rotate·shear·scale.
    forward = torch.stack([cos * scale_x, (cos * shear - sin) * scale_y, sin * scale_x, (sin * shear + cos) * scale_y], -1)
    inverse = torch.linalg.inv(rearrange(forward, "n (r c) -> n r c", r=2)) * _pixel_aspect(height, width)
    return torch.cat([inverse, inverse.new_zeros(count, 2, 1)], dim=2), stroke


def random_style(
    windows: torch.Tensor, strength: float, generator: torch.Generator | None = None, *, channels: bool = False
) -> torch.Tensor:
    """Redraw each window as another hand might have written it: ``[..., H, W]`` -> ``[..., H, W]``, same dtype
    and device; blank windows stay blank. With ``channels=True`` the windows are ``[..., C, H, W]``, a window's channels
    redrawn alike.

    Each window gets its own random affine map about its centre, a rotation of up to ``strength`` × 15°
    either way, a scale of ``1 ± 0.2·strength`` on each axis and a shear of up to ``0.3·strength``, and with
    probability ``strength / 3`` each a stroke one pixel bolder (3×3 dilation) or thinner (half-way to a
    3×3 erosion), all in pixels, so a window of any height and width turns without stretching. The draws come from
    ``generator``, a CPU one (``None``: torch's global one), so a seeded generator gives the same windows on any
    device; the maps are computed from them in float64 on the CPU and only their values in the windows' working dtype
    (float32, or float64 for float64 windows) are moved to the windows' device, which thus needs no float64 (Apple's MPS has none). ``strength`` is in
    ``[0, 1]``; 0 returns ``windows`` itself. A non-finite pixel (NaN or ±inf) raises ``ValueError`` naming it (the
    resampling spread it over its neighbours, silently).
    """
    strength = fraction(strength, "strength")  # (True passed as 1)
    _check_inputs(windows, generator)
    flat = _flat_windows(windows, channels)  # [N, C, H, W]
    check_finite(windows, "windows' pixels")
    if strength == 0 or windows.numel() == 0:
        return windows
    working = torch.promote_types(windows.dtype, torch.float32)  # (float64 windows were computed in float32)
    flat = flat.to(working)
    height, width = windows.shape[-2:]
    theta, stroke = _style_draws(flat.shape[0], strength, height, width, generator)
    # cast on the CPU, then moved: the windows' device need hold no float64 (float32 windows: the same values as ever)
    grid = F.affine_grid(theta.to(working).to(windows.device), list(flat.shape), align_corners=False)
    warped = F.grid_sample(flat, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    bolder = F.max_pool2d(warped, 3, stride=1, padding=1)
    thinner = (warped - F.max_pool2d(-warped, 3, stride=1, padding=1)) / 2
    threshold = 1 - 2 * strength / 3
    bold, thin = (rearrange(chosen, "n -> n 1 1 1").to(windows.device) for chosen in (stroke > threshold, stroke < -threshold))
    styled = torch.where(bold, bolder, torch.where(thin, thinner, warped))
    if not windows.dtype.is_floating_point:
        limits = torch.iinfo(windows.dtype)
        styled = styled.round().clamp(limits.min, limits.max)  # (negative pixels of signed windows were clamped to 0)
    return styled.to(windows.dtype).reshape(windows.shape)


def augment_windows(
    windows: torch.Tensor, max_shift: int, style: float, generator: torch.Generator, *, batch_dims: int
) -> torch.Tensor:
    """:func:`random_shift` by up to ``max_shift`` pixels, then :func:`random_style` at strength ``style``, both
    drawn from ``generator`` (seed it per training step and a resumed run stays exact), of ``windows`` whose first
    ``batch_dims`` dimensions index the windows (``[B, T, ...]``: 2): each window an image ``[H, W]``, or ``[C, H, W]``
    whose channels are moved alike; same shape out. Windows of another shape (vectors) raise ``ValueError`` where either
    augmentation is on: the leading dimensions of a window would have been moved as separate images."""
    window = tuple(windows.shape[batch_dims:])
    if (max_shift or style) and len(window) not in (2, 3):
        raise ValueError(
            f"augment_shift and augment_style move images: each window must be [H, W] or [C, H, W], got windows of "
            f"shape {window} (a batch {tuple(windows.shape)})"
        )
    channels = len(window) == 3
    return random_style(random_shift(windows, max_shift, generator, channels=channels), style, generator, channels=channels)
