"""Source front ends: map a source sequence to vectors ``[B, S, dim]`` for the encoder."""

from __future__ import annotations

import torch
from torch import nn


class TokenFrontEnd(nn.Module):
    """Token ids ``[B, S]`` -> embeddings ``[B, S, dim]``."""

    def __init__(self, vocab_size: int, dim: int) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.dim = dim
        self.embedding = nn.Embedding(vocab_size, dim)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        if src.dim() != 2 or src.dtype != torch.long:
            raise ValueError(f"token sources must be long tensors [batch, length], got {src.dtype} {tuple(src.shape)}")
        real = src[~src_mask]
        if real.numel() and (int(real.min()) < 0 or int(real.max()) >= self.vocab_size):
            raise ValueError(f"source token ids must lie in [0, {self.vocab_size}), got {int(real.min())}..{int(real.max())}")
        return self.embedding(src.masked_fill(src_mask, 0))


class ImageWindowFrontEnd(nn.Module):
    """One image per source position, ``[B, S, C, H, W]`` -> ``[B, S, dim]``.

    Every non-padding window goes through ``encoder`` (any CNN mapping ``[N, C, H, W] -> [N, features]``,
    e.g. :class:`neurosym.perception.cnn.ResNet18` or ``SmallCNN``), then a linear map to ``dim``;
    padding windows get a zero vector and never reach the CNN (nor its batch-norm statistics).
    """

    def __init__(self, encoder: nn.Module, features: int, dim: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.proj = nn.Linear(features, dim)
        self.dim = dim

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        if src.dim() != 5:
            raise ValueError(f"image sources must have shape [batch, length, C, H, W], got {tuple(src.shape)}")
        real = ~src_mask
        features = self.proj(self.encoder(src[real].float()))
        out = features.new_zeros(*src_mask.shape, self.dim)
        out[real] = features
        return out

