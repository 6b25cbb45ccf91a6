"""Additive (Bahdanau) attention of a single query over a sequence of keys."""

from __future__ import annotations

import torch
from einops import rearrange
from torch import nn


class AdditiveAttention(nn.Module):
    """Bahdanau et al. (2015): ``score_j = w · tanh(W_q q + W_k k_j)``, softmax over ``j``.

    Call :meth:`project_keys` once per source (``keys [B, S, key_dim] -> [B, S, attention_dim]``), then
    ``forward(query [B, query_dim], keys [B, S, key_dim], projected_keys, key_padding_mask [B, S] | None)
    -> (context [B, key_dim], weights [B, S])``; ``True`` in the mask marks padding.
    """

    def __init__(self, query_dim: int, key_dim: int, attention_dim: int) -> None:
        super().__init__()
        self.query_proj = nn.Linear(query_dim, attention_dim, bias=False)
        self.key_proj = nn.Linear(key_dim, attention_dim)
        self.score = nn.Linear(attention_dim, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        return self.key_proj(keys)

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        projected_keys: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = torch.tanh(projected_keys + rearrange(self.query_proj(query), "b a -> b 1 a"))
        scores = rearrange(self.score(hidden), "b s 1 -> b s")
        if key_padding_mask is not None:
            scores = scores.masked_fill(key_padding_mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return torch.einsum("bs,bsk->bk", weights, keys), weights
