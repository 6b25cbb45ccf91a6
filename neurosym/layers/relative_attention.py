"""Attention whose scores depend on the distance between query and key, not on absolute positions.

Two encodings (selected with ``relative=``):

* ``"xl"`` — Transformer-XL (Dai et al. 2019) as used by Csordás et al. (2021): the score of query ``i``
  and key ``j`` is ``(q_i + u)·k_j + (q_i + v)·(W_r r_{i-j})`` where ``r_d`` is the sinusoid of the
  distance ``d``, ``W_r`` a learned projection and ``u``, ``v`` learned per-head biases.
* ``"shaw"`` — Shaw et al. (2018): learned vectors per clipped distance ``c = clip(j - i, ±max_rel_pos)``
  are added to the key and (with ``shaw_values=True``, the default, as in the paper) to the value:
  scores ``q_i·k_j + q_i·a^K_c`` and output ``Σ_j α_ij (v_j + a^V_c)``. The value term is computed
  per distance too: the attention weights are summed per clipped distance (``[B, H, Tq, 2R+1]``)
  and multiplied with the ``a^V`` table.

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
        shaw_values: bool = True,
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
            self.distance_values = nn.Embedding(2 * max_rel_pos + 1, self.head_dim) if shaw_values else None
            if self.distance_values is not None:
                nn.init.normal_(self.distance_values.weight, std=self.head_dim**-0.5)

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
            per_distance = (q * scale) @ self.distance_keys.weight.to(q.dtype).T
            index = self._clipped_distances(query_positions, key_positions)
        return per_distance.gather(-1, index.expand(batch, heads, *index.shape))

    def _clipped_distances(self, query_positions: torch.Tensor, key_positions: torch.Tensor) -> torch.Tensor:
        """Index ``[Tq, Tk]`` of ``clip(j - i, ±max_rel_pos)`` into the Shaw tables (0 .. 2·max_rel_pos)."""
        distances = rearrange(key_positions, "k -> 1 k") - rearrange(query_positions, "q -> q 1")
        return distances.clamp(-self.max_rel_pos, self.max_rel_pos) + self.max_rel_pos

    def position_values(
        self, weights: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> torch.Tensor | None:
        """Shaw's value term ``Σ_j α_ij a^V_{clip(j-i)}``: ``weights [B, H, Tq, Tk]`` -> ``[B, H, Tq, d]``."""
        if self.relative != "shaw" or self.distance_values is None:
            return None
        index = self._clipped_distances(query_positions, key_positions).expand_as(weights)
        per_distance = weights.new_zeros(*weights.shape[:-1], self.distance_values.num_embeddings)
        per_distance = per_distance.scatter_add(-1, index, weights)
        return per_distance @ self.distance_values.weight.to(weights.dtype)
