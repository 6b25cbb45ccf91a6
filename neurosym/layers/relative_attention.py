"""Attention whose scores depend on the distance between query and key, not on absolute positions.

Two encodings (selected with ``relative=``):

* ``"xl"`` — Transformer-XL (Dai et al. 2019) as used by Csordás et al. (2021): the score of query ``i``
  and key ``j`` is ``(q_i + u)·k_j + (q_i + v)·(W_r r_{i-j})`` where ``r_d`` is the sinusoid of the
  distance ``d``, ``W_r`` a learned projection and ``u``, ``v`` learned per-head biases.
* ``"shaw"`` — Shaw et al. (2018): a learned vector per clipped distance ``clip(j - i, ±max_rel_pos)``
  is added to the key, giving ``q_i·k_j + q_i·a_{clip(j-i)}`` (the key-side term only).

The position term is computed once per distinct distance (``[B, H, Tq, R]``) and spread over the
``[Tq, Tk]`` grid by an index gather — the vectorised form of Transformer-XL's shift.
"""

from __future__ import annotations

from typing import Literal

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.attention import MultiheadAttention
from neurosym.layers.positional import sinusoid_table

RelativeKind = Literal["xl", "shaw"]


class RelativeMultiheadAttention(MultiheadAttention):
    """Multi-head attention with relative positions; same call signature as :class:`MultiheadAttention`.

    ``forward(query [B, Tq, D], key_value [B, Tk, D] | None, *, key_padding_mask [B, Tk] | None,
    causal=False, cache=None) -> [B, Tq, D]``. Query ``t`` of a call sits at position ``t`` (plus the
    cache's offset during incremental decoding); key ``j`` at position ``j``.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        *,
        relative: RelativeKind = "xl",
        max_rel_pos: int = 15,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(dim, heads, dropout=dropout)
        if relative not in ("xl", "shaw"):
            raise ValueError(f"relative must be 'xl' or 'shaw', got {relative!r}")
        if max_rel_pos < 1:
            raise ValueError(f"max_rel_pos must be at least 1, got {max_rel_pos}")
        self.relative = relative
        self.max_rel_pos = max_rel_pos
        if relative == "xl":
            self.distance_proj = nn.Linear(dim, dim, bias=False)
            self.content_bias = nn.Parameter(torch.zeros(heads, self.head_dim))
            self.position_bias = nn.Parameter(torch.zeros(heads, self.head_dim))
        else:
            self.distance_keys = nn.Embedding(2 * max_rel_pos + 1, self.head_dim)
            nn.init.normal_(self.distance_keys.weight, std=self.head_dim**-0.5)

    def content_query(self, q: torch.Tensor) -> torch.Tensor:
        if self.relative == "xl":
            return q + rearrange(self.content_bias, "h d -> 1 h 1 d").to(q.dtype)
        return q

    def position_scores(
        self, q: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor, scale: float
    ) -> torch.Tensor:
        batch, heads = q.shape[:2]
        if self.relative == "xl":
            distances = rearrange(query_positions, "q -> q 1") - rearrange(key_positions, "k -> 1 k")
            smallest = int(query_positions[0] - key_positions[-1])
            all_distances = torch.arange(smallest, int(query_positions[-1] - key_positions[0]) + 1, device=q.device)
            encodings = self.distance_proj(sinusoid_table(all_distances, self.dim).to(q.dtype))
            encodings = rearrange(encodings, "r (h d) -> h r d", h=self.heads)
            query = (q + rearrange(self.position_bias, "h d -> 1 h 1 d").to(q.dtype)) * scale
            per_distance = query @ rearrange(encodings, "h r d -> 1 h d r")
            index = distances - smallest
        else:
            distances = rearrange(key_positions, "k -> 1 k") - rearrange(query_positions, "q -> q 1")
            per_distance = (q * scale) @ self.distance_keys.weight.to(q.dtype).T
            index = distances.clamp(-self.max_rel_pos, self.max_rel_pos) + self.max_rel_pos
        return per_distance.gather(-1, index.expand(batch, heads, *index.shape))
