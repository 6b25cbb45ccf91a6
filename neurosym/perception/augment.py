"""Training-time augmentation of symbol windows."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import rearrange


def random_shift(windows: torch.Tensor, max_shift: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Translate each window by its own random whole-pixel offset in ``[-max_shift, max_shift]`` on both
    axes, filling with zeros (background): ``[..., H, W]`` -> ``[..., H, W]``, same dtype and device.

    The offsets are drawn on the CPU from ``generator``, so a seeded generator gives the same shifts on
    any device.
    """
    if max_shift < 0:
        raise ValueError(f"max_shift must be >= 0, got {max_shift}")
    if max_shift == 0 or windows.numel() == 0:
        return windows
    height, width = windows.shape[-2:]
    flat = rearrange(windows, "... h w -> (...) h w")
    count = flat.shape[0]
    offsets = torch.randint(0, 2 * max_shift + 1, (2, count), generator=generator).to(windows.device)
    padded = F.pad(flat, (max_shift, max_shift, max_shift, max_shift))
    rows = offsets[0, :, None] + torch.arange(height, device=windows.device)  # [N, H] source rows
    columns = offsets[1, :, None] + torch.arange(width, device=windows.device)  # [N, W]
    shifted = padded[torch.arange(count, device=windows.device)[:, None, None], rows[:, :, None], columns[:, None, :]]
    return shifted.view_as(windows)
