"""Seconds of training that survive a resume: logged with each step, taken back from a checkpoint's history."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any


class TrainingClock:
    """``clock()`` -> the seconds of training so far: those of earlier calls of a resumed run (:meth:`resume` takes
    them from the checkpoint's history, its last entry's ``"seconds"``) plus this call's since the clock was made.
    Logged with every step, it counts the steps a stop lost once, when they are taken again."""

    def __init__(self) -> None:
        self.before, self.started = 0.0, time.perf_counter()

    def resume(self, history: Sequence[Mapping[str, Any]]) -> None:
        self.before = float(history[-1].get("seconds", 0.0)) if history else 0.0

    def __call__(self) -> float:
        return self.before + time.perf_counter() - self.started
