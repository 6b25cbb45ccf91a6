"""``nn.Linear`` with an optional ensemble dimension: the "Linear" baseline of the arithmetic benchmark."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from .base import ArithmeticUnit, ensemble_linear


class EnsembleLinear(ArithmeticUnit):
    """``y = x Wᵀ + b``, exactly ``nn.Linear`` (same initialisation: ``W, b ~ U[−1/√in, 1/√in]``).

    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``x [S, ..., in]`` → ``[S, ..., out]``,
    ``weight [S, out, in]``, ``bias [S, out]``. There is no regulariser (:meth:`regularization` is 0);
    the sparsity error is measured on ``weight``. Like ``nn.Linear`` it applies no input guard, so inputs
    near the float limit can overflow; unlike it, it computes in float32 under autocast, as all units do.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__(in_features, out_features, ensemble=ensemble, bias=bias, device=device, dtype=dtype)
        self.weight = self.make_parameter(out_features, in_features)
        self.bias = self.make_parameter(out_features) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw ``weight`` and ``bias`` from ``U[−1/√in, 1/√in]``, as ``nn.Linear`` does."""
        bound = 1.0 / math.sqrt(self.in_features)
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def compute(self, x: Tensor) -> Tensor:
        return ensemble_linear(x, self.weight, self.bias)

    def sparsity_weights(self) -> list[Tensor]:
        return [self.weight]
