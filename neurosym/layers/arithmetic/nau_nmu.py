"""The Neural Addition Unit and Neural Multiplication Unit of Madsen & Johansen (2020)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

import torch
from torch import Tensor

from .base import ArithmeticUnit, per_member_mean
from .init import nau_init_, nmu_init_
from .nac import nac_add
from .numerics import clamp_with_gradient_at_bounds
from .product import multiplicative_product


class _ClampedWeight(ArithmeticUnit):
    """One weight ``[(S,) out, in]`` constrained to ``[LOWER, 1]``: the forward pass uses the clamped
    weight, and :meth:`clamp_weights_` projects the parameter itself (call it after each optimiser step,
    as Madsen & Johansen do, so the parameter never drifts outside where the clamp has zero gradient)."""

    LOWER: float

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        **options: Any,
    ):
        super().__init__(in_features, out_features, ensemble=ensemble, device=device, dtype=dtype, **options)
        self.weight = self.make_parameter(out_features, in_features)
        self.reset_parameters()

    @abstractmethod
    def reset_parameters(self) -> None:
        """Initialise ``weight`` as the concrete unit's paper prescribes."""

    def clamped_weight(self) -> Tensor:
        """The weight clamped to ``[LOWER, 1]``, shape ``[(S,) out, in]``; its gradient passes at the bounds, where
        :meth:`clamp_weights_` leaves a weight (:func:`~.numerics.clamp_with_gradient_at_bounds`)."""
        return clamp_with_gradient_at_bounds(self.weight, self.LOWER, 1.0)

    @torch.no_grad()
    def clamp_weights_(self) -> None:
        """Project the weight parameter in place onto ``[LOWER, 1]``."""
        self.weight.clamp_(self.LOWER, 1.0)

    def regularization(self) -> Tensor:
        """Sparsity regulariser ``mean_i min(|W_i|, 1 − |W_i|)`` of the clamped weight: ``[S]`` or 0-d.
        Scale it with :class:`RegularizerWarmup` (Madsen & Johansen 2020)."""
        magnitude = self.clamped_weight().abs()
        return per_member_mean(torch.minimum(magnitude, 1 - magnitude), self.ensemble)

    def sparsity_weights(self) -> list[Tensor]:
        return [self.clamped_weight()]


class NAU(_ClampedWeight):
    """Neural Addition Unit (Madsen & Johansen 2020): ``y = x Wᵀ`` with ``W`` clamped to ``[−1, 1]``.

    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``.
    Initialisation: ``W ~ U[−r, r]``, ``r = min(0.5, √3 · √(2 / (in + out)))``. Regulariser:
    ``mean min(|W|, 1 − |W|)``.
    """

    LOWER = -1.0

    def reset_parameters(self) -> None:
        nau_init_(self.weight, self.in_features, self.out_features)

    def compute(self, x: Tensor) -> Tensor:
        return nac_add(x, self.clamped_weight(), self.in_features)


class NMU(_ClampedWeight):
    """Neural Multiplication Unit (Madsen & Johansen 2020): ``y_j = Π_i (W_ji x_i + 1 − W_ji)`` with ``W``
    clamped to ``[0, 1]`` (``W_ji = 1`` multiplies ``x_i`` in, ``W_ji = 0`` ignores it; signs are kept).

    Shapes: ``x [..., in]`` → ``[..., out]``; with ``ensemble=S``: ``[S, ..., in]`` → ``[S, ..., out]``.
    Initialisation: ``W ~ U[1/4, 3/4]`` (E[W] = 1/2). Regulariser: ``mean min(W, 1 − W)``.
    Computed by :func:`multiplicative_product` (chunked, NaN-free, magnitudes saturate at e^50);
    ``compiled=True`` runs its fast route through ``torch.compile`` kernels (large layers: several
    times faster; each new input shape compiles first).
    """

    LOWER = 0.0

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
        self.compiled = compiled

    def reset_parameters(self) -> None:
        nmu_init_(self.weight)

    def compute(self, x: Tensor) -> Tensor:
        return multiplicative_product(x, self.clamped_weight(), compiled=self.compiled)
