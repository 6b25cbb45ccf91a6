"""Multi-head attention through ``torch.nn.functional.scaled_dot_product_attention``.

:class:`MultiheadAttention` is the vanilla (position-free) attention of Vaswani et al.; subclasses such
as :class:`neurosym.layers.relative_attention.RelativeMultiheadAttention` add positions either inside the
fused kernel, by extending queries, keys and values (:meth:`MultiheadAttention.attention_inputs`), or as
an explicit score term (:meth:`MultiheadAttention.position_scores`, and a value term with
:meth:`MultiheadAttention.position_values`).
All of them share the masking, the incremental-decoding cache and the fused kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import check_dtype_of, check_sequence, check_sizes, check_tensor
from neurosym.layers.value_checks import values_are_readable
from neurosym.training.checks import check_flags, dropout_probability


def check_attention_mask(attn_mask: torch.Tensor, batch: int, queries: int, keys: int) -> None:
    """Raise ``ValueError`` unless ``attn_mask`` is a bool ``[queries, keys]`` or ``[batch, queries, keys]`` tensor
    (``TypeError`` unless it is a tensor). A float mask is refused rather than read as scores to add: the layers take
    ``True`` where a query may attend."""
    check_tensor(attn_mask, "attn_mask (or None)")
    wanted = f"[{queries}, {keys}] or [{batch}, {queries}, {keys}]"
    if attn_mask.dtype != torch.bool:
        raise ValueError(
            f"attn_mask must be a bool tensor {wanted} with True where a query may attend to a key, got {attn_mask.dtype}"
        )
    if attn_mask.shape not in ((queries, keys), (batch, queries, keys)):
        raise ValueError(
            f"attn_mask must have shape [queries, keys] or [batch, queries, keys], here {wanted} (with a cache the keys "
            f"are every position fed so far), got {tuple(attn_mask.shape)}"
        )


@dataclass
class AttentionCache:
    """State kept by one attention module between incremental (token-by-token) decoding calls.

    ``keys`` and ``values`` are the projected keys/values seen so far, ``[B, heads, Tk, head_dim]``;
    ``position`` counts the query positions already processed, so that the next query is at absolute
    position ``position`` (in cross-attention too: relative or causal cross-attention depends on it). For
    self-attention every call appends its new keys; for cross-attention the keys of the (fixed) memory are
    projected on the first call and reused afterwards. ``self_attention`` says which kind of call filled the
    cache (``None`` while it is empty). A call that raises leaves the cache as it was.
    """

    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    position: int = 0
    self_attention: bool | None = None


class MultiheadAttention(nn.Module):
    """Scaled dot-product attention with ``heads`` heads over model dimension ``dim``; ``bias=False`` builds
    the query, key/value and output projections without biases (as the HINT release does).

    ``forward(query [B, Tq, D], key_value [B, Tk, D] | None, *, key_padding_mask [B, Tk] | None,
    attn_mask [Tq, Tk] | [B, Tq, Tk] | None, causal=False, cache=None) -> [B, Tq, D]``. ``key_value=None`` means
    self-attention. In ``key_padding_mask`` ``True`` marks a padding key that no query may attend to. ``attn_mask`` (bool)
    is ``True`` where a query may attend to a key, as in ``F.scaled_dot_product_attention`` (the opposite of
    ``nn.MultiheadAttention``'s bool masks); with a cache its keys are every key so far, ``Tk = T_seen + Tq``.
    ``causal=True`` lets the query at position ``i`` see only keys at positions ``<= i``. The three masks combine: a
    query attends to the keys all of them allow, and a query they leave no key gets zeros (before the output
    projection), as ``F.scaled_dot_product_attention`` gives. ``device`` and ``dtype`` are torch's factory keyword
    arguments (:mod:`neurosym.layers.factory`): the projections are created there.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        dim, heads = check_sizes(dim=dim, heads=heads)
        check_flags(bias=bias)
        if dim % heads:
            raise ValueError(f"dim ({dim}) must be a positive multiple of heads ({heads})")
        dropout = dropout_probability(dropout)
        self.dim = dim
        self.heads = heads
        self.head_dim = dim // heads
        self.dropout = dropout
        self.query_proj = nn.Linear(dim, dim, bias=bias, **factory)
        self.key_value_proj = nn.Linear(dim, 2 * dim, bias=bias, **factory)
        self.out_proj = nn.Linear(dim, dim, bias=bias, **factory)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``[B, T, D] -> [B, heads, T, head_dim]``."""
        return rearrange(x, "b t (h d) -> b h t d", h=self.heads)

    def attention_inputs(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The queries, keys and values the dot-product attention sees: ``q [B, H, Tq, d]``,
        ``k, v [B, H, Tk, d]`` -> ``[B, H, Tq, e]``, ``[B, H, Tk, e]``, ``[B, H, Tk, e]`` with ``e >= d``
        (only the first ``d`` output features are kept). Vanilla attention uses them as they are."""
        return q, k, v

    def position_scores(
        self, q: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor, scale: float
    ) -> torch.Tensor | None:
        """Position-dependent scores ``[B, H, Tq, Tk]`` (already multiplied by ``scale``) added to the
        scaled ``q·k``; ``None`` for vanilla attention. May be modified in place by the caller."""
        return None

    def position_values(
        self, weights: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor
    ) -> torch.Tensor | None:
        """Position-dependent values ``[B, H, Tq, d]`` added to ``weights @ v`` (``weights [B, H, Tq, Tk]``
        are the attention probabilities); ``None`` when values carry no position, as in vanilla attention."""
        return None

    def _attend_with_bias(
        self,
        content: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        bias: torch.Tensor,
        allowed: torch.Tensor | None,
        dropout: float,
        positions: tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        """``softmax(content·kᵀ + bias) v`` (plus :meth:`position_values`) with the scores accumulated
        into ``bias`` in place.

        A bias that requires gradients rules out the fused SDPA kernels; this explicit version does in
        one pass what SDPA's fallback does in several, and as SDPA a query with no allowed key gets zeros.
        Shapes: ``content, k, v [B, H, T, d]``, ``bias [B, H, Tq, Tk]``, ``allowed [B or 1, 1, Tq, Tk]`` bool or
        ``None``; ``positions`` are the query and key positions ``[Tq]``, ``[Tk]``.
        """
        flat = rearrange(bias, "b h q k -> (b h) q k")
        flat.baddbmm_(rearrange(content, "b h q d -> (b h) q d"), rearrange(k, "b h k d -> (b h) d k"))
        blind = None
        if allowed is not None:  # a query that may see no key (causal, left padding) attends to nothing, as in SDPA:
            blind = ~allowed.any(dim=-1, keepdim=True)  # its scores stay finite, so its zero weights pass finite gradients
            bias.masked_fill_(~(allowed | blind), float("-inf"))
        weights = torch.softmax(bias, dim=-1)
        if blind is not None:
            weights = weights.masked_fill(blind, 0.0)
        weights = F.dropout(weights, dropout)
        out = weights @ v
        offsets = self.position_values(weights, *positions)
        return out if offsets is None else out + offsets

    def attend(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        *,
        offset: int,
        key_padding_mask: torch.Tensor | None,
        causal: bool,
        dropout: float,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Attention of the projected heads ``q [B, H, Tq, d]`` over ``k, v [B, H, Tk, d]`` -> ``[B, H, Tq, e]``
        (``e >= d``; the first ``d`` features are the output). The first query sits at position ``offset``,
        the keys at ``0 .. Tk-1``; ``dropout`` is the attention dropout in effect; ``attn_mask [Tq, Tk] | [B, Tq, Tk]``
        is ``True`` where a query may attend."""
        num_queries, num_keys = q.shape[2], k.shape[2]
        query_positions = torch.arange(offset, offset + num_queries, device=q.device)
        key_positions = torch.arange(num_keys, device=q.device)
        scale = self.head_dim**-0.5
        positional = self.position_scores(q, query_positions, key_positions, scale)
        q, k, v = self.attention_inputs(q, k, v, query_positions, key_positions)
        plain_causal = offset == 0 and num_queries == num_keys
        unmasked = key_padding_mask is None and attn_mask is None
        if positional is None and unmasked and (not causal or plain_causal):
            return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout, is_causal=causal, scale=scale)
        masked = not unmasked or causal
        allowed = self._allowed(query_positions, key_positions, key_padding_mask, causal, attn_mask) if masked else None
        if positional is None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout, scale=scale)
        positions = (query_positions, key_positions)
        return self._attend_with_bias(q * scale, k, v, positional, allowed, dropout, positions)

    def forward(
        self,
        query: torch.Tensor,
        key_value: torch.Tensor | None = None,
        *,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        causal: bool = False,
        cache: AttentionCache | None = None,
    ) -> torch.Tensor:
        """``query [B, Tq, D]`` attending to ``key_value [B, Tk, D]`` (``None``: to itself) -> ``[B, Tq, D]``;
        ``key_padding_mask``, ``attn_mask``, ``causal`` and ``cache`` as the class describes."""
        self.check_inputs(query, key_value, key_padding_mask=key_padding_mask, attn_mask=attn_mask, causal=causal, cache=cache)
        causal = bool(causal)  # (numpy's bool failed in SDPA, and only where no mask was given)
        q = self.split_heads(self.query_proj(query))
        k, v, offset = self._keys_values(query, key_value, cache)
        dropout = self.dropout if self.training else 0.0
        out = self.attend(
            q, k, v, offset=offset, key_padding_mask=key_padding_mask, causal=causal, dropout=dropout, attn_mask=attn_mask
        )
        return self.out_proj(rearrange(out[..., : self.head_dim], "b h t d -> b t (h d)"))

    def _keys_values(
        self, query: torch.Tensor, key_value: torch.Tensor | None, cache: AttentionCache | None
    ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Projected keys and values ``[B, H, Tk, d]`` (of ``query`` itself when ``key_value`` is ``None``) and the
        absolute position of the first query."""
        self_attention = key_value is None
        source = query if key_value is None else key_value
        if cache is None:
            k, v = self.split_heads(self.key_value_proj(source)).chunk(2, dim=-1)
            return k, v, 0
        offset = cache.position
        keys, values = cache.keys, cache.values  # both None before the first call, both set after it
        if self_attention or keys is None or values is None:
            k, v = self.split_heads(self.key_value_proj(source)).chunk(2, dim=-1)
            if self_attention and keys is not None and values is not None:
                k, v = torch.cat([keys, k], dim=2), torch.cat([values, v], dim=2)
            keys, values = k, v
            cache.keys, cache.values, cache.self_attention = k, v, self_attention
        cache.position += query.shape[1]
        return keys, values, offset

    @staticmethod
    def _allowed(
        query_positions: torch.Tensor,
        key_positions: torch.Tensor,
        key_padding_mask: torch.Tensor | None,
        causal: bool,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Boolean ``[B or 1, 1, Tq, Tk]`` mask, ``True`` where a query may attend to a key (``attn_mask [Tq, Tk] |
        [B, Tq, Tk]``: ``True`` where it may)."""
        shape = (1, 1, query_positions.shape[0], key_positions.shape[0])
        allowed = torch.ones(shape, dtype=torch.bool, device=query_positions.device)
        if causal:
            allowed = allowed & (rearrange(key_positions, "k -> 1 1 1 k") <= rearrange(query_positions, "q -> 1 1 q 1"))
        if key_padding_mask is not None:
            allowed = allowed & ~rearrange(key_padding_mask, "b k -> b 1 1 k")
        if attn_mask is not None:
            allowed = allowed & attn_mask.reshape(-1, 1, *attn_mask.shape[-2:])  # ([1 or B, 1, Tq, Tk])
        return allowed

    def check_inputs(
        self,
        query: torch.Tensor,
        key_value: torch.Tensor | None = None,
        *,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        causal: bool = False,
        cache: AttentionCache | None = None,
        key_value_name: str = "key_value",
        mask_name: str = "key_padding_mask",
    ) -> None:
        """Raise ``ValueError`` (``TypeError`` for a non-tensor or a ``cache`` that is no :class:`AttentionCache`) unless
        :meth:`forward` takes these arguments; it runs
        before anything changes, so a layer may check a later call before an earlier one advances its cache. The
        messages call ``key_value`` and ``key_padding_mask`` by ``key_value_name`` and ``mask_name``: the names a layer
        that calls this one was given them by (a decoder's ``memory`` and ``memory_padding_mask``).

        A batch element whose keys are all padding is refused, except in causal self-attention with a ``cache``: there
        the keys so far are a prefix of the element's (left padding), and its queries get zeros, as in the full call."""
        check_sequence(query, self.dim, "query")
        check_dtype_of(query, self, "query")
        check_flags(causal=causal)
        if cache is not None and not isinstance(cache, AttentionCache):  # (a dict failed on its own keys method)
            raise TypeError(f"cache must be an AttentionCache (or None), got {type(cache).__name__}")
        if key_value is not None:
            check_sequence(key_value, self.dim, key_value_name, batch=query.shape[0])
            check_dtype_of(key_value, self, key_value_name)
            if key_value.shape[1] == 0:  # SDPA returned the output projection's bias for every query
                raise ValueError(f"{key_value_name} has no positions: nothing to attend to")
        if cache is not None and cache.keys is not None:
            self._check_cache(cache, query, key_value)
        if key_padding_mask is not None:
            check_tensor(key_padding_mask, f"{mask_name} (or None)")  # (a list failed on list.dtype)
            if key_padding_mask.dtype != torch.bool or key_padding_mask.dim() != 2:
                raise ValueError(f"{mask_name} must be a bool tensor [batch, keys] with True marking padding")
            if key_padding_mask.shape[0] != query.shape[0]:
                raise ValueError(f"{mask_name} has batch {key_padding_mask.shape[0]}, query has {query.shape[0]}")
            keys = self._key_count(query, key_value, cache)
            if key_padding_mask.shape[1] != keys:
                raise ValueError(f"{mask_name} covers {key_padding_mask.shape[1]} keys, but there are {keys}")
            fully_padded = key_padding_mask.all(dim=1)
            incremental = causal and key_value is None and cache is not None  # later keys are still to come
            if not incremental and values_are_readable(fully_padded) and fully_padded.any():
                row = int(fully_padded.nonzero()[0, 0])
                raise ValueError(f"every key of batch element {row} is padding: nothing to attend to")
        if attn_mask is not None:
            check_attention_mask(attn_mask, query.shape[0], query.shape[1], self._key_count(query, key_value, cache))

    @staticmethod
    def _key_count(query: torch.Tensor, key_value: torch.Tensor | None, cache: AttentionCache | None) -> int:
        """The keys a call attends over: the memory's, or in self-attention the query's plus those of a cache."""
        if key_value is not None:
            return key_value.shape[1]
        return query.shape[1] + (cache.position if cache is not None else 0)

    @staticmethod
    def _check_cache(cache: AttentionCache, query: torch.Tensor, key_value: torch.Tensor | None) -> None:
        """Raise ``ValueError`` unless a filled ``cache`` fits this call, by shapes and devices alone (the values are
        never compared: a memory of the same shape is taken for the same one)."""
        keys = cache.keys
        assert keys is not None  # checked by the caller
        if keys.shape[0] != query.shape[0]:
            raise ValueError(
                f"this cache holds the keys of a batch of {keys.shape[0]}, the query has {query.shape[0]}: "
                "a new batch needs a new AttentionCache"
            )
        if keys.device != query.device:
            raise ValueError(
                f"this cache holds keys on {keys.device}, the query is on {query.device}: a new device needs a new AttentionCache"
            )
        if cache.self_attention != (key_value is None):
            mine, other = ("self", "cross") if cache.self_attention else ("cross", "self")
            raise ValueError(f"this cache belongs to a {mine}-attention module, not to a {other}-attention one")
        if key_value is not None and key_value.shape[1] != keys.shape[2]:
            # with the cached keys of the first memory, a memory of another length was silently ignored
            raise ValueError(
                f"this cache holds the keys of a memory of {keys.shape[2]} positions, the memory (key_value) has "
                f"{key_value.shape[1]}: a new memory needs a new AttentionCache"
            )
