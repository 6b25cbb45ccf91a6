"""The linear warm-up of the sparsity-regulariser weight (Madsen & Johansen 2020)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from neurosym.training.checks import is_real, positive_number


@dataclass(frozen=True)
class RegularizerWarmup:
    """``λ(step) = weight · clamp((step − start) / (end − start), 0, 1)``: zero until ``start``, rising
    linearly to ``weight`` at ``end``, constant after. ``start == end`` gives a step from 0 to ``weight``.

    Madsen & Johansen's simple function task uses ``weight=10, start=1e6, end=2e6`` for the NMU model and
    ``weight=0.01, start=5e3, end=5e4`` for the NAU model, each on the sum of the model's layers' regularisers.
    Pure arithmetic: call it with the current training step.
    """

    weight: float
    start: float
    end: float

    def __post_init__(self) -> None:
        """Raise ``ValueError`` unless ``weight`` is a finite number of at least 0 and ``start <= end`` are finite
        numbers: a NaN weight or start made every value NaN or 0, an infinite weight NaN before ``start``
        (``inf · 0``), and an infinite ``end`` would only make the weight 0 forever."""
        positive_number(self.weight, "RegularizerWarmup: weight", zero=True)
        for name, value in (("start", self.start), ("end", self.end)):
            if not (is_real(value) and math.isfinite(value)):
                raise ValueError(f"RegularizerWarmup: {name} must be a finite number, got {value!r}")
        if self.end < self.start:
            raise ValueError(f"RegularizerWarmup: end ({self.end}) must not be before start ({self.start})")

    def __call__(self, step: float) -> float:
        if not (is_real(step) and not math.isnan(step)):  # NaN fell through both comparisons to 0.0
            raise ValueError(f"RegularizerWarmup: the step must be a number, got {step!r}")
        if self.end == self.start:
            return self.weight if step >= self.start else 0.0
        return self.weight * min(1.0, max(0.0, (step - self.start) / (self.end - self.start)))

    def at(self, step: Tensor) -> Tensor:
        """``λ(step)`` of a step held in a 0-d tensor (e.g. a step counter inside a CUDA graph): a 0-d float64
        tensor on ``step``'s device, equal to ``self(step.item())`` without reading the step back (so a NaN step, which
        ``self`` refuses, is not checked here: it gives NaN). ``ValueError`` unless ``step`` is a 0-d tensor of a real
        number: a bool was read as step 0 or 1, and ``[n]`` steps gave ``[n]`` weights where one is meant."""
        if not isinstance(step, Tensor) or step.dim() != 0 or step.dtype == torch.bool or step.is_complex():
            described = f"{step.dtype} of shape {list(step.shape)}" if isinstance(step, Tensor) else type(step).__name__
            raise ValueError(f"RegularizerWarmup.at: the step must be a 0-d tensor of a real number, got {described}")
        step = step.double()
        if self.end == self.start:
            return (step >= self.start).double() * self.weight
        return self.weight * ((step - self.start) / (self.end - self.start)).clamp(0.0, 1.0)
