"""The NMU product and its gradients in exact rational arithmetic, rounded once at the end.

A float reference (``prod`` and autograd) is not exact where a partial product underflows: its gradient
divides the underflowed result by the term, so it can be wrong where the library is right.
"""

from __future__ import annotations

from fractions import Fraction
from math import prod

import torch


def _others(terms: list[Fraction], i: int) -> Fraction:
    """``Π_{k≠i} terms_k``."""
    return prod(term for k, term in enumerate(terms) if k != i)


def exact_nmu(x: torch.Tensor, w: torch.Tensor, seed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x [S, N, in]``, ``w [S, out, in]``, ``seed [S, N, out]`` (float64) → ``y = Π_i (w x_i + 1 − w)``
    ``[S, N, out]`` and the gradients of ``Σ seed·y`` with respect to ``x`` and ``w``, each exact and
    rounded once to float64."""
    xs = [[[Fraction(v) for v in row] for row in member] for member in x.tolist()]
    ws = [[[Fraction(v) for v in row] for row in member] for member in w.tolist()]
    seeds = [[[Fraction(v) for v in row] for row in member] for member in seed.tolist()]
    y, grad_x, grad_w = [], [], []
    for member_x, member_w, member_seed in zip(xs, ws, seeds):
        terms = [[[wi * xi + 1 - wi for xi, wi in zip(row, weights)] for weights in member_w] for row in member_x]
        y.append([[prod(t) for t in row] for row in terms])
        inputs, outputs, rows = len(member_w[0]), len(member_w), len(member_x)
        grad_x.append(
            [
                [sum(member_seed[n][j] * member_w[j][i] * _others(terms[n][j], i) for j in range(outputs)) for i in range(inputs)]
                for n in range(rows)
            ]
        )
        grad_w.append(
            [
                [
                    sum(member_seed[n][j] * (member_x[n][i] - 1) * _others(terms[n][j], i) for n in range(rows))
                    for i in range(inputs)
                ]
                for j in range(outputs)
            ]
        )
    return tuple(
        torch.tensor([[[float(v) for v in row] for row in member] for member in values], dtype=torch.float64)
        for values in (y, grad_x, grad_w)
    )
