"""The CPU dropout of neurosym.layers.dropout: distribution, scaling, gradients, seeding, bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.layers import Dropout, TransformerEncoderLayer
from neurosym.layers.dropout import dropout, keep_multiplier


@settings(max_examples=25, deadline=None)
@given(p=st.floats(0.01, 0.99), seed=st.integers(0, 2**31))
def test_drops_with_probability_p_and_keeps_the_expectation(p, seed):
    torch.manual_seed(seed)
    n = 200_000
    out = dropout(torch.ones(n), p)
    dropped = round(p * 65536)  # p on the 2^-16 grid of the 16-bit draws
    kept_value = torch.tensor(65536 / (65536 - dropped)).item()  # float32
    assert set(out.unique().tolist()) == {0.0, kept_value}
    rate = dropped / 65536
    sigma = math.sqrt(rate * (1 - rate) / n)
    assert abs(float((out == 0).float().mean()) - rate) < 5 * sigma
    assert abs(float(out.mean()) - 1) < 5 * sigma / (1 - rate)
    neighbours = ((out[1:] == 0) & (out[:-1] == 0)).float().mean()  # draws of one 64-bit word are independent
    assert abs(float(neighbours) - rate**2) < 5 * math.sqrt(rate**2 * (1 - rate**2) / n)


def test_gradient_is_the_mask_and_the_input_is_not_modified():
    torch.manual_seed(0)
    x = torch.linspace(1, 2, 4096, dtype=torch.float64, requires_grad=True)
    out = dropout(x, 0.3)
    out.backward(torch.full_like(out, 2.0))
    scale = 65536 / (65536 - round(0.3 * 65536))
    dropped = out.detach() == 0
    assert torch.equal(x.grad, torch.full_like(x, 2 * scale).masked_fill(dropped, 0))
    assert torch.equal(out, (x * scale).masked_fill(dropped, 0))
    assert torch.equal(x.detach(), torch.linspace(1, 2, 4096, dtype=torch.float64))
    assert out.dtype == torch.float64 and dropout(x.detach().bfloat16(), 0.3).dtype == torch.bfloat16


def test_masks_follow_torch_seed_and_advance_its_generator():
    torch.manual_seed(7)
    first, second = keep_multiplier((64, 33), 0.1), keep_multiplier((64, 33), 0.1)
    torch.manual_seed(7)
    assert torch.equal(keep_multiplier((64, 33), 0.1), first)
    assert not torch.equal(first, second)


def test_identity_when_not_training_or_p_is_zero_and_zeros_at_one():
    x = torch.randn(8, 16)
    assert dropout(x, 0.5, training=False) is x and dropout(x, 0.0) is x
    assert torch.equal(dropout(x, 1.0), torch.zeros_like(x))
    module = Dropout(0.5).eval()
    assert module(x) is x
    torch.testing.assert_close(dropout(x, 1e-7), x)  # below 2⁻¹⁷ the rounded probability is 0: PyTorch's own dropout


def test_bad_probabilities_are_rejected_with_the_value():
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="between 0 and 1"):
            Dropout(bad)
        with pytest.raises(ValueError, match="between 0 and 1"):
            dropout(torch.ones(3), bad)
    with pytest.raises(ValueError, match="rounds to 0/65536"):
        keep_multiplier((3,), 1e-7)


def test_layers_use_it_and_it_is_an_nn_dropout():
    layer = TransformerEncoderLayer(16, 2, 32, dropout=0.1)
    found = [m for m in layer.modules() if isinstance(m, torch.nn.Dropout)]
    assert found and all(isinstance(m, Dropout) for m in found)
    assert layer.state_dict().keys() == TransformerEncoderLayer(16, 2, 32, dropout=0.0).state_dict().keys()


def test_compiled_models_fuse_the_dropout_into_one_graph():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), Dropout(0.5))
    torch.nn.init.eye_(model[0].weight)
    torch.nn.init.zeros_(model[0].bias)
    compiled = torch.compile(model, fullgraph=True)  # a graph break (the numpy mask) would raise here
    out = compiled(torch.ones(200, 8))
    assert set(out.unique().tolist()) == {0.0, 2.0}
    assert 0.4 < float((out == 0).float().mean()) < 0.6
