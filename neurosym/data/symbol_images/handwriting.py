"""The real handwritten symbols shipped with the package (two MIT-licensed sets; see ``handwritten/LICENSES.md``).

``handwritten/handwritten_symbols.npz`` holds 31,506 images, 28×28 white ink on black:

* ``bhmsds`` (Basic Handwritten Math Symbols Data Set): digits ``0``–``9``, ``+``, ``-``, ``/slash`` and
  the letters ``w x y z``, 1,500 of each;
* ``handwritten-calculator``: ``+``, ``-``, ``*`` (× as a cross), ``*dot``, ``/`` (÷ as an obelus) and
  ``/slash``, about 1,000 of each.

Each image comes with its set's own train/val/test split, but for copies of one image that it puts in several,
which go to the first of them (:func:`disjoint_splits`). No permissively licensed set of real
handwritten parentheses exists, so banks draw those (:mod:`neurosym.data.symbol_images.strokes`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from neurosym.data.symbol_images.archive import read_bank_archive
from neurosym.data.symbol_images.bank import POOLS
from neurosym.data.symbol_images.classes import HANDWRITTEN_LABELS, require_known
from neurosym.paths import user_path

HANDWRITTEN_FOLDER = Path(__file__).with_name("handwritten")
HANDWRITTEN_ARCHIVE = HANDWRITTEN_FOLDER / "handwritten_symbols.npz"
"""The shipped archive of real handwritten symbols (28×28)."""
HANDWRITTEN_LICENSES = HANDWRITTEN_FOLDER / "LICENSES.md"
"""The licence notices of the sets the archive's symbols come from."""
HANDWRITTEN_SOURCES: tuple[str, ...] = ("bhmsds", "handwritten-calculator")
"""The sets the archive's symbols come from, both under the MIT License."""
HANDWRITTEN_SIZE = 28


@dataclass(frozen=True)
class HandwrittenSymbols:
    """``images`` uint8 ``[N, 28, 28]`` (white ink on black) with ``labels``, ``sources`` and ``splits``,
    each ``[N]`` strings (from :data:`HANDWRITTEN_LABELS`, :data:`HANDWRITTEN_SOURCES` and
    ``train``/``val``/``test``)."""

    images: np.ndarray
    labels: np.ndarray
    sources: np.ndarray
    splits: np.ndarray


def handwritten_symbols(path: str | os.PathLike = HANDWRITTEN_ARCHIVE) -> HandwrittenSymbols:
    """Load the shipped handwritten symbols (or an archive of the same layout at ``path``), checked:
    a missing array, a wrong shape, an unknown label or source raises a ``ValueError`` naming the file. The shipped
    archive is read once per process (0.2 s a time, for every task built on it): its arrays are read-only, shared by
    every call."""
    path = user_path(path)
    if path.resolve() == HANDWRITTEN_ARCHIVE.resolve():
        return _shipped_symbols()
    return _read_symbols(path)


@functools.cache
def _shipped_symbols() -> HandwrittenSymbols:
    symbols = _read_symbols(HANDWRITTEN_ARCHIVE)
    for array in (symbols.images, symbols.labels, symbols.sources, symbols.splits):
        array.flags.writeable = False
    return symbols


def _read_symbols(path: str | os.PathLike) -> HandwrittenSymbols:
    arrays = read_bank_archive(path, required=("images", "labels", "sources", "splits"))
    images = arrays["images"]
    if images.shape[1:] != (HANDWRITTEN_SIZE, HANDWRITTEN_SIZE):
        raise ValueError(
            f"{path}: handwritten images must be {HANDWRITTEN_SIZE}x{HANDWRITTEN_SIZE}, got {list(images.shape[1:])}"
        )
    for name, allowed in (("labels", HANDWRITTEN_LABELS), ("sources", HANDWRITTEN_SOURCES)):
        require_known(path, name, arrays[name].tolist(), allowed)
    return HandwrittenSymbols(images, arrays["labels"], arrays["sources"], disjoint_splits(images, arrays["splits"]))


def disjoint_splits(images: np.ndarray, splits: np.ndarray) -> np.ndarray:
    """``splits [N]`` (of :data:`~neurosym.data.symbol_images.bank.POOLS`) with every group of byte-identical
    ``images [N, H, W]`` in one split, the first of ``train``, ``val``, ``test`` the group is in: a source set's own
    split may hold copies of one image in several (the shipped ``handwritten-calculator`` ``-``: 25 groups, 14 test
    images also in training or validation), and no validation or test image may be a training one. ``ValueError``
    names a split that is none of the pools."""
    if unknown := sorted({str(split) for split in splits.tolist()} - set(POOLS)):
        raise ValueError(f"splits must be among {POOLS}, got {unknown}")
    rows = np.ascontiguousarray(images.reshape(len(images), int(np.prod(images.shape[1:]))))
    _, group = np.unique(rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).reshape(-1), return_inverse=True)
    rank = np.asarray([POOLS.index(split) for split in splits.tolist()])
    first = np.full(group.max(initial=-1) + 1, len(POOLS))
    np.minimum.at(first, group, rank)
    return np.asarray(POOLS)[first[group]]
