"""Device selection: ``"auto"`` picks CUDA when present, else the CPU."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import chain

import torch
from torch import nn


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Return a concrete :class:`torch.device`.

    ``"auto"`` selects ``cuda`` when a GPU is visible and ``cpu`` otherwise; any other string is passed
    to :class:`torch.device`. A value that names no device, CUDA or another accelerator that torch can look for
    (MPS, XPU) asked for on a machine without it, a CUDA index past the machine's devices, ``meta`` (no values), or
    another type torch cannot put a tensor on here (``hip`` in a build without it) raises a clear ``ValueError``.
    """
    if isinstance(device, torch.device):
        resolved = device
    elif device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    elif not isinstance(device, str):
        raise ValueError(f"device must be 'auto', a device string or a torch.device, got {type(device).__name__} {device!r}")
    else:
        try:
            resolved = torch.device(device)
        except RuntimeError as error:
            raise ValueError(f"unknown device {device!r}: use 'auto', 'cpu' or 'cuda[:N]'") from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device {str(device)!r} was requested but CUDA is not available on this machine (device 'auto' picks the CPU)"
        )
    if resolved.type == "cuda" and resolved.index is not None and resolved.index >= torch.cuda.device_count():
        raise ValueError(f"device {str(device)!r}: this machine has {torch.cuda.device_count()} CUDA devices")
    if resolved.type == "meta":  # (failed deep in the first run, as an autocast device type torch does not support)
        raise ValueError(
            "device 'meta' holds shapes only, no values: nothing trains or runs there (a layer's device='meta' defers "
            "its initialisation instead)"
        )
    available = _available(resolved.type)
    if available is False:  # (else the first tensor put there failed with torch's internals)
        raise ValueError(
            f"device {str(device)!r} was requested but this machine has no {resolved.type} device (device 'auto' picks "
            "CUDA when present, else the CPU)"
        )
    if available is None:  # a type torch cannot say it has: one tensor put there tells (hip: torch not built for it)
        try:
            torch.empty(0, device=resolved)
        except (RuntimeError, ImportError, NotImplementedError) as error:  # (privateuseone: no module of its own)
            reason = str(error).splitlines()[0].split(". ")[0]
            raise ValueError(f"device {str(device)!r}: torch cannot put tensors there ({reason})") from None
    return resolved


def _available(kind: str) -> bool | None:
    """Whether this machine has devices of the type ``kind`` (``"mps"``, ``"xpu"``, ...), where torch can say
    (its ``is_available``); ``None`` where it cannot (a backend it has no module for)."""
    if kind == "mps":
        return torch.backends.mps.is_available()
    is_available = getattr(getattr(torch, kind, None), "is_available", None)
    return bool(is_available()) if callable(is_available) else None


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """The mixed-precision (AMP) dtype on ``device``, ``None`` where AMP is off (the CPU).

    bfloat16 on GPUs that support it (Ampere and newer): float32's range, so no loss scaling. float16 on
    older GPUs, where :func:`~neurosym.training.train` scales the loss (``GradScaler``): torch's
    ``is_bf16_supported()`` says yes there too, since they can emulate bfloat16, but only slowly."""
    if device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16


def amp_available(device: torch.device) -> bool:
    """Whether mixed precision (AMP) is used on ``device``: on CUDA only."""
    return autocast_dtype(device) is not None


def mixed_precision(device: torch.device) -> torch.autocast:
    """The ``torch.autocast`` context of :func:`autocast_dtype` on ``device`` (disabled on the CPU)."""
    dtype = autocast_dtype(device)
    return torch.autocast(device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def at_least_float32(values: torch.Tensor) -> torch.Tensor:
    """``values`` (any shape, e.g. log-probabilities or logits) in float32, or in their own dtype where it is wider:
    half-precision outputs of mixed precision are scored in float32, and a float64 model's are not rounded to it."""
    return values.to(torch.promote_types(values.dtype, torch.float32))


@contextmanager
def moved_to(model: nn.Module, device: torch.device) -> Iterator[nn.Module]:
    """Within the block ``model`` is on ``device``; on leaving, it is back on the device it was on (a model read on
    another device is its caller's model still, where the caller put it). A model with parameters or buffers on
    several devices would be gathered onto one: ``ValueError`` naming them."""
    places = sorted({str(tensor.device) for tensor in chain(model.parameters(), model.buffers())})
    if len(places) > 1:
        raise ValueError(f"the model's parameters and buffers are on several devices ({', '.join(places)}); move it to one")
    model.to(device)
    try:
        yield model
    finally:
        if places:
            model.to(places[0])


_CPU_ALLOCATOR_FAILURE = re.compile(
    r"(?:\[enforce fail at [^\]]*\][^.]*\.\s*)?DefaultCPUAllocator: (?:can't allocate memory|not enough memory): (.*)"
)  # (the second: torch on Windows)


def out_of_memory(error: BaseException) -> str | None:
    """What ``error`` says ran out, where it is a failed allocation (Python's or numpy's ``MemoryError``, torch's
    ``OutOfMemoryError`` on a GPU or its CPU allocator's failure, which torch raises as a plain ``RuntimeError``);
    ``None`` for any other error."""
    text = str(error).strip()
    first = text.splitlines()[0] if text else type(error).__name__
    if isinstance(error, MemoryError | torch.OutOfMemoryError):
        return first
    failure = _CPU_ALLOCATOR_FAILURE.match(first) if isinstance(error, RuntimeError) else None
    return None if failure is None else f"the CPU cannot allocate memory: {failure.group(1)}"
