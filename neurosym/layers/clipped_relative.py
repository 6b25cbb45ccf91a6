"""Shaw et al. (2018) attention with clipped relative positions, mostly inside one fused SDPA call.

The score of query ``i`` and key ``j`` is ``s_ij = scale·q_i·(k_j + a^K_c)`` and the output is
``Σ_j α_ij (v_j + a^V_c)`` with ``c = clip(j - i, ±R)``. Beyond the clipping distance the position terms
no longer depend on ``j``: every key left of ``i - R`` carries ``a_L = a_{-R}``, every key right of
``i + R`` carries ``a_U = a_{+R}``. The sequence is cut into blocks of an even number ``block >= 2(R - 1)``
of positions, and for the queries of each half of block ``b``

* the **window** — key blocks ``b-1, b`` for the first half, ``b, b+1`` for the second, which hold
  every key closer than ``R`` — is computed explicitly with the clipped terms (``[block/2, 2·block]``
  scores per half block, never ``[T, T]``);
* the **tails** — all other key blocks — go through one ``scaled_dot_product_attention`` call over
  keys ``k + a^K_L`` and values ``v + a^V_L``. Queries and keys gain one feature per key block: a key
  carries the one-hot of its block, a query the bias it gives that block — ``0`` left of its window,
  ``scale·q·(a^K_U - a^K_L)`` (divided by ``scale``) right of it, and a large negative number on its
  window (and right of it under a causal mask). The values carry the same one-hot, so the kernel
  also returns each block's share of the attention, which corrects the right tail's values by
  ``a^V_U - a^V_L`` and sums to the tails' total weight ``w'``.

The two parts are merged exactly through a *sink*: one extra key that every query sees, with score
``m_i`` (the largest window score of query ``i``, detached) and a value feature of its own. The kernel
returns in that feature the sink's weight ``w = e^m / (Z + e^m)``, and with ``η``, ``ζ`` the window's
numerator and normaliser relative to ``e^m`` (``ζ >= 1``: the largest term is ``e^0``) the output is
``(O + η w) / (w' + ζ w)``. The denominator is at least ``w' + w = 1``, so the merge cannot overflow,
underflow or divide by zero, whatever the scores. Gradients flow by autograd.

Restrictions (the caller computes explicit scores otherwise): self-attention over positions
``0 .. T-1`` (no decoding offset), no key padding, no attention dropout, and not float16, whose range
cannot hold the large negative block bias next to real scores.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange

_HIDDEN = -1e30  # bias of the key blocks a query must not see in the fused call


def default_block(length: int, max_rel_pos: int) -> int:
    """Block size: even, at least ``2(R - 1)`` (a half block's window must hold every unclipped
    distance), at least 32, and about ``1.2·√T``, which balances the window's ``2·block`` explicit keys
    per query against the ``T / block`` extra features of the fused call."""
    size = max(2 * (max_rel_pos - 1), 32, math.isqrt(3 * length // 2))
    return size + size % 2


def _blocks(x: torch.Tensor, block: int) -> torch.Tensor:
    """``[B, H, T, d]`` -> ``[B, H, n, block, d]``, zero-padding the end."""
    padded = -(-x.shape[2] // block) * block
    return rearrange(F.pad(x, (0, 0, 0, padded - x.shape[2])), "b h (n t) d -> b h n t d", t=block)


def _windows(x: torch.Tensor, block: int) -> torch.Tensor:
    """The keys seen by each half block: ``[B, H, T, d]`` -> ``[B, H, n, 2, 2·block, d]`` (blocks ``b-1, b``
    for the first half of block ``b``, blocks ``b, b+1`` for the second)."""
    blocks = F.pad(_blocks(x, block), (0, 0, 0, 0, 1, 1))
    pairs = torch.cat([blocks[:, :, :-1], blocks[:, :, 1:]], dim=3)  # pair j: blocks j-1 and j
    return torch.stack([pairs[:, :, :-1], pairs[:, :, 1:]], dim=3)


def _first_window_block(positions: torch.Tensor, block: int) -> torch.Tensor:
    """The first of the two key blocks in the window of the queries at ``positions``."""
    return positions // block - 1 + (positions % block >= block // 2).long()


def _window_part(
    scaled_q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    per_distance: torch.Tensor,
    value_table: torch.Tensor | None,
    max_rel_pos: int,
    causal: bool,
    block: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The keys of each query's window: ``(η [B, H, T, d], ζ [B, H, T], m [B, H, T])`` with ``m`` the
    largest window score (detached), ``ζ = Σ e^{s - m}`` and ``η = Σ e^{s - m} (v_j + a^V_c)``.

    ``scaled_q`` is ``scale·q``; ``per_distance [B, H, T, 2R + 1]`` holds its key terms ``scale·q_i·a^K_c``
    for every clipped distance.
    """
    length = scaled_q.shape[2]
    device = scaled_q.device
    halves = rearrange(_blocks(scaled_q, block), "b h n (two a) d -> b h n two a d", two=2)
    scores = halves @ _windows(k, block).transpose(-1, -2)  # [B, H, n, 2, block/2, 2·block]
    blocks = scores.shape[2]
    positions = torch.arange(blocks * block, device=device)
    query_pos = rearrange(positions, "(n two a) -> n two a 1", n=blocks, two=2)
    window_start = rearrange(_first_window_block(positions, block) * block, "(n two a) -> n two a 1", n=blocks, two=2)
    key_pos = window_start + torch.arange(2 * block, device=device)
    distance = key_pos - query_pos  # [n, 2, block/2, 2·block]
    allowed = (key_pos >= 0) & (key_pos < length)
    if causal:
        allowed = allowed & (distance <= 0)
    # one gather adds the key term of the clipped distance, or -inf (an extra column) where not allowed
    hidden = 2 * max_rel_pos + 1
    index = torch.where(allowed, distance.clamp(-max_rel_pos, max_rel_pos) + max_rel_pos, hidden).expand_as(scores)
    terms = rearrange(F.pad(_blocks(per_distance, block), (0, 1), value=float("-inf")), "b h n (two a) c -> b h n two a c", two=2)
    scores = scores + terms.gather(-1, index)
    with torch.no_grad():  # rows past the end of the sequence may see no key: keep their maximum finite
        top = scores.amax(dim=-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).min)
    weights = (scores - top).exp_()
    # a column of ones among the values makes the last output feature the normaliser Σ e^{s - m}
    numerator = weights @ _windows(F.pad(v, (0, 1), value=1.0), block)
    if value_table is not None:
        per_clipped = weights.new_zeros(*weights.shape[:-1], hidden + 1).scatter_add(-1, index, weights)
        numerator[..., :-1] += per_clipped[..., :hidden] @ value_table.to(weights.dtype)
    numerator = rearrange(numerator, "b h n two a d -> b h (n two a) d")[:, :, :length]
    return numerator[..., :-1], numerator[..., -1], rearrange(top, "b h n two a 1 -> b h (n two a)")[:, :, :length]


def _tail_part(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    key_table: torch.Tensor,
    value_table: torch.Tensor | None,
    top: torch.Tensor,
    scale: float,
    causal: bool,
    block: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The keys outside each query's window plus the sink, in one fused call: ``(O [B, H, T, d],
    w [B, H, T], w' [B, H, T])`` as in the module docstring."""
    batch, heads, length, head_dim = q.shape
    blocks = -(-length // block)
    width = head_dim + blocks + 1
    if q.device.type == "cuda":  # the fused CUDA kernels want aligned head sizes
        width = -(-width // 8) * 8
    spare = width - head_dim - blocks - 1
    positions = torch.arange(length, device=q.device)
    one_hot = F.one_hot(positions // block, blocks).to(q.dtype)  # [T, n]: each key's block
    first_window = rearrange(_first_window_block(positions, block), "t -> t 1")
    relative = rearrange(torch.arange(blocks, device=q.device), "c -> 1 c") - first_window  # [T, n]
    right = relative > 1
    visible = torch.where(relative < 0, 0.0, _HIDDEN).to(q.dtype)  # [T, n]: left tail 0, window hidden
    if causal:
        block_bias = visible.expand(batch, heads, length, blocks)
    else:
        right_shift = q @ (key_table[-1] - key_table[0]).to(q.dtype)  # [B, H, T], divided by scale
        block_bias = torch.where(right, rearrange(right_shift, "b h t -> b h t 1"), visible)
    extra = F.pad(one_hot, (0, 1 + spare)).expand(batch, heads, length, width - head_dim)  # keys' and values' features
    sink_score = rearrange(top / scale, "b h t -> b h t 1")
    query = F.pad(torch.cat([q, block_bias, sink_score], dim=-1), (0, spare))
    sink = q.new_zeros(batch, heads, 1, width)
    sink[..., head_dim + blocks] = 1.0
    keys = torch.cat([sink, torch.cat([k + key_table[0].to(k.dtype), extra], dim=-1)], dim=2)
    values = v if value_table is None else v + value_table[0].to(v.dtype)
    values = torch.cat([sink, torch.cat([values, extra], dim=-1)], dim=2)
    out = F.scaled_dot_product_attention(query, keys, values, scale=scale)
    shares = out[..., head_dim : head_dim + blocks]  # [B, H, T, n]
    output = out[..., :head_dim]
    if value_table is not None and not causal:
        right_share = (shares * right.to(shares.dtype)).sum(-1, keepdim=True)
        output = output + right_share * (value_table[-1] - value_table[0]).to(output.dtype)
    return output, out[..., head_dim + blocks], shares.sum(-1)


def clipped_relative_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    key_table: torch.Tensor,
    value_table: torch.Tensor | None,
    *,
    max_rel_pos: int,
    scale: float,
    causal: bool = False,
    block: int | None = None,
) -> torch.Tensor:
    """Shaw self-attention of ``q, k, v [B, H, T, d]`` (positions ``0 .. T-1``) -> ``[B, H, T, d]``.

    ``key_table``/``value_table [2R + 1, d]`` are the learned ``a^K``/``a^V`` rows of the clipped
    distances ``-R .. R`` (``value_table=None``: keys only); ``causal=True`` hides keys after the query;
    ``block`` (default :func:`default_block`) must be even and at least ``2(R - 1)``.
    """
    if q.dtype == torch.float16:
        raise ValueError("clipped_relative_attention needs float32, float64 or bfloat16 inputs, not float16")
    length = q.shape[2]
    block = default_block(length, max_rel_pos) if block is None else block
    if block < max(2 * (max_rel_pos - 1), 2) or block % 2:
        raise ValueError(f"block must be even and at least {max(2 * (max_rel_pos - 1), 2)} (2·(max_rel_pos - 1)), got {block}")
    scaled_q = q * scale
    per_distance = scaled_q @ key_table.to(q.dtype).T  # [B, H, T, 2R + 1]
    numerator, normaliser, top = _window_part(scaled_q, k, v, per_distance, value_table, max_rel_pos, causal, block)
    if length <= block:  # one block: every key lies in every query's window
        return numerator / normaliser[..., None]
    tail, sink_weight, tail_weight = _tail_part(q, k, v, key_table, value_table, top, scale, causal, block)
    return (tail + numerator * sink_weight[..., None]) / (tail_weight + normaliser * sink_weight)[..., None]
