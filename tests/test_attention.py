"""Vanilla and relative multi-head attention: exact formulas, shift invariance, causality, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from paper_sinusoid import paper_sinusoid

from neurosym.layers import AdditiveAttention, AttentionCache, MultiheadAttention, RelativeMultiheadAttention, sinusoid_table

DIM, HEADS = 16, 4


def make(kind: str, **kwargs) -> MultiheadAttention:
    torch.manual_seed(0)
    if kind == "vanilla":
        return MultiheadAttention(DIM, HEADS, **kwargs).eval()
    module = RelativeMultiheadAttention(DIM, HEADS, relative=kind, **kwargs).eval()
    if kind in ("xl", "xl_clipped"):  # non-zero biases so that u and v are exercised
        torch.nn.init.normal_(module.content_bias)
        torch.nn.init.normal_(module.position_bias)
    return module


def reference(
    module: MultiheadAttention,
    x: torch.Tensor,
    causal: bool,
    key_value: torch.Tensor | None = None,
    key_padding_mask: torch.Tensor | None = None,
    attn_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Attention computed pair by pair from the published formulas, in the dtype of ``x``, with ``attn_mask [Tq, Tk] |
    [B, Tq, Tk]`` ``True`` where a query may attend; a query that may see no key gets zeros before the output
    projection."""
    source = x if key_value is None else key_value
    q = module.split_heads(module.query_proj(x))
    k, v = module.split_heads(module.key_value_proj(source)).chunk(2, dim=-1)
    num_queries, num_keys, d = x.shape[1], source.shape[1], module.head_dim
    scores = torch.empty(x.shape[0], module.heads, num_queries, num_keys, dtype=x.dtype)
    for i, j in itertools.product(range(num_queries), range(num_keys)):
        if isinstance(module, RelativeMultiheadAttention) and module.relative == "xl":
            distance = max(-module.max_rel_pos, min(module.max_rel_pos, i - j)) if module.clipped else i - j
            r = module.distance_proj(paper_sinusoid(distance, module.position_dim).to(x.dtype)).view(module.heads, d)
            content = ((q[:, :, i] + module.content_bias) * k[:, :, j]).sum(-1)
            position = ((q[:, :, i] + module.position_bias) * r).sum(-1)
            scores[:, :, i, j] = content + position
        elif isinstance(module, RelativeMultiheadAttention):
            clipped = max(-module.max_rel_pos, min(module.max_rel_pos, j - i)) + module.max_rel_pos
            a = module.distance_keys.weight[clipped]
            scores[:, :, i, j] = (q[:, :, i] * (k[:, :, j] + a)).sum(-1)
        else:
            scores[:, :, i, j] = (q[:, :, i] * k[:, :, j]).sum(-1)
        if causal and j > i:
            scores[:, :, i, j] = -math.inf
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], -math.inf)
    if attn_mask is not None:
        scores = scores.masked_fill(~(attn_mask[:, None] if attn_mask.dim() == 3 else attn_mask), -math.inf)
    weights = torch.softmax(scores / math.sqrt(d), dim=-1).nan_to_num(0.0)  # (NaN: a query that sees no key)
    out = torch.einsum("bhij,bhjd->bhid", weights, v)
    if isinstance(module, RelativeMultiheadAttention) and module.relative == "shaw" and module.distance_values is not None:
        for i, j in itertools.product(range(num_queries), range(num_keys)):  # Shaw et al. (2018), eq. 3
            clipped = max(-module.max_rel_pos, min(module.max_rel_pos, j - i)) + module.max_rel_pos
            out[:, :, i] += weights[:, :, i, j, None] * module.distance_values.weight[clipped]  # z_i = Σ_j α_ij (v_j + a^V_ij)
    return module.out_proj(out.transpose(1, 2).reshape(x.shape[0], num_queries, DIM))


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw", "shaw-keys-only"])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_pairwise_reference(kind: str, causal: bool) -> None:
    if kind.startswith("shaw"):
        module = make("shaw", max_rel_pos=2, shaw_values=kind == "shaw")
        assert (module.distance_values is None) == (kind != "shaw")
    elif kind == "xl_clipped":
        module = make(kind, max_rel_pos=2)
        assert module.relative == "xl" and module.clipped
    else:
        module = make(kind)
    x = torch.randn(2, 6, DIM)
    torch.testing.assert_close(module(x, causal=causal), reference(module, x, causal), atol=1e-5, rtol=1e-4)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["xl", "xl_clipped", "shaw", "shaw-keys-only"]),
    max_rel_pos=st.integers(1, 3),
    num_queries=st.integers(1, 5),
    num_keys=st.integers(1, 5),
    cross=st.booleans(),
    causal=st.booleans(),
    data=st.data(),
)
def test_relative_attention_in_float64_is_the_papers_formula(
    kind: str, max_rel_pos: int, num_queries: int, num_keys: int, cross: bool, causal: bool, data: st.DataObject
) -> None:
    """Self- and cross-attention with padding anywhere, at distances below, at and beyond the clip, equal the pairwise
    formulas to float64 rounding (the XL sinusoids were float32: off by 1e-8)."""
    options = {} if kind == "xl" else {"max_rel_pos": max_rel_pos}
    module = make(kind.removesuffix("-keys-only"), **options, **({"shaw_values": False} if kind.endswith("only") else {}))
    module = module.double()
    x = torch.randn(2, num_queries, DIM, dtype=torch.float64)
    key_value = torch.randn(2, num_keys, DIM, dtype=torch.float64) if cross else None
    keys = num_keys if cross else num_queries
    padding = torch.tensor([data.draw(st.lists(st.booleans(), min_size=keys, max_size=keys)) for _ in range(2)])
    padding[:, data.draw(st.integers(0, keys - 1))] = False  # (every element has a real key)
    got = module(x, key_value, key_padding_mask=padding, causal=causal)
    torch.testing.assert_close(got, reference(module, x, causal, key_value, padding), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize(
    ("cross", "causal", "padded"),
    [(False, False, False), (False, True, False), (False, True, True), (True, False, True), (True, True, False)],
)
def test_vanilla_attention_is_torchs_multihead_attention_with_the_same_weights(cross: bool, causal: bool, padded: bool) -> None:
    """Each head's keys and values are the two halves of its slice of ``key_value_proj``; causal cross-attention lets
    query ``i`` see keys ``<= i``. Float64, eval mode (no dropout)."""
    module = make("vanilla", dropout=0.3).double()
    torch_attention = torch.nn.MultiheadAttention(DIM, HEADS, dropout=0.3, batch_first=True).double().eval()
    weight = module.key_value_proj.weight.view(HEADS, 2, module.head_dim, DIM)  # [key rows, value rows] per head
    bias = module.key_value_proj.bias.view(HEADS, 2, module.head_dim)
    with torch.no_grad():
        torch_attention.in_proj_weight.copy_(
            torch.cat([module.query_proj.weight, weight[:, 0].flatten(0, 1), weight[:, 1].flatten(0, 1)])
        )
        torch_attention.in_proj_bias.copy_(torch.cat([module.query_proj.bias, bias[:, 0].flatten(), bias[:, 1].flatten()]))
        torch_attention.out_proj.load_state_dict(module.out_proj.state_dict())
    x = torch.randn(2, 5, DIM, dtype=torch.float64)
    source = torch.randn(2, 7, DIM, dtype=torch.float64) if cross else x
    padding = torch.arange(source.shape[1]) >= torch.tensor([[source.shape[1]], [3]]) if padded else None
    future = torch.arange(source.shape[1]) > torch.arange(5)[:, None] if causal else None
    expected, _ = torch_attention(x, source, source, key_padding_mask=padding, attn_mask=future, need_weights=False)
    got = module(x, source if cross else None, key_padding_mask=padding, causal=causal)
    torch.testing.assert_close(got, expected, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("position_dim", [2, DIM, 4 * DIM])
def test_xl_with_any_number_of_sinusoid_features_matches_reference(position_dim: int) -> None:
    module = make("xl", position_dim=position_dim)
    assert module.distance_proj.in_features == position_dim
    x = torch.randn(2, 5, DIM)
    torch.testing.assert_close(module(x, causal=True), reference(module, x, causal=True), atol=1e-5, rtol=1e-4)


def test_fused_xl_equals_explicit_scores_at_long_distances() -> None:
    """The product-of-sinusoids form loses no precision for positions up to a thousand: the XL output at
    query positions 1000..1004 (an incremental decoder's offset) equals softmax of the explicit scores."""
    module = make("xl", position_dim=DIM)
    memory, query = torch.randn(1, 1000, DIM), torch.randn(1, 5, DIM)
    cache = AttentionCache()
    module(memory, cache=cache)
    fused = module(query, cache=cache, causal=True)
    x = torch.cat([memory, query], dim=1)
    q = module.split_heads(module.query_proj(query))
    k, v = module.split_heads(module.key_value_proj(x)).chunk(2, dim=-1)
    distances = torch.arange(1000, 1005)[:, None] - torch.arange(1005)[None, :]
    r = module.distance_proj(sinusoid_table(distances.flatten(), DIM)).view(5, 1005, HEADS, -1)
    content = torch.einsum("bhid,bhjd->bhij", q + module.content_bias[:, None], k)
    position = torch.einsum("bhid,ijhd->bhij", q + module.position_bias[:, None], r)
    scores = (content + position) / math.sqrt(module.head_dim)
    scores = scores.masked_fill(distances < 0, -math.inf)
    out = torch.einsum("bhij,bhjd->bhid", scores.softmax(-1), v)
    expected = module.out_proj(out.transpose(1, 2).reshape(1, 5, DIM))
    torch.testing.assert_close(fused, expected, atol=1e-4, rtol=1e-4)


@settings(max_examples=15, deadline=None)
@given(
    kind=st.sampled_from(["xl", "xl_clipped", "shaw"]),
    length=st.integers(1, 7),
    shift=st.integers(1, 20),
    causal=st.booleans(),
)
def test_relative_attention_is_invariant_to_shifting_absolute_positions(kind: str, length: int, shift: int, causal: bool) -> None:
    """Prepending masked padding moves every token by ``shift`` positions; relative scores do not change."""
    module = make(kind, **({} if kind == "xl" else {"max_rel_pos": 3}))  # (unclipped XL reads no max_rel_pos)
    x = torch.randn(2, length, DIM)
    shifted = torch.cat([torch.randn(2, shift, DIM), x], dim=1)
    padding = torch.zeros(2, shift + length, dtype=torch.bool)
    padding[:, :shift] = True
    expected = module(x, causal=causal)
    got = module(shifted, key_padding_mask=padding, causal=causal)[:, shift:]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_absolute_positions_would_break_the_shift_test() -> None:
    """Sanity check of the test above: adding absolute sinusoids makes outputs depend on the shift."""
    module = make("vanilla")
    x = torch.randn(1, 4, DIM)
    positions = sinusoid_table(torch.arange(6), DIM)
    padding = torch.tensor([[True, True, False, False, False, False]])
    plain = module(x + positions[:4])
    shifted = module(torch.cat([torch.zeros(1, 2, DIM), x], 1) + positions, key_padding_mask=padding)[:, 2:]
    assert not torch.allclose(plain, shifted, atol=1e-3)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["vanilla", "xl", "xl_clipped", "shaw"]),
    num_queries=st.integers(1, 5),
    num_keys=st.integers(1, 5),
    cross=st.booleans(),
    causal=st.booleans(),
    per_element=st.booleans(),
    data=st.data(),
)
def test_an_attention_mask_is_the_masked_formula_combined_with_padding_and_causality(
    kind: str, num_queries: int, num_keys: int, cross: bool, causal: bool, per_element: bool, data: st.DataObject
) -> None:
    """A bool ``attn_mask`` of ``[Tq, Tk]`` or ``[B, Tq, Tk]`` (``True``: may attend) removes the keys it blocks from
    the pairwise formula, alone or on top of padding and causality, in every kind; rows left no key (by it alone or combined)
    get zeros before the output projection, as the blind queries of causal attention over left padding do."""
    module = make(kind, **({"max_rel_pos": 2} if kind in ("xl_clipped", "shaw") else {})).double()
    x = torch.randn(2, num_queries, DIM, dtype=torch.float64)
    key_value = torch.randn(2, num_keys, DIM, dtype=torch.float64) if cross else None
    keys = num_keys if cross else num_queries
    padding = torch.tensor([data.draw(st.lists(st.booleans(), min_size=keys, max_size=keys)) for _ in range(2)])
    padding[:, data.draw(st.integers(0, keys - 1))] = False  # (every element has a real key)
    padding = padding if data.draw(st.booleans(), label="padded") else None
    shape = (2, num_queries, keys) if per_element else (num_queries, keys)
    mask = torch.tensor(data.draw(st.lists(st.booleans(), min_size=math.prod(shape), max_size=math.prod(shape)))).view(shape)
    got = module(x, key_value, key_padding_mask=padding, attn_mask=mask, causal=causal)
    torch.testing.assert_close(got, reference(module, x, causal, key_value, padding, mask), atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_a_query_an_attention_mask_leaves_no_key_gets_zeros_with_finite_gradients(kind: str) -> None:
    module = make(kind).train()  # (dropout 0: train mode only to take gradients as training does)
    x = torch.randn(2, 3, DIM, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])
    out = module(x, attn_mask=mask)
    torch.testing.assert_close(out[:, 1], module.out_proj.bias.expand(2, DIM))
    assert not torch.allclose(out[:, [0, 2]], module.out_proj.bias.expand(2, 2, DIM))
    out.square().sum().backward()
    assert all(p.grad is None or bool(p.grad.isfinite().all()) for p in [x, *module.parameters()])


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_incremental_self_attention_with_an_attention_mask_equals_full(kind: str) -> None:
    """Fed through a cache, a call's mask has its new queries' rows over every key so far."""
    module = make(kind)
    x = torch.randn(2, 5, DIM)
    mask = torch.rand(2, 5, 5, generator=torch.Generator().manual_seed(0)) < 0.6
    cache, ends = AttentionCache(), (2, 3, 5)
    pieces = [
        module(x[:, start:end], attn_mask=mask[:, start:end, :end], causal=True, cache=cache)
        for start, end in zip((0, *ends), ends, strict=False)
    ]
    torch.testing.assert_close(torch.cat(pieces, 1), module(x, attn_mask=mask, causal=True), atol=1e-6, rtol=1e-5)


def test_a_bad_attention_mask_is_refused_by_name() -> None:
    module, x = make("shaw"), torch.randn(2, 3, DIM)
    with pytest.raises(TypeError, match=r"attn_mask \(or None\) must be a torch.Tensor, got list"):
        module(x, attn_mask=[[True] * 3] * 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"attn_mask must be a bool tensor \[3, 3\] or \[2, 3, 3\] with True where a query"):
        module(x, attn_mask=torch.zeros(3, 3))
    with pytest.raises(ValueError, match=r"here \[3, 4\] or \[2, 3, 4\] .*, got \(3, 3\)"):
        module(x, torch.randn(2, 4, DIM), attn_mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"here \[3, 3\] or \[2, 3, 3\] .*, got \(1, 3, 3\)"):
        module(x, attn_mask=torch.ones(1, 3, 3, dtype=torch.bool))
    cache = AttentionCache()
    module(x[:, :2], causal=True, cache=cache)
    with pytest.raises(ValueError, match=r"here \[1, 3\] or \[2, 1, 3\] \(with a cache the keys are every position"):
        module(x[:, 2:], attn_mask=torch.ones(1, 1, dtype=torch.bool), causal=True, cache=cache)
    assert cache.position == 2


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_causal_attention_never_sees_the_future(kind: str) -> None:
    module = make(kind)
    x = torch.randn(2, 7, DIM, requires_grad=True)
    out = module(x, causal=True) @ torch.randn(DIM)
    for t in range(7):
        (gradient,) = torch.autograd.grad(out[:, t].sum(), x, retain_graph=True)
        assert gradient[:, t + 1 :].abs().sum() == 0
        assert gradient[:, : t + 1].abs().sum() > 0


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_padding_keys_get_no_attention(kind: str) -> None:
    module = make(kind)
    x = torch.randn(1, 5, DIM)
    padding = torch.tensor([[False, False, False, True, True]])
    changed = x.clone()
    changed[:, 3:] = torch.randn(1, 2, DIM)
    torch.testing.assert_close(module(x, key_padding_mask=padding)[:, :3], module(changed, key_padding_mask=padding)[:, :3])


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_queries_that_may_see_no_key_get_zeros_with_finite_gradients(kind: str) -> None:
    module = make(kind).train()  # (dropout 0: train mode only to take gradients as training does)
    x = torch.randn(2, 4, DIM, requires_grad=True)
    left_padding = torch.tensor([[True, True, False, False], [False, False, False, False]])
    out = module(x, key_padding_mask=left_padding, causal=True)
    blind = module.out_proj.bias.expand(2, DIM)  # zeros before the output projection
    torch.testing.assert_close(out[0, :2], blind)
    assert not torch.allclose(out[0, 2], out.new_zeros(DIM) + module.out_proj.bias)
    out.square().sum().backward()
    assert all(p.grad is None or bool(p.grad.isfinite().all()) for p in [x, *module.parameters()])
    assert bool(x.grad[0, :2].eq(0).all())  # padding reaches no output, as key or as query


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_incremental_self_attention_equals_full(kind: str) -> None:
    module = make(kind)
    x = torch.randn(3, 6, DIM)
    cache = AttentionCache()
    pieces = [module(x[:, :2], causal=True, cache=cache)]  # several positions in one call also work
    pieces += [module(x[:, t : t + 1], causal=True, cache=cache) for t in range(2, 6)]
    torch.testing.assert_close(torch.cat(pieces, 1), module(x, causal=True), atol=1e-6, rtol=1e-5)
    assert cache.position == 6 and cache.keys.shape == (3, HEADS, 6, DIM // HEADS)


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
@settings(max_examples=15, deadline=None)
@given(left_padding=st.lists(st.integers(0, 5), min_size=3, max_size=3))
def test_incremental_self_attention_over_left_padding_equals_full(kind: str, left_padding: list[int]) -> None:
    """A left-padded element's first steps see only padding keys: the cached call refused them ("every key of batch
    element 0 is padding"), while the full causal call gives those queries zeros."""
    module = make(kind)
    x = torch.randn(3, 6, DIM, requires_grad=True)
    padding = torch.arange(6) < torch.tensor(left_padding).unsqueeze(1)  # [3, 6], at least one real key per row
    cache = AttentionCache()
    pieces = [module(x[:, t : t + 1], key_padding_mask=padding[:, : t + 1], causal=True, cache=cache) for t in range(6)]
    incremental = torch.cat(pieces, 1)
    torch.testing.assert_close(incremental, module(x, key_padding_mask=padding, causal=True), atol=1e-6, rtol=1e-5)
    incremental.square().sum().backward()
    assert all(p.grad is None or bool(p.grad.isfinite().all()) for p in [x, *module.parameters()])


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
@pytest.mark.parametrize("chunks", [(1,) * 5, (2, 3), (5,)])
def test_incremental_self_attention_gives_an_element_all_padding_the_blind_queries_zeros(kind: str, chunks) -> None:
    """An element padded throughout (a batch filler) sees padding keys alone at every step: its queries are blind, as
    the full call's blind queries, so they get zeros before the output projection (no NaN), pass no gradient to its
    inputs, and leave the other elements as the full call computes them without it."""
    module = make(kind).train()  # (dropout 0: train mode only to take gradients as training does)
    x = torch.randn(2, 5, DIM, requires_grad=True)
    padding = torch.tensor([[True] * 5, [False] * 5])
    cache, starts = AttentionCache(), np.cumsum((0, *chunks))
    pieces = [
        module(x[:, start:end], key_padding_mask=padding[:, :end], causal=True, cache=cache)
        for start, end in itertools.pairwise(starts)
    ]
    incremental = torch.cat(pieces, 1)
    torch.testing.assert_close(incremental[0], module.out_proj.bias.expand(5, DIM))
    torch.testing.assert_close(incremental[1:], module(x[1:], causal=True), atol=1e-6, rtol=1e-5)
    incremental.square().sum().backward()
    assert all(p.grad is None or bool(p.grad.isfinite().all()) for p in [x, *module.parameters()])
    assert bool(x.grad[0].eq(0).all())


def test_a_mask_of_another_length_is_named_by_its_length_before_any_row_of_it_is_read() -> None:
    """A mask of 3 keys for 5 whose row was all True was reported as "every key of batch element 0 is padding"."""
    with pytest.raises(ValueError, match="key_padding_mask covers 3 keys, but there are 5"):
        make("vanilla")(torch.randn(2, 5, DIM), key_padding_mask=torch.tensor([[True] * 3, [False] * 3]))


def test_an_element_all_padding_is_still_refused_outside_incremental_causal_self_attention() -> None:
    module, x = make("vanilla"), torch.randn(2, 3, DIM)
    padding = torch.tensor([[True, True, True], [False, False, False]])
    for call in (
        lambda: module(x, key_padding_mask=padding, causal=True),
        lambda: module(x, key_padding_mask=padding, cache=AttentionCache()),
        lambda: module(x, x, key_padding_mask=padding, causal=True, cache=AttentionCache()),
    ):
        with pytest.raises(ValueError, match="every key of batch element 0 is padding: nothing to attend to"):
            call()


def test_cross_attention_cache_projects_memory_once() -> None:
    module = make("vanilla")
    query, memory = torch.randn(2, 3, DIM), torch.randn(2, 5, DIM)
    cache = AttentionCache()
    first = module(query[:, :1], memory, cache=cache)
    keys = cache.keys
    second = module(query[:, 1:], memory, cache=cache)
    assert cache.keys is keys
    torch.testing.assert_close(torch.cat([first, second], 1), module(query, memory))
    with pytest.raises(ValueError, match="this cache holds the keys of a batch of 2, the query has 1"):
        module(query[:1, 2:], memory[:1], cache=cache)  # (failed deep in torch)


@pytest.mark.parametrize("kind", ["shaw", "xl_clipped"])
def test_clipped_encodings_make_far_keys_interchangeable(kind: str) -> None:
    """Beyond ``max_rel_pos`` every distance shares one encoding, so far keys are interchangeable; without
    the clip (unclipped XL) they are not."""
    x = torch.randn(1, 6, DIM)
    swapped = x[:, [0, 1, 2, 3, 5, 4]]  # positions 4 and 5 are both > 1 away from query 0
    module = make(kind, max_rel_pos=1)
    torch.testing.assert_close(module(x)[:, 0], module(swapped)[:, 0], atol=1e-6, rtol=1e-5)
    unclipped = make("xl")
    assert not torch.allclose(unclipped(x)[:, 0], unclipped(swapped)[:, 0], atol=1e-4)


@pytest.mark.parametrize("causal", [False, True])
def test_clipped_xl_beyond_the_sequence_length_is_xl(causal: bool) -> None:
    """With the clip at or beyond the longest distance, clipped XL (explicit per-distance scores) and XL
    (the product-of-sinusoids form) are the same function of the same parameters, gradients included."""
    xl = make("xl")
    clipped = RelativeMultiheadAttention(DIM, HEADS, relative="xl_clipped", max_rel_pos=5).eval()
    clipped.load_state_dict(xl.state_dict())
    x = torch.randn(2, 6, DIM, requires_grad=True)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    out_xl = xl(x, key_padding_mask=padding, causal=causal)
    out_clipped = clipped(x, key_padding_mask=padding, causal=causal)
    torch.testing.assert_close(out_clipped, out_xl, atol=1e-5, rtol=1e-4)
    grad_xl = torch.autograd.grad(out_xl.square().sum(), [x, *xl.parameters()])
    grad_clipped = torch.autograd.grad(out_clipped.square().sum(), [x, *clipped.parameters()])
    for expected, got in zip(grad_xl, grad_clipped, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)


def test_bad_inputs_raise_clear_errors() -> None:
    module = make("xl")
    x = torch.randn(2, 4, DIM)
    with pytest.raises(ValueError, match="query must have shape"):
        module(torch.randn(2, 4, DIM + 1))
    with pytest.raises(ValueError, match="key_value must have shape"):
        module(x, torch.randn(3, 4, DIM))
    with pytest.raises(ValueError, match="bool tensor"):
        module(x, key_padding_mask=torch.zeros(2, 4))
    with pytest.raises(ValueError, match="covers 3 keys"):
        module(x, key_padding_mask=torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="batch element 1 is padding"):
        module(x, key_padding_mask=torch.tensor([[False] * 4, [True] * 4]))
    with pytest.raises(ValueError, match="multiple of heads"):
        MultiheadAttention(10, 4)
    with pytest.raises(ValueError, match="relative must be one of 'xl', 'xl_clipped', 'shaw', got 'rope'"):
        RelativeMultiheadAttention(DIM, HEADS, relative="rope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="positive even"):
        sinusoid_table(torch.arange(3), 5)
    with pytest.raises(ValueError, match="position_dim must be a positive even"):
        RelativeMultiheadAttention(DIM, HEADS, relative="xl", position_dim=3)
    with pytest.raises(ValueError, match="position_dim belongs to relative='xl'"):
        RelativeMultiheadAttention(DIM, HEADS, relative="shaw", position_dim=4)
    for relative in ("xl_clipped", "shaw"):  # 2.5 clipped distances at 2.5 (or failed deep in nn.Embedding); True as 1
        for bad in (2.5, True, 0):
            with pytest.raises(ValueError, match=f"max_rel_pos must be an int of at least 1, got {bad}"):
                RelativeMultiheadAttention(DIM, HEADS, relative=relative, max_rel_pos=bad)  # type: ignore[arg-type]
    assert RelativeMultiheadAttention(DIM, HEADS, relative="shaw", max_rel_pos=np.int64(3)).max_rel_pos == 3
    with pytest.raises(ValueError, match="position_dim must be an int of at least 1, got 4.0"):  # (failed in torch.empty)
        RelativeMultiheadAttention(DIM, HEADS, relative="xl", position_dim=4.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"positions must have shape \[N\], got \(2, 3\)"):  # (failed in einops)
        sinusoid_table(torch.zeros(2, 3), 4)
    with pytest.raises(ValueError, match="dtype must be floating-point, got torch.int64"):  # (a table of -1, 0 and 1)
        sinusoid_table(torch.arange(3), 4, torch.int64)
    with pytest.raises(TypeError, match="query must be a torch.Tensor, got list"):  # (failed on list.dim)
        module([[0.0] * DIM])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"key_padding_mask \(or None\) must be a torch.Tensor, got list"):  # (list.dtype)
        module(x, key_padding_mask=[[False] * 4] * 2)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"cache must be an AttentionCache \(or None\), got dict"):  # (failed on dict.keys)
        module(x, cache={})  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["vanilla", "xl", "xl_clipped", "shaw"])
def test_an_empty_memory_is_refused_not_read_as_the_output_bias(kind: str) -> None:
    with pytest.raises(ValueError, match="key_value has no positions: nothing to attend to"):
        make(kind)(torch.randn(2, 3, DIM), torch.randn(2, 0, DIM))


@pytest.mark.parametrize(("kind", "causal"), [("vanilla", True), ("xl", False), ("xl_clipped", False), ("shaw", False)])
def test_incremental_cross_attention_places_each_query_where_the_full_call_does(kind: str, causal: bool) -> None:
    """Relative (or causal) cross-attention depends on the query's position: fed one query at a time through a
    cache, the queries sat at position 0 and read 0.02-0.2 away from the full call."""
    module = make(kind)
    query, memory = torch.randn(2, 4, DIM), torch.randn(2, 6, DIM)
    cache = AttentionCache()
    pieces = [module(query[:, t : t + 1], memory, causal=causal, cache=cache) for t in range(4)]
    torch.testing.assert_close(torch.cat(pieces, 1), module(query, memory, causal=causal), atol=1e-6, rtol=1e-5)
    assert cache.position == 4 and not cache.self_attention


def test_a_cached_call_that_raises_leaves_the_cache_as_it_was() -> None:
    module = make("shaw")
    x = torch.randn(2, 3, DIM)
    cache = AttentionCache()
    first = module(x[:, :1], causal=True, cache=cache)
    with pytest.raises(ValueError, match="key_padding_mask covers 3 keys, but there are 2"):
        module(x[:, 1:2], causal=True, cache=cache, key_padding_mask=torch.zeros(2, 3, dtype=torch.bool))
    assert cache.position == 1 and cache.keys is not None and cache.keys.shape[2] == 1
    rest = [module(x[:, t : t + 1], causal=True, cache=cache) for t in (1, 2)]
    torch.testing.assert_close(torch.cat([first, *rest], 1), module(x, causal=True), atol=1e-6, rtol=1e-5)


@torch.no_grad()
def bahdanau_reference(
    attention: AdditiveAttention, query: torch.Tensor, keys: torch.Tensor, padding: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bahdanau et al.'s attention key by key from the layer's parameters: ``score_j = v · tanh(W_q q + W_k k_j + b)``
    (``b`` the key projection's bias), a softmax over the real keys (padding gets weight 0) and ``context = Σ_j a_j
    k_j``, in Python floats. Returns ``(context [B, K], weights [B, S])``."""
    w_q, w_k, b, v = (attention.query_proj.weight, attention.key_proj.weight, attention.key_proj.bias, attention.score.weight[0])
    contexts, weights = [], []
    for row in range(keys.shape[0]):
        real = [j for j in range(keys.shape[1]) if not padding[row, j]]
        scores = {j: float(v @ torch.tanh(w_q @ query[row] + w_k @ keys[row, j] + b)) for j in real}
        top = max(scores.values())  # (subtracted for a softmax that cannot overflow)
        total = sum(math.exp(score - top) for score in scores.values())
        row_weights = [math.exp(scores[j] - top) / total if j in scores else 0.0 for j in range(keys.shape[1])]
        contexts.append(sum(a * keys[row, j] for j, a in enumerate(row_weights)))
        weights.append(row_weights)
    return torch.stack(contexts), torch.tensor(weights, dtype=keys.dtype)


@settings(max_examples=30, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    left_padded=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_additive_attention_is_bahdanaus_formula_over_rows_of_different_lengths(
    lengths: list[int], left_padded: bool, seed: int
) -> None:
    """float64, a batch of rows with different numbers of real keys (the padding after them, or before), padding keys
    of huge content: the context and weights of every row equal the formula's, and the row attended alone."""
    torch.manual_seed(seed)
    attention = AdditiveAttention(3, 5, 4).double()
    torch.nn.init.normal_(attention.key_proj.bias)  # (PyTorch's default is small: make the bias count)
    assert {name for name, _ in attention.named_parameters()} == {
        "query_proj.weight", "key_proj.weight", "key_proj.bias", "score.weight"
    }  # every parameter is in the reference  # fmt: skip
    batch, length = len(lengths), max(lengths)
    query, keys = torch.randn(batch, 3, dtype=torch.float64), torch.randn(batch, length, 5, dtype=torch.float64)
    positions = torch.arange(length)
    padding = torch.stack([positions < length - n if left_padded else positions >= n for n in lengths])
    keys = keys.masked_fill(padding[..., None], 1e6)
    context, weights = attention(query, keys, attention.project_keys(keys), padding)
    expected_context, expected_weights = bahdanau_reference(attention, query, keys, padding)
    torch.testing.assert_close(weights, expected_weights, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(context, expected_context, atol=1e-12, rtol=1e-12)
    assert torch.equal(weights[padding], torch.zeros(int(padding.sum()), dtype=torch.float64))
    for row in range(batch):
        real = keys[row : row + 1, ~padding[row]]
        alone, alone_weights = attention(query[row : row + 1], real, attention.project_keys(real))
        torch.testing.assert_close(alone[0], context[row], atol=1e-12, rtol=1e-12)
        torch.testing.assert_close(alone_weights[0], weights[row, ~padding[row]], atol=1e-12, rtol=1e-12)


def test_additive_attention_weighs_real_keys_and_names_bad_inputs() -> None:
    torch.manual_seed(0)
    attention = AdditiveAttention(4, 6, 5)
    query, keys = torch.randn(2, 4), torch.randn(2, 3, 6)
    projected = attention.project_keys(keys)
    mask = torch.tensor([[False, False, True], [False, False, False]])
    context, weights = attention(query, keys, projected, mask)
    assert context.shape == (2, 6) and weights[0, 2] == 0 and torch.allclose(weights.sum(-1), torch.ones(2))
    with pytest.raises(ValueError, match="every key of batch element 1 is padding"):
        attention(query, keys, projected, torch.tensor([[False, False, True], [True, True, True]]))
    with pytest.raises(ValueError, match=r"keys must have shape \[2, length, 6\], got \(2, 3, 5\)"):
        attention(query, keys[..., :5], projected)
    with pytest.raises(ValueError, match=r"query must have shape \[batch, 4\]"):
        attention(query[:, :3], keys, projected)
    with pytest.raises(ValueError, match="keys has no positions: nothing to attend to"):  # (a zero context)
        attention(query, keys[:, :0], projected[:, :0])
    with pytest.raises(ValueError, match=r"projected_keys must have shape \[2, 3, 5\]"):
        attention(query, keys, projected[:, :2])
    with pytest.raises(ValueError, match="key_padding_mask must be a bool tensor"):
        attention(query, keys, projected, mask[:, :2])
    with pytest.raises(ValueError, match="query has dtype torch.float64 but the AdditiveAttention's parameters"):
        attention(query.double(), keys, projected)
    with pytest.raises(ValueError, match="keys has dtype torch.float64"):
        attention(query, keys.double(), projected)
    with pytest.raises(ValueError, match=r"keys must have shape \[batch, length, 6\], got \(2, 3, 5\)"):  # (mat1 and mat2)
        attention.project_keys(keys[..., :5])
    with pytest.raises(ValueError, match=r"keys must have shape \[batch, length, 6\], got \(3, 6\)"):
        attention.project_keys(keys[0])
    with pytest.raises(ValueError, match="keys has dtype torch.float64 but the AdditiveAttention's parameters"):
        attention.project_keys(keys.double())
    with pytest.raises(TypeError, match="keys must be a torch.Tensor, got NoneType"):
        attention.project_keys(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="query_dim must be an int of at least 1, got 0"):
        AdditiveAttention(0, 4, 4)
    with pytest.raises(ValueError, match="heads must be an int of at least 1, got 2.0"):
        MultiheadAttention(16, 2.0)
