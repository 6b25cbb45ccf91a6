"""Published initialisations of the arithmetic units (each works on plain and ensemble tensors,
so the fans are passed explicitly rather than read from the tensor shape)."""

from __future__ import annotations

import math
from functools import lru_cache

import torch
from torch import Tensor


def glorot_range(fan_in: int, fan_out: int) -> float:
    """Half-width ``√(6 / (fan_in + fan_out))`` of the Glorot & Bengio (2010) uniform distribution."""
    return math.sqrt(6.0 / (fan_in + fan_out))


def glorot_uniform_(weight: Tensor, fan_in: int, fan_out: int) -> Tensor:
    """Fill ``weight`` in place from ``U[−a, a]``, ``a = √(6 / (fan_in + fan_out))``."""
    bound = glorot_range(fan_in, fan_out)
    with torch.no_grad():
        return weight.uniform_(-bound, bound)


def nau_init_(weight: Tensor, fan_in: int, fan_out: int) -> Tensor:
    """NAU initialisation (Madsen & Johansen 2020): ``U[−r, r]``, ``r = min(0.5, √3 · √(2 / (fan_in + fan_out)))``,
    i.e. Glorot variance, but never wider than ``[−0.5, 0.5]`` so that E[|W|] stays between 0 and 1."""
    bound = min(0.5, math.sqrt(3.0) * math.sqrt(2.0 / (fan_in + fan_out)))
    with torch.no_grad():
        return weight.uniform_(-bound, bound)


def nmu_init_(weight: Tensor) -> Tensor:
    """NMU initialisation (Madsen & Johansen 2020): ``U[1/2 − 1/4, 1/2 + 1/4]``, so E[W] = 1/2 and every
    input starts half-way between "ignored" (W = 0) and "multiplied in" (W = 1). The paper proposes Var[W] = 1/4,
    which no distribution on [0, 1] with mean 1/2 but a fair draw of 0 or 1 has; its reference code caps the half-width
    at 1/4 (Var[W] = 1/48), as here."""
    with torch.no_grad():
        return weight.uniform_(0.25, 0.75)


_QUADRATURE_POINTS = 4001
_MAX_NAC_RANGE = 8.0


def _tanh_sigmoid_variance(bound: float) -> float:
    """``Var[tanh(U) σ(V)] = E[tanh²(U)] · E[σ²(V)]`` for independent ``U, V ~ U[−bound, bound]`` (midpoint rule), on
    the CPU whatever the default device (under ``with torch.device("meta")`` the quadrature had no values to read)."""
    steps = torch.arange(_QUADRATURE_POINTS, dtype=torch.float64, device="cpu")
    points = (steps + 0.5) / _QUADRATURE_POINTS * 2 * bound - bound
    return float(torch.tanh(points).square().mean() * torch.sigmoid(points).square().mean())


@lru_cache(maxsize=256)
def nac_glorot_matched_range(fan_in: int, fan_out: int) -> float:
    """Half-width ``r`` of ``Ŵ, M̂ ~ U[−r, r]`` such that ``W = tanh(Ŵ) σ(M̂)`` has the Glorot variance
    ``2 / (fan_in + fan_out)`` (the NAC initialisation analysed by Madsen & Johansen 2020). The variance
    of ``tanh·σ`` stays below 1/2 (0.383 at ``r = 8``), so for ``fan_in + fan_out <= 5`` ``r`` saturates at 8; the
    reference code floors the fan sum at 5 instead (``r = 9.47``, variance 0.4)."""
    target = 2.0 / (fan_in + fan_out)
    if _tanh_sigmoid_variance(_MAX_NAC_RANGE) <= target:
        return _MAX_NAC_RANGE
    low, high = 0.0, _MAX_NAC_RANGE
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if _tanh_sigmoid_variance(middle) < target else (low, middle)
    return (low + high) / 2


def nac_init_(weight_hat: Tensor, gate_hat: Tensor, fan_in: int, fan_out: int) -> None:
    """Fill the NAC parameters ``Ŵ`` and ``M̂`` in place from ``U[−r, r]`` with ``r`` from
    :func:`nac_glorot_matched_range`, so that ``W = tanh(Ŵ) σ(M̂)`` has mean 0 and Glorot variance."""
    bound = nac_glorot_matched_range(fan_in, fan_out)
    with torch.no_grad():
        weight_hat.uniform_(-bound, bound)
        gate_hat.uniform_(-bound, bound)
