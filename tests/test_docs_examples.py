"""The python examples of docs/ run as written: each document's blocks in order in one namespace, as a reader
pastes them, in a scratch folder. Blocks that sketch a user's own model, data or a long schedule are listed with
the reason they are not run here."""

from __future__ import annotations

from pathlib import Path

import pytest
from doc_blocks import DOCS, python_blocks

NOT_RUN: dict[tuple[str, int], str] = {
    ("grammar_pipeline.md", 0): "tests/test_docs_grammar_pipeline.py runs it and checks that it learns",
    ("grammar_pipeline.md", 1): "a finished run's folder: tests/test_tasks.py reads runs back so and checks their scores",
    ("grammar_pipeline.md", 2): "make run's schedule (800 steps)",
    ("pipeline.md", 0): "400 steps of the HINT pipeline (about a minute)",
    ("pipeline.md", 1): "continues block 0",
    ("pipeline.md", 3): "a sketch over the training and few-shot data of the blocks before",
    ("transformers.md", 1): "a sketch over the user's own model, dataset and loss",
    ("transformers.md", 2): "tests/test_docs_training_loop.py runs it with a model of its own",
}

EXPECTED_OUTPUT: dict[str, list[str]] = {
    "hint_grammar.md": [
        "3-(5+2)*4",
        "['-', '3', '*', '+', '5', '2', '4']",
        "0 [3, 0, -1, 5, 7, 2, -1, 28, 4]",
        "{'symbol': '*', 'span': (2, 9), 'value': 28}",
        "0 4 None",
        "position 2: unexpected end of input after '3+', expected a number or '('",
        "[7, None, None, 1]",
    ],
    "pvr.md": ["2 median 1.0"],
    "mathematics.md": ["{'arithmetic__mixed': 1.0} 1.0", "- ['5', '2']"],
    "arithmetic_benchmark.md": ["runs=2"],  # (its seeds solve at 3,750 and 4,000 of 5,000 steps here)
    "pipeline.md": ["True"],
}


def _blocks(document: str) -> list[str]:
    return python_blocks(DOCS / document)


DOCUMENTS = sorted(path.name for path in DOCS.glob("*.md") if _blocks(path.name))


def test_every_listed_block_exists_and_every_document_with_examples_is_run() -> None:
    assert all(index < len(_blocks(document)) for document, index in NOT_RUN)
    run = {document for document in DOCUMENTS if len(_blocks(document)) > sum(d == document for d, _ in NOT_RUN)}
    assert set(EXPECTED_OUTPUT) <= run and len(run) >= 9


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(d, marks=[pytest.mark.mathematics_generator] * (d == "mathematics.md"))
        for d in DOCUMENTS
        if len(_blocks(d)) > sum(listed == d for listed, _ in NOT_RUN)
    ],
)
def test_the_examples_of_a_document_run_as_written(
    document: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # (examples write their files beside them)
    namespace: dict = {"__name__": "__docs__"}
    for index, block in enumerate(_blocks(document)):
        if (document, index) not in NOT_RUN:
            exec(compile(block, f"{DOCS / document}, python block {index}", "exec"), namespace)
    printed = capsys.readouterr().out
    if document == "layers_arithmetic.md":  # NAU -> NMU learned (a + b) c: exact far outside its training range
        assert namespace["extrapolation"] < 0.1 and namespace["model"][0].sparsity_error() < 0.01
    missing = [line for line in EXPECTED_OUTPUT.get(document, []) if line not in printed]
    assert not missing, f"{document} printed {printed!r}, without {missing}"
