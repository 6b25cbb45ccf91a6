"""The NMU product's compiled fast route (``compiled=True``): same values and gradients as the
definition, the eager log-domain route where the fast route is not exact, and a warned fallback
when compiling fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from nmu_reference import exact_nmu

from neurosym.layers import NALU, NAU, NMU, NPU, GatedNAUNMU
from neurosym.layers.arithmetic import multiplicative_product, product
from neurosym.layers.lazy_compile import LazilyCompiled


def _counted_kernels(monkeypatch, prefix: str) -> dict[str, int]:
    """Counts the calls of the compiled kernels ``product.{prefix}product`` and ``{prefix}gradients``
    that returned a result."""
    calls = {"product": 0, "gradients": 0}
    for name in calls:
        kernel = getattr(product, f"{prefix}{name}")

        def counted(*args, kernel=kernel, name=name):
            result = kernel(*args)
            calls[name] += result is not None
            return result

        monkeypatch.setattr(product, f"{prefix}{name}", counted)
    return calls


@pytest.fixture
def compiled_calls(monkeypatch) -> dict[str, int]:
    """Every product goes past one chunk (so ``compiled=True`` takes the kernels); counts the kernel
    calls that returned a result."""
    monkeypatch.setattr(product, "CHUNK_ELEMENTS", 1)
    return _counted_kernels(monkeypatch, "_compiled_")


def _definition(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """``x [S, N, in]``, ``w [S, out, in]`` → ``[S, N, out]`` by plain autograd ops."""
    return torch.addcmul(1 - w.unsqueeze(1), w.unsqueeze(1), x.unsqueeze(2)).prod(-1)


@pytest.fixture(params=["host route", "device route"])
def route_kernels(request, monkeypatch) -> dict[str, int]:
    """The compiled kernels of the CPU's route (every product past one chunk), or those of the device
    route (no host reads: plain and log-domain values for every output), with their calls counted."""
    if request.param == "device route":
        monkeypatch.setattr(product, "reads_on_host", lambda tensor: False)
        return _counted_kernels(monkeypatch, "_compiled_device_")
    monkeypatch.setattr(product, "CHUNK_ELEMENTS", 1)
    return _counted_kernels(monkeypatch, "_compiled_")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=arrays(np.float64, (2, 5, 4), elements=st.floats(-30, 30, allow_nan=False) | st.just(0.0)),
    weights=arrays(np.float64, (2, 3, 4), elements=st.floats(0, 1) | st.sampled_from([0.0, 1.0])),
)
def test_compiled_route_matches_the_definition_and_its_gradient(route_kernels, values, weights) -> None:
    kernel_calls_before = route_kernels["product"]  # (the fixture is shared by all examples)
    x, w = torch.from_numpy(values).requires_grad_(True), torch.from_numpy(weights).requires_grad_(True)
    seed = torch.arange(1.0, 31.0, dtype=torch.float64).reshape(2, 5, 3)
    expected, expected_grad_x, expected_grad_w = exact_nmu(x.detach(), w.detach(), seed)
    got = multiplicative_product(x, w, compiled=True)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-300)
    (got * seed).sum().backward()
    torch.testing.assert_close(x.grad, expected_grad_x, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(w.grad, expected_grad_w, rtol=1e-9, atol=1e-9)
    assert route_kernels["product"] == kernel_calls_before + 1


def test_compiled_route_runs_both_kernels_for_either_gradient(compiled_calls) -> None:
    torch.manual_seed(0)
    x, w = torch.rand(2, 6, 5, dtype=torch.float64) + 0.5, torch.rand(2, 3, 5, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda weight: multiplicative_product(x, weight, compiled=True), (w.requires_grad_(True),))
    assert torch.autograd.gradcheck(
        lambda inputs: multiplicative_product(inputs, w.detach(), compiled=True), (x.requires_grad_(True),)
    )
    assert compiled_calls["product"] > 0 and compiled_calls["gradients"] > 0


def test_zero_terms_leave_the_compiled_route_for_the_exact_one(compiled_calls) -> None:
    # W = 1 at x = 0 makes a term exactly 0: the plain product is not trusted there.
    x = torch.tensor([[[0.0, 2.0, -3.0], [1.5, 2.0, 0.5]]], requires_grad=True)
    w = torch.ones(1, 1, 3, requires_grad=True)
    y = multiplicative_product(x, w, compiled=True)
    torch.testing.assert_close(y, torch.tensor([[[0.0], [1.5]]]))
    y.sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([[[-6.0, 0.0, 0.0], [1.0, 0.75, 3.0]]]))
    torch.testing.assert_close(w.grad, torch.tensor([[[6.0 + 0.5 * 1.0, 0.0 + 1.0 * 0.75, 0.0 + -0.5 * 3.0]]]))
    assert compiled_calls["product"] == 1 and compiled_calls["gradients"] == 0


def test_nmu_passes_compiled_on_and_its_members_keep_it(compiled_calls) -> None:
    torch.manual_seed(1)
    unit = NMU(4, 3, ensemble=2, compiled=True)
    x = torch.rand(2, 7, 4) + 0.5
    torch.testing.assert_close(unit(x), _definition(x, unit.clamped_weight()), rtol=1e-5, atol=1e-6)
    assert compiled_calls["product"] == 1
    assert unit.member(1).compiled and GatedNAUNMU(4, 3, compiled=True).mul.compiled
    assert "compiled=True" in repr(unit)


def test_a_failed_compilation_warns_once_and_the_eager_route_computes(monkeypatch) -> None:
    def no_compiler(function):
        def fails(*args):
            raise RuntimeError("no C++ compiler")

        return fails

    monkeypatch.setattr(torch, "compile", no_compiler)
    monkeypatch.setattr(product, "CHUNK_ELEMENTS", 1)
    monkeypatch.setattr(product, "_compiled_product", LazilyCompiled(product._fast_product, "the NMU product kernel"))
    x, w = torch.rand(3, 4) + 0.5, torch.rand(2, 4)
    with pytest.warns(RuntimeWarning, match="could not build the NMU product kernel.*no C\\+\\+ compiler"):
        first = multiplicative_product(x, w, compiled=True)
    torch.testing.assert_close(first, multiplicative_product(x, w))
    assert product._compiled_product.failed
    with warnings.catch_warnings():  # no second warning
        warnings.simplefilter("error")
        torch.testing.assert_close(multiplicative_product(x, w, compiled=True), first)


@pytest.mark.parametrize("cls", [NMU, NALU, NAU, NPU])
def test_units_compile_into_one_graph_and_match_eager_mode(cls) -> None:
    """Under ``torch.compile`` the units read no value on the host (``fullgraph=True`` raises at a graph
    break), and compute what eager mode computes, gradients included, at a zero input too."""
    torch.manual_seed(0)
    unit = cls(6, 3, ensemble=2).double()
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    x[0, 0, 0] = 0.0
    expected = unit(x)
    expected_grads = torch.autograd.grad(expected.sum(), list(unit.parameters()))
    got = torch.compile(unit, fullgraph=True)(x)
    torch.testing.assert_close(got, expected)
    for grad, want in zip(torch.autograd.grad(got.sum(), list(unit.parameters())), expected_grads):
        torch.testing.assert_close(grad, want)
