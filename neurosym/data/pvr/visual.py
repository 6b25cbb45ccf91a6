"""Visual PVR on real MNIST digits: block style (a grid of jittered digits) and sequential style (a row).

Block style (paper, Figure 1): a ``grid x grid`` arrangement of ``block x block`` cells (default 2x2 of
40x40), each holding a 28x28 digit at a random offset; the top-left cell is the pointer and the others,
read row by row, are the values; by default the pointer digits are split into contiguous groups
(``0-3`` -> top right, ``4-6`` -> bottom left, ``7-9`` -> bottom right). Sequential style (Figure 2): a
row of ``length`` digits, 28 pixels apart; the pointer (leftmost by default) digit ``d`` selects value
``d % (length - 1)``. Training images come from the MNIST train split, test images from the test split.

Block holdout (Figure 4): training never shows the digits of :data:`PAPER_BLOCK_HOLDOUT` in their cells
(1-3 top right, 4-6 bottom left, 7-9 and 0 bottom right); the *holdout* test shows nothing else there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from einops import rearrange

from neurosym.data.mnist import MNIST
from neurosym.data.pvr.sampling import all_allowed, sample_digits
from neurosym.data.randomness import as_generator
from neurosym.semantics.pvr_rules import (
    PVRRule,
    contiguous_pointer_table,
    cyclic_pointer_table,
)
from neurosym.training.checks import int_at_least, is_int

DIGIT_SIZE = 28

PAPER_BLOCK_HOLDOUT: dict[int, tuple[int, ...]] = {1: (1, 2, 3), 2: (4, 5, 6), 3: (7, 8, 9, 0)}
"""Slot (row-major in the 2x2 grid) -> digits held out there during training."""


class DigitBank:
    """Images of one MNIST split grouped by class; draws a random image of any requested class."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, num_classes: int = 10) -> None:
        images, labels = np.asarray(images), np.asarray(labels)
        if images.ndim != 3 or images.shape[1:] != (DIGIT_SIZE, DIGIT_SIZE) or len(images) != len(labels):
            raise ValueError(f"expected images [N, 28, 28] with N labels, got {images.shape} and {labels.shape}")
        if images.dtype != np.uint8:  # floats in [0, 1] were cast into the uint8 canvas as black
            raise ValueError(f"images must be uint8 pixels (as MNIST's), got {images.dtype}")
        if not np.issubdtype(labels.dtype, np.integer) or (len(labels) and not 0 <= labels.min() <= labels.max() < num_classes):
            raise ValueError(f"labels must be integer classes in 0..{num_classes - 1}, got {labels.dtype} {labels[:8].tolist()}")
        missing = sorted(set(range(num_classes)) - set(labels.tolist()))
        if missing:
            raise ValueError(f"the digit bank has no image of class {missing[0]}")
        order = np.argsort(labels, kind="stable")
        self.images = images[order]
        self.counts = np.bincount(labels, minlength=num_classes)[:num_classes]
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])

    @classmethod
    def from_mnist(cls, mnist: MNIST, split: str) -> DigitBank:
        """``split`` is ``"train"`` or ``"test"``."""
        if split not in ("train", "test"):
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        return cls(getattr(mnist, f"{split}_images"), getattr(mnist, f"{split}_labels"))

    def draw(self, classes: np.ndarray, rng: np.random.Generator | int) -> np.ndarray:
        """``classes [...]`` int -> uint8 images ``[..., 28, 28]``, each a random image of its class."""
        rng = as_generator(rng)
        classes = np.asarray(classes)
        if classes.size and (
            not np.issubdtype(classes.dtype, np.integer) or classes.min() < 0 or classes.max() >= len(self.counts)
        ):
            raise ValueError(
                f"classes must be integers in 0..{len(self.counts) - 1}, got {classes.dtype} {classes.ravel()[:8].tolist()}"
            )
        offsets = (rng.random(classes.shape) * self.counts[classes]).astype(np.int64)
        return self.images[self.starts[classes] + offsets]


def render_blocks(digits: np.ndarray, grid: int, block: int, rng: np.random.Generator | int, jitter: bool = True) -> np.ndarray:
    """Place digit images ``[N, grid*grid, 28, 28]`` (row-major) into cells of ``block`` pixels, each at
    a random offset (``jitter``) or centred: uint8 ``[N, grid*block, grid*block]``."""
    rng = as_generator(rng)
    grid, block = _grid_and_block(grid, block)
    _check_digit_images(digits, "[N, grid * grid, 28, 28]")
    n, cells = digits.shape[:2]
    if cells != grid * grid:
        raise ValueError(f"{cells} digit images do not fill a {grid}x{grid} grid")
    spare = block - DIGIT_SIZE
    if jitter:
        offsets = rng.integers(spare + 1, size=(2, n, cells))
    else:
        offsets = np.full((2, n, cells), spare // 2)
    canvas = np.zeros((n, cells, block, block), dtype=np.uint8)
    span = np.arange(DIGIT_SIZE)
    rows = offsets[0][:, :, None, None] + span[:, None]
    cols = offsets[1][:, :, None, None] + span[None, :]
    canvas[np.arange(n)[:, None, None, None], np.arange(cells)[None, :, None, None], rows, cols] = digits
    return rearrange(canvas, "n (gh gw) h w -> n (gh h) (gw w)", gh=grid)


def _grid_and_block(grid: int, block: int) -> tuple[int, int]:
    """``grid`` (cells a side, an int of at least 1) and ``block`` (pixels a cell, an int no smaller than a digit), else
    ``ValueError`` (a float failed in numpy or einops, a string in a product)."""
    return int_at_least(grid, "grid (cells a side)", 1), int_at_least(block, "block (pixels a side of a cell)", DIGIT_SIZE)


def _check_digit_images(digits: np.ndarray, shape: str) -> None:
    """Raise ``ValueError`` unless ``digits`` are uint8 digit images of ``shape`` (``[N, cells, 28, 28]``)."""
    digits = np.asarray(digits)
    if digits.dtype != np.uint8:
        raise ValueError(f"digit images must be uint8 pixels, got {digits.dtype}")
    if digits.ndim != 4 or digits.shape[2:] != (DIGIT_SIZE, DIGIT_SIZE):
        raise ValueError(f"digit images must be {shape}, got shape {list(digits.shape)}")


def render_sequence(digits: np.ndarray) -> np.ndarray:
    """Digit images ``[N, L, 28, 28]`` (uint8) side by side: uint8 ``[N, 28, 28 * L]``."""
    _check_digit_images(digits, "[N, L, 28, 28]")
    return rearrange(digits, "n l h w -> n h (l w)")


def block_rule(grid: int = 2, pointer_position: int = 0, complexity: int = 0, aggregation: str = "mod_sum") -> PVRRule:
    """The block task's rule: pointer digits split into contiguous groups over the ``grid^2 - 1`` values."""
    int_at_least(grid, "grid (2 x 2 cells at least: a pointer and a value)", 2)
    cells = grid * grid
    return PVRRule(cells, contiguous_pointer_table(10, cells - 1), pointer_position, complexity, aggregation)


def sequential_rule(length: int = 11, pointer_position: int = 0, complexity: int = 0, aggregation: str = "mod_sum") -> PVRRule:
    """The sequential task's rule: pointer digit ``d`` selects value ``d % (length - 1)``."""
    int_at_least(length, "length (2 digits at least: a pointer and a value)", 2)
    return PVRRule(length, cyclic_pointer_table(10, length - 1), pointer_position, complexity, aggregation)


def block_holdout_masks(
    length: int = 4, holdout: dict[int, tuple[int, ...]] | None = None, num_classes: int = 10
) -> dict[str, np.ndarray]:
    """Allowed-digit masks ``[length, num_classes]`` for the holdout shift: ``"train"`` (and its
    in-distribution test ``"iid"``) forbid the held-out digits in their slots, ``"holdout"`` allows only
    them there (other slots unrestricted), ``"dshift"`` allows everything everywhere. ``holdout`` (``{slot: digits}``)
    defaults to the paper's, of the 2 × 2 grid (``length`` 4 only); a slot's digits are some but not all of them."""
    if holdout is None and length != 4:  # (the 2 × 2 grid's slots 1, 2, 3 mean other places in a 3 × 3 grid)
        raise ValueError(f"the paper's holdout is of the 2 x 2 grid (length 4), got length {length}: give holdout=")
    holdout = PAPER_BLOCK_HOLDOUT if holdout is None else holdout
    held = np.zeros((length, num_classes), dtype=bool)
    for slot, digits in holdout.items():
        if not is_int(slot) or not 0 <= slot < length:  # (True and 1.0 failed as numpy index errors)
            raise ValueError(f"holdout slot {slot!r} is not an int in 0..{length - 1}")
        if not all(is_int(digit) and 0 <= digit < num_classes for digit in digits):  # (-1 held out the last digit silently)
            raise ValueError(f"holdout digits of slot {slot} must lie in 0..{num_classes - 1}, got {tuple(digits)}")
        if not 0 < len(set(digits)) < num_classes:  # (none: a holdout test of no row; all: a training set of none)
            raise ValueError(
                f"holdout digits of slot {slot} must be some but not all of 0..{num_classes - 1}, got {tuple(digits)}"
            )
        held[slot, list(digits)] = True
    train = ~held
    only_held = all_allowed(length, num_classes)
    only_held[list(holdout)] = held[list(holdout)]
    return {"train": train, "iid": train, "dshift": all_allowed(length, num_classes), "holdout": only_held}


@dataclass(frozen=True)
class VisualPVR:
    """A visual PVR task over one digit bank.

    ``style`` is ``"block"`` (``rule.length`` must be ``grid**2``) or ``"sequential"``; ``allowed``
    ``[L, 10]`` restricts the digits per slot (None: unrestricted). ``sample(n, rng)`` returns
    ``(images uint8 [n, H, W], digits [n, L], labels [n])`` with ``H = W = grid * block`` (block) or
    ``H = 28, W = 28 * L`` (sequential).
    """

    bank: DigitBank
    rule: PVRRule
    style: str = "block"
    grid: int = 2
    block: int = 40
    jitter: bool = True
    allowed: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.style not in ("block", "sequential"):
            raise ValueError(f"style must be 'block' or 'sequential', got {self.style!r}")
        if self.style == "block":  # (a float grid failed once sampled, in einops)
            _grid_and_block(self.grid, self.block)
        if self.style == "block" and self.rule.length != self.grid * self.grid:
            raise ValueError(f"a {self.grid}x{self.grid} grid has {self.grid**2} slots, the rule {self.rule.length}")
        if self.allowed is not None and np.shape(self.allowed) != (self.rule.length, self.rule.num_classes):
            raise ValueError(f"allowed must have shape {(self.rule.length, self.rule.num_classes)}")

    def sample(self, n: int, rng: np.random.Generator | int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` examples drawn with ``rng`` (a generator or the seed of one):
        ``(images uint8 [n, H, W], digits [n, L], labels [n])``, the images laid out as the class says."""
        rng = as_generator(rng)
        allowed = all_allowed(self.rule.length, self.rule.num_classes) if self.allowed is None else self.allowed
        digits = sample_digits(n, allowed, rng)
        pictures = self.bank.draw(digits, rng)
        if self.style == "block":
            images = render_blocks(pictures, self.grid, self.block, rng, self.jitter)
        else:
            images = render_sequence(pictures)
        return images, digits, self.rule.label(digits)
