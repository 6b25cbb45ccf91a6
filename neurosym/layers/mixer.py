"""MLP-Mixer layer (Tolstikhin et al. 2021): token mixing and channel mixing with plain MLPs."""

from __future__ import annotations

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.shape_checks import check_dtype_of, check_sizes, check_tensor
from neurosym.training.checks import dropout_probability


def _mlp(width: int, hidden: int, dropout: float, factory: FactoryKwargs) -> nn.Sequential:
    """``Linear(width, hidden) -> GELU -> Dropout -> Linear(hidden, width)`` on the last axis, created as ``factory``
    says."""
    return nn.Sequential(nn.Linear(width, hidden, **factory), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, width, **factory))


class MixerBlock(nn.Module):
    """One mixer layer on a fixed number of tokens: token mixing, then channel mixing, both MLPs pre-normalised and
    residual.

    ::

        x = x + TokenMLP(LayerNorm(x)^T)^T      # mixes across the num_tokens positions
        x = x + ChannelMLP(LayerNorm(x))        # mixes across the dim features of each token

    ``forward(x [B, num_tokens, dim]) -> [B, num_tokens, dim]``. ``device`` and ``dtype`` are torch's factory keyword
    arguments (:mod:`neurosym.layers.factory`): the norms and MLPs are created there.
    """

    def __init__(
        self,
        num_tokens: int,
        dim: int,
        token_hidden: int,
        channel_hidden: int,
        dropout: float = 0.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ):
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        num_tokens, dim, token_hidden, channel_hidden = check_sizes(
            num_tokens=num_tokens, dim=dim, token_hidden=token_hidden, channel_hidden=channel_hidden
        )
        dropout = dropout_probability(dropout)
        self.num_tokens = num_tokens
        self.dim = dim
        self.token_norm = nn.LayerNorm(dim, **factory)
        self.token_mlp = _mlp(num_tokens, token_hidden, dropout, factory)
        self.channel_norm = nn.LayerNorm(dim, **factory)
        self.channel_mlp = _mlp(dim, channel_hidden, dropout, factory)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [B, num_tokens, dim]`` -> ``[B, num_tokens, dim]``: token mixing, then channel mixing; an input of
        another shape raises ``ValueError``."""
        check_tensor(x, "MixerBlock's input")  # (a list failed on .dim() with an AttributeError)
        if x.dim() != 3 or x.shape[1:] != (self.num_tokens, self.dim):
            raise ValueError(f"MixerBlock expects [B, {self.num_tokens}, {self.dim}], got {tuple(x.shape)}")
        check_dtype_of(x, self, "the input")
        mixed = self.token_mlp(rearrange(self.token_norm(x), "b t d -> b d t"))
        x = x + rearrange(mixed, "b d t -> b t d")
        return x + self.channel_mlp(self.channel_norm(x))
