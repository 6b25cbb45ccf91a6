"""The Universal Transformer's construction (its shared layer's width and its depth, numpy's ints included) and the
inputs it names."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from neurosym.layers import TransformerDecoderLayer, TransformerEncoderLayer, UniversalTransformer


def test_a_layer_of_numpy_width_and_a_numpy_depth_are_taken_as_python_ints() -> None:
    # was refused: "the shared layer must expose its model width as an integer attribute `dim`"
    universal = UniversalTransformer(TransformerEncoderLayer(np.int64(16), 2, 32), np.int64(2))
    assert (universal.dim, universal.depth) == (16, 2) and type(universal.dim) is type(universal.depth) is int
    assert universal(torch.zeros(2, 3, 16)).hidden.shape == (2, 3, 16)


@pytest.mark.parametrize("dim", [None, 16.0, np.True_, 0])  # 0 was taken
def test_a_layer_width_that_is_no_int_of_at_least_1_is_named(dim) -> None:
    layer = TransformerEncoderLayer(16, 2, 32)
    layer.dim = dim
    with pytest.raises(ValueError, match=r"the shared layer's model width \(its attribute `dim`\) must be an int of at least 1"):
        UniversalTransformer(layer, 2)


@pytest.mark.parametrize("act", [False, True])
@pytest.mark.parametrize(
    ("dtype", "message"),
    [
        (torch.float64, r"the input has dtype torch.float64 but the \w+'s parameters are torch.float32"),
        (torch.int64, r"the input must be floating point \(the \w+'s parameters are torch.float32\), got torch.int64"),
    ],
)
def test_an_input_of_another_dtype_is_named_with_or_without_halting(act: bool, dtype: torch.dtype, message: str) -> None:
    # with ACT the halting unit read the input first: "mat1 and mat2 must have the same dtype" from inside torch
    universal = UniversalTransformer(TransformerEncoderLayer(16, 2, 32), 3, act=act)
    with pytest.raises(ValueError, match=message):
        universal(torch.zeros(2, 3, 16, dtype=dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16):  # autocast casts inside: a bfloat16 input is fine there
        assert universal(torch.zeros(2, 3, 16, dtype=torch.bfloat16)).hidden.shape == (2, 3, 16)


def test_a_step_embedding_over_a_layer_of_odd_width_is_refused_at_construction() -> None:
    layer = TransformerEncoderLayer(15, 3, 30)
    with pytest.raises(ValueError, match="the shared layer's width must be even, got 15; use step_embedding=False"):
        UniversalTransformer(layer, 2)  # failed only at the first forward
    assert UniversalTransformer(layer, 2, step_embedding=False)(torch.zeros(2, 3, 15)).hidden.shape == (2, 3, 15)


def test_a_decoder_layer_is_refused_at_construction() -> None:
    # its memory was given the padding mask: "memory must have shape [2, length, 16], got (2, 3)" at the first forward
    with pytest.raises(TypeError, match=r"forward\(x, key_padding_mask\).* a TransformerDecoderLayer also reads a memory"):
        UniversalTransformer(TransformerDecoderLayer(16, 2, 32), 2)
