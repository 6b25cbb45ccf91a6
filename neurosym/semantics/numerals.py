"""Decimal numerals of any length read as exact ints, and ints written as decimal numerals.

Python's ``int(text)`` and ``str(value)`` refuse numbers of more than 4,300 digits (``sys.get_int_max_str_digits``)
with a ``ValueError``, which a grammar's semantics read as an invalid value (:mod:`~neurosym.semantics.tree_semantics`):
a sentence of two 5,000-digit numbers had no sum. These convert in chunks of :data:`CHUNK_DIGITS` digits, below any
limit Python allows to be set, so every length is read and written exactly.
"""

from __future__ import annotations

from neurosym.training.checks import as_int

CHUNK_DIGITS = 600
"""Digits converted at once (Python's limit on integer text may be set no lower than 640)."""
_CHUNK = 10**CHUNK_DIGITS


def decimal_value(digits: str) -> int:
    """The int the decimal numeral ``digits`` shows (ASCII ``0``-``9`` only, leading zeros allowed, any length).

    Raises:
        TypeError: ``digits`` is no str (an int failed as "'int' object has no attribute 'isascii'").
        ValueError: ``digits`` is empty or holds anything else (a sign, a space, ``_``, another script's digits, all
            of which ``int`` takes).
    """
    if not isinstance(digits, str):
        raise TypeError(f"decimal_value reads a str of digits, got {type(digits).__name__} {digits!r:.40}")
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{digits!r:.40} is not a decimal numeral (one or more of the digits 0-9 alone)")
    value = 0
    for start in range(0, len(digits), CHUNK_DIGITS):
        chunk = digits[start : start + CHUNK_DIGITS]
        value = value * 10 ** len(chunk) + int(chunk)
    return value


def decimal_text(value: int) -> str:
    """``value`` as a decimal numeral (``-`` before a negative one), as ``str(value)`` writes it, at any length.

    Raises:
        TypeError: ``value`` is no int (numpy's count; a bool, a float, a Fraction do not: ``1.5``, ``1e30`` and
            ``True`` were written ``"1.5"``, ``"1e+30"`` and ``"True"``, which are no decimal numerals).
    """
    number = as_int(value)
    if number is None:
        raise TypeError(f"decimal_text writes an int, got {type(value).__name__} {value!r:.40}")
    chunks = []
    rest = abs(number)
    while rest >= _CHUNK:
        rest, low = divmod(rest, _CHUNK)
        chunks.append(f"{low:0{CHUNK_DIGITS}d}")
    text = str(rest) + "".join(reversed(chunks))
    return "-" + text if number < 0 else text
