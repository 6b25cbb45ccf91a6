"""Transformer encoder and decoder layers and stacks, with vanilla or relative self-attention.

``attention="vanilla"`` uses :class:`MultiheadAttention` (add absolute positions to the inputs
yourself, e.g. with :class:`neurosym.layers.positional.SinusoidalPositionalEncoding`); ``"xl"`` and
``"shaw"`` use :class:`RelativeMultiheadAttention` in self-attention. Decoder cross-attention is always
vanilla: positions of the source and of the target are not comparable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, Literal, TypeVar

import torch
from torch import nn

from neurosym.layers.attention import AttentionCache, MultiheadAttention
from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.relative_attention import MAX_REL_POS, RelativeMultiheadAttention, check_max_rel_pos
from neurosym.layers.shape_checks import check_dtype_of, check_sequence, check_sizes
from neurosym.training.checks import check_flags

AttentionKind = Literal["vanilla", "xl", "xl_clipped", "shaw"]


def make_attention(
    kind: AttentionKind,
    dim: int,
    heads: int,
    *,
    dropout: float = 0.0,
    max_rel_pos: int = MAX_REL_POS,
    bias: bool = True,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> MultiheadAttention:
    """The attention module named by ``kind``: ``"vanilla"``, or ``"xl"``, ``"xl_clipped"`` or ``"shaw"``
    (:class:`~neurosym.layers.relative_attention.RelativeMultiheadAttention`; ``max_rel_pos`` clips the
    distances of the last two, and raises ``ValueError`` when set away from its default for the others, which would
    ignore it); ``bias`` gives its query, key/value and output projections biases; ``device`` and ``dtype`` are
    passed to it (torch's factory keyword arguments)."""
    factory = factory_kwargs(device, dtype, "make_attention")
    if kind == "vanilla":
        check_max_rel_pos(kind, max_rel_pos)
        return MultiheadAttention(dim, heads, dropout=dropout, bias=bias, **factory)
    if kind in ("xl", "xl_clipped", "shaw"):
        return RelativeMultiheadAttention(
            dim, heads, relative=kind, max_rel_pos=max_rel_pos, dropout=dropout, bias=bias, **factory
        )
    raise ValueError(f"unknown attention kind {kind!r}: use 'vanilla', 'xl', 'xl_clipped' or 'shaw'")


class FeedForward(nn.Sequential):
    """Position-wise ``Linear(dim, ff_dim) -> ReLU -> Dropout -> Linear(ff_dim, dim)``; ``[B, T, D] -> [B, T, D]``; the
    linear layers created as ``factory`` says."""

    def __init__(self, dim: int, ff_dim: int, dropout: float, factory: FactoryKwargs) -> None:
        dim, ff_dim = check_sizes(dim=dim, ff_dim=ff_dim)
        super().__init__(nn.Linear(dim, ff_dim, **factory), nn.ReLU(), nn.Dropout(dropout), nn.Linear(ff_dim, dim, **factory))


class _Residual(nn.Module):
    """``x + dropout(f(norm(x)))`` (pre-norm) or ``norm(x + dropout(f(x)))`` (post-norm); the norm created as
    ``factory`` says."""

    def __init__(self, dim: int, dropout: float, pre_norm: bool, factory: FactoryKwargs) -> None:
        super().__init__()
        check_flags(pre_norm=pre_norm)
        self.norm = nn.LayerNorm(dim, **factory)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def forward(self, x: torch.Tensor, sublayer: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        if self.pre_norm:
            return x + self.dropout(sublayer(self.norm(x)))
        return self.norm(x + self.dropout(sublayer(x)))


class TransformerEncoderLayer(nn.Module):
    """Self-attention then feed-forward, each in a residual block (``attention_bias=False``: attention
    projections without biases).

    ``forward(x [B, T, D], key_padding_mask [B, T] | None, *, attn_mask=None, causal=False, cache=None) -> [B, T, D]``
    (``True`` marks padding); ``causal=True`` lets position ``t`` attend to positions ``<= t`` only, so ``out[:, t]`` reads
    ``x[:, :t + 1]`` alone (a decoder-only, GPT-style layer), in every attention kind. ``attn_mask [T, T] | [B, T, T]``
    (bool, ``True`` where position ``i`` may attend to position ``j``) restricts the self-attention further, combined
    with the other two as in :class:`MultiheadAttention` (a position left no key gets zeros from attention). With
    ``causal=True`` an :class:`AttentionCache` lets the layer be fed the sequence a few positions per call (incremental
    decoding): ``x [B, T_new, D]`` are the positions after those of the earlier calls, and ``key_padding_mask [B, T_seen +
    T_new]`` covers every position fed so far, as in :class:`MultiheadAttention` (``attn_mask`` then has ``T_new`` rows
    of ``T_seen + T_new`` keys). ``device`` and ``dtype`` are torch's factory keyword arguments
    (:mod:`neurosym.layers.factory`): every sub-layer is created there.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        ff_dim: int,
        dropout: float = 0.1,
        *,
        attention: AttentionKind = "vanilla",
        pre_norm: bool = True,
        max_rel_pos: int = MAX_REL_POS,
        attention_bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        self.dim = dim = check_sizes(dim=dim)[0]
        self.self_attention = make_attention(
            attention, dim, heads, dropout=dropout, max_rel_pos=max_rel_pos, bias=attention_bias, **factory
        )
        self.feed_forward = FeedForward(dim, ff_dim, dropout, factory)
        self.attention_block = _Residual(dim, dropout, pre_norm, factory)
        self.feed_forward_block = _Residual(dim, dropout, pre_norm, factory)

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        *,
        attn_mask: torch.Tensor | None = None,
        causal: bool = False,
        cache: AttentionCache | None = None,
    ) -> torch.Tensor:
        """``x [B, T, D]`` -> ``[B, T, D]``: self-attention, then feed-forward; ``key_padding_mask [B, T]`` (``True``
        marks padding), ``attn_mask``, ``causal`` and ``cache`` as the class describes."""
        check_sequence(x, self.dim, "the input")
        check_dtype_of(x, self, "the input")
        check_cache_is_causal(cache, causal=causal)
        x = self.attention_block(
            x,
            lambda h: self.self_attention(h, key_padding_mask=key_padding_mask, attn_mask=attn_mask, causal=causal, cache=cache),
        )
        return self.feed_forward_block(x, self.feed_forward)


def check_cache_is_causal(cache: object, *, causal: bool) -> None:
    """Raise ``ValueError`` for a ``causal`` that is no bool (``"no"`` ran causally), or a ``cache`` (not ``None``)
    without ``causal=True``."""
    check_flags(causal=causal)
    if cache is not None and not causal:
        raise ValueError(
            "a cache needs causal=True: without it a position reads later ones, which an incremental call has not seen"
        )


class DecoderLayerCache:
    """The two attention caches of one decoder layer (causal self-attention and cross-attention)."""

    def __init__(self) -> None:
        self.self_attention = AttentionCache()
        self.cross_attention = AttentionCache()

    @property
    def position(self) -> int:
        """The target positions fed so far (both attention caches count them)."""
        return self.self_attention.position


class TransformerDecoderLayer(nn.Module):
    """Causal self-attention, cross-attention to the encoder memory, then feed-forward.

    ``forward(x [B, T, D], memory [B, S, D], *, memory_padding_mask [B, S] | None, cache) -> [B, T, D]``.
    With a :class:`DecoderLayerCache` the layer may be fed one new target position per call. ``device`` and ``dtype``
    are torch's factory keyword arguments (:mod:`neurosym.layers.factory`): every sub-layer is created there.
    """

    def __init__(
        self,
        dim: int,
        heads: int,
        ff_dim: int,
        dropout: float = 0.1,
        *,
        attention: AttentionKind = "vanilla",
        pre_norm: bool = True,
        max_rel_pos: int = MAX_REL_POS,
        attention_bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        self.dim = dim = check_sizes(dim=dim)[0]
        self.self_attention = make_attention(
            attention, dim, heads, dropout=dropout, max_rel_pos=max_rel_pos, bias=attention_bias, **factory
        )
        self.cross_attention = MultiheadAttention(dim, heads, dropout=dropout, bias=attention_bias, **factory)
        self.feed_forward = FeedForward(dim, ff_dim, dropout, factory)
        self.self_block = _Residual(dim, dropout, pre_norm, factory)
        self.cross_block = _Residual(dim, dropout, pre_norm, factory)
        self.feed_forward_block = _Residual(dim, dropout, pre_norm, factory)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        memory_padding_mask: torch.Tensor | None = None,
        cache: DecoderLayerCache | None = None,
    ) -> torch.Tensor:
        """``x [B, T, D]`` and the encoder's ``memory [B, S, D]`` -> ``[B, T, D]``: causal self-attention,
        cross-attention to ``memory`` (``memory_padding_mask [B, S]``, ``True`` marks padding), then feed-forward; with
        a ``cache``, ``x`` continues the positions fed before."""
        check_sequence(x, self.dim, "the input")
        check_sequence(memory, self.dim, "memory", batch=x.shape[0])
        check_dtype_of(x, self, "the input")
        if cache is not None and not isinstance(cache, DecoderLayerCache):
            raise TypeError(
                f"cache must be one layer's DecoderLayerCache (TransformerDecoder takes the list), got {type(cache).__name__}"
            )
        self_cache = cache.self_attention if cache is not None else None
        cross_cache = cache.cross_attention if cache is not None else None
        # the cross-attention's arguments are checked before the self-attention advances its cache
        self.cross_attention.check_inputs(
            x,
            memory,
            key_padding_mask=memory_padding_mask,
            cache=cross_cache,
            key_value_name="memory",
            mask_name="memory_padding_mask",
        )
        x = self.self_block(x, lambda h: self.self_attention(h, causal=True, cache=self_cache))
        x = self.cross_block(
            x, lambda h: self.cross_attention(h, memory, key_padding_mask=memory_padding_mask, cache=cross_cache)
        )
        return self.feed_forward_block(x, self.feed_forward)


CacheT = TypeVar("CacheT", AttentionCache, DecoderLayerCache)


class _LayerStack(nn.Module, Generic[CacheT]):
    """``depth`` independent layers of type ``layer_type``, plus a final LayerNorm when pre-norm; each layer takes a
    ``cache_type`` for incremental decoding."""

    layer_type: type[nn.Module]
    cache_type: type[CacheT]

    def __init__(
        self,
        dim: int,
        depth: int,
        heads: int,
        ff_dim: int,
        dropout: float = 0.1,
        *,
        attention: AttentionKind = "vanilla",
        pre_norm: bool = True,
        max_rel_pos: int = MAX_REL_POS,
        attention_bias: bool = True,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        dim, depth, heads, ff_dim = check_sizes(
            dim=dim, depth=depth, heads=heads, ff_dim=ff_dim
        )  # a depth of 2.0 failed in range()
        options = dict(attention=attention, pre_norm=pre_norm, max_rel_pos=max_rel_pos, attention_bias=attention_bias)
        self.layers = nn.ModuleList(self.layer_type(dim, heads, ff_dim, dropout, **options, **factory) for _ in range(depth))
        self.final_norm = nn.LayerNorm(dim, **factory) if pre_norm else nn.Identity()

    def new_cache(self) -> list[CacheT]:
        """An empty cache for incremental decoding, one ``cache_type`` per layer."""
        return [self.cache_type() for _ in self.layers]

    def _layer_caches(self, cache: list[CacheT] | None) -> list[CacheT | None]:
        """Each layer's entry of ``cache`` (``None`` for all without one), checked by :func:`check_cache_list`."""
        if cache is None:
            return [None] * len(self.layers)
        return list(check_cache_list(cache, self.cache_type, len(self.layers), type(self).__name__, "layer"))


def check_cache_list(cache: object, cache_type: type[CacheT], count: int, owner: str, unit: str) -> Sequence[CacheT]:
    """``cache``, checked to be the list of ``count`` ``cache_type`` that ``new_cache()`` gives ``owner``, one per
    ``unit`` (a layer of a stack, a step of a universal transformer).

    ``TypeError`` unless it is a list of ``cache_type`` (a ``None`` entry ran its layer without a cache, silently: each
    incremental call then saw its own positions alone); ``ValueError`` unless it has ``count`` entries, each its own
    object, all at the same position. Every call advances each entry by the positions it feeds, so they stay level: an
    entry shared by two layers held the keys of both and advanced twice per call, and one at another position (a
    layer's cache replaced by a fresh one, or taken from another stack) put its queries at other positions than the
    others'; both silently gave other outputs than the uncached call."""
    name = cache_type.__name__
    if not isinstance(cache, (list, tuple)):
        raise TypeError(f"cache must be the list of {name} that new_cache() gives, got {type(cache).__name__}")
    for index, entry in enumerate(cache):
        if not isinstance(entry, cache_type):
            raise TypeError(f"cache[{index}] must be the {name} that new_cache() gives, got {type(entry).__name__}")
    if len(cache) != count:
        raise ValueError(f"cache has {len(cache)} {unit}s, the {owner} has {count}")
    first_index: dict[int, int] = {}  # id of each entry -> the first index holding it
    for index, entry in enumerate(cache):
        first = first_index.setdefault(id(entry), index)
        if first != index:
            raise ValueError(f"cache[{index}] is the same object as cache[{first}]: each {unit} needs its own (new_cache())")
        if entry.position != cache[0].position:
            raise ValueError(
                f"the cache of {unit} {index} is at position {entry.position}, that of {unit} 0 at {cache[0].position}: "
                f"the {unit}s' caches must have seen the same positions (make them together with new_cache())"
            )
    return cache


class TransformerEncoder(_LayerStack[AttentionCache]):
    """``depth`` independent :class:`TransformerEncoderLayer` s (plus a final LayerNorm when pre-norm).

    ``TransformerEncoder(dim, depth, heads, ff_dim, dropout=0.1, *, attention="vanilla", pre_norm=True,
    max_rel_pos=15, attention_bias=True, device=None, dtype=None)`` (``device`` and ``dtype``: torch's factory keyword
    arguments, :mod:`neurosym.layers.factory`); ``forward(x [B, T, D], key_padding_mask [B, T] | None, *, attn_mask=None,
    causal=False, cache=None) -> [B, T, D]``. With ``causal=True`` every layer's self-attention is causal: a decoder-only
    (GPT-style) stack whose ``out[:, t]`` is that of the prefix ``x[:, :t + 1]``. ``attn_mask [T, T] | [B, T, T]`` (bool,
    ``True`` where a position may attend to another) reaches every layer's self-attention, as in
    :class:`TransformerEncoderLayer`.

    For incremental decoding (``causal=True`` only; ``ValueError`` otherwise) make a cache with :meth:`new_cache`, one
    :class:`AttentionCache` per layer, and feed the sequence one position (or a few) at a time: ``x [B, T_new, D]``
    continues the positions of the earlier calls, ``key_padding_mask [B, T_seen + T_new]`` covers every position fed
    so far (the keys are the cached ones plus the new), and the outputs ``[B, T_new, D]`` equal those of the uncached
    causal call on the whole sequence at the new positions. A call that raises leaves the cache as it was. A cache
    list whose layers' entries are at different positions, or share one object, raises ``ValueError`` (it would give
    other outputs, silently): pass the same ``new_cache()`` list to every call.
    """

    layer_type = TransformerEncoderLayer
    cache_type = AttentionCache

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        *,
        attn_mask: torch.Tensor | None = None,
        causal: bool = False,
        cache: list[AttentionCache] | None = None,
    ) -> torch.Tensor:
        """``x [B, T, D]`` through every layer and the final norm -> ``[B, T, D]``; ``key_padding_mask [B, T]``,
        ``attn_mask``, ``causal`` and ``cache`` (:meth:`new_cache`) reach every layer."""
        for layer, layer_cache in zip(self.layers, self._layer_caches(cache), strict=True):
            x = layer(x, key_padding_mask, attn_mask=attn_mask, causal=causal, cache=layer_cache)
        return self.final_norm(x)


class TransformerDecoder(_LayerStack[DecoderLayerCache]):
    """``depth`` :class:`TransformerDecoderLayer` s (plus a final LayerNorm when pre-norm).

    Same constructor as :class:`TransformerEncoder`. ``forward(x [B, T, D], memory [B, S, D], *,
    memory_padding_mask [B, S] | None, cache) -> [B, T, D]``. For incremental decoding make a cache with
    :meth:`new_cache` and feed the target one position (or a few) at a time: the result equals running
    the whole prefix without a cache. Layers' caches at different positions, or shared, raise ``ValueError``, as in
    :class:`TransformerEncoder`.
    """

    layer_type = TransformerDecoderLayer
    cache_type = DecoderLayerCache

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        *,
        memory_padding_mask: torch.Tensor | None = None,
        cache: list[DecoderLayerCache] | None = None,
    ) -> torch.Tensor:
        """``x [B, T, D]`` through every layer, each reading ``memory [B, S, D]`` (``memory_padding_mask [B, S]``), and
        the final norm -> ``[B, T, D]``; ``cache`` from :meth:`new_cache`."""
        for layer, layer_cache in zip(self.layers, self._layer_caches(cache), strict=True):
            x = layer(x, memory, memory_padding_mask=memory_padding_mask, cache=layer_cache)
        return self.final_norm(x)
