"""Grammar-constrained decoding: always grammatical, and exactly optimal on small vocabularies."""

import itertools
from functools import partial

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.pipelines.decoding import (
    CLOSE_CLASS,
    NUMBER,
    OPEN_CLASS,
    OPERATOR,
    TokenRoles,
    constrained_decode,
    sentence_templates,
)
from neurosym.pipelines.grammar_decoding import GrammarDecoder
from neurosym.syntax import Node, ParseError, SymbolGrammar, parse, to_infix
from neurosym.syntax.concepts import BUILTIN_OPERATORS
from neurosym.syntax.parser import base_grammar

HINT_VOCAB = list("0123456789+-*/()")
HINT_ROLES = TokenRoles.from_vocabulary(HINT_VOCAB, "0123456789", "+-*/")
RANKED_ROLES = TokenRoles.from_vocabulary(HINT_VOCAB, "0123456789", "+-*/", BUILTIN_OPERATORS)


def _release_style(sentence: str) -> bool:
    """Grammatical, no bracketed single number, and not bracketed as a whole."""
    try:
        parse(sentence)
    except ParseError:
        return False
    if any(a == "(" and c == ")" for a, c in zip(sentence, sentence[2:])):
        return False
    depth = 0
    for position, char in enumerate(sentence):
        depth += (char == "(") - (char == ")")
        if depth == 0:
            return not (sentence[0] == "(" and position == len(sentence) - 1)
    return True


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    lengths=st.lists(st.integers(0, 8).map(lambda k: 2 * k + 1), min_size=1, max_size=4),
    minimal=st.booleans(),
    sharpness=st.floats(0.1, 8.0),
)
def test_decoded_sentences_always_parse(seed, lengths, minimal, sharpness):
    generator = torch.Generator().manual_seed(seed)
    log_probs = (torch.randn(len(lengths), max(lengths), len(HINT_VOCAB), generator=generator) * sharpness).log_softmax(-1)
    decoded = constrained_decode(log_probs, torch.tensor(lengths), HINT_ROLES, minimal_brackets=minimal)
    for sentence, length, row, score in zip(decoded.sentences(HINT_VOCAB), lengths, decoded.tokens, decoded.log_prob):
        assert len(sentence) == length
        parse(sentence)  # raises if ungrammatical
        if minimal:
            assert _release_style(sentence)
        assert (row[length:] == -1).all()
        assert torch.isfinite(score)


@pytest.mark.parametrize("minimal", [False, True])
def test_decoding_is_exactly_optimal_against_brute_force(minimal):
    vocab = list("12+*()")
    roles = TokenRoles.from_vocabulary(vocab, "12", "+*")
    generator = torch.Generator().manual_seed(7)
    accepts = _release_style if minimal else lambda s: _parses(s)
    for length in (1, 3, 5):
        candidates = ["".join(s) for s in itertools.product(vocab, repeat=length)]
        candidates = [s for s in candidates if accepts(s)]
        for _ in range(3):
            log_probs = (torch.randn(1, length, len(vocab), generator=generator) * 3).log_softmax(-1)
            scores = {s: sum(log_probs[0, i, vocab.index(c)].item() for i, c in enumerate(s)) for s in candidates}
            best = max(scores, key=scores.get)
            decoded = constrained_decode(log_probs, torch.tensor([length]), roles, minimal_brackets=minimal)
            assert decoded.sentences(vocab)[0] == best
            assert decoded.log_prob.item() == pytest.approx(scores[best], abs=1e-4)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), dtype=st.sampled_from([torch.bfloat16, torch.float16]))
def test_half_precision_log_probs_are_decoded_as_exactly_as_float64_ones(seed, dtype):
    """Viterbi summed bfloat16 scores in bfloat16: about one sentence of 15 symbols in 30 was not the most probable
    under the very scores it was given, and every reported log-probability was rounded to 8 bits."""
    generator = torch.Generator().manual_seed(seed)
    log_probs = (torch.randn(32, 15, len(HINT_VOCAB), generator=generator) * 2).log_softmax(-1).to(dtype)
    lengths = torch.full((32,), 15)
    exact = constrained_decode(log_probs.double(), lengths, HINT_ROLES)
    decoded = constrained_decode(log_probs, lengths, HINT_ROLES)
    reached = log_probs.double().gather(-1, decoded.tokens[..., None]).squeeze(-1).sum(dim=1)  # (no padding: T = 15)
    torch.testing.assert_close(reached, exact.log_prob, rtol=0, atol=1e-4)  # the optimum (a tie may differ in symbols)
    assert decoded.log_prob.dtype == torch.float32
    torch.testing.assert_close(decoded.log_prob.double(), exact.log_prob, rtol=0, atol=1e-4)


def _parses(sentence: str) -> bool:
    try:
        parse(sentence)
    except ParseError:
        return False
    return True


def test_decoding_beats_argmax_when_argmax_is_ungrammatical():
    # Per-window argmax reads "3+" then "4" -> "3++4"-like garbage; the decoder must repair it.
    log_probs = torch.full((1, 3, len(HINT_VOCAB)), -10.0)
    log_probs[0, 0, HINT_VOCAB.index("3")] = -0.1
    log_probs[0, 1, HINT_VOCAB.index("4")] = -0.2  # argmax: a digit where an operator must go
    log_probs[0, 1, HINT_VOCAB.index("*")] = -1.5
    log_probs[0, 2, HINT_VOCAB.index("+")] = -0.1
    log_probs[0, 2, HINT_VOCAB.index("5")] = -2.0
    decoded = constrained_decode(log_probs, torch.tensor([3]), HINT_ROLES)
    assert decoded.sentences(HINT_VOCAB) == ["3*5"]


def test_impossible_lengths_and_unknown_symbols_raise():
    with pytest.raises(ValueError, match="length 4"):
        constrained_decode(torch.zeros(1, 4, len(HINT_VOCAB)), torch.tensor([4]), HINT_ROLES)
    with pytest.raises(ValueError, match="not in the vocabulary"):
        TokenRoles.from_vocabulary(list("0123+"), "0123", "+-")


def test_roles_that_overlap_are_refused():
    with pytest.raises(ValueError, match=r"symbols \['\+'\] take two roles"):
        TokenRoles.from_vocabulary(HINT_VOCAB, "0123456789+", "+-*/")
    with pytest.raises(ValueError, match=r"symbols \['\('\] take two roles"):
        TokenRoles.from_vocabulary(HINT_VOCAB, "0123456789(", "+-*/")
    with pytest.raises(ValueError, match=r"the vocabulary names \['1'\] more than once"):
        TokenRoles.from_vocabulary([*HINT_VOCAB, "1"], "0123456789", "+-*/")


def test_a_reader_certain_of_an_ungrammatical_sentence_is_refused_not_answered():
    certain = torch.full((1, 3, len(HINT_VOCAB)), -torch.inf)
    for position, symbol in enumerate("+1+"):
        certain[0, position, HINT_VOCAB.index(symbol)] = 0.0
    with pytest.raises(ValueError, match=r"no grammatical sentence of length 3 has a finite log-probability \(example 0\)"):
        constrained_decode(certain, torch.tensor([3]), HINT_ROLES)
    certain[0, 1, HINT_VOCAB.index("*")] = -5.0  # one grammatical way out: taken, with its exact score
    certain[0, 0, HINT_VOCAB.index("2")] = -1.0
    certain[0, 2, HINT_VOCAB.index("3")] = -1.0
    decoded = constrained_decode(certain, torch.tensor([3]), HINT_ROLES)
    assert decoded.sentences(HINT_VOCAB) == ["2*3"] and decoded.log_prob.item() == -7.0


def test_inputs_that_do_not_fit_the_roles_are_named():
    log_probs = torch.randn(2, 5, len(HINT_VOCAB)).log_softmax(-1)
    with pytest.raises(ValueError, match="lengths must be integers"):
        constrained_decode(log_probs, torch.tensor([3.5, 5.0]), HINT_ROLES)
    with pytest.raises(ValueError, match=r"one length per example \(2\), got shape \[3\]"):
        constrained_decode(log_probs, torch.tensor([3, 5, 5]), HINT_ROLES)
    with pytest.raises(ValueError, match=r"log_probs must be \[B, T, 16\]"):
        constrained_decode(log_probs[..., :10], torch.tensor([3, 5]), HINT_ROLES)
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 5\]"):
        constrained_decode(log_probs, torch.tensor([3, 7]), HINT_ROLES)
    poisoned = log_probs.clone()
    poisoned[1, 3, 4] = torch.nan
    with pytest.raises(ValueError, match=r"log_probs hold NaN \(example 1, position 3\)"):
        constrained_decode(poisoned, torch.tensor([3, 5]), HINT_ROLES)
    assert constrained_decode(poisoned, torch.tensor([3, 3]), HINT_ROLES).tokens.shape == (2, 5)  # padding: ignored


def test_a_log_probability_of_plus_infinity_is_named_not_read_as_no_sentence_fitting():
    """A ``+inf`` made every sentence through it score ``+inf``, which no chart keeps: the HINT decoder and the grammar
    decoder both answered that no sentence fits the example's length."""
    log_probs = torch.randn(2, 5, len(HINT_VOCAB), generator=torch.Generator().manual_seed(0)).log_softmax(-1)
    log_probs[1, 2, HINT_VOCAB.index("+")] = torch.inf
    decoder = GrammarDecoder(SymbolGrammar(base_grammar(), symbols=HINT_VOCAB))
    message = r"log_probs hold \+inf \(example 1, position 2\): no probability's log is \+inf"
    for decode in (partial(constrained_decode, roles=HINT_ROLES), decoder.decode, decoder.viterbi):
        with pytest.raises(ValueError, match=message):
            decode(log_probs, torch.tensor([3, 5]))
        assert decode(log_probs, torch.tensor([3, 1])).tokens.shape == (2, 5)  # past example 1's length: padding, ignored


def _certain_of(sentence: str) -> torch.Tensor:
    """Log-probabilities [1, len(sentence), V] that rule out every symbol but ``sentence``'s."""
    log_probs = torch.full((1, len(sentence), len(HINT_VOCAB)), -torch.inf)
    log_probs[0, range(len(sentence)), [HINT_VOCAB.index(c) for c in sentence]] = 0.0
    return log_probs


def _admitted(sentence: str) -> bool:
    """Whether minimal-bracket decoding with the operators' precedence can read ``sentence``."""
    try:
        decoded = constrained_decode(_certain_of(sentence), torch.tensor([len(sentence)]), RANKED_ROLES)
    except ValueError:
        return False
    assert decoded.sentences(HINT_VOCAB) == [sentence] and decoded.log_prob.item() == 0.0
    return True


TREES = st.recursive(
    st.sampled_from("0123456789").map(Node),
    lambda operands: st.tuples(st.sampled_from("+-*/"), operands, operands).map(lambda t: Node(t[0], (t[1], t[2]))),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(tree=TREES, chosen=st.integers(0, 10**6))
def test_minimal_brackets_admit_what_the_printer_writes_and_refuse_a_redundant_pair(tree, chosen):
    """``((1+2))*3``, ``(1*2)+3`` and ``(1+2)+3`` were read: only a bracketed number and brackets around the whole
    sentence were refused."""
    printed = to_infix(tree)
    assert _admitted(printed)
    nodes = list(parse(printed).postorder())
    start, end = nodes[chosen % len(nodes)].span  # (brackets included): around it, a pair the tree does not need
    padded = printed[:start] + "(" + printed[start:end] + ")" + printed[end:]
    assert parse(padded) == tree and not _admitted(padded)


@settings(max_examples=60, deadline=None)
@given(tree=TREES, chosen=st.integers(0, 10**6))
def test_sentence_templates_hold_every_printed_shape_and_no_pair_directly_around_another(tree, chosen):
    """Abduction switched to shapes such as ``1+((2+3))``, which the printer writes under no precedence."""
    printed = to_infix(tree)
    assert _shape(printed) in sentence_templates(len(printed))
    root = parse(printed)
    bracketed = [node.span for node in root.postorder() if not node.is_leaf and node is not root]
    if not bracketed:
        return
    start, end = bracketed[chosen % len(bracketed)]  # a sub-expression of an operator, bracketed once more
    doubled = printed[:start] + "((" + printed[start:end] + "))" + printed[end:]
    assert _shape(doubled) in sentence_templates(len(doubled), minimal_brackets=False)
    assert _shape(doubled) not in sentence_templates(len(doubled))


def _shape(sentence: str) -> tuple[int, ...]:
    """The token classes of a sentence of digits, ``+-*/`` and brackets."""
    classes = {"(": OPEN_CLASS, ")": CLOSE_CLASS, **dict.fromkeys("+-*/", OPERATOR)}
    return tuple(classes.get(symbol, NUMBER) for symbol in sentence)


@pytest.mark.parametrize("sentence", ["((1+2))*3", "(1*2)+3", "(1+2)+3", "1+(2*3)", "((1+2)*3)*4", "(1+(2*3))*4"])
def test_named_redundant_brackets_are_refused_and_needed_ones_read(sentence):
    assert not _admitted(sentence)
    assert _admitted(to_infix(parse(sentence)))


def _printed_sentences(length: int, numbers: str, operators: str) -> set[str]:
    """Every sentence of ``length`` symbols that the printer writes for a tree over ``numbers`` and ``operators``."""
    trees: list[list[Node]] = [[Node(n) for n in numbers]]  # by operator count
    for count in range(1, length // 2 + 1):
        trees.append(
            [
                Node(o, (left, right))
                for left_count in range(count)
                for left in trees[left_count]
                for right in trees[count - 1 - left_count]
                for o in operators
            ]
        )
    return {p for level in trees for p in map(to_infix, level) if len(p) == length}


@pytest.mark.parametrize("length", [1, 3, 5, 7, 9])
@pytest.mark.parametrize("operators", ["+*", "+"])  # (with "+" alone, no operator of the level of "*")
def test_minimal_decoding_with_precedence_is_exactly_optimal_against_brute_force(length, operators):
    vocab = list("12+*()")
    roles = TokenRoles.from_vocabulary(vocab, "12", operators, {o: "+*".index(o) + 1 for o in operators})
    candidates = sorted(_printed_sentences(length, "12", operators))
    generator = torch.Generator().manual_seed(length)
    log_probs = (torch.randn(8, length, len(vocab), generator=generator) * 3).log_softmax(-1)
    decoded = constrained_decode(log_probs, torch.full((8,), length), roles)
    columns = torch.tensor([[vocab.index(c) for c in s] for s in candidates])  # [C, length]
    scores = log_probs[:, torch.arange(length), columns].sum(-1)  # [8, C]
    best = scores.max(dim=-1)
    assert decoded.sentences(vocab) == [candidates[i] for i in best.indices.tolist()]
    torch.testing.assert_close(decoded.log_prob, best.values, rtol=0, atol=1e-4)


def test_a_precedence_that_does_not_fit_the_operators_is_refused():
    with pytest.raises(ValueError, match=r"the level of the operators \['\+', '-', '\*', '/'\] and of nothing else"):
        TokenRoles.from_vocabulary(HINT_VOCAB, "0123456789", "+-*/", {"+": 1, "-": 1, "*": 2})
    with pytest.raises(ValueError, match=r"operator levels \{'/': 3\} are neither 1"):
        TokenRoles.from_vocabulary(HINT_VOCAB, "0123456789", "+-*/", {"+": 1, "-": 1, "*": 2, "/": 3})
