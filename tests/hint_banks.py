"""Synthetic symbol banks for the HINT tests: flat shades that name their pool, or noisy prototypes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neurosym.data.symbol_images import (
    HINT_SYMBOLS,
    POOLS,
    SymbolBank,
    assign_pools,
    folder_of,
)

POOL_SHADES = {"train": 60, "val": 120, "test": 240}


def pool_shaded_bank(per_symbol: int = 40, size: int = 28, symbols: Sequence[str] = HINT_SYMBOLS) -> SymbolBank:
    """The 16 HINT ``symbols`` (or others), ``per_symbol`` images each, shaded by pool (:data:`POOL_SHADES`)."""
    labels = np.repeat(list(symbols), per_symbol)
    pools = assign_pools(labels, 0)
    images = np.stack([np.full((size, size), POOL_SHADES[p], np.uint8) for p in pools])
    return SymbolBank(images, labels, pools, np.asarray([f"{folder_of(l)}/{i}.jpg" for i, l in enumerate(labels)]))


def prototype_bank(per_symbol: int = 40, seed: int = 0, symbols: Sequence[str] = HINT_SYMBOLS) -> SymbolBank:
    """One random 28x28 prototype per symbol, each image with 8% of its pixels flipped."""
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 2, size=(len(symbols), 28, 28)).astype(bool)
    images, labels = [], []
    for prototype, symbol in zip(prototypes, symbols):
        flips = rng.random((per_symbol, 28, 28)) < 0.08
        images.append(((prototype[None] ^ flips) * 255).astype(np.uint8))
        labels += [symbol] * per_symbol
    pools = np.resize(np.asarray(POOLS), len(labels))
    paths = np.asarray([f"{folder_of(s)}/{i}.png" for i, s in enumerate(labels)])
    return SymbolBank(np.concatenate(images), np.asarray(labels), pools, paths)
