"""Build the HINT baseline models and their source front ends by name."""

from __future__ import annotations

from typing import Literal

from torch import nn

from neurosym.models.seq2seq.base import Seq2Seq
from neurosym.models.seq2seq.front_ends import ImageWindowFrontEnd, TokenFrontEnd
from neurosym.models.seq2seq.rnn import RNNSeq2Seq
from neurosym.models.seq2seq.transformer import TransformerSeq2Seq
from neurosym.perception.cnn import ResNet18, SmallCNN

MODEL_NAMES = ("gru", "lstm", "gru_att", "lstm_att", "transformer", "transformer_rel", "transformer_rel_uni")
CNN_NAMES = ("small", "resnet18")


def build_front_end(
    kind: Literal["symbol", "image"],
    dim: int,
    *,
    vocab_size: int | None = None,
    cnn: Literal["small", "resnet18"] = "small",
    image_channels: int = 1,
    image_size: int = 32,
) -> nn.Module:
    """``"symbol"``: a token embedding (needs ``vocab_size``); ``"image"``: a per-window CNN
    (``"resnet18"`` as in the HINT paper, randomly initialised, or ``"small"`` for CPU work)."""
    if kind == "symbol":
        if vocab_size is None:
            raise ValueError("a symbol front end needs vocab_size")
        return TokenFrontEnd(vocab_size, dim)
    if kind != "image":
        raise ValueError(f"unknown input kind {kind!r}: use 'symbol' or 'image'")
    features = 256 if cnn == "small" else 512
    if cnn == "small":
        encoder: nn.Module = SmallCNN(image_channels, features, input_size=image_size)
    elif cnn == "resnet18":
        encoder = ResNet18(image_channels, features, small_input=True)
    else:
        raise ValueError(f"unknown cnn {cnn!r}: use one of {CNN_NAMES}")
    return ImageWindowFrontEnd(encoder, features, dim)


def build_seq2seq(
    name: str,
    front_end: nn.Module,
    target_vocab: int,
    *,
    hidden: int = 512,
    heads: int = 4,
    encoder_layers: int | None = None,
    decoder_layers: int = 1,
    dropout: float = 0.1,
    relative: Literal["xl", "shaw"] = "xl",
    bidirectional: bool = False,
) -> Seq2Seq:
    """One of :data:`MODEL_NAMES` over ``front_end`` (whose ``dim`` attribute is the embedding width).

    RNNs use ``hidden`` units and 3 encoder layers by default; Transformers use width ``front_end.dim``,
    feed-forward ``hidden`` and 6 encoder layers by default; ``decoder_layers`` is 1 for both, as in
    the HINT release. ``bidirectional=True`` gives an RNN a bidirectional encoder (``hidden / 2`` units
    per direction, see :class:`RNNSeq2Seq`); Transformer encoders see the whole source anyway.
    """
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown model {name!r}: use one of {', '.join(MODEL_NAMES)}")
    if bidirectional and not name.startswith(("gru", "lstm")):
        raise ValueError(f"bidirectional applies to the RNN encoders, not to {name!r}")
    dim = front_end.dim
    if name.startswith(("gru", "lstm")):
        return RNNSeq2Seq(
            front_end,
            target_vocab,
            cell="gru" if name.startswith("gru") else "lstm",
            embed_dim=dim,
            hidden=hidden,
            encoder_layers=3 if encoder_layers is None else encoder_layers,
            decoder_layers=decoder_layers,
            dropout=dropout,
            attention=name.endswith("_att"),
            bidirectional=bidirectional,
        )
    return TransformerSeq2Seq(
        front_end,
        target_vocab,
        dim=dim,
        heads=heads,
        ff_dim=hidden,
        encoder_layers=6 if encoder_layers is None else encoder_layers,
        decoder_layers=decoder_layers,
        dropout=dropout,
        attention="vanilla" if name == "transformer" else relative,
        universal=name == "transformer_rel_uni",
    )
