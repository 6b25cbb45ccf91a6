"""A NALU-style gate over the Neural Addition and Multiplication Units."""

from __future__ import annotations

import torch
from torch import Tensor

from .base import ArithmeticUnit
from .init import glorot_uniform_
from .nalu import input_gate
from .nau_nmu import NAU, NMU


class GatedNAUNMU(ArithmeticUnit):
    """NALU with its sub-units replaced by the NAU and the NMU (the gated variant Madsen & Johansen 2020
    compare against): ``g = σ(x Gᵀ)``, ``y = g ⊙ NAU(x) + (1 − g) ⊙ NMU(x)``.

    One unit rather than separate "gated NAU" and "gated NMU" classes: the gate chooses, per output and
    per example, between the additive and the multiplicative unit, each with its own weight.
    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``.
    Initialisation: NAU and NMU as published, ``G`` Glorot uniform. Regulariser: mean of the NAU and NMU
    regularisers (they have equally many weights); :meth:`clamp_weights_` projects both weights.
    ``compiled`` is passed to the :class:`NMU`.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        ensemble: int | None = None,
        compiled: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__(in_features, out_features, ensemble=ensemble, compiled=compiled, device=device, dtype=dtype)
        self.add = NAU(in_features, out_features, ensemble=ensemble, **self._factory_kwargs)
        self.mul = NMU(in_features, out_features, ensemble=ensemble, compiled=compiled, **self._factory_kwargs)
        self.gate = self.make_parameter(out_features, in_features)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The gate ``G`` Glorot uniform (the NAU and the NMU reset their own weights)."""
        glorot_uniform_(self.gate, self.in_features, self.out_features)

    def compute(self, x: Tensor) -> Tensor:
        return torch.lerp(self.mul(x), self.add(x), input_gate(x, self.gate, self.in_features))

    @torch.no_grad()
    def clamp_weights_(self) -> None:
        """Project the NAU weight onto [−1, 1] and the NMU weight onto [0, 1] (after each optimiser step)."""
        self.add.clamp_weights_()
        self.mul.clamp_weights_()

    def regularization(self) -> Tensor:
        return (self.add.regularization() + self.mul.regularization()) / 2

    def sparsity_weights(self) -> list[Tensor]:
        return self.add.sparsity_weights() + self.mul.sparsity_weights()
