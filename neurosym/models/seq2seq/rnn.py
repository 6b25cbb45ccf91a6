"""GRU/LSTM encoder–decoders, with or without Bahdanau attention, uni- or bidirectional encoder.

The HINT RNN baselines use the unidirectional encoder; the DeepMind Mathematics baseline also the
bidirectional one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from einops import rearrange
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from neurosym.layers.additive_attention import AdditiveAttention
from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import check_sizes
from neurosym.models.seq2seq.base import Seq2Seq, check_targets, prepared_source
from neurosym.models.seq2seq.front_ends import check_front_end_dtype, front_end_dim, output_mask
from neurosym.training.checks import check_flags, dropout_probability, int_at_least

Cell = Literal["gru", "lstm"]
RecurrentState = torch.Tensor | tuple[torch.Tensor, torch.Tensor]


@dataclass
class RNNDecoderState:
    """Decoder state between greedy steps: the recurrent state and the encoded source."""

    hidden: RecurrentState
    memory: torch.Tensor
    projected_memory: torch.Tensor | None
    memory_padding_mask: torch.Tensor


class RNNSeq2Seq(Seq2Seq):
    """Recurrent encoder–decoder (Sutskever et al. 2014; with ``attention=True``, Bahdanau et al. 2015).

    ``front_end`` maps ``(src, src_mask)`` to ``[B, S, embed_dim]``; ``embed_dim`` (the size target tokens are
    embedded at too) defaults to the front end's ``dim``, and another value raises ``ValueError`` (the encoder reads
    the front end's vectors as they are). The encoder is a ``cell`` stack of
    ``encoder_layers``; every decoder layer starts from the top encoder layer's final state. Without
    attention the decoder reads only the previous target token; with attention it also reads the context
    vector of the additive attention computed from its previous top hidden state, and the output layer
    sees ``[hidden, context]``.

    ``bidirectional=True`` runs a forward and a backward encoder of ``hidden / 2`` units each (``hidden``
    must be even): the memory at position ``s`` is ``[forward_s, backward_s]`` (``[B, S, hidden]``), so
    every position sees the whole source, and the decoder starts from the concatenated final states of
    the top layer's two directions (forward after the last token, backward after the first). Decoder,
    attention and output layer are the same as with the unidirectional encoder of ``hidden`` units.
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of every layer the model builds (the ``front_end`` is built by the caller).
    """

    def __init__(
        self,
        front_end: nn.Module,
        target_vocab: int,
        *,
        cell: Cell = "gru",
        embed_dim: int | None = None,
        hidden: int = 512,
        encoder_layers: int = 3,
        decoder_layers: int = 1,
        dropout: float = 0.1,
        attention: bool = False,
        bidirectional: bool = False,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        if cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cell!r}")
        check_flags(attention=attention, bidirectional=bidirectional)
        front_dim = front_end_dim(front_end)
        check_front_end_dtype(front_end, dtype, type(self).__name__)
        embed_dim = front_dim if embed_dim is None else embed_dim
        if embed_dim != front_dim:  # (the encoder failed at the first forward, inside torch)
            raise ValueError(f"embed_dim ({embed_dim!r}) must be the front end's dim ({front_dim!r}), or be left out")
        target_vocab = int_at_least(target_vocab, "target_vocab", 1)
        dropout = dropout_probability(dropout)
        # True built a model one unit wide or one layer deep; numpy's ints are taken (np.int64 hidden failed in nn.GRU)
        embed_dim, hidden, encoder_layers, decoder_layers = check_sizes(
            embed_dim=embed_dim, hidden=hidden, encoder_layers=encoder_layers, decoder_layers=decoder_layers
        )
        if bidirectional and hidden % 2:
            raise ValueError(f"a bidirectional encoder splits hidden over two directions: hidden must be even, got {hidden}")
        recurrent = nn.GRU if cell == "gru" else nn.LSTM
        self.front_end = front_end
        self.target_vocab = target_vocab
        self.cell = cell
        self.decoder_layers = decoder_layers
        self.bidirectional = bidirectional
        self.encoder = recurrent(
            embed_dim,
            hidden // 2 if bidirectional else hidden,
            encoder_layers,
            batch_first=True,
            dropout=dropout if encoder_layers > 1 else 0.0,
            bidirectional=bidirectional,
            **factory,
        )
        self.target_embedding = nn.Embedding(target_vocab, embed_dim, **factory)
        self.attention = AdditiveAttention(hidden, hidden, hidden, **factory) if attention else None
        decoder_input = embed_dim + (hidden if attention else 0)
        self.decoder = recurrent(
            decoder_input,
            hidden,
            decoder_layers,
            batch_first=True,
            dropout=dropout if decoder_layers > 1 else 0.0,
            **factory,
        )
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden * (2 if attention else 1), target_vocab, **factory)

    def _encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> RNNDecoderState:
        src, src_mask = prepared_source(src, src_mask)
        embedded = self.dropout(self.front_end(src, src_mask))
        mask = output_mask(self.front_end, src_mask)
        memory, final = self._run_encoder(embedded, mask)
        if isinstance(final, torch.Tensor):  # (a GRU's; an LSTM's is a pair)
            hidden: RecurrentState = self._top_final(final)
        else:
            final_hidden, final_cell = final
            hidden = (self._top_final(final_hidden), self._top_final(final_cell))
        projected = self.attention.project_keys(memory) if self.attention is not None else None
        return RNNDecoderState(hidden, memory, projected, mask)

    def _run_encoder(self, embedded: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, RecurrentState]:
        """The encoder over ``embedded [B, S, E]`` without the padding of ``mask [B, S]``: the memory
        ``[B, S, hidden]`` (zeros at padding) and the final states ``[layers * directions, B, H]`` (a pair for LSTM).
        An empty batch (``B = 0``), which torch cannot pack, is run unpacked: it has no padding to leave out."""
        if embedded.shape[0] == 0:
            return self.encoder(embedded)
        lengths = (~mask).sum(dim=1).cpu()
        packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
        outputs, final = self.encoder(packed)
        memory, _ = pad_packed_sequence(outputs, batch_first=True, total_length=mask.shape[1])
        return memory, final

    def _top_final(self, final: torch.Tensor) -> torch.Tensor:
        """Encoder final states ``[layers * directions, B, H]`` -> the top layer's, once per decoder layer.

        Returns ``[decoder_layers, B, hidden]``; the two directions of a bidirectional top layer are
        concatenated (forward first, as in the memory).
        """
        directions = 2 if self.bidirectional else 1
        top = rearrange(final[-directions:], "d b h -> 1 b (d h)")
        return top.repeat(self.decoder_layers, 1, 1)

    def _top_hidden(self, hidden: RecurrentState) -> torch.Tensor:
        return (hidden if self.cell == "gru" else hidden[0])[-1]

    def _attend_and_step(self, state: RNNDecoderState, embedded: torch.Tensor) -> torch.Tensor:
        """One attentive step: ``embedded [B, E]`` -> output features ``[B, 2 * hidden]``."""
        assert self.attention is not None  # taken only by a model built with attention
        context, _ = self.attention(
            self._top_hidden(state.hidden), state.memory, state.projected_memory, state.memory_padding_mask
        )
        step_input = rearrange(torch.cat([embedded, context], dim=-1), "b e -> b 1 e")
        output, state.hidden = self.decoder(step_input, state.hidden)
        return torch.cat([rearrange(output, "b 1 h -> b h"), context], dim=-1)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        check_targets(tgt_in, src_mask, self.target_vocab)
        state = self._encode(src, src_mask)
        embedded = self.dropout(self.target_embedding(tgt_in))
        if self.attention is None:
            outputs, _ = self.decoder(embedded, state.hidden)
        else:
            outputs = torch.stack([self._attend_and_step(state, embedded[:, t]) for t in range(tgt_in.shape[1])], 1)
        return self.output(self.dropout(outputs))

    def start_decoding(self, src: torch.Tensor, src_mask: torch.Tensor, *, use_cache: bool = True) -> RNNDecoderState:
        return self._encode(src, src_mask)

    def _step(self, state: RNNDecoderState, tokens: torch.Tensor) -> torch.Tensor:
        embedded = self.target_embedding(tokens)
        if self.attention is None:
            output, state.hidden = self.decoder(rearrange(embedded, "b e -> b 1 e"), state.hidden)
            return self.output(rearrange(output, "b 1 h -> b h"))
        return self.output(self._attend_and_step(state, embedded))
