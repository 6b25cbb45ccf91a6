"""Routing expressions to the reader of their writers: a router learns where windows came from (which set of
writers drew them, known without any symbol label), and a :class:`~neurosym.perception.routed.RoutedReader`
reads each expression with the readers it weighs. Adapting to a new writer then leaves the first writers'
reader as it was trained."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch import nn

from neurosym.perception.reader import shared_vocabulary
from neurosym.perception.routed import RoutedReader
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.refit import LabelledWindows, RefitConfig, refit_reader
from neurosym.pipelines.windows import ConcatWindows, WindowSource
from neurosym.training.checks import is_int
from neurosym.training.seeding import seeded


def source_windows(source: WindowSource | ConcatWindows, label: int) -> LabelledWindows:
    """Every window of ``source``'s expressions, all labelled ``label``: what is known of where they came from
    (e.g. which writers drew them, a writer router's target), not what they show."""
    if len(source) == 0:
        raise ValueError("source_windows needs at least one expression")
    if not is_int(label) or label < 0:
        raise ValueError(f"label must be a class index, an int >= 0, got {label!r}")
    windows = torch.cat([source.windows(i) for i in range(len(source))])
    return LabelledWindows(windows, torch.full((len(windows),), label, dtype=torch.long), len(source), 0)


def writer_router(sources: int, backbone: str = "small") -> SymbolClassifier:
    """A fresh router of :func:`route_readers` between ``sources`` sources of windows (its classes ``"source 0"``,
    ``"source 1"``, ...): a small ``backbone`` classifier of windows ``[N, 32, 32]``, e.g. to read a router's
    checkpoint back into."""
    return SymbolClassifier([f"source {k}" for k in range(sources)], backbone, 32, width=16)


def route_readers(
    readers: Sequence[nn.Module],
    sources: Sequence[WindowSource | ConcatWindows],
    config: RefitConfig,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = False,
    backbone: str = "small",
    time_limit: float | None = None,
) -> RoutedReader:
    """``readers[k]`` for the handwriting of ``sources[k]``'s expressions: a router (a small ``backbone``
    classifier, one class per reader, initialised from ``config.seed`` alone: the caller's random stream neither
    changes it nor is moved by it) is fit to tell the sources' windows apart by :func:`refit_reader`
    (resumable from ``checkpoint``; a stop request or ``time_limit`` seconds checkpoint and raise
    :class:`~neurosym.training.stopping.TrainingInterrupted`), and the routed reader reads with them all."""
    if len(readers) != len(sources) or len(readers) < 2:
        raise ValueError(f"route_readers needs one source per reader and at least two, got {len(readers)} and {len(sources)}")
    shared_vocabulary(readers, "a routed reader")  # (checked by RoutedReader only after the router's training)
    with seeded(config.seed):  # (its initial weights: alike whatever the caller drew before, e.g. fresh or resumed)
        router = writer_router(len(sources), backbone)
    labelled = [source_windows(source, k) for k, source in enumerate(sources)]
    refit_reader(router, labelled, config, device, checkpoint, progress, time_limit)
    return RoutedReader(list(readers), router.eval())
