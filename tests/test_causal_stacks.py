"""Decoder-only (causal) encoder stacks and universal transformers: position ``t`` reads positions ``<= t`` alone, and
so they can be fed a few positions per call through a cache."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from neurosym.layers import AttentionCache, TransformerEncoder, TransformerEncoderLayer, UniversalTransformer

DIM, HEADS, FF, MAX_LENGTH = 8, 2, 16, 6
KINDS = ["vanilla", "xl", "xl_clipped", "shaw"]
STACKS = [(stack, kind) for stack in ("encoder", "universal", "act") for kind in KINDS]

Stack = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def options(kind: str) -> dict[str, object]:
    """The layers' options for ``kind`` attention: clipped kinds at distance 2, below the lengths drawn."""
    return dict(attention=kind, max_rel_pos=2 if kind in ("xl_clipped", "shaw") else 15)


@cache
def encoder_of(kind: str) -> TransformerEncoder:
    """A float64 two-layer encoder stack of ``kind`` attention, without dropout."""
    torch.manual_seed(0)
    return TransformerEncoder(DIM, 2, HEADS, FF, 0.0, **options(kind)).double().eval()


@cache
def universal_of(kind: str, act: bool) -> UniversalTransformer:
    """A float64 universal transformer of three steps over a post-norm layer of ``kind`` attention, without dropout;
    with ``act`` it halts positions at different steps (random halting weights)."""
    torch.manual_seed(0)
    layer = TransformerEncoderLayer(DIM, HEADS, FF, 0.0, pre_norm=False, **options(kind))
    universal = UniversalTransformer(layer, 3, act=act).double().eval()
    if universal.halting is not None:
        torch.nn.init.normal_(universal.halting.weight, std=1.0)
        torch.nn.init.constant_(universal.halting.bias, -0.5)
    return universal


def causal_stack(stack: str, kind: str) -> Stack:
    """A float64 stack of ``kind`` attention run with ``causal=True``: ``(x [B, T, D], key_padding_mask [B, T] | None)
    -> [B, T, D]``. ``"act"`` halts positions at different steps."""
    if stack == "encoder":
        return lambda x, padding: encoder_of(kind)(x, padding, causal=True)
    return lambda x, padding: universal_of(kind, stack == "act")(x, padding, causal=True).hidden


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


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10, deadline=None)
@given(batch=padded_batches(first_real=False), data=st.data())
def test_a_cached_causal_encoder_fed_in_chunks_equals_the_full_causal_call(
    kind: str, batch: tuple[torch.Tensor, torch.Tensor | None], data: st.DataObject
) -> None:
    """Fed a few positions per call through ``new_cache()``, with the padding mask of every position fed so far, the
    stack gives the outputs of the uncached causal call (left padding included: a query before its element's first
    real key gets zeros from attention in both)."""
    x, padding = batch
    cuts = data.draw(st.sets(st.integers(1, x.shape[1] - 1)) if x.shape[1] > 1 else st.just(set()), label="cuts")
    ends = [*sorted(cuts), x.shape[1]]
    encoder, chunk_cache = encoder_of(kind), encoder_of(kind).new_cache()
    chunks = [
        encoder(x[:, start:end], None if padding is None else padding[:, :end], causal=True, cache=chunk_cache)
        for start, end in zip([0, *ends], ends, strict=False)
    ]
    torch.testing.assert_close(torch.cat(chunks, dim=1), encoder(x, padding, causal=True), atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_cached_causal_encoder_with_an_attention_mask_equals_the_full_causal_call(kind: str) -> None:
    """Each call's ``attn_mask`` holds its new positions' rows over every position fed so far; with left padding the
    rows it leaves no key get zeros from attention in both."""
    x = torch.randn(2, MAX_LENGTH, DIM, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    padding = torch.tensor([[True, False, False, False, True, False], [False] * MAX_LENGTH])
    mask = torch.rand(MAX_LENGTH, MAX_LENGTH, generator=torch.Generator().manual_seed(3)) < 0.5
    encoder, chunk_cache, ends = encoder_of(kind), encoder_of(kind).new_cache(), (1, 4, MAX_LENGTH)
    chunks = [
        encoder(x[:, start:end], padding[:, :end], attn_mask=mask[start:end, :end], causal=True, cache=chunk_cache)
        for start, end in zip((0, *ends), ends, strict=False)
    ]
    full = encoder(x, padding, attn_mask=mask, causal=True)
    torch.testing.assert_close(torch.cat(chunks, dim=1), full, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_a_cached_causal_encoder_fed_one_position_at_a_time_equals_the_full_causal_call(kind: str) -> None:
    """One position per call, over left padding (the first calls see padding alone) and padding inside a row."""
    x = torch.randn(2, MAX_LENGTH, DIM, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    padding = torch.tensor([[True, True, False, False, True, False], [False, True, False, False, False, True]])
    encoder, steps_cache = encoder_of(kind), encoder_of(kind).new_cache()
    steps = [encoder(x[:, t : t + 1], padding[:, : t + 1], causal=True, cache=steps_cache) for t in range(MAX_LENGTH)]
    torch.testing.assert_close(torch.cat(steps, dim=1), encoder(x, padding, causal=True), atol=1e-10, rtol=0)
    assert [layer_cache.position for layer_cache in steps_cache] == [MAX_LENGTH, MAX_LENGTH]


@pytest.mark.parametrize("act", [False, True], ids=["fixed_depth", "act"])
@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=10, deadline=None)
@given(batch=padded_batches(first_real=False), data=st.data())
def test_a_cached_causal_universal_transformer_fed_in_chunks_equals_the_full_causal_call(
    kind: str, act: bool, batch: tuple[torch.Tensor, torch.Tensor | None], data: st.DataObject
) -> None:
    """As the encoder stack, with one cache per step (ACT included: every step runs on every position, halted or not).
    Each call's ``ponder_cost`` is the mean over its new real positions, so the chunks' costs weighted by their real
    positions make the full call's."""
    x, padding = batch
    cuts = data.draw(st.sets(st.integers(1, x.shape[1] - 1)) if x.shape[1] > 1 else st.just(set()), label="cuts")
    ends = [*sorted(cuts), x.shape[1]]
    universal = universal_of(kind, act)
    step_cache = universal.new_cache()
    chunks = [
        universal(x[:, start:end], None if padding is None else padding[:, :end], causal=True, cache=step_cache)
        for start, end in zip([0, *ends], ends, strict=False)
    ]
    full = universal(x, padding, causal=True)
    torch.testing.assert_close(torch.cat([chunk.hidden for chunk in chunks], dim=1), full.hidden, atol=1e-10, rtol=0)
    assert [step.position for step in step_cache] == [x.shape[1]] * 3
    if act:
        real = torch.ones(x.shape[:2]) if padding is None else (~padding).double()
        counts = [real[:, start:end].sum() for start, end in zip([0, *ends], ends, strict=False)]
        total = sum(chunk.ponder_cost * count for chunk, count in zip(chunks, counts, strict=True))
        torch.testing.assert_close(total / real.sum(), full.ponder_cost, atol=1e-10, rtol=0)
    else:
        assert all(chunk.ponder_cost is None for chunk in chunks)


def test_a_universal_transformer_cache_is_checked_before_any_step_runs() -> None:
    """A cache needs ``causal=True`` and one distinct, level ``AttentionCache`` per step; a refused call (here a padding
    mask covering the new positions alone) leaves it as it was."""
    universal, x = universal_of("shaw", True), torch.randn(1, 3, DIM, dtype=torch.float64)
    step_cache = universal.new_cache()
    with pytest.raises(ValueError, match="a cache needs causal=True"):
        universal(x, cache=step_cache)
    with pytest.raises(ValueError, match="cache has 2 steps, the UniversalTransformer has 3"):
        universal(x, causal=True, cache=step_cache[:2])
    with pytest.raises(ValueError, match=r"cache\[2\] is the same object as cache\[0\]: each step needs its own"):
        universal(x, causal=True, cache=[*step_cache[:2], step_cache[0]])
    universal(x[:, :1], causal=True, cache=step_cache)
    with pytest.raises(ValueError, match="the cache of step 1 is at position 0, that of step 0 at 1"):
        universal(x[:, 1:], causal=True, cache=[step_cache[0], AttentionCache(), step_cache[2]])
    with pytest.raises(ValueError, match="key_padding_mask covers 2 keys, but there are 3"):
        universal(x[:, 1:], torch.zeros(1, 2, dtype=torch.bool), causal=True, cache=step_cache)
    assert [step.position for step in step_cache] == [1, 1, 1]


class PositionwiseLayer(torch.nn.Module):
    """A layer of ``forward(x [B, T, D], key_padding_mask, *, causal=False) -> [B, T, D]`` that reads each position
    alone (causal as it is) and takes no cache."""

    def __init__(self) -> None:
        super().__init__()
        self.dim = DIM
        self.linear = torch.nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, *, causal: bool = False) -> torch.Tensor:
        return self.linear(x)


def test_a_universal_transformer_over_another_layer_takes_no_cache() -> None:
    """Only a layer that takes ``cache=`` (the encoder layer) can be fed incrementally; another serves uncached."""
    universal = UniversalTransformer(PositionwiseLayer(), 2)
    assert universal(torch.randn(1, 4, DIM), causal=True).hidden.shape == (1, 4, DIM)
    with pytest.raises(
        TypeError, match="a cache needs a shared layer that takes one, a TransformerEncoderLayer; .* PositionwiseLayer"
    ):
        universal.new_cache()
    with pytest.raises(TypeError, match="a cache needs a shared layer that takes one"):
        universal(torch.randn(1, 4, DIM), causal=True, cache=[AttentionCache(), AttentionCache()])


def test_a_cache_without_causal_is_refused_and_left_empty() -> None:
    """Without ``causal=True`` a position reads later ones, which an incremental call has not seen yet."""
    encoder, x = encoder_of("xl"), torch.randn(1, 2, DIM, dtype=torch.float64)
    empty = encoder.new_cache()
    with pytest.raises(ValueError, match="a cache needs causal=True"):
        encoder(x, cache=empty)
    with pytest.raises(ValueError, match="a cache needs causal=True"):
        encoder.layers[0](x, cache=empty[0])
    assert empty == [AttentionCache(), AttentionCache()]


def test_a_cached_call_that_raises_leaves_the_cache_as_it_was() -> None:
    """The padding mask of a cached call covers every position fed so far: one covering the new positions alone is
    refused before any layer's cache takes the step, and the retried step gives the full call's outputs."""
    encoder, x = encoder_of("shaw"), torch.randn(1, 3, DIM, dtype=torch.float64)
    padding = torch.tensor([[False, True, False]])
    encoder_cache = encoder.new_cache()
    steps = [encoder(x[:, :1], padding[:, :1], causal=True, cache=encoder_cache)]
    with pytest.raises(ValueError, match="key_padding_mask covers 1 keys, but there are 2"):
        encoder(x[:, 1:2], padding[:, 1:2], causal=True, cache=encoder_cache)
    assert [layer_cache.position for layer_cache in encoder_cache] == [1, 1]
    steps.append(encoder(x[:, 1:], padding, causal=True, cache=encoder_cache))
    torch.testing.assert_close(torch.cat(steps, dim=1), encoder(x, padding, causal=True), atol=1e-10, rtol=0)


def test_an_encoder_cache_of_the_wrong_kind_or_size_is_refused() -> None:
    encoder, x = encoder_of("vanilla"), torch.randn(1, 1, DIM, dtype=torch.float64)
    with pytest.raises(ValueError, match="cache has 1 layers, the TransformerEncoder has 2"):
        encoder(x, causal=True, cache=encoder.new_cache()[:1])
    with pytest.raises(TypeError, match=r"cache\[1\] must be the AttentionCache that new_cache\(\) gives, got NoneType"):
        encoder(x, causal=True, cache=[AttentionCache(), None])


def test_layer_caches_at_different_positions_are_refused_and_left_as_they_were() -> None:
    """A layer's cache replaced by a fresh one (or taken from another stack) put that layer's queries at other positions
    than the other layers' and silently changed the outputs; the call is refused before any cache advances."""
    encoder, x = encoder_of("xl"), torch.randn(1, 3, DIM, dtype=torch.float64)
    level = encoder.new_cache()
    encoder(x[:, :2], causal=True, cache=level)
    mixed = [level[0], encoder.new_cache()[1]]
    with pytest.raises(ValueError, match="the cache of layer 1 is at position 0, that of layer 0 at 2"):
        encoder(x[:, 2:], causal=True, cache=mixed)
    assert [layer_cache.position for layer_cache in mixed] == [2, 0]


def test_one_cache_shared_by_two_layers_is_refused() -> None:
    """``[AttentionCache()] * depth`` held the keys of every layer in one list and advanced once per layer."""
    encoder, x = encoder_of("vanilla"), torch.randn(1, 1, DIM, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"cache\[1\] is the same object as cache\[0\]: each layer needs its own"):
        encoder(x, causal=True, cache=[AttentionCache()] * 2)


@pytest.mark.parametrize(("kind", "parameters"), [("vanilla", 1216), ("xl", 1312), ("xl_clipped", 1312), ("shaw", 1296)])
def test_the_cache_adds_no_parameter(kind: str, parameters: int) -> None:
    """The counts of the encoder stack before it took a cache; the caches live outside the module."""
    assert sum(parameter.numel() for parameter in encoder_of(kind).parameters()) == parameters
