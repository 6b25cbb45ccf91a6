"""Neural Power Units (Heim, Pevný & Šmídl 2020): products and powers of inputs, negative ones included."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .base import ArithmeticUnit, broadcast_per_member, ensemble_linear, flatten_per_member
from .init import glorot_uniform_
from .numerics import DEFAULT_EPS, capped_exp, clamp_with_gradient_at_bounds


class _PowerUnit(ArithmeticUnit):
    """Shared part of NPU and RealNPU: the relevance gate ``g [(S,) in]`` (clamped to [0, 1], initialised
    to ½), the real weight ``W_re [(S,) out, in]`` (Glorot uniform), with ``complex_weights`` the imaginary weight
    ``W_im [(S,) out, in]`` (initialised to 0), and the L1 regulariser."""

    complex_weights: bool

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        eps: float = DEFAULT_EPS,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__(in_features, out_features, ensemble=ensemble, eps=eps, device=device, dtype=dtype)
        self.eps = eps
        self.real_weight = self.make_parameter(out_features, in_features)
        self.relevance = self.make_parameter(in_features)
        if self.complex_weights:
            self.imag_weight = self.make_parameter(out_features, in_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        glorot_uniform_(self.real_weight, self.in_features, self.out_features)
        with torch.no_grad():
            self.relevance.fill_(0.5)
            if self.complex_weights:
                self.imag_weight.zero_()

    def polar_input(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``(log r, k)``, both ``[(S,) ..., in]``: ``r = ĝ (|x| + ε) + 1 − ĝ`` and ``k = π ĝ [x < 0]``
        with ``ĝ = clamp(g, 0, 1)`` (its gradient passing at the bounds); an irrelevant input (``ĝ = 0``) becomes
        ``r = 1, k = 0``, i.e. the neutral factor 1."""
        relevance = broadcast_per_member(clamp_with_gradient_at_bounds(self.relevance, 0.0, 1.0), self.ensemble, x.dim())
        log_radius = torch.log(torch.lerp(torch.ones_like(x), x.abs() + self.eps, relevance))
        angle = math.pi * relevance * (x < 0).to(x.dtype)
        return log_radius, angle

    def regularization(self) -> Tensor:
        """L1 sparsity regulariser: mean absolute value of all parameters, ``[S]`` or 0-d."""
        return flatten_per_member(list(self.parameters()), self.ensemble).abs().mean(-1)


class NPU(_PowerUnit):
    """Neural Power Unit (Heim et al. 2020):
    ``y = exp(log r W_reᵀ − k W_imᵀ) ⊙ cos(log r W_imᵀ + k W_reᵀ)`` with ``r, k`` from :meth:`polar_input`,
    i.e. the real part of ``Π_i x_i^{W_i}`` evaluated with complex logarithms, so negative inputs and
    fractional powers are handled.

    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``.
    Initialisation: ``W_re`` Glorot uniform, ``W_im = 0``, ``g = ½``. Regulariser: L1 (mean ``|θ|``).
    The exponent is capped at ``MAX_LOG_MAGNITUDE``.
    """

    complex_weights = True

    def compute(self, x: Tensor) -> Tensor:
        log_radius, angle = self.polar_input(x)
        magnitude = ensemble_linear(log_radius, self.real_weight) - ensemble_linear(angle, self.imag_weight)
        phase = ensemble_linear(log_radius, self.imag_weight) + ensemble_linear(angle, self.real_weight)
        return capped_exp(magnitude) * torch.cos(phase)

    def sparsity_weights(self) -> list[Tensor]:
        return [self.real_weight, self.imag_weight]


class RealNPU(_PowerUnit):
    """Real Neural Power Unit (Heim et al. 2020): the NPU with ``W_im = 0``,
    ``y = exp(log r Wᵀ) ⊙ cos(k Wᵀ)``.

    Shapes, initialisation (``W`` Glorot uniform, ``g = ½``), regulariser and exponent cap as :class:`NPU`.
    """

    complex_weights = False

    def compute(self, x: Tensor) -> Tensor:
        log_radius, angle = self.polar_input(x)
        return capped_exp(ensemble_linear(log_radius, self.real_weight)) * torch.cos(ensemble_linear(angle, self.real_weight))

    def sparsity_weights(self) -> list[Tensor]:
        return [self.real_weight]
