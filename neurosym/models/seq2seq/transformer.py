"""Transformer encoder–decoders: vanilla, relative-position, and relative universal (Csordás et al. 2021)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.dropout import Dropout
from neurosym.layers.positional import SinusoidalPositionalEncoding
from neurosym.layers.transformer import (
    AttentionKind,
    DecoderLayerCache,
    TransformerDecoder,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from neurosym.layers.universal import UniversalTransformer
from neurosym.models.seq2seq.base import Seq2Seq, check_source


def _projection(embed_dim: int, dim: int) -> nn.Module:
    """``[..., embed_dim]`` -> ``[..., dim]``: a linear layer, or the identity when the sizes agree."""
    return nn.Identity() if embed_dim == dim else nn.Linear(embed_dim, dim)


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
    ``"xl"``/``"shaw"`` use relative self-attention and no absolute positions. ``universal=True``
    replaces the encoder stack by one layer applied ``encoder_layers`` times
    (:class:`~neurosym.layers.universal.UniversalTransformer`, with a step embedding before every
    application when ``step_embedding=True``; the HINT release has none); the decoder keeps
    ``decoder_layers`` separate layers (the HINT configuration has a single one).
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
        max_rel_pos: int = 15,
    ) -> None:
        super().__init__()
        embed_dim = front_end.dim
        dim = dim or embed_dim
        ff_dim = ff_dim or 4 * dim
        options = dict(attention=attention, pre_norm=pre_norm, max_rel_pos=max_rel_pos)
        self.front_end = front_end
        self.target_vocab = target_vocab
        self.dim = dim
        self.source_projection = _projection(embed_dim, dim)
        self.positions = SinusoidalPositionalEncoding(dim) if attention == "vanilla" else None
        if universal:
            layer = TransformerEncoderLayer(dim, heads, ff_dim, dropout, **options)
            self.encoder: nn.Module = UniversalTransformer(layer, encoder_layers, step_embedding)
            self.encoder_norm: nn.Module = nn.LayerNorm(dim) if pre_norm else nn.Identity()
        else:
            self.encoder = TransformerEncoder(dim, encoder_layers, heads, ff_dim, dropout, **options)
            self.encoder_norm = nn.Identity()
        self.decoder = TransformerDecoder(dim, decoder_layers, heads, ff_dim, dropout, **options)
        self.target_embedding = nn.Embedding(target_vocab, embed_dim)
        self.target_projection = _projection(embed_dim, dim)
        self.dropout = Dropout(dropout)
        self.output = nn.Linear(dim, target_vocab)

    def _embed(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        if self.positions is not None:
            x = self.positions(x, offset)
        return self.dropout(x)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        """``src`` -> memory ``[B, S, dim]``."""
        check_source(src, src_mask)
        hidden = self.encoder(self._embed(self.source_projection(self.front_end(src, src_mask))), src_mask)
        if isinstance(self.encoder, UniversalTransformer):
            hidden = hidden.hidden
        return self.encoder_norm(hidden)

    def _decode(self, tgt: torch.Tensor, state: TransformerDecoderState, offset: int) -> torch.Tensor:
        embedded = self._embed(self.target_projection(self.target_embedding(tgt)), offset)
        hidden = self.decoder(embedded, state.memory, memory_padding_mask=state.memory_padding_mask, cache=state.cache)
        return self.output(hidden)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        state = TransformerDecoderState(self.encode(src, src_mask), src_mask, cache=None)
        return self._decode(tgt_in, state, offset=0)

    def start_decoding(
        self, src: torch.Tensor, src_mask: torch.Tensor, *, use_cache: bool = True
    ) -> TransformerDecoderState:
        cache = self.decoder.new_cache() if use_cache else None
        return TransformerDecoderState(self.encode(src, src_mask), src_mask, cache)

    def decode_step(self, state: TransformerDecoderState, tokens: torch.Tensor) -> torch.Tensor:
        state.prefix.append(tokens)
        if state.cache is not None:
            logits = self._decode(rearrange(tokens, "b -> b 1"), state, offset=len(state.prefix) - 1)
        else:
            logits = self._decode(torch.stack(state.prefix, dim=1), state, offset=0)
        return logits[:, -1]
