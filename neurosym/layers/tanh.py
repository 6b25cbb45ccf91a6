"""``tanh`` with numpy's kernel on the CPU.

PyTorch's CPU ``tanh`` on the builds measured here takes about 2.5 ns per float32 element, six times
its ``sigmoid`` and seven times numpy's ``tanh`` (which agrees with it to one ulp): the
``tanh(Ŵ)`` of the NAC weights was the largest cost of a 512 → 512 NALU after its matrix products
(``benchmarks/RESULTS.md``). :func:`tanh` computes the value with numpy on CPU tensors of at least
:data:`NUMPY_MIN_ELEMENTS` elements in eager mode, and the gradient ``(1 − tanh²) · g`` with PyTorch;
elsewhere (smaller tensors, whose time is the call's overhead, accelerators, ``torch.compile``, other
dtypes) it is :func:`torch.tanh`.
"""

from __future__ import annotations

import numpy as np
import torch

from neurosym.layers.value_checks import values_are_readable

_NUMPY_DTYPES = (torch.float32, torch.float64)

NUMPY_MIN_ELEMENTS = 1 << 15
"""Smallest tensor given to numpy. Forward + backward on one CPU thread (µs, torch / numpy route): 200
elements 21 / 48, 16,384 elements 68 / 62, 32,768 elements 115 / 76, 262,144 elements 775 / 231."""


class _NumpyTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        out = torch.from_numpy(np.tanh(x.detach().contiguous().numpy())).reshape(x.shape)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (out,) = ctx.saved_tensors
        return torch.ops.aten.tanh_backward(grad_output, out)


def tanh(x: torch.Tensor) -> torch.Tensor:
    """:func:`torch.tanh` of ``x [...]`` (value and gradient), through numpy's kernel for float32 and
    float64 CPU tensors of at least :data:`NUMPY_MIN_ELEMENTS` elements in eager mode."""
    if x.numel() >= NUMPY_MIN_ELEMENTS and x.dtype in _NUMPY_DTYPES and values_are_readable(x):
        return _NumpyTanh.apply(x)
    return torch.tanh(x)
