"""The one interface every reader of symbol windows has (classifier, ensemble, routed readers, a user's own)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from neurosym.training.checks import is_int
from neurosym.training.device import at_least_float32


@runtime_checkable
class Reader(Protocol):
    """Reads windows as symbols: ``vocabulary`` names the output columns, and calling it maps windows
    ``[N, ...]`` (and optionally ``groups`` int64 ``[N]``, the example each window belongs to, which a reader
    may use to read an example's windows alike, or ignore) to log-probabilities ``[N, len(vocabulary)]``."""

    @property
    def vocabulary(self) -> Sequence[str]:
        """The symbol each output column stands for, in column order."""

    def __call__(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor: ...


def shared_vocabulary(readers: Sequence[nn.Module], what: str) -> list[str]:
    """The one vocabulary of the modules ``readers`` that ``what`` (e.g. ``"an ensemble"``) combines: ``TypeError`` for
    a member that is no :class:`Reader` or one it cannot call as ``reader(windows, groups)`` (:func:`check_reader`:
    the first read failed), ``ValueError`` for none or for readers of different vocabularies."""
    if not readers:
        raise ValueError(f"{what} needs at least one reader")
    if not all(isinstance(reader, Reader) for reader in readers):
        raise TypeError(f"the members of {what} must be readers: modules with a vocabulary")
    for reader in readers:
        check_reader(reader, what[0].upper() + what[1:])
    vocabularies = {tuple(reader.vocabulary) for reader in readers if isinstance(reader, Reader)}
    if len(vocabularies) > 1:
        raise ValueError(f"the readers of {what} must share one vocabulary, got {sorted(vocabularies)}")
    return list(vocabularies.pop())


def shared_window(readers: Sequence[nn.Module], what: str) -> int | None:
    """The one window side of the modules ``readers`` that ``what`` (e.g. ``"an ensemble"``) reads alike, from each that
    states one (an int ``window``: a :class:`~neurosym.perception.symbol_classifier.SymbolClassifier`, or an ensemble of
    such); ``None`` when none does. ``ValueError`` naming the sides where they differ: no window would fit them all."""
    stated = (getattr(reader, "window", None) for reader in readers)
    sides: set[Any] = {side for side in stated if is_int(side)}
    if len(sides) > 1:
        raise ValueError(f"the readers of {what} must read windows of one side, got sides {sorted(sides)}")
    return int(sides.pop()) if sides else None


def as_reader(module: nn.Module) -> Reader:
    """``module`` as a :class:`Reader`; ``TypeError`` for a module without a ``vocabulary``."""
    if not isinstance(module, Reader):
        raise TypeError(f"a reader is a module with a vocabulary; {type(module).__name__} has none")
    return module


def reader_module(reader: Reader) -> nn.Module:
    """``reader`` as the torch module that a reader which is trained, moved or switched to evaluation must be
    (``TypeError`` for another reader)."""
    if not isinstance(reader, nn.Module):
        raise TypeError(f"a reader trained from results must be a torch.nn.Module, got {type(reader).__name__}")
    return reader


def check_reader(reader: object, who: str) -> None:
    """Raise ``TypeError`` unless ``reader`` is a :class:`Reader` that ``who`` (e.g. ``"GrammarPipeline"``) can call as
    ``reader(windows, groups)``: a forward of one argument would fail deep inside torch at the first read."""
    if not isinstance(reader, Reader):
        raise TypeError(f"{who} takes a reader: a module with a vocabulary; {type(reader).__name__} has none")
    call = reader.forward if isinstance(reader, nn.Module) else reader.__call__
    try:
        signature = inspect.signature(call)
    except ValueError:  # no signature to inspect (a builtin): it is called as it is
        return
    try:
        signature.bind(None, None)
    except TypeError:
        raise TypeError(
            f"{who} calls its reader as reader(windows, groups) (groups: the example of each window, int64 [N]); "
            f"{type(reader).__name__}'s forward takes no groups: add a groups=None parameter (it may ignore it)"
        ) from None


LOG_PROB_TOLERANCE = 1e-2
"""How far from 0 a reader's row may sum in log space (``logsumexp``) and still count as log-probabilities (further in a
dtype whose rounding moves it more: :func:`check_log_probs`)."""


def check_log_probs(log_probs: torch.Tensor, columns: int, rows: int) -> None:
    """Refuse a reader's output for ``rows`` windows (in the dtype the reader returned) that is not log-probabilities
    ``[rows, columns]`` over its ``columns`` symbols: no tensor (``TypeError``), another shape (one row per window: a row
    too few or too many failed deep inside torch, where the rows were put in place) or dtype than floating point, or a
    row whose ``logsumexp`` (in float32 at least) is further from 0 than :data:`LOG_PROB_TOLERANCE`, or than
    :func:`log_prob_rounding` where the dtype rounds coarser. The error names the row (and, for a NaN, the symbol)."""
    if not isinstance(log_probs, torch.Tensor):
        raise TypeError(
            f"the reader returned a {type(log_probs).__name__}: expected a tensor of log-probabilities [{rows}, {columns}]"
        )
    if tuple(log_probs.shape) != (rows, columns):
        raise ValueError(
            f"the reader returned shape {list(log_probs.shape)} for its {columns} symbols and {rows} windows: expected "
            f"[{rows}, {columns}] (one row per window)"
        )
    if not log_probs.is_floating_point():
        raise ValueError(f"the reader returned {log_probs.dtype} log-probabilities: expected floating point")
    sums = at_least_float32(log_probs.detach()).logsumexp(-1)  # [rows]
    off = float(sums.abs().max()) if log_probs.numel() else 0.0  # NaN: any
    if math.isnan(off):
        row, column = (int(i) for i in log_probs.detach().isnan().nonzero()[0])
        raise ValueError(
            f"the reader returned NaN log-probabilities (a diverged reader, or NaN windows), first in row {row} at symbol "
            f"{column}"
        )
    if off > max(LOG_PROB_TOLERANCE, log_prob_rounding(log_probs.dtype, columns)):
        row = int(sums.abs().argmax())
        held = {math.inf: " (a log-probability of +inf)", -math.inf: " (every log-probability -inf)"}.get(float(sums[row]), "")
        raise ValueError(
            f"the reader must return log-probabilities (each row's logsumexp 0, e.g. from log_softmax); row {row}'s is "
            f"{off:.3g} away from 0{held}"
        )


def log_prob_rounding(dtype: torch.dtype, columns: int) -> float:
    """How far rounding to ``dtype`` may move the ``logsumexp`` of a row of ``columns`` log-probabilities from 0:
    ``eps * log(columns)``. Rounded once, each ``log p`` moves by up to ``eps / 2`` of itself and the row's
    ``logsumexp`` by up to ``eps / 2 * log(columns)``; a ``log_softmax`` computed in ``dtype`` reaches nearly twice that.
    For bfloat16 over HINT's 16 symbols it is 0.022: a bfloat16 reader's ``log_softmax`` was refused at 0.011, beyond
    :data:`LOG_PROB_TOLERANCE`."""
    eps = torch.finfo(dtype).eps if dtype.is_floating_point else 0.0
    return eps * math.log(max(columns, 1))
