"""The one interface every reader of symbol windows has (classifier, ensemble, routed readers, a user's own)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import torch
from torch import nn


@runtime_checkable
class Reader(Protocol):
    """Reads windows as symbols: ``vocabulary`` names the output columns, and calling it maps windows
    ``[N, ...]`` (and optionally ``groups`` int64 ``[N]``, the example each window belongs to, which a reader
    may use to read an example's windows alike, or ignore) to log-probabilities ``[N, len(vocabulary)]``."""

    @property
    def vocabulary(self) -> Sequence[str]: ...

    def __call__(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor: ...


def shared_vocabulary(readers: Sequence[nn.Module], what: str) -> list[str]:
    """The one vocabulary of the modules ``readers`` that ``what`` (e.g. ``"an ensemble"``) combines: ``TypeError`` for
    a member that is no :class:`Reader`, ``ValueError`` for none or for readers of different vocabularies."""
    if not readers:
        raise ValueError(f"{what} needs at least one reader")
    if not all(isinstance(reader, Reader) for reader in readers):
        raise TypeError(f"the members of {what} must be readers: modules with a vocabulary")
    vocabularies = {tuple(reader.vocabulary) for reader in readers if isinstance(reader, Reader)}
    if len(vocabularies) > 1:
        raise ValueError(f"the readers of {what} must share one vocabulary, got {sorted(vocabularies)}")
    return list(vocabularies.pop())


def as_reader(module: nn.Module) -> Reader:
    """``module`` as a :class:`Reader`; ``TypeError`` for a module without a ``vocabulary``."""
    if not isinstance(module, Reader):
        raise TypeError(f"a reader is a module with a vocabulary; {type(module).__name__} has none")
    return module


def reader_module(reader: Reader) -> nn.Module:
    """``reader`` as the torch module that a reader which is trained, moved or switched to evaluation must be
    (``TypeError`` for another reader)."""
    if not isinstance(reader, nn.Module):
        raise TypeError(f"a reader trained from results must be a torch.nn.Module, got {type(reader).__name__}")
    return reader
