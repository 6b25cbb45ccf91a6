"""A neuro-symbolic PVR solver: a digit classifier reads every cell, an induced rule gives the label.

The perception network is trained on single MNIST digits (their class labels: supervision the
end-to-end baselines of the paper do not get), rendered into cells exactly as the task renders them.
The rule (pointer position, pointer table, complexity, aggregation, boundary) is then induced from a
few hundred task examples with :func:`neurosym.semantics.pvr_rules.induce_rule`, using the
*perceived* digits, so recognition errors are tolerated as label noise. Because the rule is symbolic,
the solver is unaffected by which digits appeared where during training (the holdout shifts).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from einops import rearrange
from torch import nn

from neurosym.data.pvr import DigitBank, render_blocks
from neurosym.data.randomness import as_generator
from neurosym.perception.cnn import SmallCNN
from neurosym.semantics.pvr_rules import InducedRule, PVRRule, induce_rule
from neurosym.training.classifier import fit_classifier, predict
from neurosym.training.loop import TrainConfig
from neurosym.training.seeding import seeded

READER_WIDTH = 16
"""Channels of the first convolution of the default digit reader."""


@dataclass(frozen=True)
class CellLayout:
    """How an image splits into digit cells: ``style="block"`` (``grid x grid`` cells of ``cell`` pixels)
    or ``"sequential"`` (a row of ``cell``-pixel-wide cells)."""

    style: str = "block"
    grid: int = 2
    cell: int = 40

    def split(self, images: np.ndarray) -> np.ndarray:
        """``images [N, H, W]`` -> cells ``[N, L, cell, cell]`` in slot order (row-major for grids)."""
        if self.style == "block":
            expected = (self.grid * self.cell, self.grid * self.cell)
            if images.shape[1:] != expected:
                raise ValueError(f"expected block images of size {expected}, got {images.shape[1:]}")
            return rearrange(images, "n (gh h) (gw w) -> n (gh gw) h w", gh=self.grid, gw=self.grid)
        if self.style == "sequential":
            if images.shape[1] != self.cell or images.shape[2] % self.cell:
                raise ValueError(f"expected a row of {self.cell}-pixel cells, got images of size {images.shape[1:]}")
            return rearrange(images, "n h (l w) -> n l h w", w=self.cell)
        raise ValueError(f"style must be 'block' or 'sequential', got {self.style!r}")


def images_to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 images ``[N, H, W]`` -> float ``[N, 1, H, W]`` in ``[0, 1]``."""
    return rearrange(images.float() / 255.0, "n h w -> n 1 h w")


def train_digit_reader(
    bank: DigitBank,
    cell: int,
    device: torch.device,
    examples: int = 20_000,
    config: TrainConfig | None = None,
    seed: int = 0,
    width: int = READER_WIDTH,
    progress: bool = False,
    checkpoint: Path | None = None,
    time_limit: float | None = None,
) -> SmallCNN:
    """Fit a :class:`SmallCNN` to ``examples`` digits from ``bank``, each jittered in a ``cell``-pixel square
    (by default for three epochs with Adam, learning rate 2e-3 decayed to zero on a cosine, batches of 64,
    no gradient clipping);
    ``progress``, ``checkpoint`` (training resumes from it) and ``time_limit`` (seconds) override the
    configuration's fields of those names."""
    rng = as_generator(seed)
    classes = rng.integers(0, 10, size=(examples, 1))
    images = render_blocks(bank.draw(classes, rng), grid=1, block=cell, rng=rng)
    if config is None:  # three epochs of Adam
        config = TrainConfig(
            max_steps=max(1, 3 * examples // 64),
            batch_size=64,
            optimizer="adam",
            lr=2e-3,
            schedule="cosine",
            clip_norm=None,
            seed=seed,
        )
    with seeded(seed, device):  # (initial weights; the caller's stream goes on untouched)
        reader = SmallCNN(1, 10, input_size=cell, width=width)
        fit_classifier(
            reader,
            torch.from_numpy(images),
            torch.from_numpy(classes[:, 0]),
            replace(config, progress=progress, checkpoint=checkpoint, time_limit=time_limit),
            device,
            images_to_float,
        )
    return reader.eval()


class NeuroSymbolicPVR:
    """Perceive each cell's digit with ``reader`` (``[B, 1, cell, cell] -> [B, 10]``), label with a rule.

    ``fit(images, labels)`` induces the rule; ``predict(images)`` returns labels ``[N]``.
    """

    def __init__(self, reader: nn.Module, layout: CellLayout, device: torch.device) -> None:
        self.reader, self.layout, self.device = reader, layout, device
        self.induced: InducedRule | None = None

    def perceive(self, images: np.ndarray) -> np.ndarray:
        """``images [N, H, W]`` uint8 -> digits ``[N, L]`` int64."""
        cells = self.layout.split(np.asarray(images))
        flat = torch.from_numpy(np.ascontiguousarray(rearrange(cells, "n l h w -> (n l) h w")))
        digits = predict(self.reader, flat, self.device, images_to_float).numpy()
        return rearrange(digits, "(n l) -> n l", n=len(cells))

    def fit(self, images: np.ndarray, labels: np.ndarray, **search: Any) -> InducedRule:
        """Induce the rule from ``images [N, H, W]`` and ``labels [N]``; ``search`` narrows
        :func:`induce_rule`'s search space (complexities, aggregations, boundaries, pointer_positions)."""
        self.induced = induce_rule(self.perceive(images), np.asarray(labels), **search)
        return self.induced

    @property
    def rule(self) -> PVRRule:
        if self.induced is None:
            raise RuntimeError("no rule yet: call fit(images, labels) first")
        return self.induced.rule

    def predict(self, images: np.ndarray) -> np.ndarray:
        """``images [N, H, W]`` -> labels ``[N]``."""
        return self.rule.label(self.perceive(images))
