import pytest
import torch

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


def test_mixer_block_rejects_wrong_token_count():
    with pytest.raises(ValueError, match=r"MixerBlock expects \[B, 5, 8\]"):
        MixerBlock(5, 8, 4, 4)(torch.randn(2, 6, 8))
    with pytest.raises(ValueError, match="the input has dtype torch.float64 but the MixerBlock's parameters are torch.float32"):
        MixerBlock(5, 8, 4, 4)(torch.randn(2, 5, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="num_tokens must be an int of at least 1, got 0"):
        MixerBlock(0, 8, 4, 4)
    with pytest.raises(ValueError, match="channel_hidden must be an int of at least 1, got 2.5"):
        MixerBlock(5, 8, 4, 2.5)
    for dropout in (float("nan"), -0.1, 1.0):  # NaN was accepted: torch's Dropout compares it to 0 and 1
        with pytest.raises(ValueError, match=rf"dropout must be in \[0, 1\), got {dropout}"):
            MixerBlock(5, 8, 4, 4, dropout=dropout)
