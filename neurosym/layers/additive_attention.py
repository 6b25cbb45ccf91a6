"""Additive (Bahdanau) attention of a single query over a sequence of keys."""

from __future__ import annotations

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import check_dtype_of, check_sequence, check_sizes, check_tensor
from neurosym.layers.value_checks import values_are_readable


class AdditiveAttention(nn.Module):
    """Bahdanau et al. (2015): ``score_j = w · tanh(W_q q + W_k k_j)``, softmax over ``j``.

    Call :meth:`project_keys` once per source (``keys [B, S, key_dim] -> [B, S, attention_dim]``), then
    ``forward(query [B, query_dim], keys [B, S, key_dim], projected_keys, key_padding_mask [B, S] | None)
    -> (context [B, key_dim], weights [B, S])``; ``True`` in the mask marks padding. ``device`` and ``dtype`` are
    torch's factory keyword arguments (:mod:`neurosym.layers.factory`): the projections are created there.
    """

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        attention_dim: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        query_dim, key_dim, attention_dim = check_sizes(query_dim=query_dim, key_dim=key_dim, attention_dim=attention_dim)
        self.query_dim, self.key_dim, self.attention_dim = query_dim, key_dim, attention_dim
        self.query_proj = nn.Linear(query_dim, attention_dim, bias=False, **factory)
        self.key_proj = nn.Linear(key_dim, attention_dim, **factory)
        self.score = nn.Linear(attention_dim, 1, bias=False, **factory)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """``keys [B, S, key_dim]`` -> ``[B, S, attention_dim]``; ``ValueError`` naming keys of another width, rank or
        dtype (``TypeError`` for a non-tensor), which failed inside the key projection."""
        check_sequence(keys, self.key_dim, "keys")
        check_dtype_of(keys, self, "keys")
        return self.key_proj(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        projected_keys: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``query [B, query_dim]``, ``keys [B, S, key_dim]``, their ``projected_keys [B, S, attention_dim]``
        (:meth:`project_keys`) and ``key_padding_mask [B, S] | None`` (``True`` marks padding)
        -> ``(context [B, key_dim], weights [B, S])``."""
        self._check_inputs(query, keys, projected_keys, key_padding_mask)
        hidden = torch.tanh(projected_keys + rearrange(self.query_proj(query), "b a -> b 1 a"))
        scores = rearrange(self.score(hidden), "b s 1 -> b s")
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return torch.einsum("bs,bsk->bk", weights, keys), weights

    def _check_inputs(
        self, query: torch.Tensor, keys: torch.Tensor, projected: torch.Tensor, key_padding_mask: torch.Tensor | None
    ) -> None:
        for tensor, what in ((query, "query"), (keys, "keys"), (projected, "projected_keys (project_keys(keys))")):
            check_tensor(tensor, what)
        if key_padding_mask is not None:
            check_tensor(key_padding_mask, "key_padding_mask (or None)")
        if query.dim() != 2 or query.shape[-1] != self.query_dim:
            raise ValueError(f"query must have shape [batch, {self.query_dim}], got {tuple(query.shape)}")
        batch = query.shape[0]
        check_sequence(keys, self.key_dim, "keys", batch=batch)
        if keys.shape[1] == 0:  # the context was silently zero
            raise ValueError("keys has no positions: nothing to attend to")
        for tensor, what in ((query, "query"), (keys, "keys"), (projected, "projected_keys")):
            check_dtype_of(tensor, self, what)
        if projected.shape != (*keys.shape[:2], self.attention_dim):
            raise ValueError(
                f"projected_keys must have shape [{batch}, {keys.shape[1]}, {self.attention_dim}] (project_keys(keys)), "
                f"got {tuple(projected.shape)}"
            )
        if key_padding_mask is not None:
            if key_padding_mask.dtype != torch.bool or key_padding_mask.shape != keys.shape[:2]:
                raise ValueError(
                    f"key_padding_mask must be a bool tensor [{batch}, {keys.shape[1]}] with True marking padding, got "
                    f"{key_padding_mask.dtype} {tuple(key_padding_mask.shape)}"
                )
            fully_padded = key_padding_mask.all(dim=1)
            if values_are_readable(fully_padded) and fully_padded.any():
                row = int(fully_padded.nonzero()[0, 0])
                raise ValueError(f"every key of batch element {row} is padding: nothing to attend to")
