"""Structural input checks shared by the layers: shapes and dtypes, named before torch meets them, and whether
autocast is on for an input."""

from __future__ import annotations

import torch
from torch import nn

from neurosym.training.checks import int_at_least


def autocast_enabled(x: torch.Tensor) -> bool:
    """Whether autocast (AMP) is on for ``x``'s device type (never for a type without autocast, such as
    the ``meta`` device of shape-only tensors)."""
    device = x.device.type
    # Under torch.compile the tensors are on real devices; older Dynamo (torch < 2.13) cannot trace the
    # availability check and would break the graph there.
    available = torch.compiler.is_compiling() or torch.amp.is_autocast_available(device)
    return available and torch.is_autocast_enabled(device)


def check_sizes(**sizes: object) -> tuple[int, ...]:
    """The ``sizes`` as Python ints, in the order given (numpy's too: a layer keeps no ``np.int64`` width); raise
    ``ValueError`` naming the first that is not an int of at least 1 (a bool is not a size; 2.5 units failed only in
    torch, or were truncated)."""
    return tuple(int_at_least(size, name, 1) for name, size in sizes.items())


def check_tensor(x: object, what: str) -> None:
    """Raise ``TypeError`` naming ``what`` unless ``x`` is a ``torch.Tensor`` (a list or ``None`` failed deep inside, on
    ``x.dim()`` or ``x.dtype``)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")


def check_sequence(x: torch.Tensor, dim: int, what: str, batch: int | None = None) -> None:
    """Raise ``ValueError`` unless ``x`` is ``[batch, length, dim]`` (any batch when ``batch`` is None; ``TypeError``
    unless it is a tensor)."""
    check_tensor(x, what)
    if x.dim() != 3 or x.shape[-1] != dim or (batch is not None and x.shape[0] != batch):
        raise ValueError(f"{what} must have shape [{'batch' if batch is None else batch}, length, {dim}], got {tuple(x.shape)}")


def check_dtype_of(x: torch.Tensor, module: nn.Module, what: str) -> None:
    """Raise ``ValueError`` unless ``x`` is floating point (under autocast too: token ids are embedded first, not
    converted) with the dtype of ``module``'s parameters, outside autocast (where torch's own message would only say,
    from deep in a matmul, that two dtypes differ)."""
    dtype = next(module.parameters()).dtype
    if not x.is_floating_point():  # module.to(torch.int64) would be no fix: a layer computes in floating point
        raise ValueError(
            f"{what} must be floating point (the {type(module).__name__}'s parameters are {dtype}), got {x.dtype}; "
            "embed token ids first (e.g. with nn.Embedding)"
        )
    if x.dtype != dtype and not autocast_enabled(x):
        raise ValueError(
            f"{what} has dtype {x.dtype} but the {type(module).__name__}'s parameters are {dtype}; "
            f"convert the input (x.to({dtype})) or the module (module.to({x.dtype}))"
        )
