"""Accuracy per HINT test subset, with the subsets in the order HINT reports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from neurosym.data.hint import EVAL_SUBSETS


def subset_scores(hits: Mapping[str, Sequence[bool]]) -> dict[str, float]:
    """The share of hits of each subset of ``hits`` (``{subset: [hit, ...]}``, each list one flag per example), HINT's
    test subsets in their order ``I SS LS SL LL`` (:data:`~neurosym.data.hint.EVAL_SUBSETS`) whatever order the
    examples came in and any other subset after them as given; then ``"avg"``, the share over every example, as HINT's
    "Avg." (its release scores every test example alike: a subset weighs by its size, not as one of five).
    ``ValueError`` when there is no example (no score is defined)."""
    if not any(len(flags) for flags in hits.values()):
        raise ValueError("no example to score: the records evaluated are empty")
    order = {subset: rank for rank, subset in enumerate(EVAL_SUBSETS)}
    subsets = sorted((name for name in hits if len(hits[name])), key=lambda name: order.get(name, len(order)))
    scores = {subset: float(np.mean(hits[subset])) for subset in subsets}
    scores["avg"] = float(np.mean([hit for flags in hits.values() for hit in flags]))
    return scores
