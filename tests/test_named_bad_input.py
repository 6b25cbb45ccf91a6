"""Bad input named at the public entry point: a split's scale that is no number, an arithmetic unit or additive
attention given something other than a tensor, a semantics rule that is not callable, a greedy decoder's eos that is
no target id. Each check is shown to let good input through."""

from __future__ import annotations

import pytest
import torch
from lark import Transformer

from neurosym.data.hint import main_split
from neurosym.data.hint.splits import MAIN_RULES, SplitRules
from neurosym.layers import (
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    AdditiveAttention,
    EnsembleLinear,
    GatedNAUNMU,
    NACMul,
    RealNPU,
    iNALU,
)
from neurosym.models import build_front_end, build_seq2seq
from neurosym.semantics import TreeSemantics

UNITS = [NAC, NACMul, NALU, NAU, NMU, iNALU, NPU, RealNPU, GatedNAUNMU, EnsembleLinear]


@pytest.mark.parametrize("scale", ["0.01", None, True, float("nan"), 0, -0.5])
def test_a_split_scale_that_is_no_positive_number_is_named(scale, tmp_path) -> None:
    # "0.01" failed in splits.py as "'<' not supported between instances of 'int' and 'str'"; True was scale 1
    with pytest.raises(ValueError, match=r"scale must be a finite number above 0, got "):
        main_split(scale=scale, cache_root=tmp_path)
    with pytest.raises(ValueError, match=r"scale must be a finite number above 0, got "):
        SplitRules(scale=scale)
    assert not any(tmp_path.iterdir())


def test_a_split_scale_above_one_is_still_named_and_good_scales_pass() -> None:
    with pytest.raises(ValueError, match=r"scale must be in \(0, 1\], got 2"):
        MAIN_RULES.with_scale(2)
    assert MAIN_RULES.with_scale(0.01).train_size(5) == 1_000
    assert MAIN_RULES.with_scale(1).scale == 1


@pytest.mark.parametrize("cls", UNITS)
@pytest.mark.parametrize("given", [[[1.0, 2.0, 3.0]], None, 1.5])
def test_an_arithmetic_unit_names_an_input_that_is_no_tensor(cls, given) -> None:
    unit = cls(3, 2)
    # a list failed as "AttributeError: 'list' object has no attribute 'dim'"
    with pytest.raises(TypeError, match=rf"^{cls.__name__}: the input must be a torch.Tensor, got {type(given).__name__}$"):
        unit(given)
    assert unit(torch.tensor([[1.0, 2.0, 3.0]])).shape == (1, 2)


def test_an_ensemble_unit_names_an_input_that_is_no_tensor() -> None:
    unit = NAU(3, 2, ensemble=4)
    with pytest.raises(TypeError, match=r"NAU: the input must be a torch.Tensor, got list"):
        unit([[[1.0, 2.0, 3.0]]] * 4)
    assert unit(torch.ones(4, 5, 3)).shape == (4, 5, 2)


def test_additive_attention_names_an_argument_that_is_no_tensor() -> None:
    attention = AdditiveAttention(8, 16, 10)
    query, keys = torch.randn(2, 8), torch.randn(2, 5, 16)
    projected = attention.project_keys(keys)
    mask = torch.zeros(2, 5, dtype=torch.bool)
    # None for projected_keys failed as "AttributeError: 'NoneType' object has no attribute 'dtype'"
    with pytest.raises(TypeError, match=r"projected_keys \(project_keys\(keys\)\) must be a torch.Tensor, got NoneType"):
        attention(query, keys, None, mask)
    with pytest.raises(TypeError, match=r"^query must be a torch.Tensor, got list$"):
        attention(query.tolist(), keys, projected, mask)
    with pytest.raises(TypeError, match=r"^keys must be a torch.Tensor, got NoneType$"):
        attention(query, None, projected, mask)
    with pytest.raises(TypeError, match=r"key_padding_mask \(or None\) must be a torch.Tensor, got list"):
        attention(query, keys, projected, mask.tolist())
    context, weights = attention(query, keys, projected, mask)
    assert context.shape == (2, 16) and weights.shape == (2, 5)
    assert attention(query, keys, projected)[0].shape == (2, 16)


def test_tree_semantics_refuses_a_rule_that_is_not_callable() -> None:
    # {"start": 5} was taken, and training failed later with "'int' object is not callable"
    with pytest.raises(TypeError, match=r"^rule 'start' must be callable, got int 5$"):
        TreeSemantics({"start": 5})
    with pytest.raises(TypeError, match=r"^rule 'DIGIT' must be callable, got NoneType None$"):
        TreeSemantics({"start": sum, "DIGIT": None})
    with pytest.raises(TypeError, match=r"^the inverse of rule 'start' must be callable, got list \[\]$"):
        TreeSemantics({"start": sum}, {"start": []})
    with pytest.raises(TypeError, match=r"keyed by names \(strings\), got int 0"):
        TreeSemantics({0: sum})
    with pytest.raises(TypeError, match=r"TreeSemantics takes a Lark Transformer or a mapping rule -> callable, got list"):
        TreeSemantics([sum])
    with pytest.raises(TypeError, match=r"takes a Lark Transformer, got the class Transformer: give an instance"):
        TreeSemantics(Transformer)
    with pytest.raises(TypeError, match=r"inverses must be a mapping rule -> inverse callable, got function"):
        TreeSemantics({"start": sum}, lambda wanted, children: [])


def test_tree_semantics_still_takes_callables_and_transformers() -> None:
    semantics = TreeSemantics({"start": sum, "DIGIT": int}, {"start": lambda wanted, children: []})
    assert semantics.leaf_value("DIGIT", "7") == 7
    assert semantics.callable_of("start") is sum

    class Digits(Transformer):
        def DIGIT(self, token):  # named after the terminal, as Lark calls it
            return int(token)

        not_a_rule = 5  # a Transformer's attributes are Lark's business: only looked up at evaluation

    assert TreeSemantics(Digits()).leaf_value("DIGIT", "4") == 4


def test_greedy_decode_names_an_eos_that_is_no_target_id() -> None:
    torch.manual_seed(0)
    model = build_seq2seq("gru", build_front_end("symbol", 16, vocab_size=10), 13, hidden=16).eval()
    src = torch.randint(0, 10, (2, 4))
    src_mask = torch.zeros(2, 4, dtype=torch.bool)
    for eos in (99, 13):  # 99 was taken, and never stopped decoding
        with pytest.raises(ValueError, match=rf"^eos \({eos}\) must be a target id in \[0, 13\)"):
            model.greedy_decode(src, src_mask, max_len=3, bos=1, eos=eos)
    with pytest.raises(ValueError, match=r"eos \(2.0\) must be a target id"):  # a float eos is no token id either
        model.greedy_decode(src, src_mask, max_len=3, bos=1, eos=2.0)
    with pytest.raises(ValueError, match=r"bos \(99\) must be a target id in \[0, 13\)"):  # as before
        model.greedy_decode(src, src_mask, max_len=3, bos=99, eos=2)
    assert model.greedy_decode(src, src_mask, max_len=3, bos=1, eos=12).shape[0] == 2
    # a negative eos (the speed benchmark's -1) is never produced: max_len tokens, on purpose
    assert model.greedy_decode(src, src_mask, max_len=3, bos=1, eos=-1).shape == (2, 3)
