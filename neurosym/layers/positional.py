"""Sinusoidal position signals, shared by absolute encodings, relative attention and step embeddings."""

from __future__ import annotations

import math

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.shape_checks import check_sequence, check_tensor
from neurosym.training.checks import is_int


def _check_sinusoid_dim(dim: int) -> None:
    if not (is_int(dim) and dim > 0 and dim % 2 == 0):
        raise ValueError(f"sinusoid dimension must be a positive even number, got {dim!r}")


def sinusoid_frequencies(dim: int, device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The ``dim // 2`` angular frequencies ``ω_i = 10000^(-2i / dim)`` of a ``dim``-feature sinusoid (Vaswani et
    al.'s), from 1 down to ``10000^(-(dim - 2) / dim)``: ``[dim // 2]`` in ``dtype``."""
    _check_sinusoid_dim(dim)
    half = dim // 2
    return torch.exp(torch.arange(half, device=device, dtype=dtype) * (-math.log(10000.0) / half))


def sinusoid_angles(positions: torch.Tensor, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """The angles ``p ω_i`` of ``positions [N]`` at the :func:`sinusoid_frequencies`: ``[N, dim // 2]``, in float64
    for a float64 signal (``dtype``) and in float32 for any other (angles of a few thousand radians in float16 or
    bfloat16 would keep no phase; a float64 model got float32 signals, off by 1e-7 near 0 and 1e-4 at position
    10,000)."""
    precise = torch.float64 if dtype == torch.float64 else torch.float32
    frequencies = sinusoid_frequencies(dim, positions.device, precise)
    return rearrange(positions.to(precise), "n -> n 1") * rearrange(frequencies, "f -> 1 f")


def sinusoid_table(positions: torch.Tensor, dim: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Sine/cosine features of (possibly negative or fractional) positions.

    ``positions`` has shape ``[N]``; the result has shape ``[N, dim]`` and dtype ``dtype``, with the sines in the first
    half of the features and the cosines in the second, at the frequencies of :func:`sinusoid_frequencies` (computed
    as :func:`sinusoid_angles` says). ``dtype`` must be a floating-point type (``ValueError``: an integer table held
    only the values -1, 0 and 1).
    """
    check_tensor(positions, "positions")
    if positions.dim() != 1:
        raise ValueError(f"positions must have shape [N], got {tuple(positions.shape)}")
    if not dtype.is_floating_point:
        raise ValueError(f"a sinusoid table is made of sines and cosines: dtype must be floating-point, got {dtype}")
    angles = sinusoid_angles(positions, dim, dtype)
    return torch.cat([angles.sin(), angles.cos()], dim=-1).to(dtype)


class SinusoidalPositionalEncoding(nn.Module):
    """Adds the fixed absolute position signal of Vaswani et al. to token embeddings.

    Their frequencies, with the features in :func:`sinusoid_table`'s order: the sines of all frequencies, then the
    cosines (as Tensor2Tensor and Transformer-XL), where the paper interleaves them (``PE[p, 2i] = sin(p ω_i)``,
    ``PE[p, 2i + 1] = cos(p ω_i)``). The two differ by a fixed permutation of the features, which learned
    embeddings and the layers after them absorb; a model trained with one layout needs the same layout to run.

    ``forward(x [B, T, D], offset=0) -> [B, T, D]``: position ``offset + t`` is added to ``x[:, t]``
    (the offset lets a cached decoder feed one token at a time).
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        _check_sinusoid_dim(dim)  # (at construction, not at the first forward)
        self.dim = dim

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``x [B, T, D]`` (floating point) plus the encodings of positions ``offset`` to ``offset + T - 1``
        -> ``[B, T, D]``."""
        check_sequence(x, self.dim, "the input")
        if not x.is_floating_point():  # sines added to integers would be truncated to them
            raise ValueError(f"the input must be floating point (token embeddings), got {x.dtype}")
        if not (is_int(offset) or isinstance(offset, torch.SymInt)) or offset < 0:  # (0.5 added positions 0.5, 1.5, ...)
            raise ValueError(f"offset must be an int of at least 0 (the first position), got {offset!r}")
        positions = torch.arange(offset, offset + x.shape[1], device=x.device)
        return x + sinusoid_table(positions, self.dim, x.dtype)
