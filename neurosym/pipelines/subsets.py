"""Accuracy per HINT test subset, with the subsets in the order HINT reports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from neurosym.data.hint import EVAL_SUBSETS


def subset_scores(hits: Mapping[str, Sequence[bool]]) -> dict[str, float]:
    """The share of hits of each subset of ``hits`` (``{subset: [hit, ...]}``, each list one flag per example), HINT's
    test subsets in their order ``I SS LS SL LL`` (:data:`~neurosym.data.hint.EVAL_SUBSETS`) whatever order the
    examples came in and any other subset after them as given; then ``"avg"``, the mean over the subsets, and
    ``"overall"``, the share over every example."""
    order = {subset: rank for rank, subset in enumerate(EVAL_SUBSETS)}
    scores = {subset: float(np.mean(hits[subset])) for subset in sorted(hits, key=lambda name: order.get(name, len(order)))}
    scores["avg"] = float(np.mean(list(scores.values())))
    scores["overall"] = float(np.mean([hit for flags in hits.values() for hit in flags]))
    return scores
