"""A layer's or model's on/off switch is a bool (numpy's too): ``"no"``, ``"false"`` or ``0`` would have been read by
its truth, silently (``bidirectional="no"`` built a bidirectional encoder)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from neurosym.layers import NALU, NMU, TransformerEncoderLayer, UniversalTransformer
from neurosym.layers.arithmetic.linear import EnsembleLinear
from neurosym.layers.attention import MultiheadAttention
from neurosym.layers.relative_attention import RelativeMultiheadAttention
from neurosym.models.seq2seq import RNNSeq2Seq
from neurosym.models.seq2seq.factory import build_front_end, build_seq2seq
from neurosym.training.checks import check_flags

FRONT = lambda: build_front_end("symbol", 8, vocab_size=5)
SWITCHES: list[tuple[str, Callable[[object], object]]] = [
    ("shared_weights", lambda value: NALU(2, 1, shared_weights=value)),
    ("compiled", lambda value: NMU(2, 1, compiled=value)),
    ("bias", lambda value: EnsembleLinear(2, 1, bias=value)),
    ("bias", lambda value: MultiheadAttention(8, 2, bias=value)),
    ("shaw_values", lambda value: RelativeMultiheadAttention(8, 2, relative="shaw", shaw_values=value)),
    ("pre_norm", lambda value: TransformerEncoderLayer(8, 2, 16, pre_norm=value)),
    ("act", lambda value: UniversalTransformer(TransformerEncoderLayer(8, 2, 16), 2, act=value)),
    ("step_embedding", lambda value: UniversalTransformer(TransformerEncoderLayer(8, 2, 16), 2, step_embedding=value)),
    ("bidirectional", lambda value: build_seq2seq("gru", FRONT(), 5, bidirectional=value)),
    ("attention", lambda value: RNNSeq2Seq(FRONT(), 5, attention=value)),
    ("pre_norm", lambda value: build_seq2seq("transformer", FRONT(), 5, pre_norm=value)),
    ("attention_bias", lambda value: build_seq2seq("transformer", FRONT(), 5, attention_bias=value)),
    ("embedding_dropout", lambda value: build_seq2seq("transformer", FRONT(), 5, embedding_dropout=value)),
]


@pytest.mark.parametrize(("name", "build"), SWITCHES, ids=[f"{name}-{index}" for index, (name, _) in enumerate(SWITCHES)])
@pytest.mark.parametrize("value", ["no", "false", 0, 1.0, None, torch.tensor(True)])
def test_a_switch_that_is_no_bool_is_refused_by_name(name, build, value) -> None:
    with pytest.raises(
        ValueError, match=rf"\b{name} must be True or False, got {value!r}".replace("(", r"\(").replace(")", r"\)")
    ):
        build(value)


@pytest.mark.parametrize(("name", "build"), SWITCHES, ids=[f"{name}-{index}" for index, (name, _) in enumerate(SWITCHES)])
def test_a_switch_takes_python_and_numpy_bools(name, build) -> None:
    for value in (True, False, np.True_, np.False_):
        assert isinstance(build(value), torch.nn.Module)


def test_a_numpy_false_switches_off() -> None:
    model = build_seq2seq("gru", FRONT(), 6, bidirectional=np.False_)
    assert not model.encoder.bidirectional
    assert NALU(2, 1, shared_weights=np.False_).mul is not None


@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.text(), st.none(), st.lists(st.booleans())))
def test_check_flags_takes_only_bools(value) -> None:
    with pytest.raises(ValueError, match="where: flag must be True or False"):
        check_flags("where: ", flag=value)
    check_flags("where: ", flag=True, other=np.False_)


CAUSAL_CALLS: list[tuple[str, Callable[[object], object]]] = [
    ("vanilla attention", lambda causal: MultiheadAttention(8, 2)(torch.randn(2, 3, 8), causal=causal)),
    ("shaw attention", lambda causal: RelativeMultiheadAttention(8, 2, relative="shaw")(torch.randn(2, 3, 8), causal=causal)),
    ("encoder layer", lambda causal: TransformerEncoderLayer(8, 2, 16)(torch.randn(2, 3, 8), causal=causal)),
    ("universal", lambda causal: UniversalTransformer(TransformerEncoderLayer(8, 2, 16), 2)(torch.randn(2, 3, 8), causal=causal)),
]


@pytest.mark.parametrize(("where", "call"), CAUSAL_CALLS, ids=[where for where, _ in CAUSAL_CALLS])
@pytest.mark.parametrize("value", ["no", 0, 1, None])
def test_causal_that_is_no_bool_is_refused_at_the_call(where, call, value) -> None:
    """``causal="no"`` ran the universal Transformer causally; ``causal=1`` failed inside torch's SDPA, but only where
    no mask was given."""
    with pytest.raises(ValueError, match=rf"causal must be True or False, got {value!r}"):
        call(value)


@pytest.mark.parametrize(("where", "call"), CAUSAL_CALLS, ids=[where for where, _ in CAUSAL_CALLS])
def test_causal_takes_numpy_bools_as_python_bools(where, call) -> None:
    """``causal=np.True_`` failed in SDPA ("argument 'is_causal' must be bool, not numpy.bool")."""
    for numpy_value, value in ((np.True_, True), (np.False_, False)):
        torch.manual_seed(0)
        expected = call(value)
        torch.manual_seed(0)
        got = call(numpy_value)
        expected, got = (out.hidden if hasattr(out, "hidden") else out for out in (expected, got))
        torch.testing.assert_close(got, expected)
