import pytest
import torch
import torch.nn.functional as F

from neurosym.layers import MixerBlock


def test_mixer_block_shape_gradients_and_token_mixing():
    torch.manual_seed(0)
    block = MixerBlock(num_tokens=5, dim=8, token_hidden=6, channel_hidden=16)
    x = torch.randn(3, 5, 8, requires_grad=True)
    out = block(x)
    assert out.shape == (3, 5, 8)
    # token mixing: changing token 4 changes the output at token 0
    changed = x.detach().clone()
    changed[:, 4] += torch.randn(3, 8)
    assert not torch.allclose(block(changed)[:, 0], out[:, 0].detach())
    # but batch elements never mix
    assert torch.allclose(block(changed[:1]), block(changed)[:1], atol=1e-6)
    out.square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in block.parameters())
    assert x.grad.abs().sum() > 0


def test_mixer_block_is_the_papers_two_mlps() -> None:
    """Tolstikhin et al. (2021), eq. 1, written with einsum: ``U = X + W2 σ(W1 LN(X))`` mixes tokens (the MLP reads
    one feature across the tokens), ``Y = U + σ(LN(U) W3) W4`` mixes channels; float64."""
    torch.manual_seed(0)
    block = MixerBlock(num_tokens=5, dim=8, token_hidden=6, channel_hidden=16).double().eval()
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    w1, w2 = block.token_mlp[0], block.token_mlp[3]
    hidden = F.gelu(torch.einsum("ht,btd->bhd", w1.weight, block.token_norm(x)) + w1.bias[:, None])
    u = x + torch.einsum("th,bhd->btd", w2.weight, hidden) + w2.bias[:, None]
    w3, w4 = block.channel_mlp[0], block.channel_mlp[3]
    channels = F.gelu(torch.einsum("btd,ed->bte", block.channel_norm(u), w3.weight) + w3.bias)
    expected = u + torch.einsum("bte,de->btd", channels, w4.weight) + w4.bias
    torch.testing.assert_close(block(x), expected, atol=1e-14, rtol=1e-14)


def test_mixer_block_rejects_wrong_token_count():
    with pytest.raises(ValueError, match=r"MixerBlock expects \[B, 5, 8\]"):
        MixerBlock(5, 8, 4, 4)(torch.randn(2, 6, 8))
    with pytest.raises(TypeError, match="MixerBlock's input must be a torch.Tensor, got list"):  # (an AttributeError)
        MixerBlock(5, 8, 4, 4)([[0.0]])
    with pytest.raises(ValueError, match="the input has dtype torch.float64 but the MixerBlock's parameters are torch.float32"):
        MixerBlock(5, 8, 4, 4)(torch.randn(2, 5, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="num_tokens must be an int of at least 1, got 0"):
        MixerBlock(0, 8, 4, 4)
    with pytest.raises(ValueError, match="channel_hidden must be an int of at least 1, got 2.5"):
        MixerBlock(5, 8, 4, 2.5)
    for dropout in (float("nan"), -0.1, 1.0):  # NaN was accepted: torch's Dropout compares it to 0 and 1
        with pytest.raises(ValueError, match=rf"dropout must be a number in \[0, 1\), got {dropout}"):
            MixerBlock(5, 8, 4, 4, dropout=dropout)
