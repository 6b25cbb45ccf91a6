"""HINT as a task of the grammar pipeline: its semantics are HINT's, its inverses give the wanted value, its
examples show the images HINT's own pipeline shows, and the generic pipeline learns the symbols from results."""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from dataclasses import fields, replace

import numpy as np
import pytest
import torch
from hint_banks import prototype_bank
from hint_strategies import trees
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.benchmarking.abduction_speed import abduction_speed
from neurosym.cli import main
from neurosym.data.hint import main_split, write_release
from neurosym.data.symbol_images import HINT_SYMBOLS, WINDOW
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.abduction import changed
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.grammar_pipeline import (
    GrammarPipeline,
    evaluate_grammar_pipeline,
    marginal_loss,
    train_grammar_pipeline,
)
from neurosym.pipelines.trainer import PipelineConfig
from neurosym.pipelines.windows import WindowSource
from neurosym.semantics import HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, Operator, evaluate
from neurosym.semantics.operators import MINUS
from neurosym.semantics.preimage import Interval
from neurosym.semantics.tree_semantics import Executor
from neurosym.syntax import to_infix
from neurosym.syntax.parser import base_grammar, grammar_text
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.tasks import build_task
from neurosym.tasks.hint import ABDUCTION, SUBSETS, _nearest, hint_semantics, hint_sentences

GRAMMAR = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)
EXECUTOR = Executor(GRAMMAR, hint_semantics())


@settings(max_examples=200, deadline=None)
@given(tree=trees())
def test_a_sentence_s_value_is_hints(tree):
    text = to_infix(tree)
    assert EXECUTOR.value(text) == evaluate(text)


@settings(max_examples=200, deadline=None)
@given(tree=trees(), data=st.data())
def test_a_compiled_parse_gives_every_sentence_of_its_shape_hints_value(tree, data):
    """:meth:`TreeSemantics.compile`: one parse, run on other symbols of the same terminals (divisions by zero
    included: invalid), gives what HINT's evaluator gives each sentence."""
    text = to_infix(tree)
    program = hint_semantics().compile(GRAMMAR.parse(text))
    other = "".join(data.draw(st.sampled_from(GRAMMAR.symbols_of(GRAMMAR.terminal_of[c]))) for c in text)
    assert program(other) == evaluate(other)


def test_an_inverse_passes_over_another_operator_whose_rule_raises_on_the_operands():
    """``/`` as ``a // b`` raises for ``6 / 0``: it is no way to 6 from ``6 * 0``, and the ways after it are still offered."""
    table = HINT_SEMANTICS.extend(operators={"/": Operator(2, lambda a, b: a // b)})
    ways = list(hint_semantics(table).inverses["binary"](6, (6, "*", 0)))
    assert ways[:2] == [(6, "+", 0), (6, "-", 0)] and (6, "*", 1) in ways and all(symbol != "/" for _, symbol, _ in ways)


def test_the_semantics_read_the_tables_numbers_and_the_typeset_operators():
    """``NUMBER`` was ``int``: a few-shot number (``x`` = 11) gave no value, silently (``x+1``: None); and ``× ÷ −``,
    which the grammar reads by default, failed with a KeyError in the operator lookup."""
    fewshot = SymbolGrammar(grammar_text(HINT_FEWSHOT_SEMANTICS.concepts), symbols=tuple("0123456789+-*/()xyabcd"))
    executor = Executor(fewshot, hint_semantics(HINT_FEWSHOT_SEMANTICS))
    for text in ("x+1", "y*2", "xc3", "(x)", "3a4", "x/0"):
        assert executor.value(text) == evaluate(text, HINT_FEWSHOT_SEMANTICS), text
    typeset = Executor(SymbolGrammar(base_grammar()), hint_semantics())
    for text in ("3×4", "7−9", "7÷2", "8÷0"):
        assert typeset.value(text) == evaluate(text), text
    ways = list(hint_semantics().inverses["binary"](7, (3, "×", 4)))  # the other operators, none of them * again
    assert ways[0] == (3, "+", 4) and all(symbol != "*" for _, symbol, _ in ways)
    assert (3, "×", 3) in list(hint_semantics().inverses["binary"](9, (3, "×", 4)))  # an operand way keeps the × read


@settings(max_examples=300, deadline=None)
@given(left=st.integers(-30, 30), right=st.integers(-30, 30), wanted=st.integers(-40, 40), symbol=st.sampled_from("+-*"))
def test_under_semantics_with_negative_values_an_inverse_finds_negative_operands(left, right, wanted, symbol):
    """With ordinary subtraction values may be negative: ``a + 4 = 2`` has ``a = -2`` (no operand value was offered
    for a negative wanted value, and the closed forms offered none below 0)."""
    table = HINT_SEMANTICS.extend(operators={"-": MINUS}, name="integers")
    ways = list(hint_semantics(table).inverses["binary"](wanted, (left, symbol, right)))
    for new_left, new_symbol, new_right in ways:
        assert table.operators[new_symbol].apply(new_left, new_right) == wanted
    apply = table.operators[symbol].apply
    reachable = any(apply(a, right) == wanted for a in range(-100, 100)) or any(
        apply(left, b) == wanted for b in range(-100, 100)
    )
    assert bool(ways) >= reachable


@settings(max_examples=300, deadline=None)
@given(left=st.integers(0, 60), right=st.integers(0, 60), wanted=st.integers(0, 80), symbol=st.sampled_from("+-*/"))
def test_every_inverse_gives_the_wanted_value_and_one_exists_when_an_operand_can_give_it(left, right, wanted, symbol):
    inverse = hint_semantics().inverses["binary"]
    ways = list(inverse(wanted, (left, symbol, right)))
    for new_left, new_symbol, new_right in ways:
        assert HINT_SEMANTICS.operators[new_symbol].apply(new_left, new_right) == wanted
        assert (new_left, new_right).count(left) + (new_left, new_right).count(right) >= 1  # one operand kept
    apply = HINT_SEMANTICS.operators[symbol].apply
    reachable = any(apply(a, right) == wanted for a in range(200)) or any(apply(left, b) == wanted for b in range(200))
    assert bool(ways) >= reachable


def test_examples_show_the_images_hints_own_pipeline_draws():
    bank = prototype_bank()
    records = [r for r in main_split(scale=0.002, seed=0, cache=False, progress=False)["test"]][:30]
    images = bank.resized((WINDOW, WINDOW))
    rows = [3, 7, 20]
    sentences = hint_sentences(records, bank, "test", 5, images, rows)
    batch = sentences.batch(range(len(rows)))
    expected, expected_lengths = WindowSource(records, bank, "test", 5).batch(rows)
    assert torch.equal(batch.lengths, expected_lengths) and torch.equal(batch.windows, expected)
    assert sentences.targets == [records[row].res for row in rows] and sentences.truths == [records[row].expr for row in rows]
    with pytest.raises(ValueError, match="no records to show"):
        hint_sentences(records, bank, "test", 5, images, [])


def test_the_generic_pipeline_learns_hints_symbols_from_results():
    torch.manual_seed(0)
    bank = prototype_bank()
    images = bank.resized((WINDOW, WINDOW))
    splits = main_split(scale=0.002, seed=0, cache=False, progress=False)
    train = hint_sentences([r for r in splits["train"] if len(r.expr) <= 7], bank, "train", 0, images)
    test = hint_sentences(list(splits["test"])[:60], bank, "test", 0, images)
    reader = SymbolClassifier(list(HINT_SYMBOLS), "small", 32, width=8)
    pipeline = GrammarPipeline(GRAMMAR, hint_semantics(), reader, ABDUCTION)
    config = PipelineConfig(steps=120, batch_size=16, curriculum=Curriculum(((1, 30), (3, 40), (7, 50))))
    train_grammar_pipeline(pipeline, train, config, torch.device("cpu"))
    scores = evaluate_grammar_pipeline(pipeline, test, torch.device("cpu"))
    assert scores["symbol"] > 0.95 and scores["accuracy"] > 0.8


def test_the_generic_abducer_is_timed_on_the_problems_hints_own_is_timed_on():
    hint = abduction_speed(40, seed=1)
    generic = abduction_speed(40, seed=1, abduce=GrammarAbducer(EXECUTOR, ABDUCTION).abduce)
    assert hint["samples"] == generic["samples"] == 40 and hint["corrected"] >= 0.9
    assert generic["corrected"] >= 0.7 and generic["median_ms"] > 0
    few = AbductionBudget(max_changes=1, max_candidates=1, alternatives=1)  # a budget too small to correct most
    assert abduction_speed(40, seed=1, abduce=GrammarAbducer(EXECUTOR, few).abduce)["corrected"] < generic["corrected"]
    for samples in (0, -3, 2.5):  # (0 and -3 failed in numpy's percentile, 2.5 corrected 1.2 of them)
        with pytest.raises(ValueError, match=f"samples must be an int of at least 1, got {samples}"):
            abduction_speed(samples)


def near_uniform(sentence: str, seed: int, scale: float = 0.1) -> np.ndarray:
    """Log-probabilities ``[n, 16]`` over HINT's symbols of a reader that barely knows anything (``scale``: how far
    its logits spread)."""
    logits = np.random.default_rng(seed).normal(0.0, scale, (len(sentence), len(HINT_SYMBOLS)))
    return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)


def checked_corrections(abducer: GrammarAbducer, sentence: str, log_probs: np.ndarray, target: int) -> None:
    """Check the corrections ``abducer`` gives ``sentence`` (its best, where it finds one, and its explanations): each
    gives ``target``, changes at most ``max_changes`` symbols and scores what ``log_probs`` give it."""
    found = abducer.abduce(sentence, log_probs, target)
    corrections = abducer.explanations(sentence, log_probs, target) + ([] if found is None else [found])
    for correction in corrections:
        assert EXECUTOR.value(correction.sentence) == target
        assert correction.changes == changed(correction.sentence, sentence) <= abducer.max_changes
        assert correction.log_prob == pytest.approx(abducer.score(correction.sentence, log_probs))


def test_the_top_down_search_expands_at_most_max_nodes_where_each_division_multiplies_the_values_wanted(monkeypatch):
    """Each division of a chain offers up to eight dividends to the part before it, so the (node, wanted value)
    pairs the search expands grow eightfold with every division (thirteen symbols read near-uniformly: 299,594 of
    them; longer chains took minutes and gigabytes). It expands at most ``max_nodes`` per search, however long the
    chain, and the abducer remembers the values of its terminals' symbols, not an answer per value wanted."""
    expanded = []
    anew = GrammarAbducer._descend_anew
    monkeypatch.setattr(GrammarAbducer, "_descend_anew", lambda self, *args: expanded.append(args) or anew(self, *args))
    counts = []
    for sentence, budget in (
        ("9/9/9/9", ABDUCTION),
        ("9/9/9/9", replace(ABDUCTION, max_nodes=50)),
        ("/".join("9" * 12), replace(ABDUCTION, max_nodes=50, max_candidates=16, alternatives=3)),
    ):
        expanded.clear()
        abducer = GrammarAbducer(EXECUTOR, budget)
        checked_corrections(abducer, sentence, near_uniform(sentence, 0), 5)
        assert len(expanded) <= 2 * budget.max_nodes  # two searches: the correction's and the explanations'
        assert "NUMBER" in abducer._leaf_values and set(abducer._leaf_values) <= set(GRAMMAR.terminal_of.values())
        counts.append(len(expanded))
    assert counts == [2 * 586, 2 * 50, 2 * 50]


@settings(max_examples=60, deadline=None)
@given(
    tree=trees(max_leaves=5),
    target=st.integers(0, 40),
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.1, 1.0, 4.0]),
    max_changes=st.integers(1, 3),
    readings=st.integers(0, 3),
    max_nodes=st.integers(1, 60),
)
def test_abduction_under_any_reading_gives_the_target_within_the_budget(
    tree, target, seed, scale, max_changes, readings, max_nodes
):
    """Whatever the reader says and however soon the top-down search is cut off, every correction and explanation
    gives the result within ``max_changes`` (:func:`checked_corrections`; parts kept at other ``readings`` make ways of
    more changes, which must be left out)."""
    sentence = to_infix(tree)
    budget = AbductionBudget(max_changes=max_changes, max_candidates=16, alternatives=3, readings=readings, max_nodes=max_nodes)
    checked_corrections(GrammarAbducer(EXECUTOR, budget), sentence, near_uniform(sentence, seed, scale), target)


SMALL_GRAMMAR = SymbolGrammar(base_grammar(), symbols=list("013+-*/()"))  # every operator, brackets, 3 - 1 and 1 / 3
SMALL_EXECUTOR = Executor(SMALL_GRAMMAR, hint_semantics())


@functools.cache
def small_sentences(length: int) -> dict[str, int | None]:
    """Every grammatical sentence of ``length`` over :data:`SMALL_GRAMMAR`'s symbols, with its HINT value."""
    sentences = [s for s in map("".join, itertools.product(SMALL_GRAMMAR.symbols, repeat=length)) if SMALL_GRAMMAR.accepts(s)]
    return dict(zip(sentences, SMALL_EXECUTOR.values(sentences)))


@settings(max_examples=40, deadline=None)
@given(length=st.sampled_from([1, 3, 5]), seed=st.integers(0, 2**31 - 1), data=st.data())
def test_with_a_budget_as_long_as_the_sentence_the_marginal_is_the_results_exact_likelihood(length, seed, data):
    """Against every sentence of the length (brackets; ``3-1-3`` clamped to 0, ``1/3`` rounded up, ``3/0`` without a
    value; uniform rows: every sentence equally probable): the explanations are exactly the sentences that give the
    target, none where no sentence does, each scored as the reader reads it, and the marginal loss's gradient is
    that of minus the log of their summed probability, per symbol."""
    every = small_sentences(length)
    rng = np.random.default_rng(seed)
    log_probs = np.log(rng.dirichlet(np.full(len(SMALL_GRAMMAR.symbols), 0.5), size=length))
    if data.draw(st.booleans(), label="uniform"):
        log_probs[:] = -np.log(len(SMALL_GRAMMAR.symbols))
    columns = [[SMALL_GRAMMAR.symbols.index(c) for c in s] for s in every]
    scores = log_probs[np.arange(length), columns].sum(axis=1)
    read = list(every)[int(scores.argmax())]
    target = data.draw(st.sampled_from(sorted({v for v in every.values() if v is not None}) + [1000]), label="target")
    budget = AbductionBudget(
        max_changes=length, max_candidates=10**5, max_patterns=10**5, alternatives=len(SMALL_GRAMMAR.symbols)
    )
    found = GrammarAbducer(SMALL_EXECUTOR, budget).explanations(read, log_probs, target)
    giving = {s: score for s, score in zip(every, scores) if every[s] == target}
    assert {c.sentence: c.log_prob for c in found} == pytest.approx(giving)
    reader = torch.tensor(log_probs)[None].requires_grad_()  # [1, n, V], as read
    loss = marginal_loss(reader, [[c.sentence for c in found]], SMALL_GRAMMAR.symbols, np.ones((1, length), bool))
    if not giving:
        assert loss is None
        return
    exact = -torch.logsumexp(reader[0, torch.arange(length), [columns[list(every).index(s)] for s in giving]].sum(-1), 0)
    assert torch.allclose(torch.autograd.grad(loss, reader)[0], torch.autograd.grad(exact / length, reader)[0])


@settings(max_examples=200, deadline=None)
@given(lo=st.integers(0, 30), width=st.one_of(st.none(), st.integers(0, 30)), current=st.integers(0, 80))
def test_inverse_values_are_the_preimage_s_members_nearest_the_operand_first(lo, width, current):
    values = Interval(lo, None if width is None else lo + width)
    found = _nearest(values, current, count=5)
    members = range(lo, (lo + width if width is not None else lo + 100) + 1)
    assert all(v in values for v in found) and len(set(found)) == len(found) == min(5, len(members))
    assert found == sorted(sorted(members)[: len(members)], key=lambda v: (abs(v - min(max(current, lo), members[-1])), v))[:5]
    assert _nearest(None, current) == []


@pytest.fixture
def few_abductions_timed(monkeypatch):
    """``neurosym pipeline`` times abduction on 5 test examples read wrong instead of 100: an untrained reader's
    abductions over HINT's grammar took most of these tests' time, and they check what the command writes."""
    from neurosym.experiments import pipeline as runner

    monkeypatch.setattr(runner, "pipeline_timings", functools.partial(runner.pipeline_timings, wrong=5))


def test_the_pipeline_command_runs_hint_and_reports_each_subset(tmp_path, capsys, monkeypatch, few_abductions_timed):
    from neurosym.tasks import hint

    monkeypatch.setattr(hint, "default_bank", lambda seed=0: prototype_bank())  # small stand-ins keep it fast
    argv = ["pipeline", "--task", "hint-grammar", "--scale", "0.002", "--epochs", "0.05", "--reader-width", "8"]
    argv += ["--no-progress"]
    assert main([*argv, "--device", "cpu", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    test = results["subsets"]["test"]
    assert set(results["subsets"]) == {"validation", "test"} and set(test) == set(SUBSETS)
    sizes = Counter(record.eval for record in main_split(scale=0.002, seed=0, progress=False)["test"])
    weighted = sum(test[subset] * sizes[subset] for subset in SUBSETS) / sum(sizes.values())  # (HINT's Avg.)
    assert results["test"]["accuracy"] == pytest.approx(weighted)
    assert results["steps"] == 4 and results["abduction"]["alternatives"] == len(HINT_SYMBOLS) - 1  # the task's
    assert results["timings"]["wrong_timed"] == 5 and results["timings"]["abduction_per_wrong"] > 0
    printed = capsys.readouterr().out
    assert "test subsets: I " in printed and "| Transformer rel. uni." in printed and ", mean " not in printed
    assert printed.endswith(f"Results in {tmp_path}: results.json, pipeline.png\n")


def test_the_pipeline_trains_hint_on_a_release_folder_with_its_own_images(tmp_path, capsys, few_abductions_timed):
    """``--data``: an official release folder's splits and its own symbol images, not the generated ones."""
    splits = {name: list(split) for name, split in main_split(scale=0.002, seed=3, progress=False).items()}
    release = write_release(tmp_path / "release", splits, bank=prototype_bank(), seed=3)
    task = build_task("hint-grammar", data=release, scale=1.0, reader_width=8)
    assert [len(part) for part in (task.train, task.validation, task.test)] == [len(splits[n]) for n in ("train", "val", "test")]
    assert list(task.test.truths) == [record.expr for record in splits["test"]] and "release" in task.data_note
    files = [path for path in (release / "symbol_images").rglob("*") if path.is_file()]
    assert len(task.train.images) == len(files)  # the release's images, every one of them, and no others
    argv = ["pipeline", "--task", "hint-grammar", "--data", str(release), "--scale", "1", "--epochs", "0.05"]
    assert main([*argv, "--reader-width", "8", "--no-progress", "--device", "cpu", "--out", str(tmp_path / "run")]) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert str(release) in results["data_note"] and set(results["subsets"]["test"]) == set(SUBSETS)
    (release / "expr_val.json").write_text("[{")
    assert main([*argv, "--no-progress", "--out", str(tmp_path / "broken")]) == 1
    assert "expr_val.json is not valid JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["pipeline", "--task", "hwf", "--data", str(release)])
    assert "--data is used by --task hint-grammar only" in capsys.readouterr().err


def test_the_pipeline_help_states_each_shipped_tasks_own_augment_shift(monkeypatch):
    """``--augment-shift``'s help said every task's default was 1, where hint-grammar shifts by 0 (make run's)."""
    from neurosym.experiments.pipeline import PipelineOptions
    from neurosym.tasks import build_task, hint, mnist_add

    monkeypatch.setattr(hint, "default_bank", lambda seed=0: prototype_bank())  # small stand-ins keep it fast
    shifts = {
        "mnist-add": mnist_add.AUGMENT_SHIFT,  # (building it reads MNIST)
        "hwf": build_task("hwf", seed=0).augment_shift,
        "hint-grammar": build_task("hint-grammar", seed=0, scale=0.002).augment_shift,
    }
    help_text = next(field for field in fields(PipelineOptions) if field.name == "augment_shift").metadata["help"]
    stated = dict(re.findall(r"([a-z-]+) (\d+)", help_text.split("default: the task's:")[1]))
    assert {name: int(shift) for name, shift in stated.items()} == shifts
