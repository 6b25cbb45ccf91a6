"""Seconds of training that survive a resume."""

from __future__ import annotations

import time


class TrainingClock:
    """``clock()`` -> the seconds of training so far: ``before`` (those of earlier calls of a resumed run, from its
    checkpoint) plus this call's since the clock was made; ``clock.this_call()`` -> this call's alone."""

    def __init__(self, before: float = 0.0) -> None:
        self.before, self.started = before, time.perf_counter()

    def this_call(self) -> float:
        return time.perf_counter() - self.started

    def __call__(self) -> float:
        return self.before + self.this_call()
