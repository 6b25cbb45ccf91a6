"""Convolutional image encoders shared by the visual benchmarks, written with plain ``torch.nn``.

All three map images ``[B, C, H, W]`` (floating point of the encoder's dtype, any value range, any memory layout) to
features ``[B, out_features]``, computing channels-last (NHWC) inside, where the CPU's convolutions run fastest. Each
encoder and block takes torch's factory keyword arguments ``device=`` and ``dtype=`` (keyword-only,
:mod:`neurosym.layers.factory`), passed to every convolution, batch norm and linear layer it builds:

* :class:`SmallCNN`  -- three conv blocks and a linear head; fast on a CPU, keeps spatial layout.
* :class:`ResNet18`  -- the 18-layer residual network (He et al. 2016), optionally with the
  small-image stem (3x3 stride-1 convolution, no max-pool) used for 28-64 pixel inputs.
* :class:`VGG11BN`   -- VGG configuration "A" with batch normalisation (Simonyan & Zisserman 2015),
  with a global-average-pooled head so it accepts any input size.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.shape_checks import check_dtype_of, check_sizes
from neurosym.perception.batch_statistics import batch_norms
from neurosym.training.checks import is_int


def _channels_last_images(images: torch.Tensor, in_channels: int, encoder: nn.Module) -> torch.Tensor:
    """``images`` laid out channels-last, as the encoders keep their convolution weights (:func:`_channels_last`);
    ``ValueError`` unless they are ``[B, in_channels, H, W]`` of ``encoder``'s floating dtype."""
    name = type(encoder).__name__
    if images.dim() != 4 or images.shape[1] != in_channels:
        raise ValueError(f"{name} expects images [B, {in_channels}, H, W], got shape {tuple(images.shape)}")
    if not images.is_floating_point():
        raise ValueError(f"{name} expects floating-point images, got {images.dtype} (pixels 0..255: images.float() / 255)")
    check_dtype_of(images, encoder, "images")
    layout = torch.channels_last if getattr(encoder, "channels_last", False) else torch.contiguous_format
    return images.contiguous(memory_format=layout)


def _check_batch_norm_batch(images: torch.Tensor, encoder: nn.Module, downsampling: int) -> None:
    """``ValueError`` when ``encoder``, its batch norms in train mode (the rest may read in evaluation mode, as
    :func:`~neurosym.perception.batch_statistics.batch_statistics_of` sets them), would normalise a single value per
    channel: its deepest batch norm sees ``images [B, C, H, W]`` shrunk ``downsampling`` times on each side (rounded
    up), and one image too small to leave it more than 1x1 has no batch statistics (torch's own error came from deep
    inside the network)."""
    if images.shape[0] != 1 or not any(layer.training for layer in batch_norms(encoder)):
        return
    height, width = images.shape[-2:]
    if -(-height // downsampling) * -(-width // downsampling) == 1:
        raise ValueError(
            f"{type(encoder).__name__} in train mode: batch-norm training needs at least 2 images per batch, got 1 image "
            f"of {height}x{width} pixels, which its deepest batch norm sees as a single value per channel "
            "(train on batches of 2 or more, or call .eval() to read one image)"
        )


def hangs_channels_last(conv: nn.Conv2d) -> bool:
    """Whether ``conv`` is a convolution whose weight gradient oneDNN's CPU kernels compute wrongly channels-last: a
    1x1 strided one over 2-7 input channels (torch 2.13 on AVX2 CPUs: the backward pass hangs or corrupts the
    heap, e.g. ResNet-18's shortcut at width 4; every other shape tried, and 1 or 8+ channels, works)."""
    return conv.kernel_size == (1, 1) and conv.stride != (1, 1) and 1 < conv.in_channels < 8


def _channels_last(encoder: nn.Module) -> bool:
    """Keep ``encoder``'s convolution weights channels-last (``[O, I, kH, kW]`` with the channels innermost in memory):
    with channels-last images, convolutions, batch norms and poolings take 1.3-2.6x less time forward and backward
    on a CPU (docs/performance.md); ``.to(device)`` keeps the layout. An encoder with a convolution oneDNN gets wrong
    that way (:func:`hangs_channels_last`) stays contiguous. Returns whether the layout is channels-last (the encoders
    keep it as ``channels_last``, the layout their images take)."""
    if any(hangs_channels_last(module) for module in encoder.modules() if isinstance(module, nn.Conv2d)):
        return False
    encoder.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # (documented; absent from the stubs)
    return True


def _conv_bn_relu(in_channels: int, out_channels: int, factory: FactoryKwargs) -> list[nn.Module]:
    """``conv3x3-BN-ReLU``: ``[B, in_channels, H, W]`` -> ``[B, out_channels, H, W]``, built with ``factory``."""
    return [
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False, **factory),
        nn.BatchNorm2d(out_channels, **factory),
        nn.ReLU(inplace=True),
    ]


class _ZeroScaleBatchNorm2d(nn.BatchNorm2d):
    """``nn.BatchNorm2d`` whose scale :meth:`reset_parameters` sets to 0 (deferred initialisation calls it too)."""

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.weight is not None:
            nn.init.zeros_(self.weight)


class ResidualConv(nn.Module):
    """``relu(x + BN(conv3x3(x)))`` with the BN's scale zero at first (Goyal et al. 2017), so the block starts as the
    identity on the non-negative ``x`` a ReLU gave it, and a network grown by such blocks starts as the one without.

    Shapes: ``[B, channels, H, W]`` -> ``[B, channels, H, W]``. ``device`` and ``dtype`` are torch's factory keyword
    arguments (:mod:`neurosym.layers.factory`).
    """

    def __init__(self, channels: int, *, device: torch.device | str | None = None, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False, **factory)
        self.norm = _ZeroScaleBatchNorm2d(channels, **factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.norm(self.conv(x)))


def _is_stage_convs(stage_convs: object) -> bool:
    """Whether ``stage_convs`` is a sequence (or numpy array) of three ints (numpy's too, not bools) of at least 1."""
    return isinstance(stage_convs, Collection) and len(stage_convs) == 3 and all(is_int(n) and n >= 1 for n in stage_convs)


class SmallCNN(nn.Module):
    """Three stages of ``conv3x3-BN-ReLU`` then ``maxpool2`` (``width``, ``2*width``, ``4*width`` channels), then a
    flattening linear layer, so the output still knows *where* in the image things are. ``stage_convs`` says how
    many convolutions each stage has (one each by default); a stage's convolutions after its first are
    :class:`ResidualConv` blocks, so a deeper CNN starts as the three-convolution one.

    ``input_size`` is the (square) side of the images it will see; the feature map after the three
    pools has side ``input_size // 8`` (at least 1).

    Shapes: ``[B, in_channels, input_size, input_size]`` -> ``[B, out_features]``. ``device`` and ``dtype`` are torch's
    factory keyword arguments (:mod:`neurosym.layers.factory`).
    """

    def __init__(
        self,
        in_channels: int = 1,
        out_features: int = 10,
        input_size: int = 32,
        width: int = 32,
        stage_convs: Sequence[int] = (1, 1, 1),
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        in_channels, out_features, width = check_sizes(in_channels=in_channels, out_features=out_features, width=width)
        if not is_int(input_size) or input_size < 8:
            raise ValueError(f"SmallCNN needs input_size >= 8 (three 2x poolings), got {input_size!r}")
        if not _is_stage_convs(stage_convs):  # (an int failed on len())
            raise ValueError(f"stage_convs gives each of the three stages at least one convolution, got {stage_convs!r}")
        self.in_channels = in_channels
        self.input_size = input_size
        layers: list[nn.Module] = []
        channels = in_channels
        for stage, convs in enumerate(stage_convs):
            out_channels = width * 2**stage
            layers += _conv_bn_relu(channels, out_channels, factory)
            layers += [ResidualConv(out_channels, **factory) for _ in range(convs - 1)]
            channels = out_channels
            layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        side = input_size // 8
        self.head = nn.Linear(4 * width * side * side, out_features, **factory)
        self.channels_last = _channels_last(self)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``images [B, C, S, S]`` with ``S == input_size`` -> ``[B, out_features]``."""
        images = _channels_last_images(images, self.in_channels, self)
        if images.shape[-2:] != (self.input_size, self.input_size):
            raise ValueError(f"SmallCNN was built for {self.input_size}x{self.input_size} images, got {tuple(images.shape[-2:])}")
        return self.head(rearrange(self.features(images), "b c h w -> b (c h w)"))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection (projected by a 1x1 conv when the shape changes).

    Shapes: ``[B, in_channels, H, W]`` -> ``[B, out_channels, ceil(H/stride), ceil(W/stride)]``. ``device`` and ``dtype``
    are torch's factory keyword arguments (:mod:`neurosym.layers.factory`).
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        stride: int = 1,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        self.residual = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False, **factory),
            nn.BatchNorm2d(out_channels, **factory),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False, **factory),
            nn.BatchNorm2d(out_channels, **factory),
        )
        if stride != 1 or in_channels != out_channels:
            self.shortcut: nn.Module = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False, **factory),
                nn.BatchNorm2d(out_channels, **factory),
            )
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.residual(x) + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18: a stem, four stages of two :class:`BasicBlock` each (``width``, 2x, 4x, 8x channels,
    stages 2-4 halve the resolution), global average pooling and a linear layer.

    ``small_input=True`` uses a 3x3 stride-1 stem without max-pooling (for MNIST/CIFAR-sized images);
    ``False`` gives the ImageNet stem (7x7 stride-2 convolution and a 3x3 stride-2 max-pool).
    ``width=64`` is the standard network; smaller widths make it cheaper on a CPU.

    Shapes: ``[B, in_channels, H, W]`` -> ``[B, out_features]``. ``device`` and ``dtype`` are torch's factory keyword
    arguments (:mod:`neurosym.layers.factory`).
    """

    def __init__(
        self,
        in_channels: int = 3,
        out_features: int = 1000,
        small_input: bool = True,
        width: int = 64,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        in_channels, out_features, width = check_sizes(in_channels=in_channels, out_features=out_features, width=width)
        self.in_channels = in_channels
        self.downsampling = 8 if small_input else 32  # before the last stage's batch norms (stem, then three halvings)
        if small_input:
            stem: list[nn.Module] = [nn.Conv2d(in_channels, width, 3, padding=1, bias=False, **factory)]
        else:
            stem = [nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False, **factory)]
        stem += [nn.BatchNorm2d(width, **factory), nn.ReLU(inplace=True)]
        if not small_input:
            stem.append(nn.MaxPool2d(3, stride=2, padding=1))
        blocks: list[nn.Module] = []
        channels = width
        for stage in range(4):
            out_channels = width * 2**stage
            stride = 1 if stage == 0 else 2
            blocks += [BasicBlock(channels, out_channels, stride, **factory), BasicBlock(out_channels, out_channels, **factory)]
            channels = out_channels
        self.body = nn.Sequential(*stem, *blocks, nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(channels, out_features, **factory)
        self.channels_last = _channels_last(self)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``images [B, C, H, W]`` -> ``[B, out_features]``; in train mode a batch of one image must be larger than
        ``downsampling`` pixels on some side (:func:`_check_batch_norm_batch`)."""
        images = _channels_last_images(images, self.in_channels, self)
        _check_batch_norm_batch(images, self, self.downsampling)
        return self.head(rearrange(self.body(images), "b c 1 1 -> b c"))


# VGG configuration "A" (11 weight layers with the 3 linear ones): channels, or "M" for a 2x2 max-pool.
_VGG11_LAYOUT = (1, "M", 2, "M", 4, 4, "M", 8, 8, "M", 8, 8, "M")
_VGG11_DOWNSAMPLING = 2 ** (_VGG11_LAYOUT.count("M") - 1)  # every pool but the last comes before a batch norm


class VGG11BN(nn.Module):
    """VGG-11 with batch normalisation: eight ``conv3x3-BN-ReLU`` layers with five max-pools between them
    (``width``..``8*width`` channels), global average pooling, and three linear layers (``hidden`` units,
    ReLU and dropout between them). Pools round up, so any image of at least 1x1 pixel is accepted.

    ``width=64, hidden=4096`` is the standard network's convolutional trunk; the default head is smaller.

    Shapes: ``[B, in_channels, H, W]`` -> ``[B, out_features]``. ``device`` and ``dtype`` are torch's factory keyword
    arguments (:mod:`neurosym.layers.factory`).
    """

    def __init__(
        self,
        in_channels: int = 3,
        out_features: int = 1000,
        width: int = 64,
        hidden: int = 512,
        dropout: float = 0.5,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        in_channels, out_features, width, hidden = check_sizes(
            in_channels=in_channels, out_features=out_features, width=width, hidden=hidden
        )  # (a width of 0 built a network of empty layers)
        self.in_channels = in_channels
        layers: list[nn.Module] = []
        channels = in_channels
        for item in _VGG11_LAYOUT:
            if isinstance(item, str):  # "M": a max-pool
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
            else:
                layers += _conv_bn_relu(channels, width * item, factory)
                channels = width * item
        self.features = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Sequential(
            nn.Linear(channels, hidden, **factory),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden, **factory),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(hidden, out_features, **factory),
        )
        self.channels_last = _channels_last(self)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``images [B, C, H, W]`` -> ``[B, out_features]``; in train mode a batch of one image must be larger than
        ``_VGG11_DOWNSAMPLING`` (16) pixels on some side (:func:`_check_batch_norm_batch`)."""
        images = _channels_last_images(images, self.in_channels, self)
        _check_batch_norm_batch(images, self, _VGG11_DOWNSAMPLING)
        return self.classifier(rearrange(self.features(images), "b c 1 1 -> b c"))
