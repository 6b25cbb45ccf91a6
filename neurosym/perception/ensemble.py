"""Several trained symbol readers read as one: a deep ensemble (Lakshminarayanan et al. 2017), whose mean
probability reads another writer's handwriting better than its members do on average."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from neurosym.perception.reader import shared_vocabulary, shared_window
from neurosym.perception.saved_reader import load_reader


class ReaderEnsemble(nn.Module):
    """The mean probability of ``readers`` (modules that are :class:`~neurosym.perception.reader.Reader` s over one
    vocabulary, e.g. classifiers trained with other seeds, or ensembles themselves), as log-probabilities:
    ``windows [N, S, S]`` or ``[N, 1, S, S]`` -> ``[N, V]``.

    It reads wherever a :class:`SymbolClassifier` does (:class:`~neurosym.pipelines.pipeline.HintPipeline`,
    :func:`~neurosym.perception.batch_statistics.batch_statistics_of` on every member's batch norms). Trained as one
    module, the gradient of a loss on its output is that of the members' *mean log-probability* (the value stays the
    mixture's): each member learns from the targets as if alone, where the mixture's own gradient would let members
    collude (one member's confident mistakes covered by another's). So a pipeline can read, decode and abduce with the
    ensemble and train its members together, each by its own cross-entropy on the same pseudo-labels.

    ``window``: the side of the windows its members read (:func:`~neurosym.perception.reader.shared_window`; ``None``
    when no member states one); members of other sides are refused.
    """

    def __init__(self, readers: Sequence[nn.Module]):
        super().__init__()
        self.vocabulary = shared_vocabulary(readers, "an ensemble")
        self.window = shared_window(readers, "an ensemble")
        self.readers = nn.ModuleList(readers)

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        """``windows [N, S, S]`` or ``[N, 1, S, S]`` (``groups [N]`` passed on to the members) -> log of the
        members' mean probability ``[N, V]``, whose gradient is that of the members' mean log-probability (none
        through a member's ``-inf``, a symbol it rules out)."""
        members = torch.stack([reader(windows, groups) for reader in self.readers])  # [K, N, V]
        mixture = members.logsumexp(dim=0) - math.log(len(self.readers))
        if not torch.is_grad_enabled() or not members.requires_grad:
            return mixture
        # (-inf - -inf made the column of a symbol that one member rules out NaN)
        alone = members.where(members.isfinite(), 0.0).mean(dim=0)
        return mixture.detach() + alone - alone.detach()


def readers_from_checkpoints(
    paths: Sequence[str | os.PathLike],
    make_reader: Callable[[], nn.Module],
    recorded: Mapping[str, Mapping[str, Any]] | None = None,
    fallbacks: Mapping[tuple[str, str], tuple[str, str]] | None = None,
) -> ReaderEnsemble:
    """The ensemble of the readers saved in ``paths`` (training checkpoints, whose ``"model"`` entry holds a
    reader's weights), each loaded into a fresh ``make_reader()`` of the same architecture (a module that is a
    :class:`~neurosym.perception.reader.Reader`: a classifier, or an ensemble of several), in evaluation mode.
    ``recorded``: what each checkpoint must record, and ``fallbacks``: where a value kept before it stands for it
    (:func:`~neurosym.perception.saved_reader.load_reader`, e.g. the options its reader was built from). Raises ``ValueError`` naming the file that is missing, unreadable, not a
    training checkpoint, unfinished or of another reader, and ``TypeError`` for ``paths`` that is one path."""
    if isinstance(paths, (str, os.PathLike)):
        raise TypeError(f"readers_from_checkpoints takes a sequence of checkpoint paths, got the one path {str(paths)!r}: "
                        f"pass [{str(paths)!r}]")  # fmt: skip
    return ReaderEnsemble([load_reader(path, make_reader(), recorded=recorded, fallbacks=fallbacks) for path in paths]).eval()
