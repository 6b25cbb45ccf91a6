"""Examples for the grammar pipeline: sentences whose symbols are shown as images or given, with results."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from neurosym.layers.value_checks import check_intensities

READ = -1
"""The ``given`` entry of a position whose symbol is read from its window."""


@dataclass(frozen=True)
class SentenceBatch:
    """A padded batch: ``windows [B, T, ...]`` (anything at given or padding positions), ``lengths [B]``
    symbols per example, ``given [B, T]`` symbol ids of the grammar's vocabulary where a symbol is given,
    :data:`READ` where it is read (both integer tensors, taken as int64)."""

    windows: torch.Tensor
    lengths: torch.Tensor
    given: torch.Tensor

    def __post_init__(self) -> None:
        """Integer ``lengths`` and ``given`` of any width become int64 (a source's int32 ids failed in ``one_hot``,
        "only applicable to index tensor of type LongTensor"); other kinds are refused by name (``TypeError``), and
        shapes that do not fit one another by theirs (``ValueError``)."""
        for name in ("lengths", "given"):
            value = getattr(self, name)
            if not isinstance(value, torch.Tensor) or not _is_integer(value.dtype):
                kind = f"a {value.dtype} tensor" if isinstance(value, torch.Tensor) else type(value).__name__
                raise TypeError(f"SentenceBatch's {name} must be an integer tensor, got {kind}")
            object.__setattr__(self, name, value.long())
        if not isinstance(self.windows, torch.Tensor):
            raise TypeError(f"SentenceBatch's windows must be a torch.Tensor [B, T, ...], got {type(self.windows).__name__}")
        _check_shapes(self.windows.shape, self.lengths.shape, self.given.shape)

    def to(self, device: torch.device) -> SentenceBatch:
        """The batch with its three tensors moved to ``device``."""
        return SentenceBatch(self.windows.to(device), self.lengths.to(device), self.given.to(device))


class SentenceSource(Protocol):
    """Examples to learn from: ``targets`` (one result per example), ``lengths`` int ``[N]`` (symbols per
    example, for the curriculum), ``batch(indices)``, and ``truths`` (the true sentences, used only to
    report how well symbols are read; ``None`` when unknown). Plain attributes implement the three
    (read-only here, so a ``list`` of targets fits)."""

    @property
    def targets(self) -> Sequence[Any]:
        """One result per example."""

    @property
    def lengths(self) -> np.ndarray:
        """Symbols per example, int ``[N]`` (for the curriculum)."""

    @property
    def truths(self) -> Sequence[str] | None:
        """The true sentences, used only to report how well symbols are read; ``None`` when unknown."""

    def __len__(self) -> int: ...

    def batch(self, indices: Sequence[int]) -> SentenceBatch:
        """The examples at ``indices`` as one padded :class:`SentenceBatch`."""


class ImageSentences:
    """Sentences shown with images from one array.

    Args:
        images: ``[M, H, W]`` the images symbols are shown with: uint8 pixels, or floats in ``[0, 1]``.
        picks: ``[N, T]`` int, the image of each position (``-1`` at given positions and past each length).
        given: ``[N, T]`` int, the grammar's symbol id given at a position, :data:`READ` where it is read
            (and past each length).
        lengths: ``[N]`` symbols per example.
        targets: the result of each example (a 1-D tensor's as its Python numbers).
        truths: the true sentences (for the symbol accuracy only), or ``None``.
    """

    def __init__(
        self,
        images: np.ndarray | torch.Tensor,
        picks: np.ndarray,
        given: np.ndarray,
        lengths: np.ndarray,
        targets: Sequence[Any],
        truths: Sequence[str] | None = None,
    ):
        picks, given, lengths = np.asarray(picks), np.asarray(given), np.asarray(lengths)
        images = torch.as_tensor(images)
        if images.ndim != 3:
            raise ValueError(f"images must be [M, H, W] (one channel), got shape {list(images.shape)}")
        check_intensities(images)
        if picks.ndim != 2:
            raise ValueError(f"picks must be [N, T], got shape {list(picks.shape)}")
        count, steps = picks.shape
        for name, array in (("picks", picks), ("given", given), ("lengths", lengths)):
            if array.size and array.dtype.kind not in "iu":  # 2.5 symbols were accepted, and failed only in batch()
                raise ValueError(f"{name} must be integers, got dtype {array.dtype}")
        if given.shape != picks.shape or lengths.shape != (count,) or len(targets) != count:
            raise ValueError(
                f"picks {picks.shape}, given {given.shape}, lengths {lengths.shape} and {len(targets)} targets disagree"
            )
        if count and (lengths.min() < 1 or lengths.max() > steps):
            raise ValueError(f"lengths must be in [1, {steps}] (picks' width), got {lengths.min()} to {lengths.max()}")
        if picks.size and picks.max() >= len(images):
            raise ValueError(f"picks name image {picks.max()}, but there are {len(images)} images")
        positions = np.arange(steps)[None, :] < lengths[:, None]
        if ((picks >= 0) != (positions & (given == READ))).any():
            raise ValueError("every read position within its example's length needs an image, and no other position")
        if truths is not None and [len(t) for t in truths] != lengths.tolist():
            raise ValueError("every true sentence must be as long as its example")
        self.images = images
        # (int32 arrays, numpy's default on some platforms, failed in one_hot at the first read)
        self.picks, self.given, self.lengths = picks.astype(np.int64), given.astype(np.int64), lengths.astype(np.int64)
        # (a tensor's items are 0-d tensors, whose == gives a tensor: every target was refused as compared elementwise)
        self.targets = targets.tolist() if isinstance(targets, torch.Tensor) and targets.ndim == 1 else list(targets)
        self.truths = None if truths is None else list(truths)

    def __len__(self) -> int:
        return len(self.targets)

    def batch(self, indices: Sequence[int]) -> SentenceBatch:
        """The examples at ``indices`` (integers), padded to the longest."""
        rows = example_indices(indices, len(self))
        if not len(rows):
            raise ValueError(f"indices must be one or more example indices in [0, {len(self)}), got []")
        lengths = self.lengths[rows]
        steps = int(lengths.max())
        picks = torch.from_numpy(self.picks[rows, :steps])
        windows = self.images[picks.clamp_min(0)] * (picks >= 0)[..., None, None].to(self.images.device, self.images.dtype)
        return SentenceBatch(windows, torch.from_numpy(lengths), torch.from_numpy(self.given[rows, :steps]))


def example_indices(indices: Iterable[int], size: int) -> np.ndarray:
    """``indices`` (a sequence, array or tensor of integers on any device, or any iterable of them) as int64 ``[B]``;
    ``ValueError`` unless each is an index in ``[0, size)``: a bool mask was read as the indices 0 and 1, a float
    truncated, ``-1`` read as the last example."""
    if isinstance(indices, torch.Tensor):
        indices = indices.cpu()  # (numpy reads no tensor on a GPU)
    rows = np.asarray(indices if isinstance(indices, (Sequence, np.ndarray, torch.Tensor)) else list(indices))
    if rows.ndim == 1 and not len(rows):
        return rows.astype(np.int64)
    if rows.ndim != 1 or rows.dtype.kind not in "iu" or rows.min() < 0 or rows.max() >= size:
        kind = "" if rows.dtype.kind in "iu" else f" of dtype {rows.dtype} (integers: a mask is no indices)"
        raise ValueError(f"indices must be example indices in [0, {size}), got {rows.tolist()}{kind}")
    return rows.astype(np.int64)


def _check_shapes(windows: torch.Size, lengths: torch.Size, given: torch.Size) -> None:
    """Raise ``ValueError`` unless ``given`` is ``[B, T]`` with ``B >= 1``, ``lengths`` ``[B]`` and ``windows``
    ``[B, T, ...]`` (a batch of one example without its batch axis, or ids of another width, failed inside torch's
    indexing with "the shape of the mask [3] ... does not match"; an empty batch inside einops, "modulo by zero")."""
    shapes = f"windows {list(windows)}, lengths {list(lengths)} and given {list(given)}"
    if len(given) != 2 or len(lengths) != 1 or len(windows) < 2:
        raise ValueError(f"a SentenceBatch takes windows [B, T, ...], lengths [B] and given [B, T], got {shapes}")
    if windows[:2] != given or lengths[0] != given[0]:
        raise ValueError(f"a SentenceBatch's windows [B, T, ...], lengths [B] and given [B, T] disagree: {shapes}")
    if given[0] == 0:
        raise ValueError(f"a SentenceBatch holds at least one example, got {shapes}")


def _is_integer(dtype: torch.dtype) -> bool:
    """Whether ``dtype`` holds integers (bool aside)."""
    return not (dtype.is_floating_point or dtype.is_complex) and dtype != torch.bool
