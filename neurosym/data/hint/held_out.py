"""Validation and test records that keep their subset's meaning for a run trained on part of a training list.

HINT's test subset ``I`` holds expressions seen in training, shown with new images; ``SS``, ``LS``, ``SL``
and ``LL`` hold unseen ones. A run that trains on a sample of a release's training list, or that is tested
on the splits generated at another scale, is tested on records written for another training list: an ``I``
record there may hold an expression the run never saw, and (rarely) an ``SS`` one an expression it trained on.
:func:`held_out_for` keeps the records that keep their meaning; :func:`seen_records` draws ``I`` at another
scale from the run's own training list.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

import numpy as np

from neurosym.data.hint.examples import HintRecord
from neurosym.data.hint.splits import SplitRules
from neurosym.data.hint.stats import operator_count


def held_out_for(records: Sequence[HintRecord], trained: Collection[str]) -> list[HintRecord]:
    """The ``records`` of a validation or test list whose subset holds for a run that trained on the
    expressions ``trained``: the ``I`` records whose expression it holds, the other subsets' whose
    expression it does not; their order kept."""
    return [record for record in records if (record.eval == "I") == (record.expr in trained)]


def seen_records(train: Sequence[HintRecord], rules: SplitRules, split: str) -> list[HintRecord]:
    """The ``I`` subset that ``rules`` give the ``split`` (``val`` or ``test``) of a run trained on ``train``, as the
    generator draws it from its own training list: of each number of operators, the records of ``train`` that
    :meth:`~neurosym.data.hint.SplitRules.seen_subset` picks (all of them where fewer), marked ``I``."""
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    by_operators: dict[int, list[HintRecord]] = {}
    for record in train:
        by_operators.setdefault(operator_count(record.expr), []).append(record)
    return [
        replace(records[index], eval="I")
        for n_op, records in by_operators.items()
        for index in rules.seen_subset(n_op, np.array([record.res for record in records], dtype=np.int64), split)
    ]
