"""A curriculum from short to long expressions: training steps are spent in stages of growing length."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neurosym.training.checks import is_int

UNBOUNDED = 10**9
"""The ``max_length`` (and ``steps``) of an unbounded stage (``all``): every expression, until training ends."""


@dataclass(frozen=True)
class Curriculum:
    """Stages ``(max_length, steps)``: the first ``steps[0]`` steps draw expressions of at most
    ``max_length[0]`` symbols, and so on; the last stage lasts until training ends.

    The default starts with single numbers (their result *is* the symbol), then one operator, then
    the first brackets, then everything.
    """

    stages: tuple[tuple[int, int], ...] = ((1, 150), (3, 400), (7, 600), (15, 800), (UNBOUNDED, UNBOUNDED))

    def __post_init__(self) -> None:
        if isinstance(self.stages, str):
            raise ValueError(f"stages are (max_length, steps) pairs; parse_stages({self.stages!r}) reads the text form")
        pairs = all(isinstance(stage, Sequence) and len(stage) == 2 for stage in self.stages)
        lengths = [length for length, _ in self.stages] if pairs else []
        counts = [n for stage in self.stages for n in stage] if pairs else []  # (2.5 steps lasted 3; "3" failed in a comparison)
        if not self.stages or not pairs or not all(is_int(n) and n >= 1 for n in counts) or lengths != sorted(lengths):
            raise ValueError(f"stages must be (max_length>0, steps>0) pairs with growing lengths, got {self.stages}")
        object.__setattr__(self, "stages", tuple((int(length), int(steps)) for length, steps in self.stages))

    @classmethod
    def none(cls) -> Curriculum:
        """No curriculum: every example may be drawn from the first step on."""
        return cls(((UNBOUNDED, UNBOUNDED),))

    def max_length(self, step: int) -> int:
        """The longest expression allowed at ``step`` (0-based)."""
        for length, steps in self.stages:
            if step < steps:
                return length
            step -= steps
        return self.stages[-1][0]

    def sample(self, lengths: Sequence[int] | np.ndarray, step: int, batch_size: int, seed: int) -> np.ndarray:
        """Indices ``[batch_size]`` of expressions allowed at ``step`` (``lengths [N]``: symbols per expression, an
        array or a list), drawn with replacement; the draw depends only on ``(seed, step)``, so a resumed run sees the
        same batches."""
        lengths = np.asarray(lengths)  # (a source's list of lengths failed in '<=' between a list and an int)
        allowed = np.flatnonzero(lengths <= self.max_length(step))
        if len(allowed) == 0:  # (PipelineConfig's default is HINT's curriculum, from single symbols on)
            shortest = f"the shortest has {int(np.min(lengths))}" if len(lengths) else "there are none"
            raise ValueError(
                f"the curriculum allows examples of at most {self.max_length(step)} symbols at step {step}, and no training "
                f"example is that short ({shortest}): start its stages {self.stages} at a length some example has, or "
                "train without one (Curriculum.none(); on the command line --curriculum all)"
            )
        return allowed[np.random.default_rng([seed, step]).integers(len(allowed), size=batch_size)]


def parse_stages(text: str) -> tuple[tuple[int, int], ...]:
    """``"1:150,3:400,7:600,15:800,all"`` -> stages; ``all`` is an unbounded final stage."""
    if not isinstance(text, str):
        raise ValueError(f"a curriculum's text form is a string such as '1:150,3:400,all', got {text!r}")
    stages = []
    for part in text.split(","):
        part = part.strip()
        if part == "all":
            stages.append((UNBOUNDED, UNBOUNDED))
            continue
        numbers = part.split(":")
        if len(numbers) != 2 or not all(re.fullmatch(r"\s*[0-9]+\s*", number, re.ASCII) for number in numbers):
            raise ValueError(f"curriculum stage {part!r} is not 'max_length:steps' (ASCII digits) or 'all'")
        length, steps = (int(number) for number in numbers)
        if length < 1 or steps < 1:
            raise ValueError(f"curriculum stage {part!r} needs a positive max_length and positive steps")
        stages.append((length, steps))
    return tuple(stages)


def stage_lengths(records: Sequence) -> np.ndarray:
    """Lengths ``[N]`` (symbols) of HINT records."""
    return np.fromiter((len(r.expr) for r in records), dtype=np.int64, count=len(records))
