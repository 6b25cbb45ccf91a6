"""Pipelines read for results in evaluation mode and leave every module in the mode its caller set: a reading of an
example does not depend on the others of its batch, reading moves no batch-norm statistic, and training or
evaluating gives the reader its own mode back."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from hint_pipelines import TINY_TRAINING, tiny_pipeline, tiny_problem

from neurosym.perception import SymbolClassifier
from neurosym.pipelines import (
    READ,
    Curriculum,
    GrammarPipeline,
    ImageSentences,
    PipelineConfig,
    evaluate_grammar_pipeline,
    train_grammar_pipeline,
)
from neurosym.pipelines.grammar_pipeline import pipeline_timings
from neurosym.pipelines.trainer import evaluate_pipeline, train_pipeline
from neurosym.semantics import TreeSemantics
from neurosym.syntax import SymbolGrammar
from neurosym.training.modes import reading_mode

CPU = torch.device("cpu")


def _bits(count: int, seed: int) -> ImageSentences:
    """Binary numbers of four bits, each bit a noisy 28x28 window (bright for 1)."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, size=(count, 4))
    images = (rng.random((2, 28, 28)) * 0.3 + np.array([0.0, 0.7])[:, None, None]).astype(np.float32)
    truths = ["".join(map(str, row)) for row in bits]
    given = np.full(bits.shape, READ)
    return ImageSentences(images, bits, given, np.full(count, 4), [int(t, 2) for t in truths], truths)


def _grammar_pipeline() -> GrammarPipeline:
    torch.manual_seed(0)
    grammar = SymbolGrammar('start: BIT+\nBIT: "0" | "1"\n')
    semantics = TreeSemantics({"start": lambda bits: int("".join(bits), 2)})
    return GrammarPipeline(grammar, semantics, SymbolClassifier(["0", "1"], window=28, width=8))


def _states(module: torch.nn.Module) -> list[torch.Tensor]:
    return [value.clone() for value in module.state_dict().values()]


def _equal(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("training", [True, False])
def test_the_grammar_pipeline_reads_for_results_in_evaluation_mode_and_gives_the_reader_its_mode_back(training):
    """After training the reader stayed in training mode, so reading a batch used its batch statistics and moved the
    running ones; evaluating left it in evaluation mode."""
    pipeline, source = _grammar_pipeline(), _bits(48, seed=0)
    reader = pipeline.reader
    reader.train(training)
    train_grammar_pipeline(pipeline, source, PipelineConfig(steps=3, batch_size=16, curriculum=Curriculum.none()), CPU)
    assert reader.training == training
    reader.train()  # a loop of one's own, reading between its steps
    before = _states(reader)
    alone = pipeline.predict(source.batch([0]))
    with torch.no_grad():
        one = pipeline.read(source.batch([0])).log_probs[0]
        many = pipeline.read(source.batch(list(range(48)))).log_probs[0]
    torch.testing.assert_close(one, many)
    assert alone == pipeline.predict(source.batch(list(range(48))))[:1]
    evaluate_grammar_pipeline(pipeline, source, CPU)
    pipeline_timings(pipeline, source, CPU, batch_size=16, wrong=4)  # (it reads with log_probs alone)
    assert reader.training and _equal(before, _states(reader))
    with torch.no_grad():
        torch.testing.assert_close(pipeline.log_probs(source.batch([0]))[0], many)
    with reading_mode(reader):  # with gradients: a training step reads in the mode it set
        assert reader.training


@pytest.mark.parametrize("training", [True, False])
def test_the_hint_pipeline_reads_for_results_in_evaluation_mode_and_gives_the_reader_its_mode_back(training):
    train, test = tiny_problem()
    pipeline = tiny_pipeline()
    reader = pipeline.classifier
    reader.train(training)
    train_pipeline(pipeline, train, replace(TINY_TRAINING, steps=2), CPU)
    assert reader.training == training
    reader.train()
    before = _states(reader)
    windows, lengths = test.batch(range(8))
    assert pipeline.predict(windows[:1], lengths[:1]) == pipeline.predict(windows, lengths)[:1]
    evaluate_pipeline(pipeline, test, CPU)
    assert reader.training and _equal(before, _states(reader))
