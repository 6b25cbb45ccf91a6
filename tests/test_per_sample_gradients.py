"""``torch.func`` per-sample gradients (``vmap`` of ``grad`` over ``functional_call``) through the layers and models whose
input checks read values (padding masks, token ids, intensities): the checks step aside for the batched samples, and
the gradients equal those of one backward pass per sample."""

from collections.abc import Callable

import torch
from torch import nn

from neurosym.layers import MultiheadAttention
from neurosym.models import TokenFrontEnd, TransformerSeq2Seq
from neurosym.perception import SymbolClassifier


def _per_sample_matches_loop(module: nn.Module, inputs: tuple[torch.Tensor, ...], call: Callable[..., torch.Tensor]) -> None:
    """``vmap(grad(loss))`` over the first axis of every one of ``inputs`` equals a loop of backward passes, where
    ``loss = call(module or its functional form, *one_sample).pow(2).sum()`` on samples of batch 1."""
    module.eval()
    params = {name: p.detach() for name, p in module.named_parameters()}

    def loss(values: dict[str, torch.Tensor], *sample: torch.Tensor) -> torch.Tensor:
        def functional(*args: torch.Tensor, **kwargs: torch.Tensor) -> torch.Tensor:
            return torch.func.functional_call(module, values, args, kwargs)

        return call(functional, *(x.unsqueeze(0) for x in sample)).pow(2).sum()

    per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, *[0] * len(inputs)))(params, *inputs)
    for index in range(len(inputs[0])):
        module.zero_grad()
        call(module, *(x[index : index + 1] for x in inputs)).pow(2).sum().backward()
        for name, parameter in module.named_parameters():
            expected = torch.zeros_like(parameter) if parameter.grad is None else parameter.grad
            torch.testing.assert_close(per_sample[name][index], expected, atol=1e-5, rtol=1e-4)


def test_attention_with_a_padding_mask() -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 5, 8)
    padding = torch.tensor([[False] * 5, [False] * 3 + [True] * 2, [False] * 4 + [True]])
    _per_sample_matches_loop(
        MultiheadAttention(8, 2), (x, padding), lambda attention, q, mask: attention(q, key_padding_mask=mask)
    )


def test_transformer_seq2seq_on_token_ids() -> None:
    torch.manual_seed(0)
    model = TransformerSeq2Seq(TokenFrontEnd(7, 8), 6, heads=2, encoder_layers=1, dropout=0.0)
    src = torch.randint(0, 7, (3, 5))
    src_mask = torch.zeros(3, 5, dtype=torch.bool)
    src_mask[1, 3:] = True
    _per_sample_matches_loop(model, (src, src_mask, torch.randint(0, 6, (3, 4))), lambda m, *args: m(*args))


def test_symbol_classifier_on_float_windows() -> None:
    torch.manual_seed(0)
    classifier = SymbolClassifier(list("abc"), features=8, window=16, width=2)
    _per_sample_matches_loop(classifier, (torch.rand(3, 1, 16, 16),), lambda m, windows: m(windows))
