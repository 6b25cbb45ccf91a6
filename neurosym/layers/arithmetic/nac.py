"""The neural accumulators of Trask et al. (2018): NAC+ (``NAC``) and NAC• (``NACMul``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from .base import ArithmeticUnit, ensemble_linear
from .init import nac_init_
from .numerics import DEFAULT_EPS, bounded_input, capped_exp


def nac_add(x: Tensor, weight: Tensor, in_features: int) -> Tensor:
    """Additive path ``x Wᵀ`` (``|W| ≤ 1``) that cannot overflow into ``inf − inf = NaN``: computed on the
    clamped input of :func:`bounded_input`."""
    return ensemble_linear(bounded_input(x, in_features), weight)


def nac_mul(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    """Multiplicative path ``exp(log(|x| + ε) Wᵀ)``, exponent capped at ``MAX_LOG_MAGNITUDE``."""
    return capped_exp(ensemble_linear(torch.log(x.abs() + eps), weight))


class _TanhSigmoidWeight(ArithmeticUnit):
    """Parameters ``Ŵ, M̂ [(S,) out, in]`` combined into ``W = tanh(Ŵ) ⊙ σ(M̂)``, which is biased towards
    {−1, 0, 1}; initialised so that ``W`` has Glorot variance (:func:`nac_init_`)."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        **options: Any,
    ) -> None:
        super().__init__(in_features, out_features, ensemble=ensemble, device=device, dtype=dtype, **options)
        self.weight_hat = self.make_parameter(out_features, in_features)
        self.gate_hat = self.make_parameter(out_features, in_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nac_init_(self.weight_hat, self.gate_hat, self.in_features, self.out_features)

    def weight(self) -> Tensor:
        """``W = tanh(Ŵ) ⊙ σ(M̂)``, shape ``[(S,) out, in]``."""
        return torch.tanh(self.weight_hat) * torch.sigmoid(self.gate_hat)

    def sparsity_weights(self) -> list[Tensor]:
        return [self.weight()]


class NAC(_TanhSigmoidWeight):
    """NAC+ (Trask et al. 2018): ``y = x Wᵀ`` with ``W = tanh(Ŵ) ⊙ σ(M̂)``.

    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``.
    Initialisation: ``Ŵ, M̂ ~ U[−r, r]`` with ``r`` chosen so that ``Var[W] = 2 / (in + out)`` (Glorot
    variance matched through tanh·σ, as analysed by Madsen & Johansen 2020). No regulariser.
    """

    def compute(self, x: Tensor) -> Tensor:
        return nac_add(x, self.weight(), self.in_features)


class NACMul(_TanhSigmoidWeight):
    """NAC• (Trask et al. 2018): ``y = exp(log(|x| + ε) Wᵀ)`` with ``W = tanh(Ŵ) ⊙ σ(M̂)``.

    Multiplies (``W = 1``) and divides (``W = −1``) input magnitudes; the sign of ``x`` is lost.
    Shapes as :class:`NAC`; initialisation as :class:`NAC`; ``eps`` defaults to 1e-7 and is at least
    ``MIN_EPS`` (1e-12), so that its input gradient (at most ``output · |W| / eps``) stays finite. The exponent is
    capped at ``MAX_LOG_MAGNITUDE`` (outputs ≤ e^50) so outputs and gradients stay finite. No regulariser.
    """

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

    def compute(self, x: Tensor) -> Tensor:
        return nac_mul(x, self.weight(), self.eps)
