"""Refitting a reader to its own abduced readings, window by window.

Learning from results trains on whole expressions: each batch is a few dozen expressions, and a window's
pseudo-label is whatever abduction makes of the current reading. Once a reader has learned, its readings of
the training expressions, corrected by abduction towards their known results, are nearly all right.
:func:`abduced_windows` takes them once, as fixed labels of every window; :func:`refit_reader` then fits the
reader to them by plain classification over large batches of windows drawn from all the expressions at
once. No symbol label is used: the labels come from the reader and the results.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from neurosym.perception.augment import augment_windows
from neurosym.perception.reader import Reader, reader_module
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.trainer import WindowTraining, fit_windows
from neurosym.pipelines.windows import ConcatWindows, WindowSource, real_positions
from neurosym.training.device import mixed_precision
from neurosym.training.distributed import DistributedContext
from neurosym.training.seeding import step_generator


@dataclass(frozen=True)
class LabelledWindows:
    """Symbol windows uint8 ``[N, H, W]`` with ``labels`` int64 ``[N]`` (indices into the reader's
    vocabulary), taken from ``expressions`` expressions; ``left_out`` expressions gave no label; ``truths``
    int64 ``[N]``, the true symbols where the source knows them (to report how right the labels are, never fitted)."""

    windows: torch.Tensor
    labels: torch.Tensor
    expressions: int
    left_out: int
    truths: torch.Tensor | None = None

    def __post_init__(self) -> None:
        count = len(self.windows)
        for name in ("labels", "truths"):
            value = getattr(self, name)
            if value is not None and (value.dtype != torch.int64 or value.shape != (count,)):
                raise ValueError(f"{name} must be int64 [{count}], one per window, got {value.dtype} {tuple(value.shape)}")


@dataclass(frozen=True)
class RefitConfig(WindowTraining):
    """:class:`~neurosym.pipelines.trainer.WindowTraining` of a reader on labelled windows, by default longer, in
    larger batches and under a cosine schedule; batches depend only on ``(seed, step)``, so a resumed refit
    repeats an uninterrupted one."""

    steps: int = 1600
    batch_size: int = 128
    schedule: str = "cosine"
    checkpoint_every: int = 200


def abduced_windows(
    pipeline: HintPipeline, source: WindowSource | ConcatWindows, device: torch.device, batch_size: int = 256
) -> LabelledWindows:
    """Every window of ``source``'s expressions labelled with ``pipeline``'s reading of it, corrected by
    abduction towards the expression's result (:meth:`HintPipeline.abduce`); expressions it cannot explain
    are left out. The reader reads in evaluation mode (:meth:`HintPipeline.read` without gradients) and keeps its
    own mode."""
    if len(source) == 0:
        raise ValueError("abduced_windows needs at least one expression")
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    index = {symbol: i for i, symbol in enumerate(pipeline.classifier.vocabulary)}
    reader_module(pipeline.classifier).to(device)
    windows, labels, left_out = [], [], 0
    for start in range(0, len(source), batch_size):
        indices = range(start, min(start + batch_size, len(source)))
        batch, lengths = source.batch(indices)
        with torch.no_grad(), mixed_precision(device):
            reading = pipeline.read(batch.to(device), lengths.to(device))
        sentences = pipeline.abduce(reading, [source.records[i].res for i in indices])
        kept = torch.tensor([sentence is not None for sentence in sentences])
        left_out += int((~kept).sum())
        windows.append(batch[kept][real_positions(lengths[kept], batch.shape[1])])
        labels += [index[symbol] for sentence in sentences if sentence is not None for symbol in sentence]
    expressions = len(source) - left_out
    return LabelledWindows(torch.cat(windows), torch.tensor(labels, dtype=torch.long), expressions, left_out)


def refit_reader(
    reader: Reader,
    data: Sequence[LabelledWindows],
    config: RefitConfig,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = False,
    time_limit: float | None = None,
    context: DistributedContext | None = None,
) -> list[dict]:
    """Fit ``reader`` to the labelled windows of all of ``data`` (drawn uniformly across them) by
    cross-entropy; returns the history (``loss`` per step). Runs in the library's one training loop:
    resumes from ``checkpoint`` (refusing, with ``ValueError``, one fitted to other labelled windows before any of it is
    loaded: ``reader`` keeps its weights), and a stop request or ``time_limit`` checkpoints and raises
    :class:`~neurosym.training.stopping.TrainingInterrupted`.
    Under ``torchrun`` (a distributed ``context``) every process holds the same ``data`` and learns from its share
    of each batch (:func:`~neurosym.pipelines.trainer.fit_windows`)."""
    if not data:
        raise ValueError("refit_reader needs at least one LabelledWindows")
    windows = torch.cat([part.windows for part in data])
    labels = torch.cat([part.labels for part in data])
    if len(labels) == 0:
        raise ValueError("refit_reader needs at least one labelled window")
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= len(reader.vocabulary):
        raise ValueError(f"a label ({low if low < 0 else high}) lies outside the reader's {len(reader.vocabulary)} classes")

    def batch(index: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = step_generator(config.seed, index)
        picks = torch.randint(len(labels), (config.batch_size,), generator=generator)
        return augment_windows(windows[picks], config.augment_shift, 0.0, generator, batch_dims=1), labels[picks]

    fitted_to = _fingerprint(windows, labels)

    def check_data(saved: dict[str, Any]) -> None:
        if saved.get("fitted_to") != fitted_to:
            raise ValueError(
                f"{checkpoint} was fitted to other labelled windows than these ({len(labels)} windows); "
                "remove it to refit, or resume with the data it was fitted to"
            )

    model = reader_module(reader).to(device)
    return fit_windows(
        model, batch, config, device, checkpoint, progress, time_limit, "refit", lambda: {"fitted_to": fitted_to},
        context=context, check=check_data,
    )  # fmt: skip


def _fingerprint(windows: torch.Tensor, labels: torch.Tensor) -> str:
    """A digest of the labelled windows a refit fits (what its resume must agree with, beside its config)."""
    digest = hashlib.sha256()
    for tensor in (windows, labels):
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()
