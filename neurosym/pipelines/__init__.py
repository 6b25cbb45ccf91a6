"""Weakly-supervised perception -> syntax -> semantics learning.

Any task: :class:`GrammarPipeline` wires any reader, any Lark grammar (:class:`~neurosym.syntax.SymbolGrammar`) and
its semantics (:class:`~neurosym.semantics.TreeSemantics`, with inverses for top-down abduction) together;
:func:`train_grammar_pipeline` learns the reader from results alone (exact CKY decoding, :class:`GrammarDecoder`;
abduction within a change budget, :class:`GrammarAbducer`); :func:`abduced_sentence_windows` + :func:`refit_reader`
then fit a fresh reader to the training windows labelled by abduction; examples come as :class:`ImageSentences` or any
:class:`SentenceSource`. Tasks built on it live in :mod:`neurosym.tasks`.

HINT, what is learned from results, and what is given:

* :class:`HintPipeline` + :func:`train_pipeline`: the perception, from images and results, with the
  grammar, the precedence levels and an operator table given (grammar-constrained decoding, abduction by
  top-down back-search, a curriculum; the REINFORCE baseline); :func:`abduced_windows` + :func:`refit_reader`
  then refit the reader to its own abduced readings, window by window (no symbol label either);
  :func:`route_readers` reads each expression with the reader of its writers, as a router trained on where
  windows came from tells (a reader adapted to a new writer beside the first writers' own);
  :func:`adapt_to_writer` (:class:`AdaptConfig`) chains those stages to adapt a trained pipeline to a new writer;
* :mod:`~neurosym.pipelines.concepts`: operator meanings induced from results with the digits and the
  grammar given; a new number's value or a new operator's meaning and precedence;
* :func:`learn_concept_from_images`: a new concept's glyph, role and meaning from a few images;
* :mod:`~neurosym.pipelines.ground_symbols` / :mod:`~neurosym.pipelines.ground_images`: everything but
  the grammar's shape: each anonymous class's role, value or program and precedence (and the perception).
"""

from neurosym.pipelines.abduction import Abducer, Correction
from neurosym.pipelines.adapt import Adaptation, AdaptConfig, adapt_to_writer
from neurosym.pipelines.concepts import (
    ConceptNotLearned,
    LearnedConcept,
    concept_table,
    explained_fraction,
    induced_table,
    learn_concept,
    learn_number,
    learn_operator,
    learn_operator_at,
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
from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.grammar_decoding import GrammarDecoder
from neurosym.pipelines.grammar_pipeline import (
    GrammarPipeline,
    NothingReadRight,
    evaluate_grammar_pipeline,
    train_grammar_pipeline,
)
from neurosym.pipelines.grammar_refit import abduced_sentence_windows
from neurosym.pipelines.pipeline import HintPipeline, Reading
from neurosym.pipelines.refit import LabelledWindows, RefitConfig, abduced_windows, refit_reader
from neurosym.pipelines.reinforce import reinforce_loss
from neurosym.pipelines.routing import route_readers, source_windows
from neurosym.pipelines.sentences import READ, ImageSentences, SentenceBatch, SentenceSource
from neurosym.pipelines.trainer import (
    Anchor,
    PipelineConfig,
    WindowTraining,
    evaluate_pipeline,
    evaluate_pipeline_on_each,
    pseudo_label_loss,
    train_pipeline,
)
from neurosym.pipelines.windows import ConcatWindows, WindowSource

__all__ = [
    "READ",
    "Abducer",
    "AbductionBudget",
    "AdaptConfig",
    "Adaptation",
    "Anchor",
    "ConcatWindows",
    "ConceptNotLearned",
    "Correction",
    "Curriculum",
    "Decoded",
    "FewShotConfig",
    "FewShotResult",
    "GrammarAbducer",
    "GrammarDecoder",
    "GrammarPipeline",
    "HintPipeline",
    "ImageSentences",
    "LabelledWindows",
    "LearnedConcept",
    "NothingReadRight",
    "PipelineConfig",
    "Reading",
    "RefitConfig",
    "SentenceBatch",
    "SentenceSource",
    "TokenRoles",
    "WindowSource",
    "WindowTraining",
    "abduced_windows",
    "adapt_to_writer",
    "concept_table",
    "constrained_decode",
    "evaluate_grammar_pipeline",
    "evaluate_pipeline",
    "evaluate_pipeline_on_each",
    "explained_fraction",
    "induced_table",
    "learn_concept",
    "learn_concept_from_images",
    "learn_number",
    "learn_operator",
    "learn_operator_at",
    "parse_stages",
    "pseudo_label_loss",
    "refit_reader",
    "abduced_sentence_windows",
    "reinforce_loss",
    "route_readers",
    "sentence_templates",
    "source_windows",
    "train_grammar_pipeline",
    "train_pipeline",
]
