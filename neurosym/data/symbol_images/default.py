"""The embedded default bank: real MNIST digits plus procedurally drawn operators, parentheses and letters."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from neurosym.data.mnist import cache_dir, load_mnist
from neurosym.data.symbol_images.bank import SymbolBank, assign_pools
from neurosym.data.symbol_images.classes import FEWSHOT_CONCEPTS, OPERATORS, PARENTHESES, folder_of
from neurosym.data.symbol_images.strokes import draw_bank_images

DRAWN_SYMBOLS: tuple[str, ...] = OPERATORS + PARENTHESES + FEWSHOT_CONCEPTS
"""Symbols of the default bank that are drawn procedurally (digits come from MNIST)."""


def default_bank(
    drawn_per_symbol: int = 2000,
    seed: int = 0,
    mnist_path: str | os.PathLike | None = None,
    cache: bool = True,
) -> SymbolBank:
    """MNIST's 70,000 digits (28×28) plus ``drawn_per_symbol`` drawn images of each of :data:`DRAWN_SYMBOLS`.

    Every class is split 75/5/20 into train/val/test pools with ``seed``. The result is cached as an
    ``.npz`` under :func:`neurosym.data.mnist.cache_dir` when ``cache``.
    """
    if drawn_per_symbol < 1:
        raise ValueError(f"drawn_per_symbol must be positive, got {drawn_per_symbol}")
    cached = cache_dir() / f"symbol_bank_default_{drawn_per_symbol}_{seed}.npz"
    if cache and mnist_path is None and cached.is_file():
        with np.load(cached) as archive:
            return SymbolBank(archive["images"], archive["labels"], archive["pools"], archive["paths"])
    mnist = load_mnist(mnist_path)
    digits = np.concatenate([mnist.train_images, mnist.test_images])
    digit_labels = np.concatenate([mnist.train_labels, mnist.test_labels]).astype(str)
    drawn, drawn_labels = draw_bank_images(DRAWN_SYMBOLS, drawn_per_symbol, size=digits.shape[1], seed=seed)
    images = np.concatenate([digits, drawn])
    labels = np.concatenate([digit_labels, drawn_labels])
    sources = np.repeat(["mnist", "drawn"], [len(digits), len(drawn)])
    paths = np.asarray([f"{folder_of(l)}/{s}_{i}.jpg" for i, (l, s) in enumerate(zip(labels.tolist(), sources))])
    bank = SymbolBank(images, labels, assign_pools(labels, seed), paths)
    if cache and mnist_path is None:
        _save_atomically(cached, bank)
    return bank


def _save_atomically(path: Path, bank: SymbolBank) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial.npz")
    np.savez(partial, images=bank.images, labels=bank.labels, pools=bank.pools, paths=bank.paths)
    os.replace(partial, path)
