"""Validation and test records that keep their subset's meaning for a run trained on part of a training list.

HINT's test subset ``I`` holds expressions seen in training, shown with new images; ``SS``, ``LS``, ``SL``
and ``LL`` hold unseen ones. A run that trains on a sample of a release's training list, or that is tested
on the splits generated at another scale, is tested on records written for another training list: an ``I``
record there may hold an expression the run never saw, and (rarely) an ``SS`` one an expression it trained on.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from neurosym.data.hint.examples import HintRecord


def held_out_for(records: Sequence[HintRecord], trained: Collection[str]) -> list[HintRecord]:
    """The ``records`` of a validation or test list whose subset holds for a run that trained on the
    expressions ``trained``: the ``I`` records whose expression it holds, the other subsets' whose
    expression it does not; their order kept."""
    return [record for record in records if (record.eval == "I") == (record.expr in trained)]
