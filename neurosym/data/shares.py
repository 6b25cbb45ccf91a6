"""Shares of a count taken at a fraction written as a decimal (``0.29`` of 100 images, of 100 inputs)."""

from __future__ import annotations

import math
from fractions import Fraction


def decimal_floor(ratio: float, size: int) -> int:
    """``⌊ratio · size⌋`` for the decimal ``ratio`` is written as (its shortest ``repr``), in exact rational
    arithmetic: ``0.29 · 100`` is 29, where the binary float product ``28.999999999999996`` floors to 28."""
    return math.floor(Fraction(repr(float(ratio))) * size)
