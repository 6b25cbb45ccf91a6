"""The classifiers of the PVR paper (Zhang et al. 2021, Appendix A) for vector and visual inputs.

Vector models read digits ``[B, L]`` (long) and return logits ``[B, num_classes]``; each starts with a
learned embedding of the digits. At ``scale=1`` their sizes are the paper's (parameter counts for
``L = 11``: MLP 1,445,194; MLP 2x 5,052,426; Transformer 8,429,066; MLP-Mixer 8,495,674); ``scale``
multiplies every width, to make CPU runs affordable. Visual models read images ``[B, 1, H, W]``. Every model and
builder takes torch's factory keyword arguments ``device=`` and ``dtype=`` (:mod:`neurosym.layers.factory`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from einops import rearrange
from torch import nn

from neurosym.layers import TransformerEncoder
from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.mixer import MixerBlock
from neurosym.layers.shape_checks import check_sizes, check_tensor
from neurosym.layers.value_checks import TOKEN_ID_DTYPES, check_token_ids
from neurosym.perception.cnn import VGG11BN, ResNet18, SmallCNN
from neurosym.training.checks import height_width, positive_number

MLP_WIDTHS = (512, 1024, 512, 64)


def _scaled(width: int, scale: float) -> int:
    return max(1, round(width * scale))


def _check_tokens(digits: torch.Tensor, length: int, vocab: int) -> None:
    """Raise ``ValueError`` unless ``digits`` is ``[B, length]`` int64 or int32 ids in ``[0, vocab)`` (``TypeError`` for
    a non-tensor)."""
    check_tensor(digits, "digits")
    if digits.dim() != 2 or digits.shape[1] != length:
        raise ValueError(f"expected digits [B, {length}], got shape {tuple(digits.shape)}")
    if digits.dtype not in TOKEN_ID_DTYPES:  # (what nn.Embedding takes: uint8 was refused as no integer)
        raise ValueError(f"digits must be an integer tensor of int64 or int32, got {digits.dtype}")
    check_token_ids(digits, vocab, "digit")


class EmbeddingMLP(nn.Module):
    """Embed each digit (``embed_dim``), concatenate, then ``Linear -> ReLU`` for each of ``widths``
    and a linear classifier. ``forward(digits [B, L]) -> logits [B, num_classes]``. ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`)."""

    def __init__(
        self,
        length: int,
        vocab: int = 10,
        num_classes: int = 10,
        embed_dim: int = 64,
        widths: Sequence[int] = MLP_WIDTHS,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        # an embed_dim or a width of 0 built a model whose output ignored its input; 2.5 failed in torch.empty()
        self.length, self.vocab, num_classes, embed_dim = check_sizes(
            length=length, vocab=vocab, num_classes=num_classes, embed_dim=embed_dim
        )
        widths = check_sizes(**{f"widths[{index}]": width for index, width in enumerate(widths)})
        self.embedding = nn.Embedding(self.vocab, embed_dim, **factory)
        layers: list[nn.Module] = []
        previous = self.length * embed_dim
        for width in widths:
            layers += [nn.Linear(previous, width, **factory), nn.ReLU()]
            previous = width
        self.body = nn.Sequential(*layers)
        self.classifier = nn.Linear(previous, num_classes, **factory)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        _check_tokens(digits, self.length, self.vocab)
        return self.classifier(self.body(rearrange(self.embedding(digits), "b l e -> b (l e)")))


def _small_normal_(parameter: nn.Parameter) -> None:
    """Fill ``parameter`` in place from N(0, 0.02²) (the class token's and the learned positions' initialisation)."""
    with torch.no_grad():
        parameter.normal_().mul_(0.02)


class _ClassTokenModel(nn.Module):
    """Shared front end: digit embedding, a learned class token prepended at position 0; ``factory``: torch's factory
    keyword arguments of every parameter and layer."""

    def __init__(self, length: int, vocab: int, dim: int, num_classes: int, factory: FactoryKwargs) -> None:
        super().__init__()
        self.length, self.vocab, num_classes, dim = check_sizes(
            length=length, vocab=vocab, num_classes=num_classes, dim=dim
        )  # (a dim of 2.5 failed in torch.empty())
        self.embedding = nn.Embedding(self.vocab, dim, **factory)
        self.class_token = nn.Parameter(torch.empty(dim, **factory))
        _small_normal_(self.class_token)
        self.classifier = nn.Linear(dim, num_classes, **factory)

    def reset_parameters(self) -> None:
        """The class token drawn from N(0, 0.02²) again (the embedding and the layers reset their own parameters)."""
        _small_normal_(self.class_token)

    def tokens(self, digits: torch.Tensor) -> torch.Tensor:
        """``digits [B, L]`` -> ``[B, L + 1, dim]`` with the class token first (expanded to the batch size as a
        size, not a Python int, so ``torch.export`` and ``torch.jit.trace`` keep the batch size free)."""
        _check_tokens(digits, self.length, self.vocab)
        embedded = self.embedding(digits)
        return torch.cat([self.class_token.expand(digits.shape[0], 1, -1), embedded], dim=1)


class TransformerClassifier(_ClassTokenModel):
    """Transformer encoder (pre-norm, :class:`neurosym.layers.TransformerEncoder`) over the class token and
    the embedded digits plus learned positions; the class token's output is classified.
    ``forward(digits [B, L]) -> logits [B, num_classes]``. ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`)."""

    def __init__(
        self,
        length: int,
        vocab: int = 10,
        num_classes: int = 10,
        dim: int = 512,
        depth: int = 4,
        heads: int = 4,
        ff_dim: int = 1024,
        dropout: float = 0.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        factory = factory_kwargs(device, dtype, type(self).__name__)
        super().__init__(length, vocab, dim, num_classes, factory)
        self.positions = nn.Parameter(torch.empty(self.length + 1, dim, **factory))
        _small_normal_(self.positions)
        self.encoder = TransformerEncoder(dim, depth, heads, ff_dim, dropout, attention="vanilla", pre_norm=True, **factory)

    def reset_parameters(self) -> None:
        """The class token and the learned positions drawn from N(0, 0.02²) again."""
        super().reset_parameters()
        _small_normal_(self.positions)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.encoder(self.tokens(digits) + self.positions)[:, 0])


class MixerClassifier(_ClassTokenModel):
    """MLP-Mixer over the class token and the embedded digits (token order carries position), a final
    LayerNorm, and a linear classifier on the class token. ``forward(digits [B, L]) -> [B, num_classes]``. ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`)."""

    def __init__(
        self,
        length: int,
        vocab: int = 10,
        num_classes: int = 10,
        dim: int = 512,
        depth: int = 4,
        token_hidden: int = 768,
        channel_hidden: int = 2048,
        dropout: float = 0.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        factory = factory_kwargs(device, dtype, type(self).__name__)
        super().__init__(length, vocab, dim, num_classes, factory)
        (depth,) = check_sizes(depth=depth)  # a depth of 0 built a mixer of no block
        self.blocks = nn.Sequential(
            *(MixerBlock(self.length + 1, dim, token_hidden, channel_hidden, dropout, **factory) for _ in range(depth))
        )
        self.norm = nn.LayerNorm(dim, **factory)

    def forward(self, digits: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.norm(self.blocks(self.tokens(digits)))[:, 0])


VECTOR_MODELS = ("mlp", "mlp2x", "transformer", "mixer")
VISUAL_MODELS = ("resnet18", "vgg11bn", "small_cnn")


def build_vector_model(
    name: str,
    length: int = 11,
    num_classes: int = 10,
    scale: float = 1.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """One of :data:`VECTOR_MODELS` with the paper's sizes times ``scale``, for a PVR task of ``num_classes`` digit
    classes ``K``: it reads digits ``[B, length]`` in ``0..K-1`` and returns logits ``[B, K]`` (a PVR label is a digit).
    ``ValueError`` names a ``length`` or ``num_classes`` that is no int of at least 1 (numpy's are taken) and a
    ``scale`` that is no finite number above 0. ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`), passed to the model."""
    factory = factory_kwargs(device, dtype, "build_vector_model")
    scale = positive_number(scale, "scale")  # (length is checked by the models)
    (num_classes,) = check_sizes(num_classes=num_classes)  # (also the vocabulary: named as such, not as vocab)
    if name in ("mlp", "mlp2x"):
        factor = 2 if name == "mlp2x" else 1
        widths = [_scaled(w * factor, scale) for w in MLP_WIDTHS]
        return EmbeddingMLP(length, num_classes, num_classes, _scaled(64, scale), widths, **factory)
    if name == "transformer":  # the width stays a multiple of the 4 heads
        dim = 4 * _scaled(128, scale)
        return TransformerClassifier(length, num_classes, num_classes, dim=dim, heads=4, ff_dim=_scaled(1024, scale), **factory)
    if name == "mixer":
        return MixerClassifier(
            length,
            num_classes,
            num_classes,
            dim=_scaled(512, scale),
            token_hidden=_scaled(768, scale),
            channel_hidden=_scaled(2048, scale),
            **factory,
        )
    raise ValueError(f"unknown vector model {name!r}: choose from {VECTOR_MODELS}")


def build_visual_model(
    name: str,
    image_size: tuple[int, int],
    num_classes: int = 10,
    scale: float = 1.0,
    *,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> nn.Module:
    """One of :data:`VISUAL_MODELS` for grey images ``[B, 1, *image_size]`` (two positive ints, numpy's too), returning
    logits ``[B, num_classes]``; ``scale`` multiplies widths. ``ValueError`` names a ``num_classes`` that is no int of
    at least 1 and a ``scale`` that is no finite number above 0, as :func:`build_vector_model` does. ``device`` and
    ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`), passed to the model.

    ResNet-18 uses the ImageNet stem (as torchvision's, used by the paper). ``resnet18`` and ``vgg11bn`` pool globally
    before their heads, so they are the same network for every ``image_size`` and read images of any size (``image_size``
    is only checked); ``small_cnn`` is built for ``image_size``, which must be square, and refuses other sizes.
    """
    factory = factory_kwargs(device, dtype, "build_visual_model")
    image_size = height_width(image_size, "image_size")
    scale = positive_number(scale, "scale")  # (0 or below built every layer one channel wide; NaN failed in round())
    (num_classes,) = check_sizes(num_classes=num_classes)  # (was named as the classifier's out_features)
    if name == "resnet18":
        return ResNet18(1, num_classes, small_input=False, width=_scaled(64, scale), **factory)
    if name == "vgg11bn":
        return VGG11BN(1, num_classes, width=_scaled(64, scale), hidden=_scaled(512, scale), **factory)
    if name == "small_cnn":
        if image_size[0] != image_size[1]:
            raise ValueError(f"small_cnn needs square images, got {image_size}")
        return SmallCNN(1, num_classes, input_size=image_size[0], width=_scaled(32, scale), **factory)
    raise ValueError(f"unknown visual model {name!r}: choose from {VISUAL_MODELS}")
