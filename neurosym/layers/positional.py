"""Sinusoidal position signals, shared by absolute encodings, relative attention and step embeddings."""

from __future__ import annotations

import math
import numbers

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.shape_checks import check_sequence, check_tensor


def _check_sinusoid_dim(dim: int) -> None:
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral) or dim <= 0 or dim % 2:
        raise ValueError(f"sinusoid dimension must be a positive even number, got {dim!r}")


def sinusoid_frequencies(dim: int, device: torch.device | str | None = None) -> torch.Tensor:
    """The ``dim // 2`` angular frequencies of a ``dim``-feature sinusoid, geometrically spaced from 1 to
    1/10000: float32 ``[dim // 2]``."""
    _check_sinusoid_dim(dim)
    half = dim // 2
    return torch.exp(torch.arange(half, device=device, dtype=torch.float32) * (-math.log(10000.0) / half))


def sinusoid_table(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Sine/cosine features of (possibly negative or fractional) positions.

    ``positions`` has shape ``[N]``; the result has shape ``[N, dim]`` with the sines in the first half of
    the features and the cosines in the second, at the frequencies of :func:`sinusoid_frequencies`.
    """
    check_tensor(positions, "positions")
    if positions.dim() != 1:
        raise ValueError(f"positions must have shape [N], got {tuple(positions.shape)}")
    frequencies = sinusoid_frequencies(dim, positions.device)
    angles = rearrange(positions.to(torch.float32), "n -> n 1") * rearrange(frequencies, "f -> 1 f")
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed absolute position signal of Vaswani et al. to token embeddings.

    ``forward(x [B, T, D], offset=0) -> [B, T, D]``: position ``offset + t`` is added to ``x[:, t]``
    (the offset lets a cached decoder feed one token at a time).
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        _check_sinusoid_dim(dim)  # (at construction, not at the first forward)
        self.dim = dim

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_sequence(x, self.dim, "the input")
        if not x.is_floating_point():  # sines added to integers would be truncated to them
            raise ValueError(f"the input must be floating point (token embeddings), got {x.dtype}")
        positions = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + sinusoid_table(positions, self.dim).to(x.dtype)
