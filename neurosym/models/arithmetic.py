"""The two-layer models of the arithmetic extrapolation benchmark (Madsen & Johansen 2019, Table 2;
NAU and NMU from Madsen & Johansen 2020), batched over an ensemble of independent runs."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import torch
from torch import Tensor, nn

from neurosym.layers import (
    NAC,
    NALU,
    NAU,
    NMU,
    ArithmeticUnit,
    EnsembleLinear,
    NACMul,
    RegularizerWarmup,
)
from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.training.checks import int_at_least, is_int_tensor

UnitFactory = Callable[[int, int, int | None, FactoryKwargs], ArithmeticUnit]
"""``(in_features, out_features, ensemble, factory) -> unit``: ``factory``, torch's factory keyword arguments."""


class ReferenceLinear(EnsembleLinear):
    """The paper's Linear layer as its reference code builds it: :class:`EnsembleLinear` with a bias, Xavier-uniform
    weights and a zero bias, drawn by :meth:`reset_parameters` (so a model built on the ``meta`` device and reset
    gets them too). Shapes as :class:`EnsembleLinear`."""

    def reset_parameters(self) -> None:
        """``weight ~ U[−√(6/(in+out)), √(6/(in+out))]``, ``bias = 0``."""
        super().reset_parameters()  # (drawn and overwritten: the random stream the recorded results were run with)
        bound = math.sqrt(6.0 / (self.in_features + self.out_features))
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.zero_()


def _linear(in_features: int, out_features: int, ensemble: int | None, factory: FactoryKwargs) -> ArithmeticUnit:
    return ReferenceLinear(in_features, out_features, bias=True, ensemble=ensemble, **factory)


def _unit(cls: type[ArithmeticUnit]) -> UnitFactory:
    return lambda in_features, out_features, ensemble, factory: cls(in_features, out_features, ensemble=ensemble, **factory)


MODEL_LAYERS: dict[str, tuple[UnitFactory, UnitFactory]] = {
    "NAC•": (_unit(NAC), _unit(NACMul)),
    "NALU": (_unit(NALU), _unit(NALU)),
    "NAC+": (_unit(NAC), _unit(NAC)),
    "Linear": (_linear, _linear),
    "NAU": (_unit(NAU), _unit(NAU)),
    "NMU": (_unit(NAU), _unit(NMU)),
}
"""Model name → (first, second) layer.

``Linear`` follows the reference implementation the published numbers come from (stable-nalu's
``BasicLayer``): each layer has a bias, initialised to zero, and Xavier-uniform weights
(``U[−√(6/(in+out)), √(6/(in+out))]``). The arithmetic units have no bias."""

PAPER_ITERATIONS = 5_000_000
"""The iteration budget the published regulariser schedules are defined for."""

PAPER_SCHEDULES: dict[str, RegularizerWarmup] = {
    "NAU": RegularizerWarmup(weight=0.01, start=5_000, end=50_000),
    "NMU": RegularizerWarmup(weight=10.0, start=1_000_000, end=2_000_000),
}
"""Published sparsity-regulariser warm-up per model, for a budget of :data:`PAPER_ITERATIONS`.

One ``λ(step)`` scales the sum of both layers' regularisers, as in the reference code (stable-nalu's simple
function task adds ``λ · warm-up(step) · Σ_layers R_layer`` to the loss), so the NMU model's first layer (a NAU)
follows the NMU's warm-up: the NAU paper's ``λ̂ = 10`` from 10⁶ to 2·10⁶. The NAU model's values are those the
authors' batch job for the function task passes for it (``--regualizer 0.01``, scaling from 5·10³ to 5·10⁴)."""


def scaled_schedule(model: str, steps: int) -> RegularizerWarmup | None:
    """The model's published warm-up with start and end scaled by ``steps / PAPER_ITERATIONS`` (None: no regulariser)."""
    schedule = PAPER_SCHEDULES.get(model)
    if schedule is None:
        return None
    scale = steps / PAPER_ITERATIONS
    return RegularizerWarmup(schedule.weight, schedule.start * scale, schedule.end * scale)


class TwoLayerArithmetic(nn.Module):
    """``x [(S,) B, in]`` → hidden ``[(S,) B, hidden]`` → ``[(S,) B, 1]`` through the two units of ``name``.

    With ``ensemble=S`` every member is an independent model (its own parameters, regulariser and
    sparsity error). ``steps`` is the budget the model's regulariser warm-up is scaled to:
    :data:`PAPER_ITERATIONS` keeps it at its published iterations, a shorter budget compresses it.
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of both units.
    """

    def __init__(
        self,
        name: str,
        steps: int,
        in_features: int = 100,
        hidden: int = 2,
        ensemble: int | None = None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        if name not in MODEL_LAYERS:
            raise ValueError(f"unknown model {name!r}: choose from {', '.join(MODEL_LAYERS)}")
        steps = int_at_least(steps, "steps", 1)  # (a float budget scaled the warm-up to a fraction of a step)
        hidden = int_at_least(hidden, "hidden", 1)  # (0 was named as the first unit's out_features)
        first, second = MODEL_LAYERS[name]
        self.name = name
        self.layers = nn.ModuleList([first(in_features, hidden, ensemble, factory), second(hidden, 1, ensemble, factory)])
        self.schedule = scaled_schedule(name, steps)

    @property
    def units(self) -> list[ArithmeticUnit]:
        """The first and the second unit: the modules of ``layers``, as the arithmetic units they are."""
        return cast(list[ArithmeticUnit], list(self.layers))  # an nn.ModuleList's items are typed as plain modules

    def forward(self, x: Tensor) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        return x

    def regularization(self, step: int | Tensor) -> Tensor:
        """``λ(step) · Σ_layers R_layer`` (see :data:`PAPER_SCHEDULES`): ``[S]`` per member (0-d without an ensemble).

        ``step`` may be a 0-d tensor on the model's device (a CUDA graph's step counter): the weight is then
        computed there, and a weight of 0 gives ``0 · R`` (the same value; nothing read back). ``ValueError`` for a
        tensor of another shape or of no integer dtype, and for a step that is no int of at least 0 (``-1``, a NaN and ``1.5`` were taken:
        before any warm-up, or without one, they gave zeros)."""
        if isinstance(step, Tensor):
            if step.dim() != 0 or not is_int_tensor(step):  # (a float tensor's NaN gave a NaN regulariser; its 5.5 was taken)
                raise ValueError(f"step must be an int or a 0-d integer tensor, got {step.dtype} of shape {tuple(step.shape)}")
        else:
            step = int_at_least(step, "step", 0)
        zeros = next(self.parameters()).new_zeros(self.units[0].ensemble_shape)
        if self.schedule is None or (not isinstance(step, Tensor) and self.schedule(step) == 0):
            return zeros
        total = sum((layer.regularization() for layer in self.units), zeros)
        weight = self.schedule.at(step).to(zeros.dtype) if isinstance(step, Tensor) else self.schedule(step)
        return weight * total

    def sparsity_error(self) -> Tensor:
        """Largest sparsity error over both layers: ``[S]`` (0-d without an ensemble)."""
        return torch.stack([layer.sparsity_error() for layer in self.units]).amax(0)

    @torch.no_grad()
    def clamp_weights_(self) -> None:
        """Project clamped-weight units (NAU, NMU) back onto their ranges; call after each optimiser step."""
        for layer in self.layers:
            clamp = getattr(layer, "clamp_weights_", None)
            if clamp is not None:
                clamp()
