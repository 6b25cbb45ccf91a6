"""Stopping a training loop cleanly: at SIGINT, SIGTERM or a time limit the loop finishes its current
step, writes its checkpoint and raises :class:`TrainingInterrupted`; the same command then resumes.

Used by :func:`neurosym.training.train` and :func:`neurosym.pipelines.train_pipeline`. Without a
checkpoint configured the loop still stops cleanly (the model keeps the weights of the last step).
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, TypeGuard, overload

from neurosym.training.checks import is_real

TIME_LIMIT = "time limit"
"""The stop reason when the time limit passed; the other reasons are signal names (``"SIGINT"``, ``"SIGTERM"``)."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_TRY_AGAIN = 75
"""Exit status after the time limit: ``EX_TEMPFAIL`` of ``sysexits.h``, "try again" (the run is not finished)."""


def _is_duration(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a number of at least 0 (NaN is not, nor a bool: ``True`` was a limit of one second)."""
    return is_real(value) and float(value) >= 0


def checked_time_limit(seconds: float | None) -> float | None:
    """``seconds`` unchanged if it is None or a number of at least 0 (NaN is not); else ``ValueError``."""
    if seconds is not None and not _is_duration(seconds):
        raise ValueError(f"time_limit must be None or at least 0 seconds, got {seconds!r}")
    return seconds


class TrainingInterrupted(Exception):
    """Training stopped at a stop request after ``step`` of ``max_steps`` (updates, or the ``unit`` it counts
    in); ``checkpoint`` (None when none was configured) holds that step, and running the same command again
    continues from it (every command says so in the same words). ``seconds``: of training so far, when the loop knows
    them."""

    def __init__(
        self,
        step: int,
        max_steps: int,
        reason: str,
        checkpoint: str | Path | None,
        unit: str = "step",
        seconds: float | None = None,
    ):
        self.step, self.max_steps, self.reason, self.checkpoint = step, max_steps, reason, checkpoint
        self.seconds = seconds
        where = (
            f"{checkpoint} holds it: run the same command again to continue"
            if checkpoint is not None
            else "this training had no checkpoint, so running it again starts it afresh"
        )
        super().__init__(f"training stopped after {unit} {step} of {max_steps} ({reason}); {where}")

    @property
    def exit_status(self) -> int:
        """75 (``EX_TEMPFAIL``) after the time limit, ``128 + signal number`` after a signal (130 for SIGINT)."""
        if self.reason == TIME_LIMIT:
            return EXIT_TRY_AGAIN
        return 128 + signal.Signals[self.reason].value


class StopRequests:
    """While open (``with StopRequests(limit) as stops``), SIGINT and SIGTERM ask the loop to stop instead of
    ending the process, and so does the passing of ``time_limit`` seconds after opening; :meth:`reason` says
    whether and why a stop was asked for. A second signal while a stop is pending ends the work at once:
    SIGINT raises ``KeyboardInterrupt``, SIGTERM ``SystemExit(143)`` (a scheduler's grace period may end
    before a long step or evaluation does). Signal handlers are installed from the main thread only (elsewhere only
    the time limit applies) and the previous ones are restored on closing."""

    def __init__(self, time_limit: float | None = None):
        self.time_limit = checked_time_limit(time_limit)
        self._signal: str | None = None
        self._previous: dict[int, Any] = {}
        self._start = time.monotonic()

    def __enter__(self) -> StopRequests:  # noqa: PYI034 - typing.Self needs Python 3.11
        self._start = time.monotonic()
        if threading.current_thread() is threading.main_thread():
            for number in STOP_SIGNALS:
                self._previous[number] = signal.signal(number, self._request)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        self._previous.clear()

    def _request(self, number: int, frame: FrameType | None) -> None:
        if self._signal is not None:
            if number == signal.SIGINT:
                raise KeyboardInterrupt
            raise SystemExit(128 + number)
        self._signal = signal.Signals(number).name

    def reason(self) -> str | None:
        """The signal's name once one arrived, else :data:`TIME_LIMIT` once the limit passed, else None."""
        if self._signal is not None:
            return self._signal
        if self.time_limit is not None and time.monotonic() - self._start >= self.time_limit:
            return TIME_LIMIT
        return None


@overload
def minutes_to_seconds(minutes: float) -> float: ...
@overload
def minutes_to_seconds(minutes: None) -> None: ...
@overload
def minutes_to_seconds(minutes: float | None) -> float | None: ...
def minutes_to_seconds(minutes: float | None) -> float | None:
    """A ``--time-limit`` in minutes as the seconds :class:`StopRequests` takes (None stays None); minutes that are no
    number of at least 0 (NaN, negative) raise ``ValueError``."""
    if minutes is not None and not _is_duration(minutes):
        raise ValueError(f"a time limit must be None or at least 0 minutes, got {minutes!r}")
    return None if minutes is None else 60.0 * minutes


def time_left(limit: float | None, spent: float) -> float | None:
    """Seconds of ``limit`` left after ``spent`` seconds, never negative (None, no limit, stays None). A ``limit``
    :func:`checked_time_limit` refuses, or ``spent`` that is no number of at least 0, raises ``ValueError`` (a NaN
    limit or spent time left 0 seconds)."""
    checked_time_limit(limit)
    if not _is_duration(spent):
        raise ValueError(f"spent must be at least 0 seconds, got {spent!r}")
    return None if limit is None else max(0.0, limit - spent)
