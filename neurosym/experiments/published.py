"""The published HINT numbers of :mod:`neurosym.metrics.published`, under the name the HINT pipeline's runner
imports them by."""

from neurosym.metrics.published import HINT_FEWSHOT, HINT_NSR_IMAGE_AVERAGE, HINT_SEQ2SEQ, PUBLISHED_DATA

__all__ = ["HINT_FEWSHOT", "HINT_NSR_IMAGE_AVERAGE", "HINT_SEQ2SEQ", "PUBLISHED_DATA"]
