"""Build the HINT baseline models and their source front ends by name."""

from __future__ import annotations

import inspect
from typing import Any, Literal

import torch
from torch import nn

from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.relative_attention import check_relative_kind
from neurosym.models.seq2seq.base import Seq2Seq
from neurosym.models.seq2seq.front_ends import BoundaryMarkers, ImageWindowFrontEnd, TokenFrontEnd
from neurosym.models.seq2seq.rnn import RNNSeq2Seq
from neurosym.models.seq2seq.transformer import TransformerSeq2Seq
from neurosym.perception.cnn import ResNet18, SmallCNN
from neurosym.training.checks import check_flags, ignored_option, int_at_least, is_int

MODEL_NAMES = ("gru", "lstm", "gru_att", "lstm_att", "transformer", "transformer_rel", "transformer_rel_uni")
"""The HINT baselines :func:`build_seq2seq` builds: recurrent (``gru``, ``lstm``, with additive attention ``gru_att``,
``lstm_att``) and Transformers (vanilla, relative, relative universal)."""
CNN_NAMES = ("small", "resnet18")
"""The CNNs of :func:`build_front_end`'s image front end."""
RNN_HIDDEN = 512
"""Hidden units of the RNN baselines when none are given (the HINT release)."""

_SHARED_OPTIONS = ("hidden", "encoder_layers", "decoder_layers", "dropout")
_RNN_OPTIONS = (*_SHARED_OPTIONS, "bidirectional")
_TRANSFORMER_OPTIONS = (
    *_SHARED_OPTIONS, "dim", "heads", "pre_norm", "attention_bias", "embedding_dropout", "init"
)  # fmt: skip
MODEL_OPTIONS: dict[str, tuple[str, ...]] = {
    "gru": _RNN_OPTIONS,
    "lstm": _RNN_OPTIONS,
    "gru_att": _RNN_OPTIONS,
    "lstm_att": _RNN_OPTIONS,
    "transformer": _TRANSFORMER_OPTIONS,
    "transformer_rel": (*_TRANSFORMER_OPTIONS, "relative"),
    "transformer_rel_uni": (*_TRANSFORMER_OPTIONS, "relative", "step_embedding"),
}
"""The keyword options of :func:`build_seq2seq` that each of :data:`MODEL_NAMES` reads (the others it refuses unless
left at their defaults)."""


def build_front_end(
    kind: Literal["symbol", "image"],
    dim: int,
    *,
    vocab_size: int | None = None,
    cnn: Literal["small", "resnet18"] = "small",
    image_channels: int = 1,
    image_size: int = 32,
    boundaries: bool = False,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """``"symbol"``: a token embedding (needs ``vocab_size``); ``"image"``: a per-window CNN
    (``"resnet18"`` as in the HINT paper, randomly initialised, or ``"small"`` for CPU work).
    ``boundaries=True`` frames every source with learned start and end vectors (:class:`BoundaryMarkers`,
    as the HINT release's START and END tokens). An option the kind does not read (``vocab_size`` of images; ``cnn``,
    ``image_channels``, ``image_size`` of symbols; ``image_size`` of a ResNet-18) raises ``ValueError`` unless left at its
    default. ``device`` and ``dtype`` are torch's factory keyword arguments
    (:mod:`neurosym.layers.factory`), passed to every layer it builds, the CNN's included."""
    factory = factory_kwargs(device, dtype, "build_front_end")
    check_flags(boundaries=boundaries)
    _reject_unread(kind, vocab_size=vocab_size, cnn=cnn, image_channels=image_channels, image_size=image_size)
    front_end = _front_end(kind, dim, vocab_size, cnn, image_channels, image_size, factory)
    return BoundaryMarkers(front_end, **factory) if boundaries else front_end


_FRONT_END_READS = {"symbol": ("vocab_size",), "image": ("cnn", "image_channels", "image_size")}
"""The options of :func:`build_front_end` each input kind reads (a ResNet-18 reads no ``image_size``)."""


def _reject_unread(kind: str, **options: object) -> None:
    """Raise ``ValueError`` naming the first of ``options`` that a front end of ``kind`` (with ``options["cnn"]``) does
    not read and that is set away from its default: it would be silently ignored."""
    cnn = options["cnn"]
    defaults = {key: item.default for key, item in inspect.signature(build_front_end).parameters.items()}
    read = set(_FRONT_END_READS.get(kind, options)) - ({"image_size"} if cnn == "resnet18" else set())
    if given := next((key for key, value in options.items() if key not in read and value != defaults[key]), None):
        users = " and ".join(f"{name!r} inputs" for name, names in _FRONT_END_READS.items() if given in names)
        raise ignored_option(
            given,
            options[given],
            users + (" of the small CNN" if given == "image_size" else ""),
            repr(kind) + (f" with cnn={cnn!r}" if kind == "image" else ""),
        )


def _front_end(
    kind: str, dim: int, vocab_size: int | None, cnn: str, image_channels: int, image_size: int, factory: FactoryKwargs
) -> nn.Module:
    if kind == "symbol":
        if vocab_size is None:
            raise ValueError("a symbol front end needs vocab_size")
        return TokenFrontEnd(vocab_size, dim, **factory)
    if kind != "image":
        raise ValueError(f"unknown input kind {kind!r}: use 'symbol' or 'image'")
    features = 256 if cnn == "small" else 512
    if cnn == "small":
        encoder: nn.Module = SmallCNN(image_channels, features, input_size=image_size, **factory)
    elif cnn == "resnet18":
        encoder = ResNet18(image_channels, features, small_input=True, **factory)
    else:
        raise ValueError(f"unknown cnn {cnn!r}: use one of {CNN_NAMES}")
    return ImageWindowFrontEnd(encoder, features, dim, **factory)


def build_seq2seq(
    name: str,
    front_end: nn.Module,
    target_vocab: int,
    *,
    dim: int | None = None,
    hidden: int | None = None,
    heads: int = 4,
    encoder_layers: int | None = None,
    decoder_layers: int = 1,
    dropout: float = 0.1,
    relative: Literal["xl", "xl_clipped", "shaw"] = "xl",
    pre_norm: bool = True,
    step_embedding: bool = False,
    bidirectional: bool = False,
    attention_bias: bool = True,
    embedding_dropout: bool = True,
    init: Literal["torch", "release"] = "torch",
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> Seq2Seq:
    """One of :data:`MODEL_NAMES` over ``front_end`` (whose ``dim`` attribute is the embedding size).

    RNNs embed tokens at ``front_end.dim``, have ``hidden`` units (default 512) and 3 encoder layers by
    default. Transformers have width ``dim`` (default ``front_end.dim``; a different width adds a linear
    map from the embeddings, see :class:`TransformerSeq2Seq`), feed-forward ``hidden`` (default 4 ×
    width), 6 encoder layers by default, and pre- or post-LayerNorm layers (``pre_norm``; the HINT
    release is post-norm); ``step_embedding`` adds a step signal before every application of the shared
    layer of ``transformer_rel_uni`` (the release has none). ``decoder_layers`` is 1 for both, as in the HINT release.
    ``bidirectional=True`` gives an RNN a bidirectional encoder (``hidden / 2`` units per direction,
    see :class:`RNNSeq2Seq`); Transformer encoders see the whole source anyway. ``attention_bias``,
    ``embedding_dropout`` and ``init`` configure the Transformers (see :class:`TransformerSeq2Seq`). An option that
    the model ``name`` does not read (:data:`MODEL_OPTIONS`: ``relative`` the relative Transformers, ``step_embedding``
    ``transformer_rel_uni``) raises ``ValueError`` unless left at its default, as does a size that is no int.
    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`), passed to the model (the ``front_end`` is built by the caller).
    """
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown model {name!r}: use one of {', '.join(MODEL_NAMES)}")
    if (is_int(target_vocab) and target_vocab < 1) or (dim is not None and is_int(dim) and dim < 1):
        raise ValueError(f"target_vocab and dim must be positive, got {target_vocab} and {dim}")
    sizes = dict(dim=dim, hidden=hidden, heads=heads, encoder_layers=encoder_layers, decoder_layers=decoder_layers)
    target_vocab = int_at_least(target_vocab, "target_vocab", 1)  # 2.5 failed in torch.empty()
    for size_name, size in sizes.items():
        if size is not None:
            int_at_least(size, size_name, 1)
    options = dict(
        dim=dim, hidden=hidden, heads=heads, encoder_layers=encoder_layers, decoder_layers=decoder_layers, dropout=dropout,
        relative=relative, pre_norm=pre_norm, step_embedding=step_embedding, bidirectional=bidirectional,
        attention_bias=attention_bias, embedding_dropout=embedding_dropout, init=init,
    )  # fmt: skip
    _reject_unused(name, options)
    if "relative" in MODEL_OPTIONS[name]:
        check_relative_kind(relative)  # "vanilla" built a Transformer without relative positions
    is_rnn = name.startswith(("gru", "lstm"))
    if is_rnn:
        return RNNSeq2Seq(
            front_end,
            target_vocab,
            cell="gru" if name.startswith("gru") else "lstm",
            hidden=RNN_HIDDEN if hidden is None else hidden,
            encoder_layers=3 if encoder_layers is None else encoder_layers,
            decoder_layers=decoder_layers,
            dropout=dropout,
            attention=name.endswith("_att"),
            bidirectional=bidirectional,
            device=device,
            dtype=dtype,
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
        step_embedding=step_embedding,
        pre_norm=pre_norm,
        attention_bias=attention_bias,
        embedding_dropout=embedding_dropout,
        init=init,
        device=device,
        dtype=dtype,
    )


def _reject_unused(name: str, options: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first of ``options`` that model ``name`` does not read (see
    :data:`MODEL_OPTIONS`) and that is set away from its default: the model would silently ignore it."""
    defaults = {key: item.default for key, item in inspect.signature(build_seq2seq).parameters.items()}
    used = MODEL_OPTIONS[name]
    if given := next((key for key, value in options.items() if key not in used and value != defaults[key]), None):
        users = [model for model in MODEL_NAMES if given in MODEL_OPTIONS[model]]
        raise ignored_option(given, options[given], ", ".join(users), repr(name))
