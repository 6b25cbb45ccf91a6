"""docs/grammar_pipeline.md's own task (binary numbers from handwritten bits) runs as written and learns; so does a
SentenceSource of one's own, as the docs describe it."""

import numpy as np
import torch
from doc_blocks import DOCS, python_blocks

DOC = DOCS / "grammar_pipeline.md"


def test_the_user_task_in_the_docs_is_short_and_learns_from_values_alone(capsys):
    block = python_blocks(DOC)[0]
    assert len(block.strip().splitlines()) <= 40
    namespace: dict = {}
    exec(compile(block, str(DOC), "exec"), namespace)
    scores = namespace["evaluate_grammar_pipeline"](
        namespace["pipeline"], namespace["numbers"]("test", 500, seed=2), torch.device("cpu")
    )
    assert scores["symbol"] > 0.95 and scores["accuracy"] > 0.8  # chance: 0.5 and 1/64
    assert "accuracy" in capsys.readouterr().out


class RenderedBits:
    """A SentenceSource of its own (no ImageSentences): plain attributes, windows drawn per batch."""

    def __init__(self, count: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.bits = rng.integers(0, 2, size=(count, 4))
        self.truths = ["".join(map(str, row)) for row in self.bits]
        self.targets = [int(truth, 2) for truth in self.truths]
        self.lengths = np.full(count, 4)
        self.asked: list[list[int]] = []

    def __len__(self) -> int:
        return len(self.targets)

    def batch(self, indices):
        from neurosym.pipelines import READ, SentenceBatch

        rows = list(indices)
        self.asked.append(rows)
        bits = torch.from_numpy(self.bits[rows]).float()
        windows = bits[:, :, None, None] * torch.ones(1, 1, 28, 28)  # a white window is a 1, a black one a 0
        return SentenceBatch(windows, torch.from_numpy(self.lengths[rows]), torch.full(bits.shape, READ))


def test_a_sentence_source_of_ones_own_trains_and_evaluates():
    from neurosym.perception import SymbolClassifier
    from neurosym.pipelines import (
        Curriculum,
        GrammarPipeline,
        PipelineConfig,
        evaluate_grammar_pipeline,
        train_grammar_pipeline,
    )
    from neurosym.semantics import TreeSemantics
    from neurosym.syntax import SymbolGrammar

    grammar = SymbolGrammar('start: BIT+\nBIT: "0" | "1"\n')
    semantics = TreeSemantics({"start": lambda bits: int("".join(bits), 2)})
    torch.manual_seed(0)
    pipeline = GrammarPipeline(grammar, semantics, SymbolClassifier(["0", "1"], window=28, width=4))
    train = RenderedBits(256, seed=0)
    config = PipelineConfig(steps=30, batch_size=16, curriculum=Curriculum.none())
    history = train_grammar_pipeline(pipeline, train, config, torch.device("cpu"))
    assert len(history) == 30 and len(train.asked) >= 30 and all(len(rows) == 16 for rows in train.asked[:30])
    scores = evaluate_grammar_pipeline(pipeline, RenderedBits(64, seed=1), torch.device("cpu"))
    assert scores["symbol"] > 0.9  # a white or black window: learned from the values within 30 steps
