"""The sinusoid of Vaswani et al. (2017), from the paper's formula in Python floats (float64)."""

from __future__ import annotations

import math

import torch


def paper_sinusoid(position: float, dim: int) -> torch.Tensor:
    """``[sin(p ω_0) .. sin(p ω_{dim/2-1}), cos(p ω_0) .. cos(p ω_{dim/2-1})]`` with ``ω_i = 1 / 10000^(2i / dim)``:
    float64 ``[dim]``. The paper interleaves the two halves (``PE[p, 2i]`` is the sine, ``PE[p, 2i + 1]`` the cosine);
    the library keeps them apart, as Tensor2Tensor and Transformer-XL do."""
    omegas = [1.0 / 10000.0 ** (2 * i / dim) for i in range(dim // 2)]
    sines = [math.sin(position * omega) for omega in omegas]
    cosines = [math.cos(position * omega) for omega in omegas]
    return torch.tensor(sines + cosines, dtype=torch.float64)
