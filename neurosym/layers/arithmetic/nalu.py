"""Gated combinations of an additive and a multiplicative path: NALU (Trask et al. 2018) and
iNALU (Schlör, Ring & Hotho 2020)."""

from __future__ import annotations

import torch
from torch import Tensor

from .base import ArithmeticUnit, broadcast_per_member, ensemble_linear, flatten_per_member
from .init import glorot_uniform_
from .nac import NAC, NACMul, nac_add, nac_mul
from .numerics import DEFAULT_EPS, bounded_input
from .product import multiplicative_product


def input_gate(x: Tensor, gate_weight: Tensor, in_features: int) -> Tensor:
    """NALU gate ``g = σ(x Gᵀ)``: ``x [(S,) ..., in]``, ``G [(S,) out, in]`` → ``[(S,) ..., out]``
    (the logits are an overflow-guarded sum, as in :func:`nac_add`, guarded for ``G`` beyond ``[−1, 1]`` too)."""
    return torch.sigmoid(ensemble_linear(bounded_input(x, in_features, gate_weight), gate_weight))


class NALU(ArithmeticUnit):
    """Neural Arithmetic Logic Unit (Trask et al. 2018): ``g = σ(x Gᵀ)``,
    ``y = g ⊙ NAC+(x) + (1 − g) ⊙ NAC•(x)``.

    ``shared_weights=True`` (the original NALU) uses one ``W = tanh(Ŵ) ⊙ σ(M̂)`` in both paths;
    ``False`` gives the multiplicative path its own ``Ŵ, M̂``. Shapes: ``x [..., in]`` → ``[..., out]``;
    with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``. Initialisation: NAC weights as
    :class:`NAC` (Glorot-matched variance), ``G`` Glorot uniform. No regulariser; the sparsity error
    covers the NAC weight(s), not the gate.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        shared_weights: bool = True,
        eps: float = DEFAULT_EPS,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__(
            in_features, out_features, ensemble=ensemble, shared_weights=shared_weights, eps=eps, device=device, dtype=dtype
        )
        factory = self._factory_kwargs
        self.add = NAC(in_features, out_features, ensemble=ensemble, **factory)
        self.mul = None if shared_weights else NACMul(in_features, out_features, eps=eps, ensemble=ensemble, **factory)
        self.eps = eps
        self.gate = self.make_parameter(out_features, in_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The gate ``G`` Glorot uniform (the NACs reset their own weights)."""
        glorot_uniform_(self.gate, self.in_features, self.out_features)

    def gate_value(self, x: Tensor) -> Tensor:
        """``g = σ(x Gᵀ)``: ``[(S,) ..., out]``, the weight of the additive path."""
        return input_gate(x, self.gate, self.in_features)

    def compute(self, x: Tensor) -> Tensor:
        add_weight = self.add.weight()
        mul_weight = add_weight if self.mul is None else self.mul.weight()
        guarded = bounded_input(x, self.in_features, self.gate)  # one clamp guards both sums (additive path, gate)
        added = ensemble_linear(guarded, add_weight)
        multiplied = nac_mul(x, mul_weight, self.eps)
        return torch.lerp(multiplied, added, torch.sigmoid(ensemble_linear(guarded, self.gate)))

    def sparsity_weights(self) -> list[Tensor]:
        return self.add.sparsity_weights() + ([] if self.mul is None else self.mul.sparsity_weights())


INALU_EPS = 1e-7
INALU_MAX_LOG = 20.0
INALU_REGULARIZER_THRESHOLD = 20.0


class iNALU(ArithmeticUnit):  # lower-case i: the published name
    """Improved NALU (Schlör, Ring & Hotho 2020).

    Separate weights ``W_a = tanh(Ŵ_a) ⊙ σ(M̂_a)`` and ``W_m = tanh(Ŵ_m) ⊙ σ(M̂_m)``;
    ``a = x W_aᵀ``; magnitude ``m = exp(min(log(max(|x|, ε)) W_mᵀ, ω))`` with ε = 1e-7, ω = 20;
    sign retrieval ``s_j = Π_i (sign(x_i) |W_m,ji| + 1 − |W_m,ji|)``; input-independent gate
    ``g = σ(G)``, ``G [(S,) out]``; ``y = g ⊙ a + (1 − g) ⊙ m ⊙ s``.

    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``.
    Initialisation: NAC weights as :class:`NAC`; ``G = 0`` (both paths weighted ½). Regulariser
    (pushes the raw parameters away from 0 so tanh and σ saturate): ``mean max(t − |θ|, 0) / t`` over
    all raw parameters ``θ ∈ {Ŵ_a, M̂_a, Ŵ_m, M̂_m, G}``, ``t = 20`` (the paper sums; we average so its
    scale does not depend on the layer size). The paper's re-initialisation of stalled runs is a
    training-loop policy and is not part of this layer.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__(in_features, out_features, ensemble=ensemble, device=device, dtype=dtype)
        self.add = NAC(in_features, out_features, ensemble=ensemble, **self._factory_kwargs)
        self.mul = NACMul(
            in_features, out_features, ensemble=ensemble, **self._factory_kwargs
        )  # holds W_m; its own forward is unused
        self.gate = self.make_parameter(out_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The gate ``G = 0`` (the NACs reset their own weights)."""
        torch.nn.init.zeros_(self.gate)

    def compute(self, x: Tensor) -> Tensor:
        mul_weight = self.mul.weight()
        added = nac_add(x, self.add.weight(), self.in_features)
        log_magnitude = ensemble_linear(torch.log(x.abs().clamp(min=INALU_EPS)), mul_weight)
        magnitude = torch.exp(log_magnitude.clamp(max=INALU_MAX_LOG))
        sign = multiplicative_product(torch.sign(x), mul_weight.abs())
        gate = broadcast_per_member(torch.sigmoid(self.gate), self.ensemble, x.dim())
        return torch.lerp(magnitude * sign, added, gate)

    def regularization(self) -> Tensor:
        raw = [self.add.weight_hat, self.add.gate_hat, self.mul.weight_hat, self.mul.gate_hat, self.gate]
        flat = flatten_per_member(raw, self.ensemble)
        threshold = INALU_REGULARIZER_THRESHOLD
        return ((threshold - flat.abs()).clamp(min=0) / threshold).mean(-1)

    def sparsity_weights(self) -> list[Tensor]:
        return self.add.sparsity_weights() + self.mul.sparsity_weights()
