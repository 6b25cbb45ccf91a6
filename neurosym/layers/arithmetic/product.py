"""The NMU product ``y_j = Π_i (W_ji x_i + 1 − W_ji)`` as a memory-bounded, NaN-free autograd function.

The product needs the full ``[batch, out, in]`` tensor of terms; at 128 × 512 × 512 that is 134 MB
per intermediate, so the computation runs over batch chunks of at most :data:`CHUNK_ELEMENTS` terms
and the backward pass recomputes the terms instead of saving them (saved: ``x``, ``W``, ``y``).

Every entry first takes the fast route (a plain product, gradients as ``y / term``), which is exact
whenever the output is finite, non-zero and within ``exp(MAX_LOG_MAGNITUDE)``. Only the entries where
it is not (an exact zero term, overflow, underflow, a gradient beyond the float range) are recomputed
in the log domain, which counts zero terms and negative signs separately, so it never produces NaN: outputs saturate at ``±exp(MAX_LOG_MAGNITUDE)``
(with zero gradient there, like a clamp), and the gradient at an exactly-zero term is the exact
product of the other terms.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import torch
from einops import pack, unpack
from torch import Tensor

from .numerics import MAX_LOG_MAGNITUDE

CHUNK_ELEMENTS = 1 << 22
"""Largest number of product terms (``ensemble · rows · out · in``) materialised at once."""


def _terms(x: Tensor, weight: Tensor) -> Tensor:
    """``[S, n, in]``, ``[S, out, in]`` → terms ``W x + 1 − W`` of shape ``[S, n, out, in]``."""
    return torch.addcmul(1 - weight.unsqueeze(1), weight.unsqueeze(1), x.unsqueeze(2))


def _chunks(rows: int, per_row: int) -> Iterator[slice]:
    step = max(1, CHUNK_ELEMENTS // max(1, per_row))
    for start in range(0, rows, step):
        yield slice(start, min(start + step, rows))


_MAX_MAGNITUDE = math.exp(MAX_LOG_MAGNITUDE)


def _needs_log_domain(product: Tensor) -> Tensor:
    """Entries a plain product cannot be trusted for: zero (an exact zero term, or underflow), beyond
    ``exp(MAX_LOG_MAGNITUDE)``, infinite or NaN (``inf · 0``). Same shape as ``product``."""
    magnitude = product.abs()
    return ~((magnitude > 0) & (magnitude <= _MAX_MAGNITUDE))


class _LogDomain:
    """Log-domain view of a chunk of terms: zero counts, signs and log-magnitudes, all NaN-free."""

    def __init__(self, terms: Tensor):
        self.is_zero = terms == 0
        self.log_magnitude = torch.where(self.is_zero, 1.0, terms.abs()).log()
        self.term_sign = 1 - 2 * (terms < 0).to(terms.dtype)
        self.zero_count = self.is_zero.sum(-1)
        self.log_sum = self.log_magnitude.sum(-1)
        self.sign = self.term_sign.prod(-1)

    def product(self) -> Tensor:
        """``[S, n, out]``: the saturated product, exactly 0 where some term is 0."""
        value = self.sign * torch.exp(self.log_sum.clamp(max=MAX_LOG_MAGNITUDE))
        return torch.where(self.zero_count > 0, 0.0, value)

    def others(self) -> Tensor:
        """``[S, n, out, in]``: ``Π_{k≠i} term_k``, 0 where the output is saturated."""
        log_others = self.log_sum.unsqueeze(-1) - self.log_magnitude
        value = (self.sign.unsqueeze(-1) * self.term_sign) * torch.exp(log_others.clamp(max=MAX_LOG_MAGNITUDE))
        zeros = self.zero_count.unsqueeze(-1)
        defined = torch.where(self.is_zero, zeros == 1, zeros == 0)
        unsaturated = (self.log_sum <= MAX_LOG_MAGNITUDE).unsqueeze(-1)
        return torch.where(defined & unsaturated, value, 0.0)


class _MultiplicativeProduct(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, x: Tensor, weight: Tensor) -> Tensor:
        rows, out_features, in_features = x.shape[1], weight.shape[1], weight.shape[2]
        result = x.new_empty(x.shape[0], rows, out_features)
        in_log_domain = torch.empty(result.shape, dtype=torch.bool, device=x.device)
        for part in _chunks(rows, x.shape[0] * out_features * in_features):
            terms = _terms(x[:, part], weight)
            product = terms.prod(-1)
            needs_log = _needs_log_domain(product)
            if bool(needs_log.any()):
                product = torch.where(needs_log, _LogDomain(terms).product(), product)
            result[:, part] = product
            in_log_domain[:, part] = needs_log
        ctx.save_for_backward(x, weight, result, in_log_domain)
        return result

    @staticmethod
    @torch.amp.custom_bwd(device_type="cuda")
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_output: Tensor) -> tuple[Tensor, Tensor]:
        x, weight, result, in_log_domain = ctx.saved_tensors
        grad_x = torch.empty_like(x)
        grad_weight = torch.zeros_like(weight)
        rows, out_features, in_features = x.shape[1], weight.shape[1], weight.shape[2]
        for part in _chunks(rows, x.shape[0] * out_features * in_features):
            terms = _terms(x[:, part], weight)
            grad = grad_output[:, part].unsqueeze(-1)
            grad_terms = (grad * result[:, part].unsqueeze(-1)) / terms
            needs_log = in_log_domain[:, part].unsqueeze(-1) | ~torch.isfinite(grad_terms)
            if bool(needs_log.any()):
                grad_terms = torch.where(needs_log, grad * _LogDomain(terms).others(), grad_terms)
            grad_x[:, part] = torch.einsum("snoi,soi->sni", grad_terms, weight)
            grad_weight += torch.einsum("snoi,sni->soi", grad_terms, x[:, part] - 1)
        return grad_x, grad_weight


def multiplicative_product(x: Tensor, weight: Tensor) -> Tensor:
    """``y_j = Π_i (W_ji x_i + 1 − W_ji)`` (the NMU of Madsen & Johansen 2020), NaN-free.

    Plain: ``x [..., in]``, ``weight [out, in]`` → ``[..., out]``.
    Ensemble: ``x [S, ..., in]``, ``weight [S, out, in]`` → ``[S, ..., out]``.
    Magnitudes saturate at ``exp(MAX_LOG_MAGNITUDE)``; see the module docstring for the gradient.
    """
    if weight.dim() == 2:
        return multiplicative_product(x.unsqueeze(0), weight.unsqueeze(0)).squeeze(0)
    flat, packed_shape = pack([x], "s * i")
    product = _MultiplicativeProduct.apply(flat, weight)
    return unpack(product, packed_shape, "s * o")[0]
