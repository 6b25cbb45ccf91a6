"""Decoder-only (causal) encoder stacks and universal transformers: position ``t`` reads positions ``<= t`` alone."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neurosym.layers import TransformerEncoder, TransformerEncoderLayer, UniversalTransformer

DIM, HEADS, FF, MAX_LENGTH = 8, 2, 16, 6
KINDS = ["vanilla", "xl", "xl_clipped", "shaw"]
STACKS = [(stack, kind) for stack in ("encoder", "universal", "act") for kind in KINDS]

Stack = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


@cache
def causal_stack(stack: str, kind: str) -> Stack:
    """A float64 stack of ``kind`` attention (clipped kinds at distance 2, below the lengths drawn) run with
    ``causal=True``: ``(x [B, T, D], key_padding_mask [B, T] | None) -> [B, T, D]``. ``"act"`` halts positions at
    different steps (random halting weights)."""
    torch.manual_seed(0)
    options = dict(attention=kind, max_rel_pos=2 if kind in ("xl_clipped", "shaw") else 15)
    if stack == "encoder":
        encoder = TransformerEncoder(DIM, 2, HEADS, FF, 0.0, **options).double().eval()
        return lambda x, padding: encoder(x, padding, causal=True)
    layer = TransformerEncoderLayer(DIM, HEADS, FF, 0.0, pre_norm=False, **options)
    universal = UniversalTransformer(layer, 3, act=stack == "act").double().eval()
    if universal.halting is not None:
        torch.nn.init.normal_(universal.halting.weight, std=1.0)
        torch.nn.init.constant_(universal.halting.bias, -0.5)
    return lambda x, padding: universal(x, padding, causal=True).hidden


@st.composite
def padded_batches(draw: st.DrawFn, first_real: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``x [B, T, D]`` (float64) and a key padding mask ``[B, T]`` or ``None``; every element has a real position
    (``first_real``: its first one)."""
    batch, length = draw(st.integers(1, 3)), draw(st.integers(1, MAX_LENGTH))
    x = torch.randn(batch, length, DIM, dtype=torch.float64, generator=torch.Generator().manual_seed(draw(st.integers(0, 99))))
    if not draw(st.booleans()):
        return x, None
    rows = st.lists(st.booleans(), min_size=length, max_size=length).filter(lambda row: not all(row))
    padding = torch.tensor(draw(st.lists(rows, min_size=batch, max_size=batch)))
    if first_real:
        padding[:, 0] = False
    return x, padding


@pytest.mark.parametrize(("stack", "kind"), STACKS)
@settings(max_examples=10, deadline=None)
@given(batch=padded_batches(first_real=False), data=st.data())
def test_a_causal_stack_reads_no_later_token(
    stack: str, kind: str, batch: tuple[torch.Tensor, torch.Tensor | None], data: st.DataObject
) -> None:
    """New tokens (and padding) after position ``t`` leave the outputs up to ``t`` as they were (a query of a
    left-padded element before its first real key gets zeros from attention, as in every causal attention)."""
    x, padding = batch
    t = data.draw(st.integers(0, x.shape[1] - 1), label="t")
    changed = torch.cat([x[:, : t + 1], 1.0 - 2.0 * x[:, t + 1 :]], dim=1)
    changed_padding = None
    if padding is not None:
        tail = data.draw(st.lists(st.booleans(), min_size=padding.numel(), max_size=padding.numel()), label="new padding after t")
        changed_padding = torch.cat([padding[:, : t + 1], torch.tensor(tail).view_as(padding)[:, t + 1 :]], 1)
        assume(not changed_padding.all(dim=1).any())
    run = causal_stack(stack, kind)
    expected = run(x, padding)[:, : t + 1]
    torch.testing.assert_close(run(changed, changed_padding)[:, : t + 1], expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize(("stack", "kind"), STACKS)
@settings(max_examples=5, deadline=None)
@given(batch=padded_batches(first_real=True))
def test_a_causal_stack_gives_each_position_the_last_output_of_its_prefix(
    stack: str, kind: str, batch: tuple[torch.Tensor, torch.Tensor | None]
) -> None:
    """``out[:, t]`` is the last output of the stack run on ``x[:, :t + 1]`` (relative positions restart at 0 in both;
    clipped distances included)."""
    x, padding = batch
    run = causal_stack(stack, kind)
    prefixes = [run(x[:, : t + 1], None if padding is None else padding[:, : t + 1])[:, -1] for t in range(x.shape[1])]
    torch.testing.assert_close(run(x, padding), torch.stack(prefixes, dim=1), atol=1e-12, rtol=1e-12)
