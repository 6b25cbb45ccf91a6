"""Deferred initialisation: a module built on the ``meta`` device (shapes only) and materialised by ``to_empty`` is
initialised by calling every submodule's ``reset_parameters`` (what torch's FSDP and similar tools do), so each
parameter must be set by the ``reset_parameters`` of the module that owns it, with the initialisation the
constructor gives it."""

from collections.abc import Callable

import pytest
import torch
from deferred_init import materialised, reset_every_module
from torch import nn

from neurosym.layers import MultiheadAttention, RelativeMultiheadAttention, TransformerEncoderLayer, UniversalTransformer
from neurosym.models import RNNSeq2Seq, TokenFrontEnd, TransformerSeq2Seq, build_front_end
from neurosym.models.pvr import MixerClassifier, TransformerClassifier
from neurosym.perception import SymbolClassifier
from neurosym.perception.cnn import ResidualConv, SmallCNN

BUILDERS: dict[str, Callable[[], nn.Module]] = {
    "attention": lambda: MultiheadAttention(8, 2),
    "xl attention": lambda: RelativeMultiheadAttention(8, 2, relative="xl"),
    "clipped xl attention": lambda: RelativeMultiheadAttention(8, 2, relative="xl_clipped", max_rel_pos=3),
    "shaw attention": lambda: RelativeMultiheadAttention(8, 2, relative="shaw", max_rel_pos=3),
    "universal act": lambda: UniversalTransformer(TransformerEncoderLayer(8, 2, 16), 2, act=True),
    "relative universal seq2seq": lambda: TransformerSeq2Seq(
        build_front_end("symbol", 8, vocab_size=7, boundaries=True), 6, heads=2, attention="xl", universal=True
    ),
    "rnn seq2seq": lambda: RNNSeq2Seq(TokenFrontEnd(7, 8), 6, hidden=8, encoder_layers=1, attention=True),
    "pvr transformer": lambda: TransformerClassifier(5, dim=8, depth=1, heads=2, ff_dim=16),
    "pvr mixer": lambda: MixerClassifier(5, dim=8, depth=1, token_hidden=8, channel_hidden=8),
    "deeper small cnn": lambda: SmallCNN(1, 5, input_size=16, width=2, stage_convs=(1, 2, 1)),
    "symbol classifier": lambda: SymbolClassifier(list("abc"), features=8, window=16, width=2),
}


def _materialised(build: Callable[[], nn.Module]) -> nn.Module:
    """``build()`` on the meta device, materialised on the CPU with NaN in every floating parameter and buffer (what
    uninitialised memory may hold), then reset by every module."""
    with torch.device("meta"):
        module = build()
    return materialised(module, seed=7)


@pytest.mark.parametrize("name", BUILDERS)
def test_reset_parameters_sets_every_parameter(name: str) -> None:
    """No parameter keeps the empty memory's NaN (XL's biases, the boundary vectors and the PVR class token and
    positions were set only by their constructors): the values are those of a module built on the CPU and reset
    from the same seed."""
    built = BUILDERS[name]()
    reset_every_module(built, seed=7)
    torch.testing.assert_close(_materialised(BUILDERS[name]).state_dict(), built.state_dict(), rtol=0.0, atol=0.0)


def test_reset_parameters_keeps_the_constructors_special_initialisations() -> None:
    """Reset, ACT's halting bias is 1, a residual convolution's batch-norm scale 0 and Shaw's distance tables are drawn
    with standard deviation ``head_dim ** -0.5``, as built (they were reset to torch's defaults for their layer types)."""
    universal = _materialised(BUILDERS["universal act"])
    assert isinstance(universal, UniversalTransformer) and universal.halting is not None
    assert torch.equal(universal.halting.bias, torch.ones(1))
    residual = _materialised(lambda: ResidualConv(4))
    assert isinstance(residual, ResidualConv) and torch.equal(residual.norm.weight, torch.zeros(4))
    shaw = _materialised(lambda: RelativeMultiheadAttention(128, 2, relative="shaw", max_rel_pos=15))
    assert isinstance(shaw, RelativeMultiheadAttention) and shaw.distance_values is not None
    for table in (shaw.distance_keys.weight, shaw.distance_values.weight):  # 31 x 64 draws: std within a few percent
        assert table.std().item() == pytest.approx(64**-0.5, rel=0.1)
