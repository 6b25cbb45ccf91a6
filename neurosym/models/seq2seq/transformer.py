"""Transformer encoder–decoders: vanilla, relative-position, and relative universal (Csordás et al. 2021)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.attention import MultiheadAttention
from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.positional import SinusoidalPositionalEncoding
from neurosym.layers.relative_attention import MAX_REL_POS
from neurosym.layers.transformer import (
    AttentionKind,
    DecoderLayerCache,
    FeedForward,
    TransformerDecoder,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from neurosym.layers.universal import UniversalTransformer
from neurosym.models.seq2seq.base import Seq2Seq, check_targets, prepared_source
from neurosym.models.seq2seq.front_ends import check_front_end_dtype, front_end_dim, output_mask
from neurosym.training.checks import check_flags, ignored_option, int_at_least


class _LayerOptions(TypedDict):
    """The keyword options every encoder and decoder layer is built with."""

    attention: AttentionKind
    pre_norm: bool
    max_rel_pos: int
    attention_bias: bool


def _projection(embed_dim: int, dim: int, factory: FactoryKwargs) -> nn.Module:
    """``[..., embed_dim]`` -> ``[..., dim]``: a linear layer (created as ``factory`` says), or the identity when the
    sizes agree."""
    return nn.Identity() if embed_dim == dim else nn.Linear(embed_dim, dim, **factory)


@dataclass
class TransformerDecoderState:
    """Greedy-decoding state: the encoded source, the tokens fed so far, and the layer caches."""

    memory: torch.Tensor
    memory_padding_mask: torch.Tensor
    cache: list[DecoderLayerCache] | None
    prefix: list[torch.Tensor] = field(default_factory=list)


class TransformerSeq2Seq(Seq2Seq):
    """Encoder–decoder Transformer over a source front end producing ``[B, S, front_end.dim]``.

    ``dim`` is the model width (default ``front_end.dim``). When it differs from the front end's
    embedding size ``E = front_end.dim``, source embeddings ``[B, S, E]`` and target embeddings
    ``[B, T, E]`` are mapped to ``[.., dim]`` by a linear layer each, as in the HINT release
    (embeddings of 128 in a Transformer of width 512).

    ``attention="vanilla"`` adds sinusoidal absolute positions to source and target embeddings;
    ``"xl"``/``"xl_clipped"``/``"shaw"`` use relative self-attention and no absolute positions (the XL ones need an
    even head width ``dim / heads``, else ``ValueError``). ``universal=True``
    replaces the encoder stack by one layer applied ``encoder_layers`` times
    (:class:`~neurosym.layers.universal.UniversalTransformer`, with a step embedding before every
    application when ``step_embedding=True``, which without ``universal=True`` raises ``ValueError``; the HINT
    release has none); the decoder keeps ``decoder_layers`` separate layers (the HINT configuration has a single one).

    ``attention_bias=False`` builds every attention projection without biases, ``embedding_dropout=False``
    feeds the embeddings to the stacks without dropout, and ``init="release"`` re-initialises the weights
    as the HINT release does (:meth:`release_initialisation_`); the release has all three, with embedding
    dropout only where absolute positions are added. The defaults are PyTorch's.
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of every layer the model builds (the ``front_end`` is built by the caller).
    """

    def __init__(
        self,
        front_end: nn.Module,
        target_vocab: int,
        *,
        dim: int | None = None,
        heads: int = 4,
        ff_dim: int | None = None,
        encoder_layers: int = 6,
        decoder_layers: int = 1,
        dropout: float = 0.1,
        attention: AttentionKind = "vanilla",
        universal: bool = False,
        step_embedding: bool = False,
        pre_norm: bool = True,
        max_rel_pos: int = MAX_REL_POS,
        attention_bias: bool = True,
        embedding_dropout: bool = True,
        init: Literal["torch", "release"] = "torch",
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        if init not in ("torch", "release"):
            raise ValueError(f"unknown init {init!r}: use 'torch' or 'release'")
        check_flags(
            universal=universal,
            step_embedding=step_embedding,
            pre_norm=pre_norm,
            attention_bias=attention_bias,
            embedding_dropout=embedding_dropout,
        )
        for name, count in (("heads", heads), ("encoder_layers", encoder_layers), ("decoder_layers", decoder_layers)):
            int_at_least(count, name, 1)  # True built one head or one layer
        if step_embedding and not universal:  # (the stacked encoder has no step to embed: it was silently ignored)
            raise ignored_option("step_embedding", step_embedding, "universal=True", "universal=False")
        target_vocab = int_at_least(target_vocab, "target_vocab", 1)
        embed_dim = front_end_dim(front_end)
        check_front_end_dtype(front_end, dtype, type(self).__name__)
        dim = embed_dim if dim is None else int_at_least(dim, "dim", 1)  # (2.5 failed in torch.empty())
        if attention == "vanilla" and dim % 2:  # (named as the sinusoid's dimension)
            raise ValueError(f"the vanilla Transformer's sinusoidal positions need an even width dim, got {dim}")
        ff_dim = 4 * dim if ff_dim is None else ff_dim
        options = _LayerOptions(attention=attention, pre_norm=pre_norm, max_rel_pos=max_rel_pos, attention_bias=attention_bias)
        self.front_end = front_end
        self.target_vocab = target_vocab
        self.dim = dim
        self.source_projection = _projection(embed_dim, dim, factory)
        self.positions = SinusoidalPositionalEncoding(dim) if attention == "vanilla" else None
        if universal:
            layer = TransformerEncoderLayer(dim, heads, ff_dim, dropout, **options, **factory)
            self.encoder: nn.Module = UniversalTransformer(layer, encoder_layers, step_embedding, **factory)
            self.encoder_norm: nn.Module = nn.LayerNorm(dim, **factory) if pre_norm else nn.Identity()
        else:
            self.encoder = TransformerEncoder(dim, encoder_layers, heads, ff_dim, dropout, **options, **factory)
            self.encoder_norm = nn.Identity()
        self.decoder = TransformerDecoder(dim, decoder_layers, heads, ff_dim, dropout, **options, **factory)
        self.target_embedding = nn.Embedding(target_vocab, embed_dim, **factory)
        self.target_projection = _projection(embed_dim, dim, factory)
        self.dropout = nn.Dropout(dropout) if embedding_dropout else nn.Identity()
        self.output = nn.Linear(dim, target_vocab, **factory)
        if init == "release":
            self.release_initialisation_()

    @torch.no_grad()
    def release_initialisation_(self) -> None:
        """Initialise as the HINT release (its Transformer code, from Csordás et al.) does: Xavier-uniform
        feed-forward weights (ReLU gain on the first layer), Xavier-uniform query, key, value and output
        projections of the absolute-position attention modules (the release never re-initialises its
        relative ones, which keep PyTorch's defaults, as here), a Xavier-uniform output map and, in the
        relative models, target embedding. Biases, LayerNorms, source embeddings and projections keep
        PyTorch's initialisation."""
        for module in self.modules():
            if isinstance(module, FeedForward):
                first, last = module[0], module[-1]
                assert isinstance(first, nn.Linear) and isinstance(last, nn.Linear)  # Linear, ReLU, Dropout, Linear
                nn.init.xavier_uniform_(first.weight, gain=nn.init.calculate_gain("relu"))
                nn.init.xavier_uniform_(last.weight)
            elif type(module) is MultiheadAttention:
                for weight in (module.query_proj.weight, *module.key_value_proj.weight.chunk(2), module.out_proj.weight):
                    nn.init.xavier_uniform_(weight)
        nn.init.xavier_uniform_(self.output.weight)
        if self.positions is None:
            nn.init.xavier_uniform_(self.target_embedding.weight)

    def _embed(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        if self.positions is not None:
            x = self.positions(x, offset)
        return self.dropout(x)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """``src`` -> memory ``[B, S', dim]`` (``S' = S``, or ``S + 2`` with :class:`BoundaryMarkers`), each row's
        real positions first (:func:`~neurosym.models.seq2seq.padding.real_first`): its padding mask is
        ``output_mask(self.front_end, real_first(src, src_mask)[1])``, which is ``output_mask(self.front_end,
        src_mask)`` for right-padded sources."""
        return self._encoded(src, src_mask, cache=None).memory

    def _encoded(
        self, src: torch.Tensor, src_mask: torch.Tensor, cache: list[DecoderLayerCache] | None
    ) -> TransformerDecoderState:
        """The encoded source with its padding mask (the front end's, computed once) as a decoder state."""
        src, src_mask = prepared_source(src, src_mask)
        memory_mask = output_mask(self.front_end, src_mask)
        embedded = self._embed(self.source_projection(self.front_end(src, src_mask)))
        hidden = self.encoder(embedded, memory_mask)
        if isinstance(self.encoder, UniversalTransformer):
            hidden = hidden.hidden
        return TransformerDecoderState(self.encoder_norm(hidden), memory_mask, cache)

    def _decode(self, tgt: torch.Tensor, state: TransformerDecoderState, offset: int) -> torch.Tensor:
        embedded = self._embed(self.target_projection(self.target_embedding(tgt)), offset)
        hidden = self.decoder(embedded, state.memory, memory_padding_mask=state.memory_padding_mask, cache=state.cache)
        return self.output(hidden)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        check_targets(tgt_in, src_mask, self.target_vocab)
        return self._decode(tgt_in, self._encoded(src, src_mask, cache=None), offset=0)

    def start_decoding(self, src: torch.Tensor, src_mask: torch.Tensor, *, use_cache: bool = True) -> TransformerDecoderState:
        cache = self.decoder.new_cache() if use_cache else None
        return self._encoded(src, src_mask, cache)

    def _step(self, state: TransformerDecoderState, tokens: torch.Tensor) -> torch.Tensor:
        state.prefix.append(tokens)
        if state.cache is not None:
            logits = self._decode(rearrange(tokens, "b -> b 1"), state, offset=len(state.prefix) - 1)
        else:
            logits = self._decode(torch.stack(state.prefix, dim=1), state, offset=0)
        return logits[:, -1]
