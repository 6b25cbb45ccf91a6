"""Batch-norm statistics re-estimated on another writer's images, with no labels and no results (AdaBN,
Li et al. 2016): the weights stay, only each ``BatchNorm`` layer's running mean and variance are
replaced by those of the new images, so the new writers' features are normalised as the first
writers' were in training."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn

from neurosym.training.modes import modes_kept


def batch_norms(module: nn.Module) -> list[nn.modules.batchnorm._BatchNorm]:
    """Every batch-norm layer of ``module`` (any dimension), in module order."""
    return [layer for layer in module.modules() if isinstance(layer, nn.modules.batchnorm._BatchNorm)]


def _running_statistics(layer: nn.modules.batchnorm._BatchNorm) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The running mean, variance and batch count of ``layer``, one that tracks running statistics."""
    mean, variance, count = layer.running_mean, layer.running_var, layer.num_batches_tracked
    assert mean is not None and variance is not None and count is not None  # a tracking layer holds all three
    return mean, variance, count


@contextmanager
def batch_statistics_of(module: nn.Module, batches: Iterable[torch.Tensor]) -> Iterator[int]:
    """Within the block, ``module``'s batch-norm layers use the running statistics of ``batches`` (the
    plain average over all of them, empty ones left out); on leaving, every statistic, momentum and train/eval mode
    is restored. Yields the number of samples seen. Layers that keep no running statistics (``track_running_stats=False``)
    normalise by each batch's own, so they are left alone. Only the batch-norm layers estimate in training mode: every
    other module reads in evaluation mode (a dropout before a batch norm gave it the statistics of dropped-out
    features, other ones at every estimate).

    ``batches``: inputs ``module`` accepts, e.g. windows ``[N, 32, 32]`` for a
    :class:`~neurosym.perception.symbol_classifier.SymbolClassifier`. No gradient is computed.
    """
    layers = [layer for layer in batch_norms(module) if layer.track_running_stats]
    if not layers:
        raise ValueError(f"{type(module).__name__} has no batch-norm layer whose statistics could be re-estimated")
    with modes_kept(module), _statistics_kept(layers):
        for layer in layers:
            layer.reset_running_stats()
            layer.momentum = None  # cumulative average
        module.eval()
        for layer in layers:
            layer.train()
        seen = 0
        with torch.no_grad():
            for batch in filter(len, batches):  # (an empty batch changed no statistic yet counted as a batch averaged)
                module(batch)
                seen += len(batch)
        if seen == 0:
            raise ValueError("no images to re-estimate the batch-norm statistics from")
        module.eval()
        yield seen


@contextmanager
def _statistics_kept(layers: list[nn.modules.batchnorm._BatchNorm]) -> Iterator[None]:
    """On leaving the block, each of the batch-norm ``layers`` has the running statistics and momentum it had."""
    saved = [([statistic.clone() for statistic in _running_statistics(layer)], layer.momentum) for layer in layers]
    try:
        yield
    finally:
        for layer, (statistics, momentum) in zip(layers, saved, strict=True):
            for statistic, kept in zip(_running_statistics(layer), statistics, strict=True):
                statistic.copy_(kept)
            layer.momentum = momentum
