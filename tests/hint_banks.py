"""A synthetic symbol bank for the HINT data tests: every image is one flat shade that names its pool."""

from __future__ import annotations

import numpy as np

from neurosym.data.symbol_images import SymbolBank, assign_pools, folder_of

POOL_SHADES = {"train": 60, "val": 120, "test": 240}


def pool_shaded_bank(per_symbol: int = 40, size: int = 28) -> SymbolBank:
    """The 16 HINT symbols, ``per_symbol`` images each, shaded by pool (:data:`POOL_SHADES`)."""
    labels = np.repeat(list("0123456789+-*/()"), per_symbol)
    pools = assign_pools(labels, 0)
    images = np.stack([np.full((size, size), POOL_SHADES[p], np.uint8) for p in pools])
    return SymbolBank(images, labels, pools, np.asarray([f"{folder_of(l)}/{i}.jpg" for i, l in enumerate(labels)]))
