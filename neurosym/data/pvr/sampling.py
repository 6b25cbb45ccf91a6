"""Drawing digit rows slot by slot from per-slot sets of allowed digits."""

from __future__ import annotations

import numpy as np

from neurosym.data.randomness import as_generator
from neurosym.training.checks import int_at_least


def all_allowed(length: int, num_classes: int = 10) -> np.ndarray:
    """The unrestricted mask: every digit allowed in every slot, ``[length, num_classes]`` bool."""
    return np.ones((length, num_classes), dtype=bool)


def sample_digits(n: int, allowed: np.ndarray, rng: np.random.Generator | int) -> np.ndarray:
    """Draw ``n`` rows of digits; slot ``j`` is uniform over the digits ``d`` with ``allowed[j, d]``.

    ``allowed [L, K]`` bool -> digits ``[n, L]`` int64.
    """
    rng = as_generator(rng)
    allowed = np.asarray(allowed, dtype=bool)
    if allowed.ndim != 2:
        raise ValueError(f"allowed must be a [slots, classes] mask, got shape {allowed.shape}")
    empty = np.flatnonzero(~allowed.any(axis=1))
    if empty.size:
        raise ValueError(f"slot {empty[0]} allows no digit at all")
    int_at_least(n, "n (rows to draw)", 0)  # (2.5 and True failed inside numpy as a TypeError)
    cumulative = np.cumsum(allowed / allowed.sum(axis=1, keepdims=True), axis=1)
    draws = rng.random((n, allowed.shape[0], 1))
    digits = (draws >= cumulative[None, :, :-1]).sum(axis=-1)
    # the shares summed in floats can stop short of 1 (six times 1/6 is 1 - 2^-53), and a draw above that sum
    # counted the disallowed digits after a slot's last allowed one
    last_allowed = allowed.shape[1] - 1 - np.argmax(allowed[:, ::-1], axis=1)  # [L]
    return np.minimum(digits, last_allowed).astype(np.int64)
