"""A reader's weights read back from a training checkpoint, every bad file named."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from torch import nn

from neurosym.training.checkpoint import load_checkpoint, load_model_state

M = TypeVar("M", bound=nn.Module)


def load_reader(path: str | os.PathLike, reader: M, finished: bool = True) -> M:
    """``reader`` (a fresh module of the architecture that was trained) holding the weights of the training checkpoint
    at ``path`` (its ``"model"`` entry). ``finished``: refuse a checkpoint whose run has steps left. Raises
    ``ValueError`` naming the file when it is missing, unreadable, not a training checkpoint, unfinished, or of another
    reader (other sizes or vocabulary: :class:`~neurosym.training.checkpoint.CheckpointMismatch`, a ``ValueError``)."""
    path = Path(path)
    saved = load_checkpoint(path)
    if saved is None:
        raise ValueError(f"no checkpoint at {path}")
    if not isinstance(saved, dict) or "model" not in saved:
        raise ValueError(f"{path} is not a training checkpoint (it has no 'model' entry)")
    if finished and saved.get("step", 0) < saved.get("config", {}).get("steps", 0):
        raise ValueError(
            f"{path} holds a reader trained for {saved['step']} of {saved['config']['steps']} steps: finish its run first"
        )
    load_model_state(reader, saved["model"], str(path), "reader")
    return reader
