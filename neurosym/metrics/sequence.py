"""Exact-match accuracy for predicted sequences (token lists, strings, padded token tensors or arrays)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor


def sequence_matches(predictions: Tensor | Sequence[Any], targets: Tensor | Sequence[Any]) -> Tensor:
    """Per-example exact match: ``[N]`` bool, True where the whole prediction equals the whole target.

    Tensors or numpy arrays: ``predictions`` and ``targets`` of the same shape ``[N, ...]`` (padding included, so
    a prediction must also reproduce the padding); each row ``[...]`` is one example. Values compare as numbers
    whatever their dtypes (float32 1.5 matches float64 1.5, uint16 3 matches int64 3), exactly (an int64 token
    2**24 + 1 does not match a float32 2**24, as torch's comparison in float32 had it); two tensors must be on one
    device (``ValueError``), an array is moved to the tensor's. Python sequences: ``N`` items compared with ``==`` after turning
    each item into a tuple, at every depth (so a list, a tuple, a tensor and an array of the same tokens match, whatever
    their lengths; strings compare as strings). One string for ``predictions`` or ``targets`` raises ``TypeError``: it
    would be read as one example per character; so does anything else that is no sequence (a dict, a set, a generator).
    """
    if isinstance(predictions, str) or isinstance(targets, str):
        raise TypeError(
            f"pass predictions and targets as sequences of examples (a list of strings), not one string: got "
            f"{type(predictions).__name__} and {type(targets).__name__}"
        )
    for name, value in (("predictions", predictions), ("targets", targets)):
        if not isinstance(value, Tensor | np.ndarray | Sequence):  # (a dict's keys were compared, a set's in hash order)
            raise TypeError(
                f"{name} must be a sequence of examples (a list, a tuple, a tensor or an array), got {type(value).__name__}"
            )
    predictions, targets = (  # arrays of text or objects: their rows are examples, compared as sequences are
        value.tolist() if isinstance(value, np.ndarray) and value.dtype.kind not in "biufc" else value
        for value in (predictions, targets)
    )
    if isinstance(predictions, np.ndarray) and isinstance(targets, np.ndarray | Tensor):
        predictions = torch.as_tensor(predictions, device=targets.device if isinstance(targets, Tensor) else None)
    if isinstance(targets, np.ndarray) and isinstance(predictions, Tensor):
        targets = torch.as_tensor(targets, device=predictions.device)
    if isinstance(predictions, Tensor) and isinstance(targets, Tensor):
        if predictions.shape != targets.shape or predictions.dim() < 1:
            raise ValueError(
                f"predictions and targets must have the same shape [N, ...], got {list(predictions.shape)} "
                f"and {list(targets.shape)}"
            )
        if predictions.device != targets.device:  # (torch raised a RuntimeError about an "expected device")
            raise ValueError(f"predictions and targets must be on one device, got {predictions.device} and {targets.device}")
        equal = _equal(predictions, targets)
        return equal.flatten(1).all(dim=1) if equal.dim() > 1 else equal
    if isinstance(predictions, Tensor) or isinstance(targets, Tensor):
        raise TypeError("pass both predictions and targets as tensors, or both as sequences")
    if len(predictions) != len(targets):
        raise ValueError(f"got {len(predictions)} predictions for {len(targets)} targets")
    return torch.tensor([_as_item(p) == _as_item(t) for p, t in zip(predictions, targets)], dtype=torch.bool)


_UNPROMOTED = (torch.uint16, torch.uint32, torch.uint64)
"""The unsigned integers that torch compares with floats and with their own dtype only (a ``RuntimeError`` beside an
int64 or any other integer)."""


def _equal(predictions: Tensor, targets: Tensor) -> Tensor:
    """``predictions == targets`` elementwise as numbers (one shape, one device), also for an unsigned 16-, 32- or
    64-bit integer beside another integer or a bool: compared as int64, where a uint64 of 2**63 or more (beyond every
    other integer) equals nothing; an integer beside a float or a complex number exactly
    (:func:`_integer_equals_number`)."""
    if predictions.dtype == targets.dtype:
        return predictions == targets
    integer = [not (value.is_floating_point() or value.is_complex()) for value in (predictions, targets)]
    if integer[0] != integer[1]:
        return _integer_equals_number(*((predictions, targets) if integer[0] else (targets, predictions)))
    if not integer[0]:  # (floats and complex numbers: torch widens both to a dtype that holds each exactly)
        return predictions == targets
    signed = [value.to(torch.int64) if value.dtype in _UNPROMOTED else value for value in (predictions, targets)]
    equal = signed[0] == signed[1]
    for value, as_signed in zip((predictions, targets), signed):
        if value.dtype == torch.uint64:
            equal &= as_signed >= 0  # (2**64 − 1 as int64 is −1, a padding's value)
    return equal


def _integer_equals_number(integers: Tensor, numbers: Tensor) -> Tensor:
    """``integers == numbers`` exactly, elementwise: ``integers`` of an integer or bool dtype, ``numbers`` of a float
    or complex one. torch compared them in the float's dtype, so that int64 2**24 + 1 equalled float32 2**24 (and
    2**53 + 1 float64 2**53): a number equals an integer here only where it is a whole real number within int64,
    compared as int64."""
    real = numbers.real if numbers.is_complex() else numbers
    whole = (real == real.trunc()) & (real >= -(2.0**63)) & (real < 2.0**63)  # (NaN and ±inf are no whole number)
    if numbers.is_complex():
        whole &= numbers.imag == 0
    as_integers = torch.where(whole, real, torch.zeros_like(real)).to(torch.int64)
    return whole & _equal(as_integers, integers)


def _as_item(value: Any) -> Any:
    """One example as a comparable value: a sequence (a list, a tuple, a tensor or an array, nested at any depth) as
    the tuple of its items, each turned the same way; a string as it is."""
    if isinstance(value, Tensor | np.ndarray):
        value = value.tolist()
    return value if isinstance(value, str) or not isinstance(value, Sequence) else tuple(map(_as_item, value))


def exact_match(predictions: Tensor | Sequence[Any], targets: Tensor | Sequence[Any]) -> float:
    """Fraction of examples predicted exactly (see :func:`sequence_matches`): the count of matches over the count of
    examples, divided as Python ints (a float32 mean rounded 1/3 to 0.33333334 and 2**25 − 1 of 2**25 to 1.0); at least
    one example is needed."""
    matches = sequence_matches(predictions, targets)
    if len(matches) == 0:
        raise ValueError("exact_match needs at least one example")
    return int(matches.sum()) / len(matches)
