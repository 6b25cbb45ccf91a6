"""The factory keyword arguments ``device=`` and ``dtype=`` that the layers take, as ``torch.nn``'s own layers do
(``nn.Linear(3, 4, device="meta", dtype=torch.float64)``): parameters, buffers and sub-layers are created there
directly, with no CPU allocation and move, and on the ``meta`` device nothing is allocated."""

from __future__ import annotations

from typing import TypedDict

import torch


class FactoryKwargs(TypedDict):
    """PyTorch's ``factory_kwargs``: the ``device`` and ``dtype`` of every tensor and sub-layer a layer creates
    (``None``: torch's defaults, ``torch.get_default_device()`` and ``torch.get_default_dtype()``)."""

    device: torch.device | str | None
    dtype: torch.dtype | None


def factory_kwargs(device: torch.device | str | None, dtype: torch.dtype | None, owner: str) -> FactoryKwargs:
    """``{"device": device, "dtype": dtype}`` to pass to the tensors and sub-layers of the layer named ``owner``.

    ``ValueError`` naming ``owner`` unless ``dtype`` is ``None`` or a floating-point ``torch.dtype``: the layers
    compute in floating point, and an integer, bool or complex dtype failed inside torch's initialisers (``uniform_``
    is not implemented for ``'Long'``), or built parameters no layer can train."""
    if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        raise ValueError(
            f"{owner}: dtype must be a floating-point torch.dtype (such as torch.float32 or torch.float64), got {dtype!r}"
        )
    return {"device": device, "dtype": dtype}
