"""Checks of the counts, sizes and numbers that functions of every layer of the library take."""

from __future__ import annotations

import math
import numbers
from typing import TypeGuard

import numpy as np
import torch


def as_int(value: object) -> int | None:
    """``value`` as a Python int when it is an int (numpy's too, not a bool), else None."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        return int(value)
    return None


def is_int(value: object) -> bool:
    """Whether ``value`` is an int (:func:`as_int`: numpy's too, not a bool)."""
    return as_int(value) is not None


def is_real(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a real number (an int, a float, numpy's too; not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def is_fraction(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a real number in ``[0, 1]`` (:func:`is_real`: not a bool, never NaN)."""
    return is_real(value) and 0 <= value <= 1


def holds_bool(values: object) -> bool:
    """Whether ``values`` is a bool (numpy's too) or a list or tuple holding one at any depth: numpy and torch read
    ``[True, 2.5]`` as the numbers ``[1.0, 2.5]``, and ``[True, 2]`` as ints."""
    if isinstance(values, bool | np.bool_):
        return True
    return isinstance(values, list | tuple) and any(map(holds_bool, values))


def is_int_tensor(value: object) -> TypeGuard[torch.Tensor]:
    """Whether ``value`` is a tensor of integers (not of bools, floats or complex numbers)."""
    return isinstance(value, torch.Tensor) and not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)


def int_at_least(value: object, name: str, minimum: int) -> int:
    """``value`` as a Python int when it is an int (numpy's too, not a bool) of at least ``minimum``, else ``ValueError``."""
    number = as_int(value)
    if number is None or number < minimum:
        raise ValueError(f"{name} must be an int of at least {minimum}, got {value!r}")
    return number


def positive_number(value: object, name: str, zero: bool = False, infinity: bool = False) -> float:
    """``value`` as a float when it is a real number above 0 (at least 0 with ``zero``; infinity only with
    ``infinity``; never NaN), else ``ValueError``."""
    number = float(value) if is_real(value) else math.nan
    if not (number >= 0 if zero else number > 0) or (math.isinf(number) and not infinity):
        expected = "at least 0" if zero else "above 0"
        raise ValueError(f"{name} must be a {'' if infinity else 'finite '}number {expected}, got {value!r}")
    return number


def fraction(value: object, name: str, below_one: bool = False) -> float:
    """``value`` as a float when it is a real number in ``[0, 1]`` (:func:`is_fraction`: not a bool; ``[0, 1)`` with
    ``below_one``), else ``ValueError`` naming ``name``."""
    if not is_fraction(value) or (below_one and value == 1):
        raise ValueError(f"{name} must be a number in [0, 1{')' if below_one else ']'}, got {value!r}")
    return float(value)


def dropout_probability(value: object, name: str = "dropout") -> float:
    """``value`` as a float when it is a real number in ``[0, 1)`` (:func:`fraction`), else ``ValueError`` naming
    ``name`` (NaN passes torch's own check, and then fails every forward)."""
    return fraction(value, name, below_one=True)


def check_flags(where: str = "", **flags: object) -> None:
    """Raise ``ValueError`` naming the first of ``flags`` that is not a bool (numpy's too): a switch given as ``"no"``,
    ``"false"`` or ``0.0`` would be read by its truth, silently (``where``, when given, prefixes the name)."""
    for name, value in flags.items():
        if not isinstance(value, bool | np.bool_):
            raise ValueError(f"{where}{name} must be True or False, got {value!r}")


def ignored_option(option: str, value: object, users: str, chosen: str) -> ValueError:
    """The ``ValueError`` for ``option`` set to ``value``, away from its default, where the ``chosen`` configuration
    does not read it (``users`` do): it would be silently ignored."""
    return ValueError(f"{option}={value!r} applies to {users}, not to {chosen}, which would ignore it (drop it)")


def height_width(value: object, name: str) -> tuple[int, int]:
    """``value`` as ``(height, width)`` Python ints when it is a tuple or list of two ints (numpy's too, not bools) of
    at least 1, else ``ValueError`` naming ``name``."""
    if not (isinstance(value, tuple | list) and len(value) == 2 and all(is_int(side) and side >= 1 for side in value)):
        raise ValueError(f"{name} must be (height, width), two positive ints, got {value!r}")
    return int(value[0]), int(value[1])


def check_batch_fits(dataset_size: int, batch_size: int) -> None:
    """``ValueError`` unless ``dataset_size`` examples fill one batch of ``batch_size``."""
    if dataset_size < batch_size:
        raise ValueError(f"the training set ({dataset_size} examples) is smaller than one batch ({batch_size})")
