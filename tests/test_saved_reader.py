"""A reader trained by the library's loop reads back from its checkpoint as it was, and only into a reader of its
vocabulary."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from neurosym.perception import SymbolClassifier
from neurosym.perception.saved_reader import load_reader
from neurosym.pipelines import READ, Curriculum, GrammarPipeline, ImageSentences, PipelineConfig, train_grammar_pipeline
from neurosym.semantics import TreeSemantics
from neurosym.syntax import SymbolGrammar
from neurosym.training.checkpoint import CheckpointMismatch


def _bits(count: int) -> ImageSentences:
    """Binary numbers of two bits, each bit a noisy 28x28 window (bright for 1)."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2, size=(count, 2))
    images = (rng.random((2, 28, 28)) * 0.3 + np.array([0.0, 0.7])[:, None, None]).astype(np.float32)
    truths = ["".join(map(str, row)) for row in bits]
    return ImageSentences(images, bits, np.full(bits.shape, READ), np.full(count, 2), [int(t, 2) for t in truths], truths)


def _reader(vocabulary: list[str]) -> SymbolClassifier:
    return SymbolClassifier(vocabulary, window=28, width=4, features=8, stroke_width=2)


def test_a_grammar_pipelines_reader_reads_back_alike_and_not_into_a_reader_of_its_symbols_in_another_order(tmp_path):
    torch.manual_seed(0)
    grammar, semantics = (
        SymbolGrammar('start: BIT+\nBIT: "0" | "1"\n'),
        TreeSemantics({"start": lambda bits: int("".join(bits), 2)}),
    )
    pipeline = GrammarPipeline(grammar, semantics, _reader(["0", "1"]))
    config = PipelineConfig(steps=2, batch_size=8, curriculum=Curriculum.none())
    train_grammar_pipeline(pipeline, _bits(16), config, torch.device("cpu"), tmp_path / "checkpoint.pt")
    windows = torch.randint(0, 256, (5, 28, 28), dtype=torch.uint8)
    read = load_reader(tmp_path / "checkpoint.pt", _reader(["0", "1"])).eval()
    with torch.no_grad():
        assert torch.equal(read(windows), pipeline.reader.eval()(windows))
    with pytest.raises(  # (its weights loaded, and read every 0 as a 1)
        CheckpointMismatch,
        match=re.escape("checkpoint.pt holds a reader of another vocabulary: ['0', '1'] there, ['1', '0'] here"),
    ):
        load_reader(tmp_path / "checkpoint.pt", _reader(["1", "0"]))
