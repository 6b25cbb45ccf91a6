"""Checks of the counts, sizes and seeds that the data adapters take."""

from __future__ import annotations

import numbers

import numpy as np


def int_at_least(value: object, name: str, minimum: int) -> int:
    """``value`` as a Python int when it is an int (numpy's too, not a bool) of at least ``minimum``, else ``ValueError``."""
    if not isinstance(value, numbers.Integral) or isinstance(value, bool | np.bool_) or value < minimum:
        raise ValueError(f"{name} must be an int of at least {minimum}, got {value!r}")
    return int(value)
