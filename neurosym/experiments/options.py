"""Command-line option types (and options) shared by the benchmark runners.

Each type turns the option's text into its value or raises :class:`argparse.ArgumentTypeError`, so a bad
value ends the command with a one-line usage error that names the option, instead of a traceback from
deep inside a run that has already started.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path


def _number(text: str, kind: type) -> float | int:
    """``text`` as a float, or as an int (also written like ``5e6``, but not ``1.5``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if kind is float and not math.isnan(value):
        return value
    if kind is float and text.strip().lower() in ("nan", "+nan", "-nan"):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if kind is int and math.isfinite(value) and value.is_integer():
        return int(text) if text.strip().lstrip("+-").isdigit() else int(value)
    raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}")


def positive_int(text: str) -> int:
    """An integer of at least 1."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An integer of at least 0."""
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer of at least 0, got {text!r}")
    return value


def positive_float(text: str) -> float:
    """A finite number above 0."""
    value = _number(text, float)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite positive number, got {text!r}")
    return value


def probability_below_one(text: str) -> float:
    """A number in ``[0, 1)``: a dropout rate."""
    value = _number(text, float)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return value


def unit_interval(text: str) -> float:
    """A number in ``[0, 1]``: a ratio."""
    value = _number(text, float)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def fraction_up_to_one(text: str) -> float:
    """A number in ``(0, 1]``: a dataset scale."""
    value = _number(text, float)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}")
    return value


def existing_file(text: str) -> Path:
    """The path of a file that exists."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return path


def existing_folder(text: str) -> Path:
    """The path of a folder that exists."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"no such folder: {text!r}")
    return path


def time_limit_minutes(text: str) -> float:
    """The value of a ``--time-limit MINUTES`` option: a number of minutes, at least 0."""
    try:
        minutes = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of minutes, got {text!r}") from None
    if not minutes >= 0 or minutes == float("inf"):
        raise argparse.ArgumentTypeError(f"the time limit must be a finite number of minutes, at least 0; got {text!r}")
    return minutes


def add_compile_option(parser: argparse.ArgumentParser) -> None:
    """``--compile``: train through ``torch.compile`` (:func:`neurosym.training.compile.compile_for_training`)."""
    parser.add_argument(
        "--compile",
        action="store_true",
        help="run the model's training forward and backward through torch.compile (one graph for every batch "
        "shape): fewer, fused kernels, for GPU training (slower on a CPU); the first step waits for the compiler",
    )
