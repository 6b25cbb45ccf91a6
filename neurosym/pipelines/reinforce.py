"""REINFORCE from results, the baseline that abduction is compared with: sample a reading per
window, reward it 1 when it parses and evaluates to the known result, and follow the score function."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from neurosym.pipelines.decoding import checked_decoder_inputs
from neurosym.pipelines.windows import real_positions
from neurosym.semantics import BatchSolver


def reinforce_loss(
    log_probs: torch.Tensor,
    lengths: torch.Tensor,
    targets: Sequence[int],
    vocabulary: Sequence[str],
    solver: BatchSolver,
    baseline: float,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, float]:
    """Score-function loss of one batch.

    Args:
        log_probs: ``[B, T, V]`` per-window log-probabilities (with gradients).
        lengths: ``[B]`` symbols per expression, integers in ``[1, T]`` (later positions are padding, never drawn from).
        targets: the known results.
        vocabulary: the symbols of the ``V`` columns.
        solver: executes the sampled sentences (ungrammatical or invalid ones get reward 0).
        baseline: the running mean reward subtracted to reduce variance.
        generator: random source of the samples (CPU).

    Returns:
        The loss (a scalar tensor) and the batch's mean reward.

    Raises:
        ValueError: for an empty batch (its mean reward was NaN), a real position that scores every symbol ``-inf``
            (nothing to draw there), and the inputs :func:`~neurosym.pipelines.decoding.checked_decoder_inputs` refuses.
    """
    batch, steps, size = log_probs.shape
    if not len(lengths) == len(targets) == batch:
        raise ValueError(f"{batch} examples of log-probabilities, {len(lengths)} lengths and {len(targets)} targets")
    if batch == 0:
        raise ValueError("reinforce_loss needs at least one example (an empty batch has no mean reward)")
    lengths = checked_decoder_inputs(log_probs, lengths, len(vocabulary))
    mask = real_positions(lengths, steps)
    probs = log_probs.detach().float().exp().masked_fill(~mask[..., None], 1.0)  # padding: any draw, never used
    probs = probs.reshape(batch * steps, size).cpu()
    dead = (probs.sum(-1) == 0).nonzero().flatten().tolist()  # (torch's multinomial refused the batch, naming nothing)
    if dead:
        row, position = divmod(dead[0], steps)
        raise ValueError(f"log_probs score every symbol -inf at a real position (example {row}, position {position})")
    samples = torch.multinomial(probs, 1, generator=generator).view(batch, steps).to(log_probs.device)
    sentences = ["".join(vocabulary[t] for t in row[: int(n)]) for row, n in zip(samples.tolist(), lengths.tolist())]
    values = solver.solve(sentences)
    reward = torch.tensor([float(v == t) for v, t in zip(values, targets)], device=log_probs.device)
    chosen = log_probs.gather(-1, samples[..., None]).squeeze(-1).masked_fill(~mask, 0.0).sum(dim=1)
    loss = -((reward - baseline) * chosen).mean()
    return loss, float(reward.mean())
