"""Command-line option types shared by the benchmark runners."""

from __future__ import annotations

import argparse


def time_limit_minutes(text: str) -> float:
    """The value of a ``--time-limit MINUTES`` option: a number of minutes, at least 0."""
    try:
        minutes = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes, got {text!r}") from None
    if not minutes >= 0 or minutes == float("inf"):
        raise argparse.ArgumentTypeError(f"the time limit must be a finite number of minutes, at least 0; got {text!r}")
    return minutes
