"""A symbol classifier over 32x32 windows whose vocabulary grows when a concept is added."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import check_tensor
from neurosym.layers.value_checks import check_intensities
from neurosym.perception.cnn import ResNet18, SmallCNN
from neurosym.perception.strokes import StrokeNormaliser
from neurosym.training.checks import int_at_least

BACKBONES = ("small", "resnet18")


class SymbolClassifier(nn.Module):
    """A CNN encoder and a linear layer giving a distribution over ``vocabulary``.

    Args:
        vocabulary: the symbols, one per output class (e.g. ``"0".."9", "+", "-", "*", "/", "(", ")"``).
        backbone: ``"small"`` (:class:`SmallCNN`, fast on a CPU) or ``"resnet18"`` (as in the HINT paper).
        features: width of the encoder's output.
        window: side of the square input windows.
        width: channels of the encoder's first stage (later stages double it).
        stage_convs: convolutions in each of the ``"small"`` encoder's three stages (:class:`SmallCNN`).
        stroke_width: when given, every window is first redrawn as its skeleton at this pen width
            (:class:`~neurosym.perception.strokes.StrokeNormaliser`), so the reader never sees a writer's
            stroke width or blur.
        device, dtype: torch's factory keyword arguments (:mod:`neurosym.layers.factory`), keyword-only, passed to the
            encoder, the classifier and the stroke normaliser.

    Shapes: ``windows [N, window, window]`` or ``[N, 1, window, window]`` (uint8 in 0..255, divided by 255 in the
    classifier's dtype, or float in 0..1; other float values, NaN included, raise ``ValueError``; a list or numpy array
    ``TypeError``: ``torch.as_tensor`` it first) -> log-probabilities
    ``[N, len(vocabulary)]``.
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        backbone: str = "small",
        features: int = 128,
        window: int = 32,
        width: int = 32,
        stroke_width: int | None = None,
        stage_convs: Sequence[int] = (1, 1, 1),
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        if backbone not in BACKBONES:
            raise ValueError(f"unknown backbone {backbone!r}: choose one of {BACKBONES}")
        if not _is_vocabulary(vocabulary):  # (None and a generator failed on len(), a list of lists as unhashable)
            raise ValueError(f"the vocabulary must be non-empty symbols (str) without repeats, got {vocabulary!r:.200}")
        self.vocabulary = [str(symbol) for symbol in vocabulary]  # (numpy's str_ as str)
        self.window = int_at_least(window, "window", 1)  # (the resnet18 backbone built, and refused every input)
        features = int_at_least(features, "features", 1)  # (0 was named as a layer's out_features)
        self.strokes = None if stroke_width is None else StrokeNormaliser(stroke_width, **factory)
        if backbone == "small":
            self.encoder: nn.Module = SmallCNN(
                1, features, input_size=self.window, width=width, stage_convs=stage_convs, **factory
            )
        elif not isinstance(stage_convs, Collection) or tuple(stage_convs) != (1, 1, 1):
            raise ValueError(f"stage_convs is an option of the 'small' backbone, not of {backbone!r}")
        else:
            self.encoder = ResNet18(1, features, small_input=True, width=width, **factory)
        self.activation = nn.ReLU()
        self.classifier = nn.Linear(features, len(self.vocabulary), **factory)

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        """``windows [N, S, S]`` or ``[N, 1, S, S]`` -> log-probabilities ``[N, V]`` (each window alone:
        ``groups`` is accepted for the :class:`~neurosym.perception.reader.Reader` interface and unused; ``TypeError``
        for windows that are no tensor: a list or numpy array failed on ``.dim()``)."""
        check_tensor(windows, "SymbolClassifier's windows")
        shape = tuple(windows.shape)  # (named as given: [2, 8, 9] was named as (2, 1, 8, 9))
        if windows.dim() == 3:
            windows = rearrange(windows, "n h w -> n 1 h w")
        if windows.dim() != 4 or windows.shape[1:] != (1, self.window, self.window):
            raise ValueError(f"SymbolClassifier expects windows [N, {self.window}, {self.window}], got {shape}")
        if windows.dtype == torch.uint8:  # (in float32 first, a float64 classifier read them rounded to float32)
            windows = windows.to(self.classifier.weight.dtype) / 255
        if not windows.is_floating_point():
            raise ValueError(f"SymbolClassifier expects uint8 (0..255) or floating-point (0..1) windows, got {windows.dtype}")
        check_intensities(windows)
        windows = windows.to(self.classifier.weight.dtype)
        if self.strokes is not None:
            windows = self.strokes(windows)
        return self.classifier(self.activation(self.encoder(windows))).log_softmax(dim=-1)

    def add_symbol(self, symbol: str) -> int:
        """Append a class for ``symbol`` (existing classes keep their weights; the grown weight ``[V + 1, features]``
        and bias ``[V + 1]`` keep the device, dtype and ``requires_grad`` of the old ones, the new class drawn there in that
        dtype, as a layer built with the factory keywords draws it); returns its index."""
        if not isinstance(symbol, str) or not symbol or symbol in self.vocabulary:
            raise ValueError(f"symbol {symbol!r} is not a non-empty str or is already in the vocabulary")
        old = self.classifier
        grown = nn.Linear(old.in_features, old.out_features + 1, device=old.weight.device, dtype=old.weight.dtype)
        with torch.no_grad():
            grown.weight[:-1] = old.weight
            grown.bias[:-1] = old.bias
        grown.weight.requires_grad_(old.weight.requires_grad)  # (a frozen head came back trainable)
        grown.bias.requires_grad_(old.bias.requires_grad)
        self.classifier = grown
        self.vocabulary.append(symbol)
        return len(self.vocabulary) - 1


def _is_vocabulary(vocabulary: object) -> bool:
    """Whether ``vocabulary`` is a non-empty collection of str (a list, a tuple, a numpy array) without repeats."""
    if not isinstance(vocabulary, Collection) or len(vocabulary) == 0:
        return False
    return all(isinstance(symbol, str) and symbol for symbol in vocabulary) and len(set(vocabulary)) == len(vocabulary)
