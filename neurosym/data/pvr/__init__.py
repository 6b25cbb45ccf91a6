"""Pointer Value Retrieval tasks (Zhang et al. 2021): vector and visual (MNIST) inputs, holdout shifts.

Labels come from :class:`neurosym.semantics.pvr_rules.PVRRule`; everything here is vectorised numpy.
"""

from neurosym.data.pvr.vector import (
    VectorPVR,
    held_out_windows,
    sample_vector_holdout_test,
    sample_vector_holdout_train,
    vector_rule,
)
from neurosym.data.pvr.visual import (
    PAPER_BLOCK_HOLDOUT,
    DigitBank,
    VisualPVR,
    block_holdout_masks,
    block_rule,
    render_blocks,
    render_sequence,
    sequential_rule,
)

__all__ = [
    "PAPER_BLOCK_HOLDOUT",
    "DigitBank",
    "VectorPVR",
    "VisualPVR",
    "block_holdout_masks",
    "block_rule",
    "held_out_windows",
    "render_blocks",
    "render_sequence",
    "sample_vector_holdout_test",
    "sample_vector_holdout_train",
    "sequential_rule",
    "vector_rule",
]
