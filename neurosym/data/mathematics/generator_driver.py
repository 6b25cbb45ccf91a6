"""Subprocess entry point run by the generator environment's interpreter (not by neurosym itself).

It imports DeepMind's ``mathematics_dataset`` (only installed in that environment), reads one JSON job
``{"regime", "module", "count", "seed"}`` from its first argument, seeds Python's ``random`` and numpy with
the job's seed, then writes one JSON line ``{"question", "answer"}`` per sample to stdout. One job per
process: the generator keeps state between questions that reseeding does not reset.
Samples whose question is longer than 160 or answer longer than 30 characters are drawn again, as the
released generator does. ``PYTHONHASHSEED`` must be fixed by the caller for deterministic output.
"""

from __future__ import annotations  # annotations stay unevaluated: the environment may run an older Python

import json
import random
import sys
from collections.abc import Callable
from typing import Any

_TRAIN_LEVELS = {"train-easy": (0, 3), "train-medium": (1, 3), "train-hard": (2, 3), "train": (0, 1)}


def _module_table(regime: str) -> dict[str, Callable[[], Any]]:
    from mathematics_dataset import generate
    from mathematics_dataset.modules import modules

    if regime in _TRAIN_LEVELS:
        table = modules.train(generate._make_entropy_fn(*_TRAIN_LEVELS[regime]))
    elif regime == "interpolate":
        table = modules.test()
    elif regime == "extrapolate":
        table = modules.test_extra()
    else:
        raise SystemExit(f"unknown regime {regime!r}")
    return {f"{area}__{name}": fn for area, group in table.items() for name, fn in group.items()}


def _sample(module_fn: Callable[[], Any], max_question: int, max_answer: int) -> tuple[str, str]:
    while True:
        problem = module_fn()
        question, answer = str(problem.question), str(problem.answer)
        if len(question) <= max_question and len(answer) <= max_answer:
            return question, answer


def main(argv: list[str]) -> None:
    import numpy as np
    from mathematics_dataset import generate_settings

    job = json.loads(argv[1])
    random.seed(job["seed"])
    np.random.seed(job["seed"] % 2**32)
    table = _module_table(job["regime"])
    if job["module"] not in table:
        raise SystemExit(f"unknown module {job['module']!r} in regime {job['regime']!r}; known: {sorted(table)}")
    module_fn = table[job["module"]]
    for _ in range(job["count"]):
        question, answer = _sample(module_fn, generate_settings.MAX_QUESTION_LENGTH, generate_settings.MAX_ANSWER_LENGTH)
        sys.stdout.write(json.dumps({"question": question, "answer": answer}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv)
