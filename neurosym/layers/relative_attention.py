"""Attention whose scores depend on the distance between query and key, not on absolute positions.

Two encodings (selected with ``relative=``):

* ``"xl"`` — Transformer-XL (Dai et al. 2019) as used by Csordás et al. (2021): the score of query ``i``
  and key ``j`` is ``(q_i + u)·k_j + (q_i + v)·(W_r r_{i-j})`` where ``r_d`` is the sinusoid of the
  distance ``d`` (``position_dim`` features, default ``head_dim``; Transformer-XL uses ``dim``), ``W_r`` a
  learned projection and ``u``, ``v`` learned per-head biases. Since ``sin((i-j)ω)`` and ``cos((i-j)ω)``
  expand into products of functions of ``i`` and of ``j``, the position term is a dot product of an
  extended query ``[B, H, Tq, position_dim]`` with the key-side features ``[cos(jω), sin(jω)]``: XL
  attention runs entirely in the fused ``scaled_dot_product_attention`` kernel on queries and keys of
  ``head_dim + position_dim`` features (values zero-padded to match); without dropout the CPU and CUDA
  kernels never materialise the ``[Tq, Tk]`` scores.
* ``"xl_clipped"`` — the same with the distance clipped to ``±max_rel_pos`` before the sinusoid,
  ``r_{clip(i-j)}``, as in the HINT release (``max_rel_pos = 15``): distances beyond the clip, which a
  model trained on short sequences never sees, all look like the largest one it has seen. The clip breaks
  the product form above, so the position term is computed per clipped distance (``[B, H, Tq, 2R+1]``)
  and spread over the ``[Tq, Tk]`` scores by an index gather, like Shaw's.
* ``"shaw"`` — Shaw et al. (2018): learned vectors per clipped distance ``c = clip(j - i, ±max_rel_pos)``
  are added to the key and (with ``shaw_values=True``, the default, as in the paper) to the value:
  scores ``q_i·k_j + q_i·a^K_c`` and output ``Σ_j α_ij (v_j + a^V_c)``. The value term is computed
  per distance too: the attention weights are summed per clipped distance (``[B, H, Tq, 2R+1]``)
  and multiplied with the ``a^V`` table.

The clipped encodings' key terms are computed once per clipped distance (``[B, H, Tq, 2R+1]``) and spread
over the ``[Tq, Tk]`` grid by an index gather.
"""

from __future__ import annotations

from typing import Literal, get_args

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from neurosym.layers.attention import MultiheadAttention
from neurosym.layers.factory import factory_kwargs
from neurosym.layers.positional import sinusoid_angles, sinusoid_table
from neurosym.layers.shape_checks import check_sizes
from neurosym.training.checks import check_flags, ignored_option

RelativeKind = Literal["xl", "xl_clipped", "shaw"]
RELATIVE_KINDS: tuple[str, ...] = get_args(RelativeKind)
"""The relative position encodings of :class:`RelativeMultiheadAttention`."""

MAX_REL_POS = 15
"""The default clipping distance of ``"xl_clipped"`` and ``"shaw"`` attention (the HINT release's)."""


def check_relative_kind(relative: object) -> None:
    """Raise ``ValueError`` unless ``relative`` is one of :data:`RELATIVE_KINDS`."""
    if relative not in RELATIVE_KINDS:
        raise ValueError(f"relative must be one of {', '.join(map(repr, RELATIVE_KINDS))}, got {relative!r}")


def check_max_rel_pos(kind: str, max_rel_pos: object) -> None:
    """``ValueError`` when ``max_rel_pos`` is set away from :data:`MAX_REL_POS` for an attention ``kind`` that clips
    no distance (``"vanilla"``, ``"xl"``) and would ignore it."""
    if kind not in ("xl_clipped", "shaw") and max_rel_pos != MAX_REL_POS:
        raise ignored_option("max_rel_pos", max_rel_pos, "'xl_clipped' and 'shaw' attention", f"{kind!r} attention")


def _odd_position_dim(position_dim: int, from_heads: bool, dim: int, heads: int) -> str:
    """The message for an odd ``position_dim``; one left out is the head width ``dim / heads``, and a model that builds
    the attention (a seq2seq Transformer) has only its ``dim`` and ``heads`` to change."""
    if from_heads:
        return (
            f"XL attention encodes distances in head_dim = dim / heads = {dim} / {heads} = {position_dim} sinusoid "
            f"features, which must be an even number: choose dim and heads of an even quotient (or an even position_dim)"
        )
    return f"position_dim must be a positive even number, got {position_dim}"


class _DistanceTable(nn.Embedding):
    """One vector per clipped distance, ``[2R + 1, head_dim]``, initialised ``N(0, 1 / head_dim)`` by
    :meth:`reset_parameters` (so that deferred initialisation, which calls it, draws them as the constructor does)."""

    def reset_parameters(self) -> None:
        super().reset_parameters()  # (drawn N(0, 1) first, then redrawn: seeded models keep their initial values)
        nn.init.normal_(self.weight, std=self.embedding_dim**-0.5)


class RelativeMultiheadAttention(MultiheadAttention):
    """Multi-head attention with relative positions; same call signature as :class:`MultiheadAttention`.

    ``forward(query [B, Tq, D], key_value [B, Tk, D] | None, *, key_padding_mask [B, Tk] | None,
    causal=False, cache=None) -> [B, Tq, D]``. Query ``t`` of a call sits at position ``t`` (plus the
    cache's offset during incremental decoding); key ``j`` at position ``j``. ``max_rel_pos`` configures
    ``"shaw"`` and ``"xl_clipped"``, ``shaw_values`` ``"shaw"``, ``position_dim`` (even; default
    ``head_dim``, which must then be even, else ``ValueError`` naming ``dim`` and ``heads``) ``"xl"`` and
    ``"xl_clipped"``; an option set away from its default for a kind that does not read it raises ``ValueError``.
    After construction ``relative`` is ``"xl"`` or ``"shaw"`` and ``clipped`` says whether XL distances are clipped.
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`), as in
    :class:`MultiheadAttention`.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        *,
        relative: RelativeKind = "xl",
        max_rel_pos: int = MAX_REL_POS,
        shaw_values: bool = True,
        position_dim: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(dim, heads, dropout=dropout, bias=bias, device=device, dtype=dtype)
        factory = factory_kwargs(device, dtype, type(self).__name__)
        check_relative_kind(relative)
        (max_rel_pos,) = check_sizes(max_rel_pos=max_rel_pos)  # 2.5 was clipped at 2.5
        check_max_rel_pos(relative, max_rel_pos)
        check_flags(shaw_values=shaw_values)
        if relative == "shaw" and position_dim is not None:
            raise ValueError("position_dim belongs to relative='xl'; Shaw attention learns one vector per distance")
        if relative != "shaw" and not shaw_values:
            raise ignored_option("shaw_values", shaw_values, "relative='shaw'", f"relative={relative!r}")
        self.clipped = relative == "xl_clipped"
        self.relative = "xl" if self.clipped else relative
        self.max_rel_pos = max_rel_pos
        if self.relative == "xl":
            # (4.0 failed inside torch)
            self.position_dim = self.head_dim if position_dim is None else check_sizes(position_dim=position_dim)[0]
            if self.position_dim % 2:
                raise ValueError(_odd_position_dim(self.position_dim, position_dim is None, self.dim, self.heads))
            self.distance_proj = nn.Linear(self.position_dim, dim, bias=False, **factory)
            self.content_bias = nn.Parameter(torch.zeros(heads, self.head_dim, **factory))
            self.position_bias = nn.Parameter(torch.zeros(heads, self.head_dim, **factory))
        else:
            self.distance_keys = _DistanceTable(2 * max_rel_pos + 1, self.head_dim, **factory)
            self.distance_values = _DistanceTable(2 * max_rel_pos + 1, self.head_dim, **factory) if shaw_values else None

    def reset_parameters(self) -> None:
        """XL's biases ``u`` and ``v`` back to 0 (the projections and Shaw's tables reset themselves), as torch's
        deferred initialisation calls it after ``to_empty``."""
        if self.relative == "xl":
            with torch.no_grad():
                self.content_bias.zero_()
                self.position_bias.zero_()

    def attention_inputs(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """XL: ``[q + u, position query]``, ``[k, cos(jω), sin(jω)]`` and ``[v, 0]`` (``head_dim +
        position_dim`` features each); clipped XL: ``q + u`` and ``k, v`` (its position term is explicit);
        Shaw: unchanged (its terms are explicit)."""
        if self.relative != "xl":
            return q, k, v
        if self.clipped:
            return self._content_queries(q), k, v
        batch, heads = q.shape[:2]
        # (q + v)·W_r r_{i-j} = p·[sin((i-j)ω), cos((i-j)ω)] with p = W_rᵀ (q + v) = [p_sin, p_cos]
        p_sin, p_cos = self._position_queries(q).chunk(2, -1)
        query_angles = sinusoid_angles(query_positions, self.position_dim, q.dtype)
        key_angles = sinusoid_angles(key_positions, self.position_dim, q.dtype)
        sin_i, cos_i = query_angles.sin().to(q.dtype), query_angles.cos().to(q.dtype)
        # sin(a-b) = sin a cos b - cos a sin b;  cos(a-b) = cos a cos b + sin a sin b
        query = torch.cat(
            [
                self._content_queries(q),
                p_sin * sin_i + p_cos * cos_i,  # multiplies cos(jω)
                p_cos * sin_i - p_sin * cos_i,  # multiplies sin(jω)
            ],
            dim=-1,
        )
        key_features = torch.cat([key_angles.cos(), key_angles.sin()], dim=-1).to(k.dtype)
        key = torch.cat([k, key_features.expand(batch, heads, *key_features.shape)], dim=-1)
        value = F.pad(v, (0, self.position_dim))
        return query, key, value

    def _content_queries(self, q: torch.Tensor) -> torch.Tensor:
        """XL's ``q + u``: ``[B, H, Tq, head_dim]``, the queries of the content term ``(q + u)·k``."""
        return q + rearrange(self.content_bias, "h d -> 1 h 1 d").to(q.dtype)

    def _biased_position_queries(self, q: torch.Tensor) -> torch.Tensor:
        """XL's ``q + v``: ``[B, H, Tq, head_dim]``, the queries of the position term ``(q + v)·W_r r``."""
        return q + rearrange(self.position_bias, "h d -> 1 h 1 d").to(q.dtype)

    def _position_queries(self, q: torch.Tensor) -> torch.Tensor:
        """XL's ``W_rᵀ (q + v)`` per head: ``q [B, H, Tq, head_dim]`` -> ``[B, H, Tq, position_dim]``, the
        vector whose dot product with the distance sinusoid ``r_d = [sin(dω), cos(dω)]`` is the position term."""
        projection = rearrange(self.distance_proj.weight, "(h d) p -> h d p", h=q.shape[1]).to(q.dtype)
        return self._biased_position_queries(q) @ projection

    def position_scores(
        self, q: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor, scale: float
    ) -> torch.Tensor | None:
        """The scaled position term ``[B, H, Tq, Tk]`` computed per clipped distance: Shaw's
        ``q_i·a^K_{clip(j-i)}``, or clipped XL's ``(q_i + v)·W_r r_{clip(i-j)}``; ``None`` for XL."""
        if self.relative == "shaw":
            per_distance = (q * scale) @ self.distance_keys.weight.to(q.dtype).T
        elif self.clipped:
            per_distance = (self._biased_position_queries(q) * scale) @ self._clipped_distance_keys(q.dtype).mT
        else:
            return None
        index = self._clipped_distances(query_positions, key_positions)
        return per_distance.gather(-1, index.expand(*q.shape[:2], *index.shape))

    def _clipped_distance_keys(self, dtype: torch.dtype) -> torch.Tensor:
        """Clipped XL's ``P_c = W_r r_c`` per head, ``[H, 2R + 1, head_dim]``, for ``c = j - i = -R .. R`` (the
        order of the Shaw tables; the sinusoid ``r = [sin, cos]`` takes the distance ``i - j``)."""
        weight = self.distance_proj.weight
        distances = torch.arange(self.max_rel_pos, -self.max_rel_pos - 1, -1, device=weight.device)
        keys = sinusoid_table(distances, self.position_dim, weight.dtype) @ weight.T
        return rearrange(keys, "c (h d) -> h c d", h=self.heads).to(dtype)

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
