"""Universal Transformer (Dehghani et al. 2019): one layer applied ``depth`` times with shared weights.

Optional extras: a sinusoidal step (time) embedding added before every application, and adaptive
computation time (ACT, Graves 2016) — a per-position halting unit that stops refining a position once
its accumulated halting probability passes ``1 - act_epsilon``; the output is then the
halting-probability-weighted sum of the states, and the ponder cost ``N + R`` (steps taken plus the
remainder) is returned so that it can be added to the loss.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.positional import sinusoid_table
from neurosym.layers.shape_checks import check_sequence
from neurosym.training.checks import ignored_option, int_at_least

ACT_EPSILON = 0.01
"""The default ``act_epsilon`` of :class:`UniversalTransformer` (ACT halts once ``1 - act_epsilon`` is reached)."""


class UniversalOutput(NamedTuple):
    """``hidden [B, T, D]``; ``ponder_cost``: scalar mean of ``N + R`` over non-padding positions (ACT only)."""

    hidden: torch.Tensor
    ponder_cost: torch.Tensor | None


class UniversalTransformer(nn.Module):
    """Apply ``layer`` (e.g. a :class:`~neurosym.layers.transformer.TransformerEncoderLayer`) ``depth`` times.

    ``layer`` must map ``(x [B, T, D], key_padding_mask [B, T] | None) -> [B, T, D]`` and expose its width
    as ``layer.dim``. The parameter count is that of ``layer`` (plus a ``D -> 1`` halting unit with ACT),
    whatever ``depth``. ``forward(x, key_padding_mask=None) -> UniversalOutput``; with ``act=True``
    ``depth`` is the maximum number of steps, and ``act_epsilon`` sets where it halts (without ACT an
    ``act_epsilon`` away from its default raises ``ValueError``: it would be ignored).
    """

    def __init__(
        self,
        layer: nn.Module,
        depth: int,
        step_embedding: bool = True,
        act: bool = False,
        *,
        act_epsilon: float = ACT_EPSILON,
    ) -> None:
        super().__init__()
        # numpy's ints are accepted (a layer built with np.int64(16) has that as its dim) and stored as Python ints
        self.depth = int_at_least(depth, "depth", 1)
        self.dim = int_at_least(getattr(layer, "dim", None), "the shared layer's model width (its attribute `dim`)", 1)
        if not 0.0 < act_epsilon < 1.0:
            raise ValueError(f"act_epsilon must be in (0, 1), got {act_epsilon}")
        if not act and act_epsilon != ACT_EPSILON:
            raise ignored_option("act_epsilon", act_epsilon, "act=True", "act=False")
        self.layer = layer
        self.step_embedding = step_embedding
        self.act_epsilon = act_epsilon
        self.halting = nn.Linear(self.dim, 1) if act else None
        if self.halting is not None:
            nn.init.constant_(self.halting.bias, 1.0)

    def _step_input(self, x: torch.Tensor, step: int) -> torch.Tensor:
        if not self.step_embedding:
            return x
        signal = sinusoid_table(torch.tensor([step], device=x.device), self.dim, x.dtype)
        return x + rearrange(signal, "1 d -> 1 1 d")

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> UniversalOutput:
        check_sequence(x, self.dim, "the input")
        if self.halting is None:
            for step in range(self.depth):
                x = self.layer(self._step_input(x, step), key_padding_mask)
            return UniversalOutput(x, None)
        return self._adaptive(x, key_padding_mask, self.halting)

    def _adaptive(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None, halting: nn.Linear) -> UniversalOutput:
        threshold = 1.0 - self.act_epsilon
        halted_mass = x.new_zeros(x.shape[:2])
        remainders = x.new_zeros(x.shape[:2])
        steps_taken = x.new_zeros(x.shape[:2])
        output = torch.zeros_like(x)
        state = x
        for step in range(self.depth):
            running = halted_mass < threshold  # once every position has halted, later steps add nothing (weight 0)
            state = self._step_input(state, step)
            probability = torch.sigmoid(rearrange(halting(state), "b t 1 -> b t"))
            last_step = step == self.depth - 1
            halts_now = running & ((halted_mass + probability > threshold) | last_step)
            continues = running & ~halts_now
            remainder = torch.where(halts_now, 1.0 - halted_mass, torch.zeros_like(halted_mass))
            weight = torch.where(continues, probability, remainder)
            remainders = remainders + remainder
            halted_mass = halted_mass + weight
            steps_taken = steps_taken + running.to(x.dtype)
            state = self.layer(state, key_padding_mask)
            output = output + rearrange(weight, "b t -> b t 1") * state
        cost = steps_taken + remainders
        real = torch.ones_like(cost) if key_padding_mask is None else (~key_padding_mask).to(cost.dtype)
        ponder_cost = (cost * real).sum() / real.sum().clamp_min(1)  # (0, not NaN, for an empty batch or sequence)
        return UniversalOutput(output, ponder_cost)
