"""Where input checks that read tensor values run."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import is_fake

TOKEN_ID_DTYPES = (torch.int64, torch.int32)
"""The dtypes token ids may have: those ``nn.Embedding`` takes (int16 or uint8 ids fail in it)."""


def values_are_readable(tensor: torch.Tensor) -> bool:
    """Whether an input check may read ``tensor``'s values on the host: in eager mode on every device (on an
    accelerator the read waits for the queued kernels, once per checked call), but not on the ``meta``
    device (shapes only, no values), not while a tracer sees it (:func:`is_traced`: ``torch.compile``,
    ``torch.export`` or a ``FakeTensorMode``) and not for a tensor that ``torch.func.vmap`` batches
    (:func:`is_vmapped`: a read fails there, so the checks made per-sample gradients of every masked or token-reading
    layer fail). Where it is False the value checks are skipped; the structural checks (shapes, dtypes) still run."""
    return tensor.device.type != "meta" and not is_traced(tensor) and not is_vmapped(tensor)


def is_traced(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` has no values to read because a tracer sees it: while ``torch.compile`` or ``torch.export``
    traces (a read would split the graph or fail), or a fake tensor (shapes only: ``FakeTensorMode``, which shape
    and memory estimates run in and which ``torch.export`` traces with, raises ``DataDependentOutputException`` on a
    read)."""
    return torch.compiler.is_compiling() or is_fake(tensor)


def is_vmapped(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is, or wraps (under ``torch.func.grad`` inside the ``vmap``), a tensor batched by
    ``torch.func.vmap``, whose values are those of every sample at once: ``.item()`` and ``bool()`` fail on it."""
    functorch = torch._C._functorch
    while not functorch.is_batchedtensor(tensor):
        if functorch.maybe_get_level(tensor) == -1:  # a plain tensor: no transform wraps it
            return False
        tensor = functorch.get_unwrapped(tensor)
    return True


def first_non_finite(tensor: torch.Tensor) -> tuple[complex | float, list[int]] | None:
    """The first non-finite value (NaN or ±inf) of a floating ``tensor`` of any shape and its index, ``None`` where it
    holds none or its values are not readable (:func:`values_are_readable`); tensors of other dtypes hold none."""
    if not (tensor.is_floating_point() or tensor.is_complex()) or not tensor.numel() or not values_are_readable(tensor):
        return None
    bad = ~torch.isfinite(tensor.detach())
    if not bad.any():
        return None
    index = tuple(int(i) for i in bad.nonzero()[0])
    return tensor.detach()[index].item(), list(index)


def check_finite(tensor: torch.Tensor, what: str) -> None:
    """Raise ``ValueError`` naming the first non-finite value (NaN or ±inf) of a floating ``tensor`` of any shape and
    its index, where values are readable (:func:`values_are_readable`); tensors of other dtypes hold no such value."""
    if found := first_non_finite(tensor):
        value, index = found
        raise ValueError(f"{what} must be finite, got {value} at index {index}")


def check_token_ids(ids: torch.Tensor, vocab_size: int, what: str) -> None:
    """Raise ``ValueError`` unless every id of ``ids`` lies in ``[0, vocab_size)`` (where values are readable): an
    embedding would fail on it with an index error, or, on a GPU, a device-side assert."""
    if values_are_readable(ids) and ids.numel():
        low, high = (int(bound) for bound in torch.aminmax(ids))
        if low < 0 or high >= vocab_size:
            raise ValueError(f"{what} token ids must lie in [0, {vocab_size}), got {low}..{high}")


def check_intensities(images: torch.Tensor) -> None:
    """Raise unless ``images`` are uint8 pixels or float intensities in ``[0, 1]`` (readers read floats as such: pixels
    0–255 as floats would all read as white). The range is read where values are readable
    (:func:`values_are_readable`); a non-finite one is named with its index (:func:`check_finite`)."""
    if images.dtype == torch.uint8:
        return
    if not images.is_floating_point():
        raise ValueError(f"images must be uint8 pixels or floats in [0, 1], got {images.dtype}")
    if images.numel() and values_are_readable(images):
        low, high = (float(bound) for bound in torch.aminmax(images.detach()))
        if not (low >= 0 and high <= 1):  # (NaN fails both; then the first one is named)
            check_finite(images, "images")
            raise ValueError(
                f"float images must hold intensities in [0, 1], got values in [{low}, {high}]: give uint8 pixels, or divide by 255"
            )
