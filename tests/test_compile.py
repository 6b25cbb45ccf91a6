"""``neurosym hint --compile``: a compiled Transformer trains as the eager one does, with one graph for
every sequence length, and its checkpoints keep the eager model's keys."""

from __future__ import annotations

import copy

import pytest
import torch
from test_seq2seq import reversal_batch, tiny_model

from neurosym.training.compile import compile_for_training


def _train(model: torch.nn.Module, batches: list[tuple[torch.Tensor, ...]]) -> list[float]:
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)  # (Adam would blow up rounding in zero gradients)
    losses = []
    for src, src_mask, tgt_in, tgt_out in batches:
        logits = model(src, src_mask, tgt_in)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@pytest.mark.slow
def test_a_compiled_transformer_trains_as_the_eager_one_with_one_graph() -> None:
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()  # (they count every graph this worker compiled before)
    eager = tiny_model("transformer_rel_uni", encoder_layers=1, boundaries=True)
    compiled = compile_for_training(copy.deepcopy(eager))
    batches = [tuple(t.clone() for t in reversal_batch(8, seed=seed)) for seed in range(3)]  # no views, as in training
    batches[1] = tuple(torch.nn.functional.pad(t, (0, 2), value=value) for t, value in zip(batches[1], (0, True, 0, 0)))
    assert len({batch[0].shape[1] for batch in batches}) == 2  # two source lengths (and two target lengths)
    expected = _train(eager, batches)
    assert _train(compiled, batches) == pytest.approx(expected, rel=1e-4)
    for (name, got), want in zip(compiled.state_dict().items(), eager.state_dict().values()):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4, msg=name)
    assert compiled.state_dict().keys() == eager.state_dict().keys()
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
    attempts = [key for key in torch._dynamo.utils.compilation_time_metrics if key.startswith("compile_attempt_")]
    assert attempts == ["compile_attempt_0"]  # the forward was traced once, not again with its floats fixed
