"""Decimal numerals of any length, read and written exactly (Python's int and str refuse beyond 4,300 digits)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neurosym.semantics.numerals import CHUNK_DIGITS, decimal_text, decimal_value

DIGIT_RUNS = st.tuples(st.sampled_from("0123456789"), st.integers(1, 2 * CHUNK_DIGITS)).map(lambda run: run[0] * run[1])
NUMERALS = st.lists(st.one_of(DIGIT_RUNS, st.text("0123456789", min_size=1, max_size=40)), min_size=1, max_size=8).map("".join)
"""Numerals up to 9,600 digits: runs of one digit (whole chunks of zeros, leading zeros) among mixed digits."""


@contextlib.contextmanager
def unlimited_int_text() -> Iterator[None]:
    """Python's own conversions at any length, for comparison."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(limit)


@settings(max_examples=60, deadline=None)
@given(digits=NUMERALS)
@example(digits="9" * 4301)
@example(digits="1" + "0" * (3 * CHUNK_DIGITS))
@example(digits="0" * (CHUNK_DIGITS + 1))
def test_a_numeral_of_any_length_is_read_and_written_as_python_does_without_its_limit(digits):
    with unlimited_int_text():
        value = int(digits)
        text = str(value)
    assert decimal_value(digits) == value
    assert decimal_text(value) == text
    assert decimal_text(-value) == ("-" + text if value else "0")


@pytest.mark.parametrize("digits", ["", "+1", "-1", " 1", "1 ", "1_000", "١٢", "12a", "0x1f", "1.0"])
def test_anything_but_decimal_digits_is_refused(digits):
    with pytest.raises(ValueError, match=r"is not a decimal numeral \(one or more of the digits 0-9 alone\)"):
        decimal_value(digits)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1.5, "float 1.5"), (1e30, "float 1e\\+30"), (True, "bool True"), (Fraction(3, 2), "Fraction"), ("12", "str '12'")],
)
def test_decimal_text_refuses_anything_but_an_int(value, shown):
    with pytest.raises(TypeError, match=f"decimal_text writes an int, got {shown}"):
        decimal_text(value)


def test_decimal_text_takes_numpy_ints():
    assert decimal_text(np.int64(-42)) == "-42"


@pytest.mark.parametrize("digits", [12, None, b"12", ["1", "2"]])
def test_decimal_value_refuses_anything_but_a_str(digits):
    with pytest.raises(TypeError, match=f"decimal_value reads a str of digits, got {type(digits).__name__}"):
        decimal_value(digits)
