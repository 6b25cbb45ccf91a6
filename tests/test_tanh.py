"""``neurosym.layers.tanh.tanh``: torch's ``tanh`` to one ulp, value and gradient, by numpy's kernel
for large CPU tensors and by torch's elsewhere."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from neurosym.layers import tanh as tanh_module
from neurosym.layers.tanh import tanh

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


@pytest.fixture(params=["numpy route", "torch route"])
def route(request, monkeypatch) -> str:
    """Every size through the route named (the numpy one is for large CPU tensors only)."""
    monkeypatch.setattr(tanh_module, "NUMPY_MIN_ELEMENTS", 0 if request.param == "numpy route" else 1 << 62)
    return request.param


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(values=arrays(np.float32, array_shapes(max_dims=3, max_side=6), elements=FLOATS | st.sampled_from([0.0, -0.0, 1e-30, 9.0, -40.0])))
def test_values_and_gradients_are_torchs(route, values) -> None:
    x = torch.from_numpy(values).requires_grad_(True)
    got = tanh(x)
    expected = torch.tanh(x.detach())
    torch.testing.assert_close(got, expected, rtol=2 * torch.finfo(torch.float32).eps, atol=0.0, equal_nan=True)
    assert torch.equal(torch.signbit(got.detach()), torch.signbit(expected))  # -0.0 stays -0.0
    seed = torch.linspace(-1.0, 1.0, x.numel()).reshape(x.shape)
    (got * seed).sum().backward()
    torch.testing.assert_close(x.grad, seed * (1 - expected**2), rtol=1e-6, atol=1e-7, equal_nan=True)


def test_the_numpy_route_takes_strided_tensors_and_differentiates_twice(route) -> None:
    x = torch.randn(6, 8, dtype=torch.float64)[:, ::2].requires_grad_(True)
    torch.testing.assert_close(tanh(x), torch.tanh(x))
    assert torch.autograd.gradcheck(tanh, (x,)) and torch.autograd.gradgradcheck(tanh, (x,))


def test_large_cpu_tensors_take_numpy_and_others_torch(monkeypatch) -> None:
    calls, numpy_tanh = [], np.tanh
    monkeypatch.setattr(tanh_module.np, "tanh", lambda a: calls.append(a.size) or numpy_tanh(a))
    tanh(torch.randn(tanh_module.NUMPY_MIN_ELEMENTS))
    tanh(torch.randn(tanh_module.NUMPY_MIN_ELEMENTS - 1))
    tanh(torch.randn(tanh_module.NUMPY_MIN_ELEMENTS, dtype=torch.bfloat16))
    assert tanh(torch.randn(tanh_module.NUMPY_MIN_ELEMENTS, device="meta")).shape == (tanh_module.NUMPY_MIN_ELEMENTS,)
    assert calls == [tanh_module.NUMPY_MIN_ELEMENTS]
