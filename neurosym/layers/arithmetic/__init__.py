"""Neural arithmetic units: ``nn.Linear``-shaped layers that learn exact arithmetic.

Every unit maps ``[..., in]`` → ``[..., out]``, accepts ``ensemble=S`` to train ``S`` independent copies
as one batched module (``[S, ..., in]`` → ``[S, ..., out]``), and exposes ``regularization()`` and
``sparsity_error()``. See ``docs/layers_arithmetic.md``.
"""

from .base import ArithmeticUnit, ensemble_linear
from .gated import GatedNAUNMU
from .linear import EnsembleLinear
from .nac import NAC, NACMul
from .nalu import NALU, iNALU
from .nau_nmu import NAU, NMU
from .npu import NPU, RealNPU
from .numerics import MAX_LOG_MAGNITUDE
from .product import multiplicative_product
from .schedule import RegularizerWarmup

__all__ = [
    "MAX_LOG_MAGNITUDE",
    "NAC",
    "NALU",
    "NAU",
    "NMU",
    "NPU",
    "ArithmeticUnit",
    "EnsembleLinear",
    "GatedNAUNMU",
    "NACMul",
    "RealNPU",
    "RegularizerWarmup",
    "ensemble_linear",
    "iNALU",
    "multiplicative_product",
]
