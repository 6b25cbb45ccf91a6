"""How fast abduction corrects a misread expression: timed on simulated perceptions of wrong sentences."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from neurosym.pipelines.abduction import Abducer, Correction
from neurosym.semantics import evaluate
from neurosym.training.checks import int_at_least

Abduce = Callable[[str, np.ndarray, int], Correction | None]
"""``(sentence, log_probs [n, 16], target) -> correction or None`` over the vocabulary ``0-9 + - * / ( )``."""


def abduction_speed(samples: int, seed: int = 0, abduce: Abduce | None = None) -> dict[str, float]:
    """Time abduction on ``samples`` wrong 7-symbol expressions (one or two symbols misread).

    The perception is simulated: each window puts most mass on the misread symbol, a random share
    on the rest (Dirichlet), so the true symbol is rarely the runner-up. ``abduce`` is the search timed
    (default: HINT's :class:`~neurosym.pipelines.abduction.Abducer`; e.g. a
    :class:`~neurosym.pipelines.grammar_abduction.GrammarAbducer`'s ``abduce`` on the same problems). Returns
    the median and 90th-percentile milliseconds and the fraction corrected to the right result; ``ValueError`` for
    ``samples`` that is no int of at least 1 (0 failed in numpy, 2.5 gave a fraction above 1).
    """
    samples = int_at_least(samples, "samples", 1)
    vocabulary = list("0123456789+-*/()")
    abduce = abduce or Abducer(vocabulary).abduce
    rng = np.random.default_rng(seed)
    timings: list[float] = []
    corrected = 0
    while len(timings) < samples:
        truth = "".join(str(rng.integers(10)) if i % 2 == 0 else "+-*/"[rng.integers(4)] for i in range(7))
        target = evaluate(truth)
        symbols = list(truth)
        for position in rng.choice(7, size=int(rng.integers(1, 3)), replace=False):
            symbols[position] = str(rng.integers(10)) if position % 2 == 0 else "+-*/"[rng.integers(4)]
        wrong = "".join(symbols)
        if target is None or evaluate(wrong) == target:
            continue
        assert isinstance(target, int)  # HINT's operators map integers to integers
        log_probs = np.log(rng.dirichlet(np.full(len(vocabulary), 0.3), size=7) + 1e-6)
        log_probs[np.arange(7), [vocabulary.index(c) for c in wrong]] += 3.0
        start = time.perf_counter()
        found = abduce(wrong, log_probs, target)
        timings.append(time.perf_counter() - start)
        corrected += found is not None and evaluate(found.sentence) == target
    milliseconds = 1000 * np.asarray(timings)
    return {
        "samples": samples,
        "median_ms": float(np.median(milliseconds)),
        "p90_ms": float(np.percentile(milliseconds, 90)),
        "corrected": corrected / samples,
    }
