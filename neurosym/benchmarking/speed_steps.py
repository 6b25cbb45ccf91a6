"""The steps the speed benchmarks time (``neurosym layer-speed``, ``neurosym attention-speed``): each a
closure that runs one forward and backward pass, or one greedy decoding, and synchronises CUDA; time them
with :func:`neurosym.benchmarking.timing.fastest_of_rounds`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import torch
from torch import nn

from neurosym.benchmarking.timing import fastest_of_rounds, forward_backward_step
from neurosym.layers import MultiheadAttention, RelativeMultiheadAttention, arithmetic
from neurosym.layers.transformer import AttentionKind
from neurosym.models.seq2seq import build_front_end, build_seq2seq
from neurosym.training.device import mixed_precision

UNITS: dict[str, Callable[[int, int], nn.Module]] = {
    "Linear": nn.Linear,
    "NAC": arithmetic.NAC,
    "NACMul": arithmetic.NACMul,
    "NALU": arithmetic.NALU,
    "NAU": arithmetic.NAU,
    "NMU": arithmetic.NMU,
    "NMU-compiled": partial(arithmetic.NMU, compiled=True),
    "iNALU": arithmetic.iNALU,
    "NPU": arithmetic.NPU,
    "RealNPU": arithmetic.RealNPU,
    "GatedNAUNMU": arithmetic.GatedNAUNMU,
}
"""The layers ``layer-speed`` can time, by name: ``nn.Linear`` and the arithmetic units (``NMU-compiled``
is ``NMU(compiled=True)``)."""


UNIT_GOALS = {"NAU": 1.5, "NMU": 3.0, "NMU-compiled": 3.0, "NALU": 4.0}
"""The most time relative to ``nn.Linear`` each unit may take (issue 2's goals at batch 128)."""


def unit_step(name: str, shape: tuple[int, int], batch: int, device: torch.device) -> Callable[[], None]:
    """``unit(x).sum().backward()`` for the layer ``UNITS[name]`` of ``shape`` ``(in, out)``, with ``x
    [batch, in] ~ U[0.5, 1.5]`` requiring a gradient (as in a hidden layer)."""
    module = UNITS[name](*shape).to(device)
    x = (torch.rand(batch, shape[0], device=device) + 0.5).requires_grad_(True)
    return forward_backward_step(module, x, device)


def unit_records(seconds: Mapping[tuple[tuple[int, int], str], float], baseline: str = "Linear") -> list[dict]:
    """One record per ``(shape, unit)`` of ``seconds`` (the fastest time of each unit's step): the shape
    ``"in→out"``, the unit, ``microseconds``, ``ratio_to_linear`` (to ``baseline`` of the same shape), its
    ``goal`` in :data:`UNIT_GOALS` and whether it ``meets_goal`` (None without a goal)."""
    records = []
    for (shape, name), time in seconds.items():
        ratio, goal = time / seconds[(shape, baseline)], UNIT_GOALS.get(name)
        records.append(
            {
                "shape": f"{shape[0]}→{shape[1]}",
                "unit": name,
                "microseconds": time * 1e6,
                "ratio_to_linear": ratio,
                "goal": goal,
                "meets_goal": None if goal is None else ratio <= goal,
            }
        )
    return records


def attention_step(
    kind: AttentionKind, length: int, batch: int, dim: int, heads: int, device: torch.device, position_dim: int | None = None
) -> Callable[[], None]:
    """A forward and backward pass of self-attention over ``x [batch, length, dim]``: ``kind`` ``"vanilla"``
    (:class:`MultiheadAttention`, fused SDPA) or a relative encoding of :class:`RelativeMultiheadAttention`
    (``"xl"``, ``"xl_clipped"``, ``"shaw"``; ``position_dim`` sinusoid features for the XL ones)."""
    if kind == "vanilla":
        module = MultiheadAttention(dim, heads)
    else:
        module = RelativeMultiheadAttention(
            dim, heads, relative=kind, position_dim=position_dim if kind.startswith("xl") else None
        )
    module.to(device)
    x = torch.randn(batch, length, dim, device=device, requires_grad=True)
    return forward_backward_step(module, x, device)


def decode_step(
    use_cache: bool, batch: int, source_length: int, dim: int, heads: int, digits: int, device: torch.device
) -> Callable[[], None]:
    """Greedy decoding of exactly ``digits`` tokens by a relative universal Transformer (width ``dim``) from
    ``batch`` random sources of ``source_length`` tokens, with or without the key/value cache."""
    front = build_front_end("symbol", dim, vocab_size=17)
    model = build_seq2seq("transformer_rel_uni", front, 12, hidden=2 * dim, heads=heads).to(device).eval()
    src = torch.randint(1, 17, (batch, source_length), device=device)
    src_mask = torch.zeros(batch, source_length, dtype=torch.bool, device=device)

    def step() -> None:
        with mixed_precision(device):
            # eos = -1 is never emitted, so exactly ``digits`` tokens are decoded every time
            model.greedy_decode(src, src_mask, digits, bos=10, eos=-1, use_cache=use_cache)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return step


def time_attention(
    kinds: Sequence[AttentionKind],
    lengths: Sequence[int],
    batch: int,
    dim: int,
    heads: int,
    device: torch.device,
    position_dim: int | None = None,
    *,
    rounds: int,
    min_time: float,
    threads: int,
    progress: bool = False,
) -> dict[str, dict[int, float]]:
    """The fastest seconds of :func:`attention_step` of every kind at every length, over ``rounds``
    interleaved rounds (:func:`fastest_of_rounds`): ``{kind: {length: seconds}}``."""
    steps = {
        (kind, length): attention_step(kind, length, batch, dim, heads, device, position_dim)
        for length in lengths
        for kind in kinds
    }
    fastest = fastest_of_rounds(steps, rounds, min_time, threads, "attention", progress)
    seconds: dict[str, dict[int, float]] = {kind: {} for kind in kinds}
    for (kind, length), time in fastest.items():
        seconds[kind][length] = time
    return seconds
