"""Banded clipped relative attention (band explicit, tails in the fused causal kernel) against the explicit
scores: Shaw's, and Transformer-XL's with clipped distances."""

from __future__ import annotations

import copy

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.layers import RelativeMultiheadAttention
from neurosym.layers.clipped_relative import banded_kernels_available, clipped_relative_attention, default_block

DIM, HEADS = 16, 2


def explicit_and_blocked(
    max_rel_pos: int,
    length: int,
    causal: bool,
    values: bool,
    dtype: torch.dtype = torch.float64,
    gain: float = 1.0,
    kind: str = "shaw",
) -> tuple[RelativeMultiheadAttention, RelativeMultiheadAttention, torch.Tensor]:
    """The same module (Shaw with or without ``values``, or clipped XL) twice: one always blocked, one always
    explicit; and an input ``[2, T, DIM]``. Clipped XL gets random biases ``u`` and ``v`` (zeros at init)."""
    torch.manual_seed(length + 100 * max_rel_pos)
    options = {"shaw_values": values} if kind == "shaw" else {}
    blocked = RelativeMultiheadAttention(DIM, HEADS, relative=kind, max_rel_pos=max_rel_pos, **options)
    with torch.no_grad():
        blocked.query_proj.weight.mul_(gain)
        blocked.key_value_proj.weight.mul_(gain)
        if kind == "xl_clipped":
            blocked.content_bias.normal_()
            blocked.position_bias.normal_()
    blocked = blocked.to(dtype)
    blocked.banded_min_length = 0
    explicit = copy.deepcopy(blocked)
    explicit.banded_min_length = 10**9
    return blocked, explicit, torch.randn(2, length, DIM, dtype=dtype, requires_grad=True)


def outputs_and_gradients(module: RelativeMultiheadAttention, x: torch.Tensor, causal: bool) -> list[torch.Tensor]:
    out = module(x, causal=causal)
    return [out, *torch.autograd.grad(out.square().sum(), [x, *module.parameters()])]


@settings(max_examples=25, deadline=None)
@given(
    max_rel_pos=st.integers(1, 6),
    length=st.integers(1, 40),
    extra=st.integers(0, 3),
    causal=st.booleans(),
    values=st.booleans(),
    kind=st.sampled_from(["shaw", "xl_clipped"]),
)
def test_blocked_equals_explicit(max_rel_pos: int, length: int, extra: int, causal: bool, values: bool, kind: str) -> None:
    blocked, explicit, x = explicit_and_blocked(max_rel_pos, length, causal, values, kind=kind)
    blocked.banded_block = 2 * max_rel_pos + extra  # small blocks: short sequences have several, and tails
    for got, want in zip(outputs_and_gradients(blocked, x, causal), outputs_and_gradients(explicit, x, causal)):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kind", ["shaw", "xl_clipped"])
@pytest.mark.parametrize("causal", [False, True])
def test_default_blocks_at_the_hint_clipping_distance(causal: bool, kind: str) -> None:
    """``max_rel_pos = 15`` (the HINT code's), the default block, 300 positions: ten blocks and long tails."""
    blocked, explicit, x = explicit_and_blocked(15, 300, causal, True, kind=kind)
    for got, want in zip(outputs_and_gradients(blocked, x, causal), outputs_and_gradients(explicit, x, causal)):
        torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-10)


def test_causal_banded_attention_never_sees_the_future() -> None:
    """The gradient of output ``t`` reaches no input after ``t`` (band, left tail; no right tail)."""
    blocked, _, x = explicit_and_blocked(3, 50, True, True)
    blocked.banded_block = 6
    for t in (0, 4, 20, 49):
        (gradient,) = torch.autograd.grad(blocked(x, causal=True)[:, t].sum(), x)
        assert torch.all(gradient[:, t + 1 :] == 0)
        assert gradient[:, : t + 1].abs().max() > 0


@pytest.mark.parametrize("kind", ["shaw", "xl_clipped"])
@pytest.mark.parametrize("gain", [1.0, 30.0, 300.0])
def test_blocked_holds_extreme_scores_in_range(gain: float, kind: str) -> None:
    """Scores hundreds of nats apart (tails far above the window) still merge exactly: float32 blocked
    and explicit attention agree with float64 explicit attention to the same precision."""
    blocked, explicit, x = explicit_and_blocked(3, 60, False, True, dtype=torch.float32, gain=gain, kind=kind)
    blocked.banded_block = 6
    reference = copy.deepcopy(explicit).double()
    want = reference(x.detach().double())
    got = blocked(x)
    assert torch.isfinite(got).all()
    scale = want.abs().max()
    blocked_error = (got.double() - want).abs().max() / scale
    explicit_error = (explicit(x).double() - want).abs().max() / scale
    assert blocked_error < max(1e-5, 10 * explicit_error)
    gradient = torch.autograd.grad(got.sum(), x)[0]
    assert torch.isfinite(gradient).all()


@pytest.mark.parametrize("kind", ["shaw", "xl_clipped"])
def test_module_uses_blocks_from_banded_min_length(monkeypatch, kind: str) -> None:
    calls = []

    def spy(*args, **kwargs):
        calls.append(args[0].shape[2])
        return clipped_relative_attention(*args, **kwargs)

    monkeypatch.setattr("neurosym.layers.relative_attention.clipped_relative_attention", spy)
    module = RelativeMultiheadAttention(DIM, HEADS, relative=kind).eval()
    module.banded_min_length = 50
    module(torch.randn(1, 49, DIM))
    module(torch.randn(1, 60, DIM))
    module(torch.randn(1, 60, DIM), key_padding_mask=torch.zeros(1, 60, dtype=torch.bool))  # padding: explicit
    module.train()
    module.dropout = 0.1
    module(torch.randn(1, 60, DIM))  # attention dropout: explicit
    assert calls == [60]


def test_module_scores_explicitly_without_the_cpu_flash_kernel(monkeypatch) -> None:
    torch.manual_seed(3)
    module = RelativeMultiheadAttention(DIM, HEADS, relative="shaw").eval()
    module.banded_min_length = 20
    x = torch.randn(2, 40, DIM, dtype=torch.float64)
    module.double()
    banded = module(x)
    monkeypatch.setattr("neurosym.layers.clipped_relative._FLASH", None)
    assert not banded_kernels_available()
    explicit = module(x)  # would raise inside clipped_relative_attention if the banded path were taken
    torch.testing.assert_close(explicit, banded)
    q = torch.randn(1, 1, 8, 4)
    with pytest.raises(RuntimeError, match="CPU flash-attention kernel"):
        clipped_relative_attention(q, q, q, torch.randn(7, 4), None, max_rel_pos=3, scale=0.5)


def test_bfloat16_close_to_float32() -> None:
    blocked, explicit, x = explicit_and_blocked(4, 70, False, True, dtype=torch.float32)
    blocked.banded_block = 8
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = blocked(x)
    assert low.dtype == torch.bfloat16
    torch.testing.assert_close(low.float(), explicit(x), rtol=0.05, atol=0.05)
    (gradient,) = torch.autograd.grad(low.float().sum(), x)
    (want,) = torch.autograd.grad(explicit(x).sum(), x)
    assert gradient.dtype == torch.float32
    torch.testing.assert_close(gradient, want, rtol=0.05, atol=0.05)


def test_float16_is_computed_in_float32() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 2, 50, 8).unbind(0)
    tables = torch.randn(2, 9, 8).unbind(0)
    settings = {"max_rel_pos": 4, "scale": 8**-0.5}
    half = clipped_relative_attention(*(x.half() for x in (q, k, v, *tables)), **settings)
    assert half.dtype == torch.float16
    rounded = clipped_relative_attention(*(x.half().float() for x in (q, k, v, *tables)), **settings)
    torch.testing.assert_close(half.float(), rounded, rtol=2e-3, atol=2e-3)


def test_default_block_covers_the_band() -> None:
    assert default_block(15) == 32
    assert default_block(16) == 32
    assert default_block(60) == 120


def test_errors() -> None:
    q = torch.randn(1, 1, 8, 4)
    table = torch.randn(7, 4)
    with pytest.raises(ValueError, match="block must be at least 6"):
        clipped_relative_attention(q, q, q, table, None, max_rel_pos=3, scale=0.5, block=5)
    meta = torch.empty(1, 1, 8, 4, device="meta")
    with pytest.raises(ValueError, match="runs on the CPU"):
        clipped_relative_attention(meta, meta, meta, table, None, max_rel_pos=3, scale=0.5)


def test_xl_without_clipping_never_takes_the_banded_path(monkeypatch) -> None:
    """Unclipped XL has no clipped tails: it stays in the fused kernel whatever the length."""
    monkeypatch.setattr("neurosym.layers.relative_attention.clipped_relative_attention", None)
    module = RelativeMultiheadAttention(DIM, HEADS, relative="xl").eval()
    module.banded_min_length = 0
    assert module(torch.randn(1, 40, DIM)).shape == (1, 40, DIM)


def test_per_head_tables_and_bias_equal_a_loop_over_heads() -> None:
    """Tables ``[H, 2R + 1, d]`` and a bias ``[H, 2R + 1]`` act on each head as that head's own shared
    tables would, with the bias added to the scaled scores of its distances (checked per head by the
    naive formula), gradients of every input included."""
    torch.manual_seed(4)
    heads, length, d, reach, scale = 3, 23, 4, 2, 0.7
    q, k, v = (torch.randn(2, heads, length, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    keys, values = (torch.randn(heads, 2 * reach + 1, d, dtype=torch.float64, requires_grad=True) for _ in range(2))
    bias = torch.randn(heads, 2 * reach + 1, dtype=torch.float64, requires_grad=True)
    got = clipped_relative_attention(q, k, v, keys, values, max_rel_pos=reach, scale=scale, score_bias=bias, block=4)
    positions = torch.arange(length)
    index = (positions[None] - positions[:, None]).clamp(-reach, reach) + reach  # [Tq, Tk]: clip(j - i) + R
    scores = scale * (q @ k.mT + torch.einsum("bhid,hijd->bhij", q, keys[:, index])) + bias[:, index]
    weights = scores.softmax(-1)
    want = weights @ v + torch.einsum("bhij,hijd->bhid", weights, values[:, index])
    torch.testing.assert_close(got, want)
    inputs = [q, k, v, keys, values, bias]
    cotangent = torch.randn_like(want)
    for g, w in zip(torch.autograd.grad(got, inputs, cotangent), torch.autograd.grad(want, inputs, cotangent)):
        torch.testing.assert_close(g, w)


def test_table_and_bias_shapes_are_checked() -> None:
    q = torch.randn(1, 2, 8, 4)
    with pytest.raises(ValueError, match=r"key_table must have shape \[7, 4\] or \[2, 7, 4\], got \[2, 7, 3\]"):
        clipped_relative_attention(q, q, q, torch.randn(2, 7, 3), None, max_rel_pos=3, scale=0.5)
    with pytest.raises(ValueError, match=r"score_bias must have shape \[2, 7\], got \[7\]"):
        clipped_relative_attention(q, q, q, torch.randn(7, 4), None, max_rel_pos=3, scale=0.5, score_bias=torch.randn(7))
