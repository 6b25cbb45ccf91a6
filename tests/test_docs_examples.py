"""The python examples of docs/ run as written: each document's blocks in order in one namespace, as a reader
pastes them, in a scratch folder. Blocks that sketch a user's own model, data or a long schedule are listed with
the reason they are not run here; they are still read: every name one uses is bound by it, by a block before it or
by the reader, and its imports import."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest
from doc_blocks import DOCS, python_blocks

NOT_RUN: dict[tuple[str, str], str] = {
    (
        "grammar_pipeline.md",
        "train_grammar_pipeline(pipeline, numbers(",
    ): "tests/test_docs_grammar_pipeline.py runs it and checks that it learns",
    (
        "grammar_pipeline.md",
        "trained_pipeline(",
    ): "a finished run's folder: tests/test_tasks.py reads runs back so and checks their scores",
    (
        "grammar_pipeline.md",
        "glyph_window(read_image(path)",
    ): "the reader's own images, read by a finished run's pipeline (the block before)",
    ("grammar_pipeline.md", "MAKE_RUN_STEPS"): "make run's schedule (800 steps)",
    ("pipeline.md", "config = PipelineConfig(steps=400"): "400 steps of the HINT pipeline (about a minute)",
    ("pipeline.md", "learn_concept_from_images(pipeline"): "continues the 400 steps' block",
    ("pipeline.md", "learn_grounding_from_images("): "learns a grounding from images (minutes) before the few-shot concept",
    ("transformers.md", "result = train(model, train_dataset"): "a sketch over the user's own model, dataset and loss",
    ("transformers.md", "run_training(model, step"): "tests/test_docs_training_loop.py runs it with a model of its own",
}
"""The blocks not run, each named by a text it holds (an index would name another block once one is inserted before
it: a block of 800 steps ran so), with the reason."""

READERS_OWN: dict[tuple[str, str], set[str]] = {
    ("transformers.md", "result = train(model, train_dataset"): {"train_dataset", "loss_fn", "validation_score", "collate"},
    ("transformers.md", "run_training(model, step"): {"step"},
}
"""The names a sketch leaves to the reader (their own data, loss and step function)."""

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


def _holding(document: str, text: str) -> list[int]:
    """The indices of ``document``'s blocks that hold ``text``."""
    return [index for index, block in enumerate(_blocks(document)) if text in block]


def _not_run(document: str) -> set[int]:
    """The indices of ``document``'s blocks that :data:`NOT_RUN` names."""
    return {index for listed, text in NOT_RUN if listed == document for index in _holding(document, text)}


DOCUMENTS = sorted(path.name for path in DOCS.glob("*.md") if _blocks(path.name))


def _bound(tree: ast.AST) -> set[str]:
    """The names a block binds anywhere: imports, assignments, loop and ``with`` targets, definitions, parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def _read(tree: ast.AST) -> set[str]:
    """The names a block reads."""
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def test_every_listed_block_exists_and_every_document_with_examples_is_run() -> None:
    assert all(len(_holding(document, text)) == 1 for document, text in NOT_RUN)  # each names one block
    run = {document for document in DOCUMENTS if len(_blocks(document)) > len(_not_run(document))}
    assert set(EXPECTED_OUTPUT) <= run and len(run) >= 9


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(d, marks=[pytest.mark.mathematics_generator] * (d == "mathematics.md"))
        for d in DOCUMENTS
        if len(_blocks(d)) > len(_not_run(d))
    ],
)
def test_the_examples_of_a_document_run_as_written(
    document: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # (examples write their files beside them)
    namespace: dict = {"__name__": "__docs__"}
    skipped = _not_run(document)
    for index, block in enumerate(_blocks(document)):
        if index not in skipped:
            exec(compile(block, f"{DOCS / document}, python block {index}", "exec"), namespace)
    printed = capsys.readouterr().out
    if document == "layers_arithmetic.md":  # NAU -> NMU learned (a + b) c: exact far outside its training range
        assert namespace["extrapolation"] < 0.1 and namespace["model"][0].sparsity_error() < 0.01
    missing = [line for line in EXPECTED_OUTPUT.get(document, []) if line not in printed]
    assert not missing, f"{document} printed {printed!r}, without {missing}"


@pytest.mark.parametrize(("document", "text"), sorted(NOT_RUN), ids=lambda value: str(value))
def test_a_block_not_run_imports_what_exists_and_reads_only_names_bound_before_it(document: str, text: str) -> None:
    """A block too long to run here still runs as pasted after the blocks before it: every name it reads is bound by
    it, by one of them or by the reader (``READERS_OWN``), and its imports succeed."""
    blocks = _blocks(document)
    (index,) = _holding(document, text)
    tree = ast.parse(blocks[index])
    known = set(dir(builtins)) | READERS_OWN.get((document, text), set())
    for block in blocks[: index + 1]:
        known |= _bound(ast.parse(block))
    unbound = sorted(_read(tree) - known)
    assert not unbound, f"{document}, python block {index}, reads {unbound}: neither it nor a block before it binds them"
    imports = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    exec(compile(ast.Module(imports, type_ignores=[]), f"{DOCS / document}, python block {index}", "exec"), {})
