"""The random generators of data generation: a numpy ``Generator`` or the int seed of a new one."""

from __future__ import annotations

import numpy as np

from neurosym.training.checks import is_int


def as_generator(rng: np.random.Generator | int) -> np.random.Generator:
    """``rng`` itself, or a new generator seeded with the int ``rng`` (at least 0); anything else raises."""
    if isinstance(rng, np.random.Generator):
        return rng
    if not is_int(rng):
        raise TypeError(f"expected a numpy Generator (np.random.default_rng(seed)) or an int seed, got {type(rng).__name__}")
    if rng < 0:
        raise ValueError(f"a seed must be an int of at least 0, got {rng}")
    return np.random.default_rng(int(rng))
