"""The Gibbs chain over sentences that keep a result: it only visits sentences with the result, never moves a fixed
position, and visits them as often as the posterior says."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.value_chain import ValueChain
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.tasks import grammar_file
from neurosym.tasks.hwf import formula_semantics
from neurosym.tasks.mnist_add import addition_semantics

ADDITION = SymbolGrammar('start: number "+" number\nnumber: DIGIT+\nDIGIT: "0".."9"\n')
PLUS = ADDITION.symbols.index("+")
BOOLEAN = SymbolGrammar(
    '?start: disj\n?disj: conj | disj "+" conj -> or_\n?conj: neg | conj "*" neg -> and_\n'
    '?neg: "-" neg -> not_ | BIT\nBIT: "0" | "1"\n'
)
BOOLEAN_SEMANTICS = TreeSemantics(
    {"BIT": int, "or_": lambda c: c[0] | c[1], "and_": lambda c: c[0] & c[1], "not_": lambda c: 1 - c[0]},
    {  # or_ and and_ offer every pair that gives a value: solving one part may rewrite the other part when it need not
        "not_": lambda wanted, now: [(1 - wanted,)],
        "or_": lambda wanted, now: [(0, 1), (1, 0), (1, 1)] if wanted else [(0, 0)],
        "and_": lambda wanted, now: [(1, 1)] if wanted else [(0, 0), (0, 1), (1, 0)],
    },
)


def addition_log_probs(probabilities: np.ndarray, digits: int) -> np.ndarray:
    """``[2N + 1, 11]`` log-probabilities of two ``digits``-digit numbers around a given ``+`` from per-digit
    ``probabilities [2N, 10]``."""
    log_probs = np.full((2 * digits + 1, len(ADDITION.symbols)), -np.inf)
    rows = [p for p in range(2 * digits + 1) if p != digits]
    log_probs[rows, :10] = np.log(probabilities)
    log_probs[digits, PLUS] = 0.0
    return log_probs


def chain_for(grammar: SymbolGrammar, semantics: TreeSemantics) -> tuple[ValueChain, Executor]:
    abducer = GrammarAbducer(Executor(grammar, semantics))
    return abducer.chain, abducer.executor


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), digits=st.integers(1, 6), sweeps=st.integers(1, 6))
def test_the_chain_visits_only_sentences_with_the_result_and_never_moves_the_given_plus(seed, digits, sweeps):
    rng = np.random.default_rng(seed)
    numbers = rng.integers(0, 10**digits, size=2)
    start = f"{numbers[0]:0{digits}d}+{numbers[1]:0{digits}d}"
    log_probs = addition_log_probs(rng.dirichlet(np.full(10, 0.5), size=2 * digits), digits)
    chain, executor = chain_for(ADDITION, addition_semantics())
    visits = chain.visits(start, log_probs, int(numbers.sum()), sweeps, rng, fixed=[digits])
    assert sum(visits.values()) == sweeps
    assert all(executor.value(sentence) == numbers.sum() and sentence[digits] == "+" for sentence in visits)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), length=st.integers(3, 6), given_symbols=st.booleans())
def test_the_chain_never_changes_a_fixed_position_even_where_solving_a_part_would_rewrite_it(seed, length, given_symbols):
    """Boolean formulas, whose inverses rewrite parts that already give the wanted value: a fixed position keeps its
    symbol, whether the reader allows others there or (given symbols) rules every other out."""
    rng = np.random.default_rng(seed)
    sentences = ["".join(s) for s in itertools.product(BOOLEAN.symbols, repeat=length) if BOOLEAN.accepts("".join(s))]
    start = sentences[rng.integers(len(sentences))]
    fixed = [p for p in range(length) if rng.random() < 0.4]
    log_probs = rng.normal(size=(length, len(BOOLEAN.symbols)))
    if given_symbols:
        log_probs[fixed] = -np.inf
        log_probs[fixed, [BOOLEAN.symbols.index(start[p]) for p in fixed]] = 0.0
    chain, executor = chain_for(BOOLEAN, BOOLEAN_SEMANTICS)
    target = executor.value(start)
    visits = chain.visits(start, log_probs, target, 4, rng, fixed)
    assert all(executor.value(sentence) == target for sentence in visits)
    assert all(sentence[p] == start[p] for sentence in visits for p in fixed)


@pytest.mark.parametrize("seed, target", [(0, 57), (1, 100), (2, 123), (3, 31)])
def test_the_chain_visits_each_sentence_as_often_as_its_posterior_probability(seed, target):
    """Two 2-digit numbers: the first number's visit frequencies over 3,000 sweeps against the exact posterior
    P(a | a + b = target) ∝ P(a) P(target - a), enumerated."""
    rng = np.random.default_rng(seed)
    probabilities = rng.dirichlet(np.full(10, 0.7), size=4)
    log_probs = addition_log_probs(probabilities, 2)
    number = lambda value, at: probabilities[at, value // 10] * probabilities[at + 1, value % 10]
    exact = np.array([number(a, 0) * number(target - a, 2) if 0 <= target - a < 100 else 0.0 for a in range(100)])
    exact /= exact.sum()
    start = f"{target // 2:02d}+{target - target // 2:02d}"
    chain, _ = chain_for(ADDITION, addition_semantics())
    visits = chain.visits(start, log_probs, target, 3000, rng, fixed=[2])
    frequencies = np.zeros(100)
    for sentence, count in visits.items():
        frequencies[int(sentence[:2])] += count
    frequencies /= frequencies.sum()
    assert 0.5 * np.abs(frequencies - exact).sum() < 0.06  # total variation


def test_the_chain_moves_through_hwf_formulas_and_needs_an_inverse_to_move():
    grammar = SymbolGrammar(grammar_file("hwf.lark"))
    log_probs = np.log(np.full((3, len(grammar.symbols)), 1.0 / len(grammar.symbols)))
    chain, executor = chain_for(grammar, formula_semantics())
    visits = chain.visits("2*3", log_probs, 6, 50, np.random.default_rng(0))
    assert sum(visits.values()) == 50 and all(executor.value(sentence) == 6 for sentence in visits)
    assert len(visits) > 1  # 2*3, 3*2, 6*1, 3+3, 9-3, ...: every formula of 6 is as probable
    without, _ = chain_for(grammar, TreeSemantics(formula_semantics().rules))
    assert not without.visits("2*3", log_probs, 6, 5, np.random.default_rng(0))


def test_explanations_from_the_chain_weigh_each_sentence_by_its_visits():
    rng = np.random.default_rng(3)
    log_probs = addition_log_probs(rng.dirichlet(np.full(10, 0.7), size=6), 3)
    budget = AbductionBudget(max_changes=6, max_candidates=16, readings=16, beam=32, sample_readings=True, chain_sweeps=40)
    abducer = GrammarAbducer(Executor(ADDITION, addition_semantics()), budget)
    found = abducer.explanations("123+456", log_probs, 1000, fixed=[3])
    assert found and all(abducer.executor.value(c.sentence) == 1000 for c in found)
    counts = np.exp([c.log_prob - c.proposal for c in found])  # the marginal's weight of each: its visits
    assert np.allclose(counts, np.round(counts)) and round(counts.sum()) == 40
    assert [c.log_prob for c in found] == sorted((c.log_prob for c in found), reverse=True)
    with pytest.raises(ValueError, match="chain_sweeps ints of at least 0"):
        AbductionBudget(chain_sweeps=-1)


def test_the_chain_refuses_a_start_without_the_target_and_log_probs_of_another_shape():
    chain, _ = chain_for(ADDITION, addition_semantics())
    log_probs = addition_log_probs(np.full((4, 10), 0.1), 2)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"the chain's start '12\+34' gives 46, not the target 50"):
        chain.visits("12+34", log_probs, 50, 3, rng, fixed=[2])
    with pytest.raises(ValueError, match=r"the chain's start '12\+' gives None, not the target 12"):
        chain.visits("12+", log_probs, 12, 3, rng)
    with pytest.raises(ValueError, match=r"log_probs must have shape \[5, 11\], got \[4, 11\]"):
        chain.visits("12+34", log_probs[:4], 46, 3, rng, fixed=[2])
    assert sum(chain.visits("12+34", log_probs, 46, 3, rng, fixed=[2]).values()) == 3
