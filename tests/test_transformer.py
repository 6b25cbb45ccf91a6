"""Transformer encoder/decoder stacks and the Universal Transformer."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
import torch
from paper_sinusoid import paper_sinusoid

from neurosym.layers import (
    MultiheadAttention,
    SinusoidalPositionalEncoding,
    TransformerDecoder,
    TransformerEncoder,
    TransformerEncoderLayer,
    UniversalTransformer,
    make_attention,
    sinusoid_table,
)
from neurosym.layers.relative_attention import RelativeMultiheadAttention
from neurosym.models import TokenFrontEnd, TransformerSeq2Seq

DIM, HEADS, FF = 16, 4, 32


@pytest.mark.parametrize("attention", ["vanilla", "xl", "xl_clipped", "shaw"])
@pytest.mark.parametrize("pre_norm", [True, False])
def test_cached_decoding_equals_uncached(attention: str, pre_norm: bool) -> None:
    torch.manual_seed(0)
    decoder = TransformerDecoder(DIM, 2, HEADS, FF, 0.1, attention=attention, pre_norm=pre_norm).eval()
    target, memory = torch.randn(2, 6, DIM), torch.randn(2, 5, DIM)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    full = decoder(target, memory, memory_padding_mask=padding)
    cache = decoder.new_cache()
    steps = [decoder(target[:, t : t + 1], memory, memory_padding_mask=padding, cache=cache) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("attention", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_decoder_is_causal(attention: str) -> None:
    torch.manual_seed(0)
    decoder = TransformerDecoder(DIM, 2, HEADS, FF, 0.0, attention=attention)
    target = torch.randn(1, 5, DIM, requires_grad=True)
    out = decoder(target, torch.randn(1, 3, DIM))
    probe = torch.randn(DIM)  # a plain sum of LayerNorm outputs is constant, so project on random weights
    (gradient,) = torch.autograd.grad(out[:, 2] @ probe, target)
    assert gradient[:, 3:].abs().sum() == 0 and gradient[:, :3].abs().sum() > 0


@pytest.mark.parametrize("attention", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_encoder_ignores_padding_content(attention: str) -> None:
    torch.manual_seed(0)
    encoder = TransformerEncoder(DIM, 2, HEADS, FF, 0.0, attention=attention, pre_norm=False)
    x = torch.randn(2, 5, DIM)
    padding = torch.tensor([[False] * 5, [False, False, True, True, True]])
    changed = x.clone()
    changed[1, 2:] = torch.randn(3, DIM)
    torch.testing.assert_close(encoder(x, padding)[1, :2], encoder(changed, padding)[1, :2], atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("attention", ["vanilla", "xl", "xl_clipped", "shaw"])
@pytest.mark.parametrize("causal", [False, True])
def test_a_block_diagonal_attention_mask_runs_packed_sequences_as_separate_ones(attention: str, causal: bool) -> None:
    """Two sequences packed in one row, each attending to its own positions alone (a ``[B, T, T]`` mask: the split
    differs per element), give each sequence's outputs: relative distances inside a block are the sequence's own."""
    torch.manual_seed(0)
    options = {"max_rel_pos": 2} if attention in ("xl_clipped", "shaw") else {}
    encoder = TransformerEncoder(DIM, 2, HEADS, FF, 0.0, attention=attention, **options).double().eval()
    x, splits = torch.randn(2, 7, DIM, dtype=torch.float64), (3, 5)
    mask = torch.stack([torch.block_diag(torch.ones(n, n), torch.ones(7 - n, 7 - n)).bool() for n in splits])
    packed = encoder(x, attn_mask=mask, causal=causal)
    for element, n in enumerate(splits):
        row = x[element : element + 1]
        alone = torch.cat([encoder(row[:, :n], causal=causal), encoder(row[:, n:], causal=causal)], dim=1)
        torch.testing.assert_close(packed[element : element + 1], alone, atol=1e-12, rtol=1e-12)
    with pytest.raises(ValueError, match=r"attn_mask must have shape \[queries, keys\] or \[batch, queries, keys\]"):
        encoder(x, attn_mask=mask[:, :6])


def test_cache_of_the_wrong_size_is_rejected() -> None:
    decoder = TransformerDecoder(DIM, 2, HEADS, FF)
    with pytest.raises(ValueError, match="cache has 1 layers"):
        decoder(torch.randn(1, 1, DIM), torch.randn(1, 2, DIM), cache=decoder.new_cache()[:1])
    with pytest.raises(TypeError, match="cache must be the list of DecoderLayerCache that new_cache"):
        decoder(torch.randn(1, 1, DIM), torch.randn(1, 2, DIM), cache=decoder.new_cache()[0])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"cache\[1\] must be the DecoderLayerCache that new_cache\(\) gives, got NoneType"):
        # (ran the second layer without a cache: each incremental call saw its own position alone)
        decoder(torch.randn(1, 1, DIM), torch.randn(1, 2, DIM), cache=[decoder.new_cache()[0], None])  # type: ignore[list-item]
    level = decoder.new_cache()
    decoder(torch.randn(1, 2, DIM), torch.randn(1, 2, DIM), cache=level)
    with pytest.raises(ValueError, match="the cache of layer 1 is at position 0, that of layer 0 at 2"):
        decoder(torch.randn(1, 1, DIM), torch.randn(1, 2, DIM), cache=[level[0], decoder.new_cache()[1]])
    with pytest.raises(ValueError, match="the cache of layer 1 is at position 2, that of layer 0 at 0"):
        decoder(torch.randn(1, 1, DIM), torch.randn(1, 2, DIM), cache=[decoder.new_cache()[0], level[1]])
    with pytest.raises(ValueError, match="unknown attention kind"):
        TransformerEncoder(DIM, 1, HEADS, FF, attention="rotary")  # type: ignore[arg-type]


def count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("act", [False, True])
def test_universal_transformer_has_one_layers_parameters_whatever_its_depth(act: bool) -> None:
    layer = TransformerEncoderLayer(DIM, HEADS, FF, attention="xl")
    halting = DIM + 1 if act else 0
    for depth in (1, 3, 12):
        assert count(UniversalTransformer(layer, depth, act=act)) == count(layer) + halting
    assert count(TransformerEncoder(DIM, 3, HEADS, FF, attention="xl")) > 3 * count(layer)


def test_universal_transformer_applies_the_shared_layer_depth_times() -> None:
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(DIM, HEADS, FF, 0.0, attention="shaw").eval()
    x = torch.randn(2, 4, DIM)
    expected = x
    for step in range(3):
        expected = layer(expected + sinusoid_table(torch.tensor([step]), DIM))
    result = UniversalTransformer(layer, 3)(x)
    torch.testing.assert_close(result.hidden, expected)
    assert result.ponder_cost is None
    plain = x
    for _ in range(3):
        plain = layer(plain)
    torch.testing.assert_close(UniversalTransformer(layer, 3, step_embedding=False)(x).hidden, plain)


def test_adaptive_computation_time_halts_and_reports_the_ponder_cost() -> None:
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(DIM, HEADS, FF, 0.0, attention="xl")
    model = UniversalTransformer(layer, 4, act=True)
    x = torch.randn(2, 5, DIM)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    # A huge halting bias halts every position after one step: output = first state, cost = 1 + 1.
    torch.nn.init.constant_(model.halting.bias, 50.0)
    torch.nn.init.zeros_(model.halting.weight)
    once = model(x, padding)
    torch.testing.assert_close(once.hidden, layer(x + sinusoid_table(torch.tensor([0]), DIM), padding))
    torch.testing.assert_close(once.ponder_cost, torch.tensor(2.0))
    # A very negative bias never halts voluntarily: all 4 steps are used, cost = 4 + remainder (about 1).
    torch.nn.init.constant_(model.halting.bias, -50.0)
    never = model(x, padding)
    assert 4.99 < never.ponder_cost.item() <= 5.0
    # In between, the ponder cost is differentiable with respect to the halting unit.
    torch.nn.init.constant_(model.halting.bias, 0.0)
    torch.nn.init.normal_(model.halting.weight, std=0.3)
    result = model(x, padding)
    assert 1.0 < result.ponder_cost.item() <= 5.0
    result.ponder_cost.backward()
    assert model.halting.weight.grad.abs().sum() > 0
    for empty in (torch.randn(2, 0, DIM), torch.randn(0, 5, DIM)):  # nothing to ponder over: 0, not NaN
        assert model(empty).ponder_cost.item() == 0.0


def test_act_steps_after_every_position_halted_add_nothing() -> None:
    """Every position halts at the second step (halting probability σ(2) ≈ 0.88 twice exceeds 0.99), so four
    steps give the output, ponder cost and gradients of two."""
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(DIM, HEADS, FF, 0.0, attention="xl")
    long, short = (UniversalTransformer(layer, depth, act=True) for depth in (4, 2))
    short.load_state_dict(long.state_dict())
    for model in (long, short):
        torch.nn.init.constant_(model.halting.bias, 2.0)
        torch.nn.init.zeros_(model.halting.weight)
    x = torch.randn(2, 5, DIM)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True]])
    results = [model(x, padding) for model in (long, short)]
    torch.testing.assert_close(results[0].hidden, results[1].hidden)
    torch.testing.assert_close(results[0].ponder_cost, results[1].ponder_cost)
    assert results[0].ponder_cost.item() < 3.0  # halted at the second of the four steps
    gradients = [torch.autograd.grad(r.ponder_cost + r.hidden.sum(), list(layer.parameters())) for r in results]
    for long_grad, short_grad in zip(*gradients):
        torch.testing.assert_close(long_grad, short_grad)


def graves_act(layer: torch.nn.Module, halting: torch.nn.Linear, x: torch.Tensor, padding: torch.Tensor, depth: int,
               epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """ACT (Graves 2016) position by position: step ``n`` (from 1) adds the step signal to the state, reads the halting
    probability ``p_n`` from it and applies the layer; ``N`` is the first step where ``Σ p ≥ 1 - ε`` (or ``depth``),
    the remainder ``R = 1 - Σ_{n<N} p_n``, the output ``Σ_{n<N} p_n s_n + R s_N`` and the ponder cost ``N + R``
    averaged over real positions. Returns ``(output [B, T, D], ponder cost)``."""
    states, probabilities, state = [], [], x
    for step in range(depth):
        state = state + paper_sinusoid(step, x.shape[-1])
        probabilities.append(torch.sigmoid(halting(state))[..., 0])
        state = layer(state, padding)
        states.append(state)
    output, costs = torch.zeros_like(x), []
    for b, t in itertools.product(range(x.shape[0]), range(x.shape[1])):
        accumulated = 0.0
        for n in range(depth):
            p = probabilities[n][b, t].item()
            if accumulated + p >= 1 - epsilon or n == depth - 1:
                output[b, t] += (1 - accumulated) * states[n][b, t]
                if not padding[b, t]:
                    costs.append(n + 1 + 1 - accumulated)
                break
            accumulated += p
            output[b, t] += p * states[n][b, t]
    return output, torch.tensor(costs, dtype=x.dtype).mean()


@pytest.mark.parametrize(("depth", "epsilon", "bias"), [(4, 0.01, -0.5), (1, 0.01, -0.5), (6, 0.3, -0.5), (5, 0.01, 1.0)])
def test_act_is_graves_halting_position_by_position(depth: int, epsilon: float, bias: float) -> None:
    """Random halting weights make positions halt at different steps (some at the step limit); float64."""
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(DIM, HEADS, FF, 0.0, attention="xl").double().eval()
    model = UniversalTransformer(layer, depth, act=True, act_epsilon=epsilon).double()
    torch.nn.init.normal_(model.halting.weight, std=1.0)
    torch.nn.init.constant_(model.halting.bias, bias)
    x = torch.randn(3, 5, DIM, dtype=torch.float64)
    padding = torch.tensor([[False] * 5, [False, False, False, True, True], [False] * 4 + [True]])
    result = model(x, padding)
    output, cost = graves_act(layer, model.halting, x, padding, depth, epsilon)
    torch.testing.assert_close(result.hidden, output, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(result.ponder_cost, cost, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("offset", [0, 9_990])
def test_sinusoidal_positions_are_the_papers_in_float64(offset: int) -> None:
    """Vaswani et al.'s signal (sines, then cosines) to float64 rounding, also far from 0 (it was computed in float32:
    off by 1e-7 near 0 and 1e-4 at position 10,000); other dtypes get the float32 signal rounded to them."""
    expected = torch.stack([paper_sinusoid(offset + t, DIM) for t in range(10)])
    got = SinusoidalPositionalEncoding(DIM)(torch.zeros(1, 10, DIM, dtype=torch.float64), offset)[0]
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=0)
    single = sinusoid_table(torch.arange(offset, offset + 10), DIM)
    assert single.dtype == torch.float32
    torch.testing.assert_close(single, expected.float(), atol=1e-3 if offset else 1e-6, rtol=0)
    halves = SinusoidalPositionalEncoding(DIM)(torch.zeros(1, 10, DIM, dtype=torch.bfloat16), offset)[0]
    assert torch.equal(halves, single.bfloat16())


@pytest.mark.parametrize("offset", [0.5, -1, True])
def test_a_position_offset_must_be_a_position(offset) -> None:
    """0.5 added the encodings of positions 0.5, 1.5, ... silently."""
    with pytest.raises(ValueError, match=f"offset must be an int of at least 0 \\(the first position\\), got {offset}"):
        SinusoidalPositionalEncoding(DIM)(torch.zeros(1, 3, DIM), offset)


def test_universal_transformer_rejects_layers_without_width() -> None:
    with pytest.raises(ValueError, match="`dim`"):
        UniversalTransformer(torch.nn.Linear(4, 4), 2)
    with pytest.raises(ValueError, match="ff_dim must be an int of at least 1, got 0"):
        TransformerEncoderLayer(16, 4, 0)


def test_a_sequence_of_another_width_or_dtype_is_named_before_torch_meets_it() -> None:
    x = torch.randn(2, 5, DIM)
    wide = torch.randn(2, 5, DIM + 2)
    modules = [TransformerEncoderLayer(DIM, HEADS, FF), TransformerEncoder(DIM, 2, HEADS, FF), SinusoidalPositionalEncoding(DIM),
               UniversalTransformer(TransformerEncoderLayer(DIM, HEADS, FF), 2)]  # fmt: skip
    for module in modules:
        with pytest.raises(ValueError, match=rf"the input must have shape \[batch, length, {DIM}\], got \(2, 5, {DIM + 2}\)"):
            module(wide)
        with pytest.raises(ValueError, match=r"got \(5, 16\)"):
            module(x[0])
    decoder = TransformerDecoder(DIM, 2, HEADS, FF)
    with pytest.raises(ValueError, match=rf"memory must have shape \[2, length, {DIM}\], got \(3, 4, {DIM}\)"):
        decoder(x, torch.randn(3, 4, DIM))
    for module in (TransformerEncoder(DIM, 2, HEADS, FF), MultiheadAttention(DIM, HEADS)):
        with pytest.raises(ValueError, match=r"has dtype torch.float64 but the \w+'s parameters are torch.float32"):
            module(x.double())
        assert module.double()(x.double()).dtype == torch.float64
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast casts inside: a bfloat16 input is fine there
        assert TransformerEncoder(DIM, 2, HEADS, FF)(x.bfloat16()).shape == x.shape


@pytest.mark.parametrize("dim", [0, 7, 8.0, True])
def test_sinusoids_name_a_width_that_is_not_a_positive_even_int_at_construction(dim):
    with pytest.raises(ValueError, match="sinusoid dimension must be a positive even number"):
        SinusoidalPositionalEncoding(dim)  # an odd width failed only at the first forward
    with pytest.raises(ValueError, match="sinusoid dimension must be a positive even number"):
        sinusoid_table(torch.arange(3), dim)


def test_a_universal_transformer_of_fractional_depth_is_refused_at_construction():
    with pytest.raises(ValueError, match="depth must be an int of at least 1, got 2.5"):
        UniversalTransformer(TransformerEncoderLayer(DIM, HEADS, FF), 2.5)  # failed at the first forward


def test_sinusoids_are_not_added_to_integer_inputs():
    with pytest.raises(ValueError, match="the input must be floating point"):  # sines were truncated to integers
        SinusoidalPositionalEncoding(4)(torch.zeros(1, 2, 4, dtype=torch.long))


def test_layers_keep_numpy_sizes_as_python_ints() -> None:
    """check_sizes took numpy ints but the layers kept them: a width of np.int64(16) reached every later size."""
    from neurosym.layers import AdditiveAttention, MixerBlock, RelativeMultiheadAttention, TransformerDecoderLayer
    from neurosym.perception.cnn import ResNet18, SmallCNN

    n = np.int64
    kept = [
        (MultiheadAttention(n(16), n(4)), ("dim", "heads", "head_dim")),
        (RelativeMultiheadAttention(n(16), n(4), relative="xl", position_dim=n(4)), ("dim", "heads", "position_dim")),
        (RelativeMultiheadAttention(n(16), n(4), relative="shaw", max_rel_pos=n(3)), ("max_rel_pos",)),
        (AdditiveAttention(n(4), n(6), n(5)), ("query_dim", "key_dim", "attention_dim")),
        (MixerBlock(n(3), n(8), n(4), n(4)), ("num_tokens", "dim")),
        (TransformerEncoderLayer(n(16), n(4), n(32)), ("dim",)),
        (TransformerDecoderLayer(n(16), n(4), n(32)), ("dim",)),
        (SmallCNN(n(1), n(10), width=n(8)), ("in_channels",)),
        (ResNet18(n(1), n(10), width=n(8)), ("in_channels",)),
    ]
    for layer, names in kept:
        assert all(type(getattr(layer, name)) is int for name in names), (type(layer).__name__, names)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: RelativeMultiheadAttention(DIM, HEADS, relative="xl", shaw_values=False),
            "shaw_values=False applies to relative='shaw', not to relative='xl', which would ignore it",
        ),
        (
            lambda: RelativeMultiheadAttention(DIM, HEADS, relative="xl_clipped", shaw_values=False),
            "shaw_values=False applies to relative='shaw', not to relative='xl_clipped'",
        ),
        (
            lambda: RelativeMultiheadAttention(DIM, HEADS, relative="xl", max_rel_pos=3),
            "max_rel_pos=3 applies to 'xl_clipped' and 'shaw' attention, not to 'xl' attention, which would ignore it",
        ),
        (lambda: make_attention("vanilla", DIM, HEADS, max_rel_pos=2), "max_rel_pos=2 applies to 'xl_clipped' and 'shaw'"),
        (lambda: make_attention("xl", DIM, HEADS, max_rel_pos=2), "not to 'xl' attention"),
        (lambda: TransformerEncoderLayer(DIM, HEADS, FF, attention="vanilla", max_rel_pos=2), "not to 'vanilla' attention"),
        (lambda: TransformerDecoder(DIM, 1, HEADS, FF, attention="xl", max_rel_pos=2), "not to 'xl' attention"),
        (lambda: TransformerSeq2Seq(TokenFrontEnd(10, DIM), 12, max_rel_pos=2), "not to 'vanilla' attention"),
        (
            lambda: UniversalTransformer(TransformerEncoderLayer(DIM, HEADS, FF), 3, act=False, act_epsilon=0.3),
            "act_epsilon=0.3 applies to act=True, not to act=False, which would ignore it",
        ),
    ],
)
def test_an_option_the_chosen_attention_or_halting_does_not_read_is_refused(build, message: str) -> None:
    """Each was accepted and silently ignored (unclipped XL never clips, XL has no Shaw value table, vanilla attention
    has no distances, a Universal Transformer without ACT never halts), as build_seq2seq refuses such options."""
    with pytest.raises(ValueError, match=re.escape(message)):
        build()


def test_the_options_each_attention_kind_reads_and_the_defaults_still_build() -> None:
    assert RelativeMultiheadAttention(DIM, HEADS, relative="shaw", max_rel_pos=3, shaw_values=False).max_rel_pos == 3
    assert RelativeMultiheadAttention(DIM, HEADS, relative="xl_clipped", max_rel_pos=3).clipped
    assert type(make_attention("vanilla", DIM, HEADS, max_rel_pos=15)) is MultiheadAttention
    assert UniversalTransformer(TransformerEncoderLayer(DIM, HEADS, FF), 3, act=True, act_epsilon=0.3).act_epsilon == 0.3
    for epsilon in ("0.1", None, [0.1], 0.1j, True, 0.0, 1.0, math.nan):  # (a str, None or a list failed on '<')
        with pytest.raises(ValueError, match=re.escape(f"act_epsilon must be a number in (0, 1), got {epsilon!r}")):
            UniversalTransformer(TransformerEncoderLayer(DIM, HEADS, FF), 3, act=True, act_epsilon=epsilon)
    for attention in ("vanilla", "xl", "xl_clipped", "shaw"):
        TransformerSeq2Seq(TokenFrontEnd(10, DIM), 12, encoder_layers=1, attention=attention, universal=True)


def test_a_decoders_bad_memory_is_named_as_the_decoder_was_given_it() -> None:
    """The decoder's checks of its memory ran in the cross-attention, which named the arguments it had been passed,
    ``key_value`` and ``key_padding_mask``: no argument of the decoder's."""
    decoder = TransformerDecoder(8, 1, 2, 16, 0.0)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    padding = torch.zeros(2, 5, dtype=torch.bool)
    cases = [
        ({"memory": memory.double()}, "memory has dtype torch.float64 but the MultiheadAttention's parameters"),
        ({"memory": memory.long()}, "memory must be floating point"),
        ({"memory": memory[:, :0]}, "memory has no positions: nothing to attend to"),
        ({"memory": memory, "memory_padding_mask": padding[:, :4]}, "memory_padding_mask covers 4 keys, but there are 5"),
        ({"memory": memory, "memory_padding_mask": padding.float()}, "memory_padding_mask must be a bool tensor"),
        ({"memory": memory, "memory_padding_mask": padding.tolist()}, r"memory_padding_mask \(or None\) must be a torch"),
    ]
    for arguments, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            decoder(x, **arguments)
    assert decoder(x, memory, memory_padding_mask=padding).shape == (2, 3, 8)
