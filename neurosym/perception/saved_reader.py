"""A reader's weights read back from a training checkpoint, every bad file named."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from torch import nn

from neurosym.paths import user_path
from neurosym.perception.reader import Reader
from neurosym.training.checkpoint import (
    MAPPING,
    NUMBER,
    CheckpointMismatch,
    check_setup,
    load_checkpoint,
    load_model_state,
    require_kinds,
)

M = TypeVar("M", bound=nn.Module)

TRAINING = "a reader's training"
"""What a checkpoint :func:`load_reader` refuses is not a checkpoint of."""


def load_reader(
    path: str | os.PathLike,
    reader: M,
    finished: bool = True,
    recorded: Mapping[str, Mapping[str, Any]] | None = None,
    fallbacks: Mapping[tuple[str, str], tuple[str, str]] | None = None,
) -> M:
    """``reader`` (a fresh module of the architecture that was trained) holding the weights of the training checkpoint
    at ``path`` (its ``"model"`` entry). ``finished``: refuse a checkpoint whose run has steps left. ``recorded``: what
    the checkpoint must record, entry by entry, e.g. ``{"setup": {"stroke_width": 2}, "config": {"seed": 0}}`` (the
    options the reader was built from and the data it was trained on; values of an entry not named are not compared).
    ``fallbacks``: where the checkpoint holds nothing (or ``None``) at a recorded ``(entry, name)``, its value at
    another ``(entry, name)`` is compared instead, e.g. ``{("setup", "data_seed"): ("config", "seed")}`` (a value kept
    before the first one was).
    Raises ``ValueError`` naming the file when it is missing, unreadable, not a training checkpoint (no ``"model"``
    mapping; a ``"step"``, or a ``"config"`` ``"steps"``, that is no number; an entry read as a mapping that is none),
    unfinished, or of
    another reader (:class:`~neurosym.training.checkpoint.CheckpointMismatch`, a ``ValueError``: other sizes, another
    recorded ``"vocabulary"`` than ``reader``'s, or another value than ``recorded`` gives, each one named)."""
    path = user_path(path)
    saved = load_checkpoint(path)
    if saved is None:
        raise ValueError(f"no checkpoint at {path}")
    if not isinstance(saved, dict) or "model" not in saved:
        raise ValueError(f"{path} is not a training checkpoint (it has no 'model' entry)")
    require_kinds(saved, {"model": MAPPING, "step": NUMBER}, path, TRAINING)
    config = _entry(saved, "config", path)
    require_kinds(config, {"steps": NUMBER}, path, f"{TRAINING} (its config)")
    step, steps = saved.get("step", 0), config.get("steps", 0)
    if finished and step < steps:
        raise ValueError(f"{path} holds a reader trained for {step} of {steps} steps: finish its run first")
    check_vocabulary(saved, reader, str(path))
    if recorded is not None:
        held = {
            entry: {name: _recorded(saved, (entry, name), path, fallbacks or {}) for name in values}
            for entry, values in recorded.items()
        }
        check_setup(held, recorded, path, "read it under the values it records, or train a reader under these")
    load_model_state(reader, saved["model"], str(path), "reader")
    return reader


def check_vocabulary(saved: Mapping[str, Any], reader: nn.Module, name: str, advice: str = "") -> None:
    """Refuse with :class:`~neurosym.training.checkpoint.CheckpointMismatch` the checkpoint ``saved`` (``name`` in the
    message, ``advice`` after it) of a reader of another recorded ``"vocabulary"`` than ``reader``'s: its weights would
    load alike and read every symbol wrong. One that recorded none, or a module that is no reader, passes."""
    kept = saved.get("vocabulary")
    if kept is not None and isinstance(reader, Reader) and list(kept) != list(reader.vocabulary):
        raise CheckpointMismatch(
            f"{name} holds a reader of another vocabulary: {list(kept)} there, {list(reader.vocabulary)} here{advice}"
        )


def _recorded(
    saved: Mapping[str, Any], key: tuple[str, str], path: Path, fallbacks: Mapping[tuple[str, str], tuple[str, str]]
) -> Any:
    """The value the checkpoint ``saved`` records at ``key`` (entry, name), else at ``fallbacks[key]`` where it has one."""
    value = _entry(saved, key[0], path).get(key[1])
    return _recorded(saved, fallbacks[key], path, {}) if value is None and key in fallbacks else value


def _entry(saved: Mapping[str, Any], name: str, path: Path) -> Mapping[str, Any]:
    """The mapping entry ``name`` of the checkpoint ``saved`` (empty where it has none); ``ValueError`` naming ``path``
    where it holds something else (:func:`~neurosym.training.checkpoint.require_kinds`)."""
    require_kinds(saved, {name: MAPPING}, path, TRAINING)
    return saved.get(name, {})
