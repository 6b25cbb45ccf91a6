"""Device selection: ``"auto"`` picks CUDA when present, else the CPU."""

from __future__ import annotations

import torch


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """Return a concrete :class:`torch.device`.

    ``"auto"`` selects ``cuda`` when a GPU is visible and ``cpu`` otherwise; any other value is passed
    to :class:`torch.device`. Asking for CUDA on a machine without it raises a clear ``ValueError``.
    """
    if isinstance(device, torch.device):
        resolved = device
    elif device == "auto":
        resolved = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            resolved = torch.device(device)
        except RuntimeError as error:
            raise ValueError(f"unknown device {device!r}: use 'auto', 'cpu' or 'cuda[:N]'") from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} was requested but CUDA is not available on this machine")
    return resolved


def autocast_enabled(device: torch.device) -> bool:
    """Whether mixed precision (AMP) should be used on ``device``: on CUDA only."""
    return device.type == "cuda"
