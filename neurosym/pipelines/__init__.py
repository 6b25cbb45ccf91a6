"""Weakly-supervised perception -> syntax -> semantics learning on HINT: grammar-constrained decoding,
abduction by top-down back-search, a curriculum, the REINFORCE baseline, the pipeline and its trainer,
semantics learned from results (induced operators, new numbers and operators), and new concepts
learned from a few images (glyph, role and meaning)."""

from neurosym.pipelines.abduction import Abducer, Correction
from neurosym.pipelines.concepts import (
    ConceptNotLearned,
    LearnedConcept,
    explained_fraction,
    induced_table,
    learn_concept,
    learn_number,
    learn_operator,
)
from neurosym.pipelines.curriculum import Curriculum, parse_stages
from neurosym.pipelines.decoding import (
    Decoded,
    TokenRoles,
    constrained_decode,
    sentence_templates,
)
from neurosym.pipelines.fewshot import (
    FewShotConfig,
    FewShotResult,
    learn_concept_from_images,
)
from neurosym.pipelines.pipeline import HintPipeline, Reading
from neurosym.pipelines.reinforce import reinforce_loss
from neurosym.pipelines.trainer import PipelineConfig, evaluate_pipeline, train_pipeline
from neurosym.pipelines.windows import ConcatWindows, WindowSource

__all__ = [
    "Abducer",
    "ConceptNotLearned",
    "Correction",
    "Curriculum",
    "Decoded",
    "FewShotConfig",
    "FewShotResult",
    "HintPipeline",
    "LearnedConcept",
    "PipelineConfig",
    "Reading",
    "TokenRoles",
    "WindowSource",
    "ConcatWindows",
    "constrained_decode",
    "evaluate_pipeline",
    "explained_fraction",
    "induced_table",
    "learn_concept",
    "learn_concept_from_images",
    "learn_number",
    "learn_operator",
    "parse_stages",
    "reinforce_loss",
    "sentence_templates",
    "train_pipeline",
]
