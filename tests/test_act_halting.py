"""Adaptive computation time's halting rule (Graves 2016) at its boundary, with dyadic halting probabilities, whose
sums and remainders floating point computes exactly: a position halts at the first step whose accumulated halting
probability reaches ``1 - ε`` (``≥``, not only above it), and at the step limit, with the remainder, otherwise."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from neurosym.layers import TransformerEncoderLayer, UniversalTransformer, sinusoid_table
from neurosym.layers.universal import HaltingState, halting_step, halting_threshold

DIM = 8
FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

Sequences = list[list[Fraction]]


def graves_halting(probabilities: list[Fraction], threshold: Fraction) -> tuple[list[Fraction], int, Fraction]:
    """Graves's rule in exact arithmetic for one position: ``N = min{n : p_1 + ... + p_n ≥ threshold}`` (or the last
    step), ``R = 1 - (p_1 + ... + p_{N-1})``. Returns (the weight of every step, ``N``, ``R``)."""
    for n in range(1, len(probabilities) + 1):
        before = sum(probabilities[: n - 1], Fraction(0))
        if before + probabilities[n - 1] >= threshold or n == len(probabilities):
            remainder = 1 - before
            return [*probabilities[: n - 1], remainder] + [Fraction(0)] * (len(probabilities) - n), n, remainder
    raise ValueError("no halting probabilities")


@st.composite
def halting_cases(draw: st.DrawFn) -> tuple[Sequences, Fraction]:
    """Positions' halting probabilities (multiples of 1/64, as many steps each) and a threshold in (0, 1), half the
    time one that a position's running sum reaches exactly."""
    depth, positions = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    sequences = [[Fraction(draw(st.integers(0, 64)), 64) for _ in range(depth)] for _ in range(positions)]
    reached = sorted({s for seq in sequences for n in range(1, depth + 1) if 0 < (s := sum(seq[:n], Fraction(0))) < 1})
    if reached and draw(st.booleans()):
        return sequences, draw(st.sampled_from(reached))
    return sequences, Fraction(draw(st.integers(1, 63)), 64)


@given(halting_cases())
@example(([[Fraction(1, 4), Fraction(1, 2), Fraction(1, 8)]], Fraction(3, 4)))  # 1/4 + 1/2 = 3/4: halts at step 2
@example(([[Fraction(1, 8)] * 3, [Fraction(1, 2)] * 3], Fraction(1, 2)))  # step limit; exactly 1/2 at step 1
def test_halting_step_is_graves_rule_exactly(case: tuple[Sequences, Fraction]) -> None:
    """Every step's weight, ``N`` and ``R`` of each position, to the bit, against the rule in fractions."""
    sequences, threshold = case
    depth = len(sequences[0])
    probabilities = torch.tensor([[[float(seq[n]) for seq in sequences]] for n in range(depth)], dtype=torch.float64)
    progress = HaltingState.start(torch.zeros(1, len(sequences), dtype=torch.float64))
    weights = []
    for n in range(depth):
        progress, weight = halting_step(progress, probabilities[n], float(threshold), last_step=n == depth - 1)
        weights.append(weight)
    expected = [graves_halting(seq, threshold) for seq in sequences]
    expected_weights = [[[float(steps[n]) for steps, _, _ in expected]] for n in range(depth)]
    assert torch.equal(torch.stack(weights), torch.tensor(expected_weights, dtype=torch.float64))
    assert progress.steps.tolist() == [[float(n) for _, n, _ in expected]]
    assert progress.remainder.tolist() == [[float(r) for _, _, r in expected]]
    assert not progress.running.any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_act_halts_where_the_accumulated_probability_equals_the_threshold(dtype: torch.dtype) -> None:
    """Zero halting weights and bias give ``p_n = σ(0) = 1/2`` exactly at every step, so with ``act_epsilon = 1/2``
    the first step reaches the threshold exactly: every position halts there (``N = 1``, ``R = 1``), the output is
    the first state and the ponder cost 2. (Halting only above the threshold would give ``N = 2``, ``R = 1/2``.)"""
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(DIM, 2, 16, 0.0, attention="xl").to(dtype).eval()
    model = UniversalTransformer(layer, 3, act=True, act_epsilon=0.5).to(dtype)
    torch.nn.init.zeros_(model.halting.weight)
    torch.nn.init.zeros_(model.halting.bias)
    x = torch.randn(2, 4, DIM, dtype=dtype)
    padding = torch.tensor([[False] * 4, [False, False, True, True]])
    result = model(x, padding)
    first_state = layer(x + sinusoid_table(torch.tensor([0]), DIM, dtype), padding)
    assert torch.equal(result.hidden, first_state)
    assert result.ponder_cost is not None and result.ponder_cost.item() == 2.0


@given(st.floats(1e-18, 1.0, exclude_min=True, exclude_max=True), st.sampled_from(FLOAT_DTYPES))
@example(0.01, torch.bfloat16)  # 0.99 rounds down to 0.98828125 there
@example(2.0**-24, torch.float32)  # the smallest epsilon float32 resolves: 1 - 2**-24 is its largest value below 1
def test_the_halting_threshold_is_the_least_value_of_the_dtype_not_below_one_minus_epsilon(
    epsilon: float, dtype: torch.dtype
) -> None:
    """Sums in ``dtype`` reach the threshold exactly when they reach ``1 - ε``; an ``ε`` the dtype cannot resolve at 1
    is named."""
    gap = torch.finfo(dtype).eps / 2
    if epsilon < gap:
        with pytest.raises(ValueError, match=rf"act_epsilon \(.*\) is below the resolution of {dtype} at 1"):
            halting_threshold(epsilon, dtype)
        return
    threshold = halting_threshold(epsilon, dtype)
    below = torch.nextafter(torch.tensor(threshold, dtype=dtype), torch.tensor(0.0, dtype=dtype)).item()
    assert torch.tensor(threshold, dtype=dtype).item() == threshold  # a value of dtype
    assert below < 1 - epsilon <= threshold < 1


def test_act_in_bfloat16_does_not_halt_below_one_minus_epsilon() -> None:
    """``p_n = 0.98828125`` (bfloat16's value nearest 0.99, below it) at every step: with the default ε = 0.01 a
    position halts at step 2 (``N = 2``, ``R = 1 - p_1``), not at step 1 as a threshold rounded to 0.98828125 made it."""
    torch.manual_seed(0)
    dtype = torch.bfloat16
    layer = TransformerEncoderLayer(DIM, 2, 16, 0.0, attention="xl").to(dtype).eval()
    model = UniversalTransformer(layer, 3, act=True).to(dtype)
    torch.nn.init.zeros_(model.halting.weight)
    torch.nn.init.constant_(model.halting.bias, 4.28125)
    assert torch.sigmoid(model.halting.bias).item() == 0.98828125
    x = torch.randn(2, 4, DIM, dtype=dtype)
    result = model(x)
    states = [layer(x + sinusoid_table(torch.tensor([0]), DIM, dtype), None)]
    states.append(layer(states[0] + sinusoid_table(torch.tensor([1]), DIM, dtype), None))
    expected = 0.98828125 * states[0] + (1 - 0.98828125) * states[1]
    torch.testing.assert_close(result.hidden, expected.to(dtype))
    assert result.ponder_cost is not None and result.ponder_cost.item() == 2.015625  # 2 + 3/256 in bfloat16


@pytest.mark.parametrize(("dtype", "epsilon"), [(torch.float32, 1e-9), (torch.float32, 4e-8), (torch.bfloat16, 1e-3)])
def test_an_epsilon_below_the_states_resolution_at_one_is_named(dtype: torch.dtype, epsilon: float) -> None:
    """float32 rounds ``1 - 1e-9`` to 1, and has no value in ``[1 - 4e-8, 1)``: such an ε halted only where a sum
    rounded to 1, as any smaller one; float64 states resolve it."""
    layer = TransformerEncoderLayer(DIM, 2, 16, 0.0, attention="xl").eval()
    model = UniversalTransformer(layer, 3, act=True, act_epsilon=epsilon)
    with pytest.raises(ValueError, match=rf"act_epsilon \({epsilon:g}\) is below the resolution of {dtype} at 1"):
        model.to(dtype)(torch.randn(1, 2, DIM, dtype=dtype))
    assert model.double()(torch.randn(1, 2, DIM, dtype=torch.float64)).hidden.shape == (1, 2, DIM)


def test_the_halting_unit_takes_the_shared_layers_dtype_unless_one_is_given():
    """A float64 layer beside a float32 halting unit failed in torch's matmul at the first step."""
    layer = TransformerEncoderLayer(8, 2, 16, dtype=torch.float64)
    model = UniversalTransformer(layer, 2, act=True)
    assert model.halting is not None and model.halting.weight.dtype == torch.float64
    assert model(torch.randn(2, 3, 8, dtype=torch.float64)).hidden.dtype == torch.float64
    with pytest.raises(ValueError, match="dtype=torch.float32 differs from the shared layer's torch.float64"):
        UniversalTransformer(layer, 2, act=True, dtype=torch.float32)
