"""Training infrastructure shared by every benchmark: device choice and atomic checkpoints."""

from neurosym.training.checkpoint import load_checkpoint, save_checkpoint
from neurosym.training.device import resolve_device

__all__ = ["resolve_device", "save_checkpoint", "load_checkpoint"]
