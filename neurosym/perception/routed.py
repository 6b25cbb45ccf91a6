"""Readers for different writers read as one: a router tells whose handwriting an expression is and weights
each writer's reader by its belief (the expert gate of Aljundi et al. 2017, per expression). A reader adapted
to a new writer then need not share its weights with the first writers', so adapting forgets nothing."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from neurosym.perception.reader import Reader, shared_vocabulary, shared_window
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.training.checks import is_int_tensor
from neurosym.training.device import at_least_float32


class RoutedReader(nn.Module):
    """``readers[k]`` reads the handwriting that ``router`` calls class ``k``.

    Args:
        readers: readers (modules, :class:`~neurosym.perception.reader.Reader`) of one vocabulary, one per group of writers.
        router: a classifier with one class per reader (trained to tell which group a window came from).

    Shapes: ``windows [N, S, S]`` or ``[N, 1, S, S]``, optional ``groups`` int64 ``[N]`` (the expression each
    window belongs to) -> log-probabilities ``[N, V]``: ``log sum_k w_k p_k(symbol | window)``, where ``w`` is
    the router's distribution per window, or with ``groups`` its mean log-probability over the group's windows,
    renormalised (one writer writes a whole expression). ``window``: the side of the windows its readers and router
    read (:func:`~neurosym.perception.reader.shared_window`), which must be one.
    """

    def __init__(self, readers: Sequence[nn.Module], router: SymbolClassifier):
        super().__init__()
        self.vocabulary = shared_vocabulary(readers, "a routed reader")
        self.window = shared_window([*readers, router], "a routed reader")
        if not isinstance(router, Reader):  # (failed as "'Linear' object has no attribute 'vocabulary'")
            raise TypeError(
                f"the router must be a classifier with a vocabulary (one class per reader), got {type(router).__name__}"
            )
        if len(router.vocabulary) != len(readers):
            raise ValueError(f"the router has {len(router.vocabulary)} classes for {len(readers)} readers")
        self.readers = nn.ModuleList(readers)
        self.router = router

    def route(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        """``windows [N, S, S]`` -> log-weights of the readers ``[N, K]`` (per group when ``groups [N]`` is given)."""
        log_weights = at_least_float32(self.router(windows))
        if groups is None or len(log_weights) == 0:
            return log_weights
        if not is_int_tensor(groups) or groups.shape != log_weights.shape[:1]:
            described = f"{groups.dtype} {tuple(groups.shape)}" if isinstance(groups, torch.Tensor) else type(groups).__name__
            raise ValueError(f"groups must be an integer tensor, one index per window ({len(log_weights)}), got {described}")
        _, groups = torch.unique(groups, return_inverse=True)
        sums = log_weights.new_zeros(int(groups.max()) + 1, log_weights.shape[1]).index_add(0, groups, log_weights)
        counts = torch.bincount(groups).unsqueeze(1).to(log_weights.dtype)
        return (sums / counts).log_softmax(dim=-1)[groups]

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        """``windows [N, S, S]`` or ``[N, 1, S, S]`` (``groups [N]`` optional) -> log-probabilities ``[N, V]``."""
        readings = torch.stack([at_least_float32(reader(windows, groups)) for reader in self.readers], dim=1)  # [N, K, V]
        return _mixture(readings + self.route(windows, groups).unsqueeze(-1))


def _mixture(joint: torch.Tensor) -> torch.Tensor:
    """``log Σ_k exp(joint[:, k])``: ``joint [N, K, V]`` -> ``[N, V]``, ``-inf`` where every reader rules a symbol out,
    with a zero gradient there (torch's ``logsumexp`` of only ``-inf`` has a NaN gradient, which made every parameter of
    the readers NaN, even under a loss that never reads that symbol)."""
    ruled_out = (joint == -torch.inf).all(dim=1, keepdim=True)  # [N, 1, V]
    return joint.masked_fill(ruled_out, 0.0).logsumexp(dim=1).masked_fill(ruled_out.squeeze(1), -torch.inf)
