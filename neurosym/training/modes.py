"""Train/eval mode for one block of work, restored afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

import torch
from torch import nn


@contextmanager
def modes_kept(model: nn.Module) -> Iterator[None]:
    """On leaving the block, every module of ``model`` gets the train/eval mode it had on entering (``model.train()``
    alone would also switch a frozen part left in evaluation mode)."""
    modes = _modes_of(model)
    try:
        yield
    finally:
        _set(modes)


def training_modes(model: nn.Module) -> Callable[[], None]:
    """What puts ``model`` in training mode before each step of a training run: its modules get the modes they had
    when the run began, whatever an evaluation in between left (a part the caller put in evaluation mode, e.g. a frozen
    backbone whose batch norms keep their statistics, stays there), unless the model came in evaluation mode as a whole
    (``model.eval()``: last used for reading, not set up for training), which then trains in training mode throughout."""
    modes = _modes_of(model) if model.training else [(model, True)]
    return lambda: _set(modes)


def _modes_of(model: nn.Module) -> list[tuple[nn.Module, bool]]:
    """``model``'s train/eval mode and those of its modules whose mode differs from their parent's, parents before
    their children: what gives every module its mode back (:func:`_set`) with one switch of the whole model and one of
    each part set apart, not one per module (each of which also switches all below it)."""
    return [(model, model.training), *_set_apart(model)]


def _set_apart(parent: nn.Module) -> list[tuple[nn.Module, bool]]:
    """The modules below ``parent`` in another mode than their own parent, each with its mode, parents first."""
    found: list[tuple[nn.Module, bool]] = []
    for child in parent.children():
        if child.training != parent.training:
            found.append((child, child.training))
        found += _set_apart(child)
    return found


def _set(modes: list[tuple[nn.Module, bool]]) -> None:
    """Give each module its mode, in order: a module's ``train`` also switches those below it, set apart after it."""
    for module, training in modes:
        module.train(training)


@contextmanager
def evaluation_mode(model: nn.Module) -> Iterator[None]:
    """Within the block every module of ``model`` is in evaluation mode (dropout off, batch norm reads its running
    statistics and leaves them alone); on leaving, each module gets its own mode back."""
    with modes_kept(model):
        model.eval()
        yield


def reading_mode(reader: object) -> AbstractContextManager[None]:
    """The mode a pipeline reads in: with gradients off (a reading for its results, not for a training step)
    :func:`evaluation_mode` of ``reader``, so that an example's reading does not depend on the others of its batch and
    leaves the batch-norm statistics alone; with gradients on, the mode its caller set (a training step reads in
    training mode). A reader that is no torch module has no mode."""
    if torch.is_grad_enabled() or not isinstance(reader, nn.Module):
        return nullcontext()
    return evaluation_mode(reader)
