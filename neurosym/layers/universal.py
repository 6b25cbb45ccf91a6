"""Universal Transformer (Dehghani et al. 2019): one layer applied ``depth`` times with shared weights.

Optional extras: a sinusoidal step (time) embedding added before every application, and adaptive
computation time (ACT): a per-position halting unit that stops refining a position once its accumulated
halting probability reaches ``1 - act_epsilon``; the output is then the halting-probability-weighted sum
of the states, and the ponder cost ``N + R`` (steps taken plus the remainder) is returned so that it can
be added to the loss.

The halting rule is Graves's (2016, "Adaptive Computation Time for Recurrent Neural Networks",
arXiv:1603.08983, section 2): with ``p_n`` the halting probability of step ``n`` (from 1),
``N = min{n : p_1 + ... + p_n >= 1 - act_epsilon}``, or ``depth`` if no step reaches it (then the position
halts at the step limit and still takes the remainder, so that its weights sum to 1);
``R = 1 - (p_1 + ... + p_{N-1})``; the output is ``p_1 s_1 + ... + p_{N-1} s_{N-1} + R s_N``. Tensor2Tensor's
Universal Transformer code halts only above the threshold (``>``), and leaves a position that reaches its
step limit without a remainder. As in the Universal Transformer (and unlike Graves, who reads ``h_n`` from
the updated state), ``p_n`` is read from step ``n``'s input (the previous state plus the step embedding),
before the shared layer turns it into ``s_n``.

The sums ``p_1 + ... + p_n`` are computed in the states' dtype and compared with ``1 - act_epsilon`` rounded up
to that dtype (:func:`halting_threshold`), which decides exactly as the comparison with ``1 - act_epsilon`` itself
(rounded to nearest, as a Python float is when compared with a tensor, ``0.99`` is ``0.98828125`` in bfloat16, and
sums that fall short of ``0.99`` halted). An ``act_epsilon`` smaller than the gap between 1 and the dtype's largest
value below it (about ``6e-8`` in float32, ``0.0039`` in bfloat16) raises ``ValueError``: no sum in that dtype lies
in ``[1 - act_epsilon, 1)``, so it would act as any other such epsilon, halting only where a sum rounds to 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import torch
from einops import rearrange
from torch import nn

from neurosym.layers.attention import AttentionCache
from neurosym.layers.factory import FactoryKwargs, factory_kwargs
from neurosym.layers.positional import sinusoid_table
from neurosym.layers.shape_checks import check_dtype_of, check_sequence
from neurosym.layers.transformer import (
    TransformerDecoderLayer,
    TransformerEncoderLayer,
    check_cache_is_causal,
    check_cache_list,
)
from neurosym.training.checks import check_flags, ignored_option, int_at_least, is_real

ACT_EPSILON = 0.01
"""The default ``act_epsilon`` of :class:`UniversalTransformer` (ACT halts once ``1 - act_epsilon`` is reached)."""


class UniversalOutput(NamedTuple):
    """``hidden [B, T, D]``; ``ponder_cost``: scalar mean of ``N + R`` over non-padding positions (ACT only; over the
    call's new positions in a cached call)."""

    hidden: torch.Tensor
    ponder_cost: torch.Tensor | None


class _HaltingUnit(nn.Linear):
    """ACT's ``D -> 1`` halting logit, its bias initialised to 1 by :meth:`reset_parameters` (so that deferred
    initialisation, which calls it, sets it as the constructor does)."""

    def reset_parameters(self) -> None:
        super().reset_parameters()
        if self.bias is not None:
            nn.init.constant_(self.bias, 1.0)


def _like_the_layer(layer: nn.Module, factory: FactoryKwargs) -> FactoryKwargs:
    """The factory keyword arguments of the halting unit: those given, else the shared ``layer``'s parameters' device
    and dtype (a float64 layer beside a float32 halting unit failed in torch at the first step); ``ValueError`` for a
    given dtype other than the layer's."""
    reference = next(layer.parameters(), None)
    if reference is None:
        return factory
    if factory["dtype"] is not None and factory["dtype"] != reference.dtype:
        raise ValueError(f"UniversalTransformer: dtype={factory['dtype']} differs from the shared layer's {reference.dtype}")
    return {"device": reference.device if factory["device"] is None else factory["device"], "dtype": reference.dtype}


class UniversalTransformer(nn.Module):
    """Apply ``layer`` (e.g. a :class:`~neurosym.layers.transformer.TransformerEncoderLayer`) ``depth`` times.

    ``layer`` must map ``(x [B, T, D], key_padding_mask [B, T] | None) -> [B, T, D]`` and expose its width
    as ``layer.dim`` (even with ``step_embedding=True``, else ``ValueError``; a ``TransformerDecoderLayer``, which also
    reads a memory, raises ``TypeError``). The parameter count is that of ``layer`` (plus a ``D -> 1`` halting unit with ACT),
    whatever ``depth``. ``forward(x [B, T, D], key_padding_mask [B, T] | None = None, *, causal=False) -> UniversalOutput``;
    ``causal=True`` calls the layer with ``causal=True`` at every step (a layer that takes it, as the encoder layer
    does), so that ``hidden[:, t]`` is that of the prefix ``x[:, :t + 1]``, with ACT too: each position halts on its own
    states, which read no later position (``ponder_cost``, a mean over all positions, reads them all). With ``act=True``
    ``depth`` is the maximum number of steps, and ``act_epsilon`` sets where it halts (without ACT an
    ``act_epsilon`` away from its default raises ``ValueError``: it would be ignored; with ACT, ``forward`` raises
    ``ValueError`` for one below the states' dtype's resolution at 1, :func:`halting_threshold`).

    For incremental decoding with a :class:`~neurosym.layers.transformer.TransformerEncoderLayer` (``causal=True`` only;
    ``ValueError`` otherwise) make a cache with :meth:`new_cache`, one :class:`AttentionCache` per step, and feed the
    sequence a few positions per call, as :class:`~neurosym.layers.transformer.TransformerEncoder` is fed: ``x [B, T_new,
    D]`` continues the positions of the earlier calls, ``key_padding_mask [B, T_seen + T_new]`` covers every position
    fed so far, and ``hidden [B, T_new, D]`` equals the uncached causal call's at the new positions, with ACT too
    (every step runs the layer on every position, halted or not, so each step's keys are defined for every position;
    halting only weighs a position's own states). ``ponder_cost`` is then the mean of ``N + R`` over the call's new
    non-padding positions. A call that raises leaves the cache as it was.

    ``device`` and ``dtype`` are torch's factory keyword arguments (:mod:`neurosym.layers.factory`) of what this module
    creates, the halting unit: the shared ``layer`` is built by the caller (give it the same ones).
    """

    def __init__(
        self,
        layer: nn.Module,
        depth: int,
        step_embedding: bool = True,
        act: bool = False,
        *,
        act_epsilon: float = ACT_EPSILON,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        factory = factory_kwargs(device, dtype, type(self).__name__)
        if isinstance(layer, TransformerDecoderLayer):  # (its memory was given the padding mask, or None)
            raise TypeError(
                "UniversalTransformer applies a layer of forward(x, key_padding_mask), such as a TransformerEncoderLayer; "
                "a TransformerDecoderLayer also reads a memory"
            )
        # numpy's ints are accepted (a layer built with np.int64(16) has that as its dim) and stored as Python ints
        check_flags(step_embedding=step_embedding, act=act)
        self.depth = int_at_least(depth, "depth", 1)
        self.dim = int_at_least(getattr(layer, "dim", None), "the shared layer's model width (its attribute `dim`)", 1)
        if step_embedding and self.dim % 2:  # (failed only at the first forward, in the sinusoid)
            raise ValueError(
                f"step_embedding=True adds a sinusoid of as many sines as cosines: the shared layer's width must be "
                f"even, got {self.dim}; use step_embedding=False"
            )
        if not (is_real(act_epsilon) and 0.0 < act_epsilon < 1.0):  # ("0.1" failed on '<' between float and str)
            raise ValueError(f"act_epsilon must be a number in (0, 1), got {act_epsilon!r}")
        if not act and act_epsilon != ACT_EPSILON:
            raise ignored_option("act_epsilon", act_epsilon, "act=True", "act=False")
        self.layer = layer
        self.step_embedding = step_embedding
        self.act_epsilon = act_epsilon
        self.halting = _HaltingUnit(self.dim, 1, **_like_the_layer(layer, factory)) if act else None

    def _step_input(self, x: torch.Tensor, step: int) -> torch.Tensor:
        if not self.step_embedding:
            return x
        signal = sinusoid_table(torch.tensor([step], device=x.device), self.dim, x.dtype)
        return x + rearrange(signal, "1 d -> 1 1 d")

    def new_cache(self) -> list[AttentionCache]:
        """An empty cache for incremental decoding, one :class:`AttentionCache` per step; ``TypeError`` unless the
        shared layer is a :class:`~neurosym.layers.transformer.TransformerEncoderLayer` (which takes ``cache=``)."""
        self._check_cacheable_layer()
        return [AttentionCache() for _ in range(self.depth)]

    def _check_cacheable_layer(self) -> None:
        if not isinstance(self.layer, TransformerEncoderLayer):
            raise TypeError(
                "a cache needs a shared layer that takes one, a TransformerEncoderLayer; "
                f"this UniversalTransformer shares a {type(self.layer).__name__}"
            )

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        *,
        causal: bool = False,
        cache: list[AttentionCache] | None = None,
    ) -> UniversalOutput:
        """``x [B, T, D]`` through the shared layer ``depth`` times (with ACT, until each position halts) ->
        :class:`UniversalOutput` (``hidden [B, T, D]``, ``ponder_cost``); ``key_padding_mask [B, T]``, ``causal`` and
        ``cache`` as the class describes."""
        check_sequence(x, self.dim, "the input")
        check_dtype_of(x, self, "the input")  # (the step signal and the halting unit read it before the shared layer)
        check_cache_is_causal(cache, causal=causal)
        step_layer = self._step_layers(causal, cache)
        if self.halting is None:
            for step in range(self.depth):
                x = step_layer(step)(self._step_input(x, step), key_padding_mask)
            return UniversalOutput(x, None)
        return self._adaptive(x, key_padding_mask, self.halting, step_layer)

    def _step_layers(
        self, causal: bool, cache: list[AttentionCache] | None
    ) -> Callable[[int], Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]]:
        """The shared layer as each step calls it, ``step -> (x [B, T, D], key_padding_mask) -> [B, T, D]``: causal
        when asked (a layer may not take ``causal`` at all), with that step's entry of the checked ``cache``."""
        if cache is None:
            layer = partial(self.layer, causal=True) if causal else self.layer
            return lambda step: layer
        self._check_cacheable_layer()
        caches = check_cache_list(cache, AttentionCache, self.depth, type(self).__name__, "step")
        return lambda step: partial(self.layer, causal=True, cache=caches[step])

    def _adaptive(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None,
        halting: nn.Linear,
        step_layer: Callable[[int], Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]],
    ) -> UniversalOutput:
        progress = HaltingState.start(x.new_zeros(x.shape[:2]))
        output = torch.zeros_like(x)
        state = x
        for step in range(self.depth):  # steps after every position halted add nothing (weight 0)
            state = self._step_input(state, step)
            probability = torch.sigmoid(rearrange(halting(state), "b t 1 -> b t"))
            threshold = halting_threshold(self.act_epsilon, torch.promote_types(progress.mass.dtype, probability.dtype))
            progress, weight = halting_step(progress, probability, threshold, last_step=step == self.depth - 1)
            state = step_layer(step)(state, key_padding_mask)
            output = output + rearrange(weight, "b t -> b t 1") * state
        # (with a cache the mask covers the positions of the earlier calls first)
        new_padding = None if key_padding_mask is None else key_padding_mask[:, key_padding_mask.shape[1] - x.shape[1] :]
        return UniversalOutput(output, ponder_cost(progress, new_padding))


def halting_threshold(act_epsilon: float, dtype: torch.dtype) -> float:
    """``1 - act_epsilon`` (a Python float) rounded up to a value of the floating-point ``dtype``: a sum in ``dtype``
    reaches it exactly when it reaches ``1 - act_epsilon``. ``ValueError`` when ``act_epsilon`` is below ``dtype``'s gap under 1
    (``torch.finfo(dtype).eps / 2``), where no value of ``dtype`` lies in ``[1 - act_epsilon, 1)``."""
    info = torch.finfo(dtype)
    gap = info.eps / 2  # between 1 and the largest value below it
    if act_epsilon < gap:
        raise ValueError(
            f"act_epsilon ({act_epsilon:g}) is below the resolution of {dtype} at 1 ({gap!r}): no {dtype} value "
            f"lies in [1 - act_epsilon, 1), so positions would halt only where their halting probabilities' sum "
            f"rounds to 1; use act_epsilon >= {gap!r} (or states of a wider dtype)"
        )
    target = 1.0 - float(act_epsilon)
    _, exponent = math.frexp(target)  # target = m * 2**exponent, 0.5 <= m < 1
    spacing = max(math.ldexp(info.eps, exponent - 1), info.smallest_normal * info.eps)  # (the latter: subnormals)
    return math.ceil(target / spacing) * spacing  # (exact: spacing is a power of 2)


class HaltingState(NamedTuple):
    """ACT's bookkeeping, each ``[B, T]``: ``running`` (bool: not halted yet), ``mass`` (the weights given so far:
    ``p_1 + ... + p_n`` while running), ``steps`` (the steps taken: ``N`` once halted) and
    ``remainder`` (``R``, 0 until the position halts)."""

    running: torch.Tensor
    mass: torch.Tensor
    steps: torch.Tensor
    remainder: torch.Tensor

    @classmethod
    def start(cls, zeros: torch.Tensor) -> HaltingState:
        """No step taken yet, for positions shaped and typed as ``zeros [B, T]`` (all 0)."""
        return cls(torch.ones_like(zeros, dtype=torch.bool), zeros, zeros, zeros)


def halting_step(
    progress: HaltingState, probability: torch.Tensor, threshold: float, *, last_step: bool
) -> tuple[HaltingState, torch.Tensor]:
    """One step of Graves's halting rule (see the module docstring) for ``probability [B, T]``, this step's ``p_n``.

    A running position halts at this step when ``mass + p_n >= threshold`` or at the ``last_step``; returns the new
    state and this step's output weight ``[B, T]``: ``p_n`` for a position that keeps running, the remainder
    ``1 - mass`` for one that halts now, and 0 for one that had halted.
    """
    running, mass, steps, remainder = progress
    halts = running & ((mass + probability >= threshold) | last_step)
    keeps_running = running & ~halts
    new_remainder = torch.where(halts, 1.0 - mass, torch.zeros_like(mass))
    weight = torch.where(keeps_running, probability, new_remainder)
    taken = steps + running.to(steps.dtype)
    return HaltingState(keeps_running, mass + weight, taken, remainder + new_remainder), weight


def ponder_cost(progress: HaltingState, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
    """The mean of ``N + R`` over the non-padding positions (``True`` in ``key_padding_mask [B, T]`` marks padding):
    a scalar, 0 (not NaN) when there are none."""
    cost = progress.steps + progress.remainder
    real = torch.ones_like(cost) if key_padding_mask is None else (~key_padding_mask).to(cost.dtype)
    return (cost * real).sum() / real.sum().clamp_min(1)
