"""Padded batches: every row's real positions moved to its front.

The models accept padding anywhere in a row (left, right or in between): :func:`real_first` moves the real
positions of each row to its front in their order, so a padded sequence means the same as the sequence of
its real positions. It runs on the device without reading values on the host, so it never stalls an
accelerator (unlike a check that the padding is on the right, which must read the mask).
"""

from __future__ import annotations

import torch
from einops import rearrange


def real_first(values: torch.Tensor, padding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``values [B, S, ...]`` with each row's real positions moved to its front (their order kept) and the
    padding positions after them, and the matching padding mask ``[B, S]`` (``True`` = padding, now
    right-aligned). Right-padded rows come back unchanged.

    ``padding``: ``[B, S]`` bool, ``True`` marks padding.
    """
    order = torch.sort(padding.to(torch.uint8), dim=1, stable=True).indices  # [B, S]: real positions first
    index = order.reshape(*order.shape, *([1] * (values.dim() - 2))).expand(*order.shape, *values.shape[2:])
    lengths = rearrange((~padding).sum(dim=1), "b -> b 1")
    aligned = torch.arange(padding.shape[1], device=padding.device) >= lengths
    return values.gather(1, index), aligned
