"""Neural arithmetic units: exact solutions, gates, numerics, ensembles, shapes, schedule."""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from nmu_reference import exact_nmu

from neurosym.layers import (
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    EnsembleLinear,
    GatedNAUNMU,
    NACMul,
    RealNPU,
    RegularizerWarmup,
    iNALU,
)
from neurosym.layers.arithmetic import MAX_LOG_MAGNITUDE, ensemble_linear, multiplicative_product, product
from neurosym.layers.arithmetic.init import nac_glorot_matched_range
from neurosym.layers.arithmetic.nalu import input_gate
from neurosym.layers.arithmetic.numerics import MIN_EPS

UNITS = [NAC, NACMul, NALU, NAU, NMU, iNALU, NPU, RealNPU, GatedNAUNMU, EnsembleLinear]
GUARDED_UNITS = [unit for unit in UNITS if unit is not EnsembleLinear]
SATURATED = 30.0  # tanh(30) and σ(30) are 1 in float32


def _subset_weights(in_features: int, subsets: list[tuple[int, int]]) -> torch.Tensor:
    weight = torch.zeros(len(subsets), in_features)
    for row, (start, stop) in enumerate(subsets):
        weight[row, start:stop] = 1.0
    return weight


# --- exact solutions extrapolate -------------------------------------------------------------------


@pytest.mark.parametrize("low, high", [(2.0, 6.0), (1e3, 1e6)])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_nau_with_optimal_subset_weights_is_exact(low: float, high: float, sign: float) -> None:
    torch.manual_seed(0)
    subsets = [(3, 28), (15, 40)]
    first, second = NAU(100, 2).double(), NAU(2, 1).double()
    with torch.no_grad():
        first.weight.copy_(_subset_weights(100, subsets))
        second.weight.copy_(torch.tensor([[1.0, sign]]))
    x = torch.empty(500, 100, dtype=torch.float64).uniform_(low, high)
    a, b = x[:, 3:28].sum(-1), x[:, 15:40].sum(-1)
    expected = a + sign * b
    scale = a.abs() + b.abs()  # rounding is relative to the summands, not to a − b
    got = second(first(x)).squeeze(-1)
    assert bool(((got - expected).abs() <= 1e-14 * scale).all())
    got32 = second.float()(first.float()(x.float())).squeeze(-1).double()
    assert bool(((got32 - expected).abs() <= 1e-6 * scale).all())


def test_nmu_with_binary_weights_multiplies_exactly() -> None:
    torch.manual_seed(1)
    unit = NMU(6, 3)
    mask = torch.tensor([[1, 1, 0, 0, 0, 0], [0, 1, 0, 1, 1, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.float32)
    with torch.no_grad():
        unit.weight.copy_(mask)
    x = torch.randint(-9, 10, (200, 6)).float()
    expected = torch.stack([torch.where(row.bool(), x, torch.ones_like(x)).prod(-1) for row in mask], -1)
    assert torch.equal(unit(x), expected)
    big = torch.empty(50, 6).uniform_(1e2, 1e3)  # products up to 1e18, below the e^50 cap
    expected_big = torch.stack([torch.where(row.bool(), big, 1.0).double().prod(-1) for row in mask], -1)
    torch.testing.assert_close(unit(big).double(), expected_big, rtol=1e-5, atol=0.0)


@pytest.mark.parametrize("shared", [True, False])
def test_nalu_with_saturated_gate_takes_the_right_path(shared: bool) -> None:
    unit = NALU(2, 1, shared_weights=shared)
    with torch.no_grad():
        for nac in [unit.add] + ([] if unit.mul is None else [unit.mul]):
            nac.weight_hat.fill_(SATURATED)
            nac.gate_hat.fill_(SATURATED)
    x = torch.empty(100, 2).uniform_(1.0, 5.0)
    with torch.no_grad():
        unit.gate.fill_(SATURATED)
    torch.testing.assert_close(unit(x).squeeze(-1), x.sum(-1))
    with torch.no_grad():
        unit.gate.fill_(-SATURATED)
    torch.testing.assert_close(unit(x).squeeze(-1), x.prod(-1), rtol=1e-5, atol=0.0)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("ensemble", [None, 3])
def test_nalu_matches_its_formula_and_gradient(shared: bool, ensemble: int | None) -> None:
    torch.manual_seed(5)
    unit = NALU(4, 3, shared_weights=shared, ensemble=ensemble).double()
    x = (torch.rand(*([] if ensemble is None else [ensemble]), 6, 4, dtype=torch.float64) * 4 - 2).requires_grad_(True)
    reference_x = x.detach().clone().requires_grad_(True)
    add_weight = torch.tanh(unit.add.weight_hat) * torch.sigmoid(unit.add.gate_hat)
    mul_weight = add_weight if shared else torch.tanh(unit.mul.weight_hat) * torch.sigmoid(unit.mul.gate_hat)
    matmul = lambda inputs, weight: inputs @ weight.transpose(-1, -2)  # [(S,) N, in] @ [(S,) in, out]
    gate = torch.sigmoid(matmul(reference_x, unit.gate))
    expected = gate * matmul(reference_x, add_weight) + (1 - gate) * torch.exp(
        matmul(torch.log(reference_x.abs() + unit.eps), mul_weight)
    )
    got = unit(x)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
    got.square().sum().backward()
    got_grads = [x.grad] + [parameter.grad.clone() for parameter in unit.parameters()]
    unit.zero_grad()
    expected.square().sum().backward()
    expected_grads = [reference_x.grad] + [parameter.grad for parameter in unit.parameters()]
    for got_grad, expected_grad in zip(got_grads, expected_grads):
        torch.testing.assert_close(got_grad, expected_grad, rtol=1e-10, atol=1e-12)


def test_inalu_retrieves_the_sign_of_a_product() -> None:
    unit = iNALU(3, 1)
    with torch.no_grad():
        unit.mul.weight_hat.copy_(torch.tensor([[SATURATED, SATURATED, 0.0]]))
        unit.mul.gate_hat.copy_(torch.tensor([[SATURATED, SATURATED, -SATURATED]]))
        unit.gate.fill_(-SATURATED)
    x = torch.tensor([[-2.0, 3.0, -7.0], [-2.0, -3.0, 5.0], [4.0, 0.5, -1.0]])
    torch.testing.assert_close(unit(x).squeeze(-1), x[:, 0] * x[:, 1], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", [NPU, RealNPU])
def test_power_units_multiply_negative_inputs_and_ignore_irrelevant_ones(cls) -> None:
    unit = cls(3, 2)
    with torch.no_grad():
        unit.real_weight.copy_(torch.tensor([[1.0, 1.0, 0.0], [2.0, 0.0, 5.0]]))
        unit.relevance.copy_(torch.tensor([1.0, 1.0, 0.0]))
    x = torch.tensor([[-2.0, 3.0, -7.0], [1.5, -4.0, 9.0]])
    expected = torch.stack([x[:, 0] * x[:, 1], x[:, 0] ** 2], -1)
    torch.testing.assert_close(unit(x), expected, rtol=1e-5, atol=1e-5)


# --- numerics --------------------------------------------------------------------------------------


def _unit(cls, in_features: int, out_features: int, ensemble: int | None = None):
    torch.manual_seed(hash(cls.__name__) % 1000)
    return cls(in_features, out_features, ensemble=ensemble)


def _assert_finite_output_and_gradients(unit, x: torch.Tensor, allow_inf: bool = False) -> None:
    x = x.clone().requires_grad_(True)
    unit.zero_grad()
    y = unit(x)
    y.sum().backward()
    check = (lambda t: not torch.isnan(t).any()) if allow_inf else (lambda t: torch.isfinite(t).all())
    assert check(y), f"{type(unit).__name__} output {y}"
    assert check(x.grad), f"{type(unit).__name__} input gradient {x.grad}"
    for name, parameter in unit.named_parameters():
        assert parameter.grad is not None and check(parameter.grad), f"{type(unit).__name__}.{name} gradient"


@pytest.mark.parametrize("cls", UNITS)
def test_gradients_are_finite_at_zero(cls) -> None:
    unit = _unit(cls, 4, 3)
    _assert_finite_output_and_gradients(unit, torch.zeros(5, 4))
    with torch.no_grad():  # a weight exactly 1 makes an NMU term exactly 0 at x = 0
        for parameter in unit.parameters():
            parameter.fill_(1.0)
    _assert_finite_output_and_gradients(unit, torch.tensor([[0.0, 2.0, -3.0, 0.5], [0.0, 0.0, 1.0, 1.0]]))


@pytest.fixture(params=["host reads", "device route"])
def product_route(request, monkeypatch) -> str:
    """Runs an NMU product test on the CPU twice: as the CPU runs it (deciding between the plain and the
    log-domain route from values read on the host) and down the accelerators' route, which computes
    both for every output and never reads a value on the host."""
    if request.param == "device route":
        monkeypatch.setattr(product, "reads_on_host", lambda tensor: False)
    return request.param


def test_nmu_gradient_at_a_single_zero_term_is_the_product_of_the_others(product_route) -> None:
    unit = NMU(3, 1)
    with torch.no_grad():
        unit.weight.fill_(1.0)
    x = torch.tensor([[0.0, 2.0, -3.0]], requires_grad=True)
    unit(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.tensor([[-6.0, 0.0, 0.0]]))
    # dy/dW_0 = (x_0 - 1) * x_1 * x_2 = 6; the other two terms see the zero
    torch.testing.assert_close(unit.weight.grad, torch.tensor([[6.0, 0.0, 0.0]]))


BOUNDED = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)
ANY_FINITE = st.floats(allow_nan=False, allow_infinity=False, width=32)


def float32_values(*values: float) -> st.SearchStrategy[float]:
    """One of ``values``, each rounded to float32 first (hypothesis refuses, under numpy 1.x, an array element that
    float32 does not hold exactly, as 3.4e38 or 1e-30)."""
    return st.sampled_from([float(np.float32(value)) for value in values])


@pytest.mark.parametrize("cls", UNITS)
@settings(max_examples=30, deadline=None)
@given(values=arrays(np.float32, (4, 3), elements=BOUNDED | float32_values(0.0, 1e6, -1e6)))
def test_outputs_and_gradients_finite_up_to_1e6(cls, values: np.ndarray) -> None:
    _assert_finite_output_and_gradients(_unit(cls, 3, 2), torch.from_numpy(values))


@pytest.mark.parametrize("cls", GUARDED_UNITS)
@settings(max_examples=30, deadline=None)
@given(values=arrays(np.float32, (4, 3), elements=ANY_FINITE | float32_values(3.4e38, -3.4e38, 0.0)))
def test_never_nan_for_any_finite_input(cls, values: np.ndarray) -> None:
    _assert_finite_output_and_gradients(_unit(cls, 3, 2), torch.from_numpy(values), allow_inf=True)


@pytest.mark.parametrize("cls", [NALU, GatedNAUNMU])
@settings(max_examples=40, deadline=None)
@given(
    values=arrays(np.float32, (4, 3), elements=ANY_FINITE | float32_values(3.4e38, -3.4e38, 0.0)),
    gate=arrays(np.float32, (2, 3), elements=st.floats(-100.0, 100.0, width=32) | float32_values(10.0, -10.0)),
)
def test_a_gate_trained_beyond_its_initial_range_gives_no_nan_for_any_finite_input(cls, values, gate) -> None:
    """The input bound kept sums with weights in [-1, 1] finite, but the gate's weights are unbounded: at G = ±10 inputs
    of 3e38 made the gate logits inf - inf = NaN. (The weights' gradients, sums over the batch, may overflow there.)"""
    unit = _unit(cls, 3, 2)
    with torch.no_grad():
        unit.gate.copy_(torch.from_numpy(gate))
    x = torch.from_numpy(values).requires_grad_(True)
    y = unit(x)
    y.sum().backward()
    assert not torch.isnan(y).any(), y
    assert x.grad is not None and not torch.isnan(x.grad).any(), x.grad


@pytest.mark.parametrize("cls", [NALU, GatedNAUNMU])
def test_one_members_huge_gate_bounds_only_its_own_inputs(cls) -> None:
    """The gate-scaled input bound took the largest gate weight of all members: member 0's diverged gate clamped
    member 1's inputs (its gate logit 0.85 in the ensemble, 1 alone)."""
    ensemble = cls(2, 1, ensemble=2)
    with torch.no_grad():
        ensemble.gate[0].fill_(1e20)
        ensemble.gate[1].copy_(torch.tensor([[1e-18, 0.0]]))
    x = torch.tensor([[[1e18, 0.0]]]).expand(2, 1, 2)
    torch.testing.assert_close(input_gate(x, ensemble.gate, 2)[1], torch.sigmoid(torch.ones(1, 1)))  # (the units' gate)
    torch.testing.assert_close(ensemble(x)[1], ensemble.member(1)(x[1]), rtol=0.0, atol=0.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=arrays(np.float64, (3, 4), elements=st.floats(-30, 30, allow_nan=False) | st.just(0.0)),
    weights=arrays(np.float64, (2, 4), elements=st.floats(0, 1) | st.sampled_from([0.0, 1.0])),
)
def test_multiplicative_product_matches_the_definition_and_its_gradient(product_route, values, weights) -> None:
    x = torch.from_numpy(values).requires_grad_(True)
    w = torch.from_numpy(weights).requires_grad_(True)
    seed = torch.arange(1.0, 7.0, dtype=torch.float64).reshape(3, 2)
    expected, expected_grad_x, expected_grad_w = (t[0] for t in exact_nmu(x.detach()[None], w.detach()[None], seed[None]))
    got = multiplicative_product(x, w)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-300)
    (got * seed).sum().backward()
    torch.testing.assert_close(x.grad, expected_grad_x, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(w.grad, expected_grad_w, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    "x_shape, weight_shape",
    [
        ([2, 6, 4], [3, 1, 4]),  # 2 members against 3: returned [2, 6, 1] from rows regrouped across members
        ([4, 6], [2, 3]),  # another in: torch's reshape error
        ([3, 6, 4], [3, 1, 5]),
        ([4], [3, 1, 4]),
        ([4], [4]),
    ],
)
def test_multiplicative_product_names_shapes_that_do_not_fit(x_shape, weight_shape) -> None:
    message = f"multiplicative_product: x of shape {x_shape} does not fit weight of shape {weight_shape}"
    with pytest.raises(ValueError, match=re.escape(message)):
        multiplicative_product(torch.rand(x_shape), torch.rand(weight_shape))


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_zero_terms_gradient_is_0_where_the_others_product_passes_the_cap_in_every_route(product_route, create_graph):
    """As a saturated output's: the documented rule (the first-order and the differentiable routes agree, NaN-free)."""
    x = torch.tensor([[0.0, 1e22], [0.0, 1e20]], requires_grad=True)
    w = torch.ones(1, 2, requires_grad=True)
    grad_x, grad_w = torch.autograd.grad(multiplicative_product(x, w).sum(), (x, w), create_graph=create_graph)
    torch.testing.assert_close(grad_x.detach(), torch.tensor([[0.0, 0.0], [1e20, 0.0]]), rtol=1e-6, atol=0.0)
    torch.testing.assert_close(grad_w.detach(), torch.tensor([[-1e20, 0.0]]), rtol=1e-6, atol=0.0)


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_the_product_refuses_half_precision_outside_autocast_and_upcasts_under_it(half) -> None:
    """A float16 product of 1000 · 1000 was inf, its gradients too, silently."""
    x, w = torch.tensor([[1000.0, 1000.0]], dtype=half), torch.ones(1, 2, dtype=half)
    with pytest.raises(ValueError, match=f"computes in float32 or float64, got {half} and {half}"):
        multiplicative_product(x, w)
    with pytest.raises(ValueError, match=f"got {half} \\(its products"):
        multiplicative_product(x.float(), w)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert multiplicative_product(x, w).item() == 1e6


def test_multiplicative_product_gradient_beyond_float_range_is_capped_not_inf(product_route) -> None:
    # y = 1e-30 · (1e6)^7 = 1e12 is fine, but ∂y/∂x_0 = (1e6)^7 = 1e42 exceeds float32
    x = torch.tensor([[1e-30] + [1e6] * 7], requires_grad=True)
    w = torch.ones(1, 8, requires_grad=True)
    y = multiplicative_product(x, w)
    torch.testing.assert_close(y, torch.tensor([[1e12]]), rtol=1e-5, atol=0.0)
    y.sum().backward()
    assert torch.isfinite(x.grad).all() and torch.isfinite(w.grad).all()
    torch.testing.assert_close(x.grad[0, 0], torch.tensor(math.exp(MAX_LOG_MAGNITUDE)), rtol=1e-5, atol=0.0)
    torch.testing.assert_close(x.grad[0, 1:], torch.full((7,), 1e6), rtol=1e-5, atol=0.0)


def test_multiplicative_product_is_exact_when_a_partial_product_underflows(product_route) -> None:
    """Partial products below the smallest normal number lose digits even when the result is normal (or
    are themselves the subnormal result): such products take the exact log-domain route."""
    x = torch.tensor([[1e-20, 3e-21, 7e6, 1e6, 1e6, 1e6, 1e6]], requires_grad=True)
    y = multiplicative_product(x, torch.ones(1, 7))
    torch.testing.assert_close(y.double(), x.detach().double().prod().reshape(1, 1), rtol=1e-6, atol=0.0)
    tiny = torch.tensor([[4.9e-324, 1.5, 1.5, 1.5]], dtype=torch.float64, requires_grad=True)
    multiplicative_product(tiny, torch.ones(1, 4, dtype=torch.float64)).sum().backward()
    torch.testing.assert_close(tiny.grad[0, 0], torch.tensor(1.5**3, dtype=torch.float64), rtol=1e-12, atol=0.0)


def test_multiplicative_product_gradient_for_one_input_only(product_route) -> None:
    torch.manual_seed(4)
    x, w = torch.randn(5, 4, dtype=torch.float64), torch.rand(3, 4, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda weight: multiplicative_product(x, weight), (w.requires_grad_(True),))
    assert torch.autograd.gradcheck(lambda inputs: multiplicative_product(inputs, w.detach()), (x.requires_grad_(True),))


def test_multiplicative_product_saturates_instead_of_overflowing(product_route) -> None:
    x = torch.full((2, 40), 1e6, requires_grad=True)
    w = torch.ones(1, 40, requires_grad=True)
    y = multiplicative_product(x, w)
    assert torch.allclose(y, torch.tensor(math.exp(MAX_LOG_MAGNITUDE)))
    y.sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x)) and torch.equal(w.grad, torch.zeros_like(w))


def test_multiplicative_product_is_the_same_in_chunks(monkeypatch) -> None:
    torch.manual_seed(3)
    x, w = torch.randn(3, 17, 5, dtype=torch.float64), torch.rand(3, 4, 5, dtype=torch.float64)
    x[0, 2, 1], w[0, :, 1] = 0.0, 1.0
    whole = torch.autograd.functional.vjp(multiplicative_product, (x, w), torch.ones(3, 17, 4, dtype=torch.float64))
    monkeypatch.setattr(product, "CHUNK_ELEMENTS", 7)
    chunked = torch.autograd.functional.vjp(multiplicative_product, (x, w), torch.ones(3, 17, 4, dtype=torch.float64))
    torch.testing.assert_close(chunked, whole, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("ensemble", [None, 3])
@pytest.mark.parametrize("cls", UNITS)
def test_no_unit_reads_a_value_on_the_host_off_the_cpu(cls, ensemble) -> None:
    """On an accelerator a host read would stall the queue of kernels. The meta device holds shapes only,
    and any read of a value there raises: forward, backward, regulariser, sparsity error and weight
    clamps all run without one."""
    unit = _unit(cls, 4, 3, ensemble=ensemble).to("meta")
    x = torch.randn(*([3] if ensemble else []), 7, 4, device="meta")
    out = unit(x)
    assert out.shape == (*x.shape[:-1], 3)
    (out.sum() + unit.regularization().sum()).backward()
    unit.sparsity_error()
    if hasattr(unit, "clamp_weights_"):
        unit.clamp_weights_()


def _reset_every_module(module: torch.nn.Module, seed: int) -> None:
    """Call every submodule's ``reset_parameters``, parents first, from ``seed`` (torch's deferred initialisation)."""
    torch.manual_seed(seed)
    for submodule in module.modules():
        reset = getattr(submodule, "reset_parameters", None)
        if reset is not None:
            reset()


@pytest.mark.parametrize("ensemble", [None, 3])
@pytest.mark.parametrize("cls", UNITS)
def test_a_unit_built_on_the_meta_device_is_initialised_by_reset_parameters(cls, ensemble) -> None:
    """A unit built on the meta device (shapes only, nothing drawn) and materialised by ``to_empty`` gets every parameter
    from its modules' ``reset_parameters``: the same values as a unit built on the CPU and reset from the same seed, none
    left at the NaN planted in the empty memory (the NAC's initial range was computed on the meta device and failed
    there; the NPUs' and the gates' initialisation ran only in the constructor)."""
    with torch.device("meta"):
        unit = _unit(cls, 4, 3, ensemble=ensemble)
    unit.to_empty(device="cpu")
    with torch.no_grad():
        for parameter in unit.parameters():
            parameter.fill_(math.nan)
    _reset_every_module(unit, seed=5)
    built = _unit(cls, 4, 3, ensemble=ensemble)
    _reset_every_module(built, seed=5)
    torch.testing.assert_close(unit.state_dict(), built.state_dict(), rtol=0.0, atol=0.0)


# --- ensembles ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", UNITS)
def test_ensemble_members_are_independent(cls) -> None:
    members = []
    for seed in range(3):
        torch.manual_seed(100 + seed)
        members.append(cls(4, 2))
    ensemble = cls(4, 2, ensemble=3)
    for index, member in enumerate(members):
        ensemble.set_member(index, member)
    torch.manual_seed(7)
    x, target = torch.rand(3, 5, 6, 4) + 0.5, torch.randn(3, 5, 6, 2)
    loss = ((ensemble(x) - target) ** 2).mean(dim=(1, 2, 3)).sum() + ensemble.regularization().sum()
    loss.backward()
    for index, member in enumerate(members):
        member_loss = ((member(x[index]) - target[index]) ** 2).mean() + member.regularization()
        member_loss.backward()
        torch.testing.assert_close(ensemble(x)[index], member(x[index]), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(ensemble.sparsity_error()[index], member.sparsity_error())
        batched = dict(ensemble.named_parameters())
        for name, parameter in member.named_parameters():
            torch.testing.assert_close(batched[name].grad[index], parameter.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("cls", UNITS)
def test_member_extracts_a_copy_with_that_members_parameters(cls) -> None:
    ensemble = _unit(cls, 3, 2, ensemble=4)
    member = ensemble.member(2)
    assert member.ensemble is None
    x = torch.randn(4, 5, 3)
    before = ensemble(x)[2].detach().clone()
    torch.testing.assert_close(member(x[2]), before)
    with torch.no_grad():
        for parameter in member.parameters():
            parameter.add_(0.3)
    torch.testing.assert_close(ensemble(x)[2], before)  # a copy: editing the member leaves the ensemble alone
    assert not torch.allclose(member(x[2]), before)
    ensemble_storage = {parameter.untyped_storage().data_ptr() for parameter in ensemble.parameters()}
    assert not ensemble_storage & {parameter.untyped_storage().data_ptr() for parameter in member.parameters()}
    with pytest.raises(IndexError):
        ensemble.member(4)
    with pytest.raises(ValueError, match="ensemble"):
        member.member(0)
    torch.testing.assert_close(ensemble.member(np.int64(2))(x[2]), before)  # (numpy's ints are ints)
    for index in (True, 1.0):  # (True failed in load_state_dict, 1.0 in torch's indexing)
        with pytest.raises(TypeError, match=f"member\\(\\) takes a member's int index, got {type(index).__name__}"):
            ensemble.member(index)
        with pytest.raises(TypeError, match="set_member\\(\\) takes a member's int index"):
            ensemble.set_member(index, _unit(cls, 3, 2))


def test_ensemble_linear_names_shapes_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match=r"x of shape \[4, 3\] does not fit weight of shape \[2, 5, 3\]"):
        ensemble_linear(torch.randn(4, 3), torch.randn(2, 5, 3))  # (was torch's bmm error)
    with pytest.raises(ValueError, match=r"x of shape \[3\] does not fit"):
        ensemble_linear(torch.randn(3), torch.randn(2, 5, 3))  # (was einops')
    assert ensemble_linear(torch.randn(2, 4, 3), torch.randn(2, 5, 3)).shape == (2, 4, 5)


@pytest.mark.parametrize(
    "ensemble, unit, option",
    [
        (NALU(3, 2, ensemble=4), NALU(3, 2, shared_weights=False), "shared_weights"),
        (NALU(3, 2, ensemble=4, shared_weights=False), NALU(3, 2), "shared_weights"),
        (NACMul(3, 2, ensemble=4), NACMul(3, 2, eps=0.5), "eps"),
        (NPU(3, 2, ensemble=4, eps=1e-3), NPU(3, 2), "eps"),
    ],
)
def test_set_member_refuses_a_unit_built_with_other_options_and_changes_nothing(ensemble, unit, option) -> None:
    """A unit of other options computes another function from the same parameters: it was copied in (shared NALU
    weights, NACMul's eps) or raised a bare KeyError after overwriting part of the member."""
    before = {key: value.clone() for key, value in ensemble.state_dict().items()}
    with pytest.raises(ValueError, match=rf"^set_member: the {type(unit).__name__} copied in has {option}="):
        ensemble.set_member(0, unit)
    assert all(torch.equal(value, before[key]) for key, value in ensemble.state_dict().items())


def test_set_member_takes_a_unit_that_differs_only_in_how_it_computes() -> None:
    ensemble, unit = NMU(3, 2, ensemble=2), NMU(3, 2, compiled=True)
    ensemble.set_member(1, unit)
    torch.testing.assert_close(ensemble.member(1).weight, unit.weight)


@pytest.mark.parametrize("index", [4, -5])
def test_set_member_names_an_index_out_of_range_as_member_does(index) -> None:
    ensemble = NALU(3, 2, ensemble=4)
    for call in (lambda: ensemble.member(index), lambda: ensemble.set_member(index, NALU(3, 2))):
        with pytest.raises(IndexError, match=rf"^NALU: member {index} out of range for ensemble=4$"):
            call()
    with pytest.raises(ValueError, match=r"^NALU: set_member\(\) needs an ensemble unit"):
        NALU(3, 2).set_member(0, NALU(3, 2))


@pytest.mark.parametrize("cls", UNITS)
def test_member_leaves_the_global_random_state_alone(cls) -> None:
    ensemble = _unit(cls, 3, 2, ensemble=4)
    before = torch.random.get_rng_state()
    ensemble.member(1)  # (its initialisation, overwritten at once, drew from torch's global generator)
    assert torch.equal(torch.random.get_rng_state(), before)


@pytest.mark.parametrize("cls", UNITS)
def test_regularization_and_sparsity_error_have_one_value_per_member(cls) -> None:
    ensemble, single = _unit(cls, 3, 2, ensemble=5), _unit(cls, 3, 2)
    assert ensemble.regularization().shape == (5,) and single.regularization().shape == ()
    assert ensemble.sparsity_error().shape == (5,) and single.sparsity_error().shape == ()
    assert bool(((ensemble.sparsity_error() >= 0) & (ensemble.sparsity_error() <= 0.5)).all())


# --- shapes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", UNITS)
def test_shape_mismatch_names_expected_and_received_shapes(cls) -> None:
    with pytest.raises(ValueError, match=r"expected input of shape \[\.\.\., 3\], got \[8, 4\]"):
        _unit(cls, 3, 2)(torch.zeros(8, 4))
    ensemble = _unit(cls, 3, 2, ensemble=5)
    with pytest.raises(ValueError, match=r"expected input of shape \[5, \.\.\., 3\], got \[4, 8, 3\]"):
        ensemble(torch.zeros(4, 8, 3))
    shared = r"got \[8, 3\] \(one batch for every member: x\.expand\(5, \*x\.shape\)\)$"
    with pytest.raises(ValueError, match=shared):
        ensemble(torch.zeros(8, 3))
    assert ensemble(torch.zeros(8, 3).expand(5, 8, 3)).shape == (5, 8, 2)
    with pytest.raises(ValueError, match=r"got \[5, 8, 4\]$"):  # (no member's batch: no hint)
        ensemble(torch.zeros(5, 8, 4))
    with pytest.raises(ValueError, match=r"got \[3\]"):
        ensemble(torch.zeros(3))
    with pytest.raises(ValueError, match="floating-point"):
        _unit(cls, 3, 2)(torch.zeros(8, 3, dtype=torch.long))


@pytest.mark.parametrize("cls", UNITS)
def test_an_input_of_another_dtype_than_the_unit_is_named_with_both(cls) -> None:
    unit = _unit(cls, 3, 2)
    with pytest.raises(
        ValueError, match=rf"the input has dtype torch.float64 but the {cls.__name__}'s parameters are torch.float32"
    ):
        unit(torch.ones(8, 3, dtype=torch.float64))
    assert unit.double()(torch.ones(8, 3, dtype=torch.float64)).dtype == torch.float64
    with torch.autocast("cpu", dtype=torch.bfloat16):  # half inputs under autocast are computed in float32
        assert unit.float()(torch.ones(8, 3, dtype=torch.bfloat16)).dtype == torch.float32


@pytest.mark.parametrize("cls", GUARDED_UNITS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_half_precision_input_is_told_to_be_converted_not_the_unit(cls, dtype) -> None:
    """The message told to convert the unit (module.to(torch.bfloat16)), which the units then refused."""
    unit = _unit(cls, 3, 2)
    x = torch.ones(8, 3, dtype=dtype)
    with pytest.raises(ValueError, match=re.escape(f"the input has dtype {dtype}, but the {cls.__name__} computes in float32 "
                                                   "or float64 (its parameters are torch.float32): convert the input "
                                                   "(x.to(torch.float32))")):  # fmt: skip
        unit(x)
    assert unit(x.to(torch.float32)).dtype == torch.float32


def test_invalid_construction_is_rejected() -> None:
    with pytest.raises(ValueError, match="in_features"):
        NAU(0, 2)
    with pytest.raises(ValueError, match="ensemble"):
        NMU(2, 2, ensemble=0)
    with pytest.raises(ValueError, match="eps"):
        NACMul(2, 2, eps=0.0)
    for cls in (NALU, NACMul, NPU, RealNPU):  # NALU took any eps (log(0), NaN); the others infinity
        for eps in (0.0, -1.0, math.nan, math.inf):
            with pytest.raises(ValueError, match=rf"{cls.__name__}: eps must be a finite number above 0, got {eps}"):
                cls(2, 2, eps=eps)
    with pytest.raises(ValueError, match="set_member"):
        NAU(2, 2, ensemble=2).set_member(0, NMU(2, 2))


EPS_UNITS = [NALU, NACMul, NPU, RealNPU]


@pytest.mark.parametrize("cls", EPS_UNITS)
@settings(max_examples=20, deadline=None)
@given(eps=st.floats(min_value=5e-324, max_value=MIN_EPS, exclude_max=True) | st.sampled_from([1e-50, 1e-20]))
def test_an_eps_below_the_minimum_is_refused(cls, eps: float) -> None:
    """1e-50 is 0 in float32: NACMul and NALU returned log(0) = -inf terms and NaN gradients at x = 0; with 1e-20 the
    gradient of log(|x| + eps), up to 1e20, overflowed once multiplied by an output above about 3e18."""
    with pytest.raises(ValueError, match=rf"^{cls.__name__}: eps must be at least 1e-12: the gradient of log\(\|x\| \+ eps\)"):
        cls(3, 2, eps=eps)


@pytest.mark.parametrize("cls", EPS_UNITS)
def test_the_smallest_eps_a_unit_takes_keeps_its_output_finite_at_zero(cls) -> None:
    assert bool(torch.isfinite(cls(3, 2, eps=MIN_EPS)(torch.tensor([[0.0, 2.0, 3.0]]))).all())


def _dividing(unit: torch.nn.Module) -> torch.nn.Module:
    """``unit`` with every parameter -1 (every effective weight negative) and every NPU input relevant (relevance 1):
    each output divides by every input's ``|x| + eps``, so an input of 0 makes the outputs (and the logarithm's
    derivative) as large as eps allows."""
    with torch.no_grad():
        for name, parameter in unit.named_parameters():
            parameter.fill_(1.0 if name == "relevance" else -1.0)
    return unit


@pytest.mark.parametrize("cls", EPS_UNITS)
@settings(max_examples=30, deadline=None)
@given(values=arrays(np.float32, (4, 3), elements=BOUNDED | float32_values(0.0, 1e-30, 1e6)))
def test_the_smallest_eps_keeps_gradients_finite_when_a_unit_divides_by_zero(cls, values: np.ndarray) -> None:
    """With eps = 1.2e-38 (float32's smallest normal number, the minimum before) an output above about 4 overflowed the
    input gradient at x = 0, ``output · |W| / eps``, to inf, and abs's backward turned it into NaN (inf · sign(0))."""
    _assert_finite_output_and_gradients(_dividing(cls(3, 2, eps=MIN_EPS)), torch.from_numpy(values))


@pytest.mark.parametrize("cls", UNITS)
def test_a_unit_takes_numpy_sizes_and_stores_python_ints(cls) -> None:
    unit = cls(np.int64(3), np.int32(2), ensemble=np.int64(4))  # each was refused as "must be a positive int"
    assert (unit.in_features, unit.out_features, unit.ensemble) == (3, 2, 4)
    assert all(type(size) is int for size in (unit.in_features, unit.out_features, unit.ensemble))
    assert unit(torch.ones(4, 5, 3)).shape == (4, 5, 2) and unit.member(1).in_features == 3
    assert "in_features=3, out_features=2, ensemble=4" in repr(unit)


@pytest.mark.parametrize("size", [np.True_, True, 2.0, np.float64(2.0), np.int64(0)])
def test_a_unit_still_refuses_a_size_that_is_no_int_of_at_least_1(size) -> None:
    for sizes, name in (((size, 2), "in_features"), ((2, size), "out_features")):
        with pytest.raises(ValueError, match=rf"^NAU: {name} must be an int of at least 1, got "):
            NAU(*sizes)
    with pytest.raises(ValueError, match=r"^NMU: ensemble must be an int of at least 1, got "):
        NMU(2, 2, ensemble=size)


@pytest.mark.parametrize("cls", UNITS)
def test_an_empty_batch_gives_an_empty_output(cls) -> None:
    assert cls(3, 2)(torch.zeros(0, 3)).shape == (0, 2)
    out = cls(3, 2, ensemble=4)(torch.zeros(4, 0, 3))
    out.sum().backward()
    assert out.shape == (4, 0, 2)


@pytest.mark.parametrize("cls", UNITS)
def test_a_misspelled_option_is_refused_as_python_refuses_one(cls) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'ensmble'"):  # not silently one unit
        cls(3, 2, ensmble=4)
    assert cls(3, 2, ensemble=4).ensemble == 4
    if "eps" not in inspect.signature(cls.__init__).parameters:
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'eps'"):  # not a bad value of an option it lacks
            cls(3, 2, eps=0)


@pytest.mark.parametrize("cls", UNITS)
def test_units_compute_in_float32_under_autocast(cls) -> None:
    unit, x = _unit(cls, 3, 2), torch.rand(8, 3) * 1000 + 1000
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mixed = unit(x)
        mixed_from_half = unit(x.bfloat16())
    assert mixed.dtype == torch.float32 and mixed_from_half.dtype == torch.float32
    torch.testing.assert_close(mixed, unit(x))
    torch.testing.assert_close(mixed_from_half, unit(x.bfloat16().float()))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("cls", UNITS)
def test_a_unit_in_half_precision_is_refused(cls, dtype) -> None:
    # unit.half() made the NMU and NPUs give inf outputs and gradients from finite inputs, the GatedNAUNMU NaN
    unit, x = _unit(cls, 2, 1).to(dtype), torch.full((1, 2), 1000.0)
    message = rf"{cls.__name__}: the arithmetic units compute in float32 or float64, its parameters are {dtype}; .*autocast"
    with pytest.raises(ValueError, match=message):
        unit(x.to(dtype))
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(ValueError, match=message):
        unit(x)
    assert torch.isfinite(unit.float()(x)).all()  # in float32, as autocast keeps it


def test_plain_units_accept_any_number_of_leading_dimensions() -> None:
    unit = _unit(NMU, 3, 2)
    x = torch.rand(2, 3, 4, 3)
    torch.testing.assert_close(unit(x)[1, 2], unit(x[1, 2]))
    assert unit(torch.rand(3)).shape == (2,)


# --- regulariser, sparsity error, initialisation, schedule -----------------------------------------


def test_nau_and_nmu_regularizer_and_sparsity_error_values() -> None:
    nau, nmu = NAU(2, 2), NMU(2, 2)
    with torch.no_grad():
        nau.weight.copy_(torch.tensor([[-1.0, 0.0], [1.0, 0.0]]))
        nmu.weight.copy_(torch.tensor([[0.5, 1.0], [0.0, 0.25]]))
    assert nau.regularization().item() == 0.0 and nau.sparsity_error().item() == 0.0
    assert nmu.regularization().item() == pytest.approx((0.5 + 0.25) / 4)
    assert nmu.sparsity_error().item() == pytest.approx(0.5)
    with torch.no_grad():
        nau.weight.copy_(torch.tensor([[2.0, -0.3], [0.9, 0.0]]))
    assert nau.sparsity_error().item() == pytest.approx(0.3)
    nau.clamp_weights_()
    assert nau.weight.max().item() == 1.0


def test_initialisations_follow_the_papers() -> None:
    torch.manual_seed(0)
    nac = NAC(200, 200)
    assert nac.weight().mean().abs().item() < 0.005
    assert nac.weight().var().item() == pytest.approx(2 / 400, rel=0.05)
    assert nac_glorot_matched_range(1, 1) == 8.0  # Glorot variance 1 is beyond tanh·σ's 1/2
    nau, bound = NAU(100, 2), math.sqrt(3) * math.sqrt(2 / 102)  # r = min(0.5, √3·√(2/(in+out)))
    assert bound < nau.weight.abs().max().item() / 0.97 and nau.weight.abs().max().item() <= bound
    assert NAU(2, 2).weight.abs().max().item() <= 0.5
    nmu = NMU(200, 200)
    assert nmu.weight.min().item() >= 0.25 and nmu.weight.max().item() <= 0.75
    assert nmu.weight.mean().item() == pytest.approx(0.5, abs=0.005)


def test_gated_nau_nmu_with_saturated_gate_takes_the_right_path() -> None:
    unit = GatedNAUNMU(3, 1)
    with torch.no_grad():
        unit.add.weight.copy_(torch.tensor([[1.0, -1.0, 0.0]]))
        unit.mul.weight.copy_(torch.tensor([[1.0, 0.0, 1.0]]))
    x = torch.empty(50, 3).uniform_(1.0, 5.0)
    with torch.no_grad():
        unit.gate.fill_(SATURATED)
    torch.testing.assert_close(unit(x).squeeze(-1), x[:, 0] - x[:, 1])
    with torch.no_grad():
        unit.gate.fill_(-SATURATED)
    torch.testing.assert_close(unit(x).squeeze(-1), x[:, 0] * x[:, 2])


def test_inalu_and_npu_regularizers() -> None:
    inalu = iNALU(2, 2)
    with torch.no_grad():
        for parameter in inalu.parameters():
            parameter.fill_(25.0)
    assert inalu.regularization().item() == 0.0  # every raw parameter saturated beyond t = 20
    with torch.no_grad():
        for parameter in inalu.parameters():
            parameter.fill_(5.0)
    assert inalu.regularization().item() == pytest.approx(15.0 / 20.0)
    npu = NPU(2, 3)
    with torch.no_grad():
        npu.real_weight.fill_(-2.0)
        npu.imag_weight.fill_(0.0)
        npu.relevance.fill_(1.0)
    assert npu.regularization().item() == pytest.approx((6 * 2.0 + 2 * 1.0) / (6 + 6 + 2))


@settings(max_examples=50, deadline=None)
@given(step=st.floats(-1e7, 1e7, allow_nan=False))
def test_regularizer_warmup_is_a_clamped_linear_ramp(step: float) -> None:
    schedule = RegularizerWarmup(weight=10.0, start=1e6, end=2e6)
    value = schedule(step)
    assert 0.0 <= value <= 10.0
    if step <= 1e6:
        assert value == 0.0
    elif step >= 2e6:
        assert value == 10.0
    else:
        assert value == pytest.approx(10.0 * (step - 1e6) / 1e6)


@given(
    step=st.integers(0, 6_000_000),
    weight=st.floats(0.0, 100.0),
    start=st.floats(0.0, 3e6),
    length=st.sampled_from([0.0, 1.0, 4.5e4, 1e6]),
)
def test_the_warmup_of_a_step_held_in_a_tensor_is_the_warmup_of_the_number(step, weight, start, length) -> None:
    schedule = RegularizerWarmup(weight, start, start + length)
    value = schedule.at(torch.tensor(step))
    assert value.dtype == torch.float64 and value.dim() == 0 and value.item() == schedule(step)


@pytest.mark.parametrize(
    "step, described",
    [
        (torch.tensor(True), "torch.bool of shape []"),  # read as step 1
        (torch.tensor([5, 6]), "torch.int64 of shape [2]"),  # gave two weights
        (torch.tensor([5.0]), "torch.float32 of shape [1]"),
        (torch.tensor(5 + 0j), "torch.complex64 of shape []"),
        (5, "int"),  # (failed on .double())
    ],
)
def test_the_warmup_at_a_tensor_step_refuses_anything_but_a_0d_real_tensor(step, described) -> None:
    refused = f"RegularizerWarmup.at: the step must be a 0-d tensor of a real number, got {described}"
    with pytest.raises(ValueError, match=rf"^{re.escape(refused)}$"):
        RegularizerWarmup(1.0, 0, 10).at(step)


def test_regularizer_warmup_edges() -> None:
    assert RegularizerWarmup(0.01, 5e3, 5e4)(27_500) == pytest.approx(0.005)
    assert RegularizerWarmup(1.0, 10, 10)(9) == 0.0 and RegularizerWarmup(1.0, 10, 10)(10) == 1.0
    for step in (float("nan"), "5", None):  # NaN gave 0.0: the regulariser silently off
        with pytest.raises(ValueError, match="RegularizerWarmup: the step must be a number, got"):
            RegularizerWarmup(1.0, 0, 10)(step)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="end"):
        RegularizerWarmup(1.0, 10, 5)


@pytest.mark.parametrize(
    "weight, start, end, refused",
    [
        (math.nan, 0, 10, "weight must be a finite number at least 0, got nan"),  # every value was nan
        (math.inf, 0, 10, "weight must be a finite number at least 0, got inf"),  # nan at step 0 (inf · 0)
        (-1.0, 0, 10, "weight must be a finite number at least 0, got -1.0"),
        ("1", 0, 10, "weight must be a finite number at least 0, got '1'"),
        (1.0, math.nan, 10, "start must be a finite number, got nan"),  # 0 forever
        (1.0, -math.inf, 10, "start must be a finite number, got -inf"),
        (1.0, 0, math.inf, "end must be a finite number, got inf"),  # 0 forever
        (1.0, 0, math.nan, "end must be a finite number, got nan"),
    ],
)
def test_regularizer_warmup_refuses_a_weight_start_or_end_that_is_not_a_finite_number(weight, start, end, refused) -> None:
    with pytest.raises(ValueError, match=rf"^RegularizerWarmup: {re.escape(refused)}$"):
        RegularizerWarmup(weight, start, end)


def test_units_clamp_weights_outside_their_range_and_stop_their_gradient() -> None:
    nau, nmu = NAU(3, 1), NMU(3, 1)
    with torch.no_grad():
        nau.weight.copy_(torch.tensor([[1.5, -2.0, 0.5]]))
        nmu.weight.copy_(torch.tensor([[1.5, -0.5, 0.5]]))
    x = torch.tensor([[2.0, 3.0, 4.0]])
    torch.testing.assert_close(nau(x), torch.tensor([[2.0 - 3.0 + 2.0]]))
    torch.testing.assert_close(nmu(x), torch.tensor([[2.0 * 1.0 * 2.5]]))
    nau(x).sum().backward()
    nmu(x).sum().backward()
    assert nau.weight.grad[0, :2].eq(0).all() and nau.weight.grad[0, 2] == 4.0
    assert nmu.weight.grad[0, :2].eq(0).all() and nmu.weight.grad[0, 2] != 0


TORCH_CLAMP = torch.Tensor.clamp


def _clamp_without_gradient_at_bounds(self: torch.Tensor, min: float | None = None, max: float | None = None) -> torch.Tensor:
    """``Tensor.clamp`` to two scalar bounds under torch 2.14's rule: gradient 0 at a bound itself (hardtanh's)."""
    if isinstance(min, float) and isinstance(max, float):
        return torch.nn.functional.hardtanh(self, min, max)
    return TORCH_CLAMP(self, min, max)


@pytest.mark.parametrize("clamp_rule", ["torch's", "torch 2.14's"])
def test_a_weight_projected_onto_a_bound_still_has_its_gradient_there(clamp_rule, monkeypatch) -> None:
    """clamp_weights_ leaves a weight exactly on its bound: the gradient must still reach it there (the subgradient 1
    Madsen & Johansen's units had through torch.clamp), or a weight once at a bound could never leave it. torch 2.14
    made torch.clamp's gradient 0 at the bounds: NMU and NAU weights there got none, and an NPU gate at 0 or 1."""
    if clamp_rule == "torch 2.14's":
        monkeypatch.setattr(torch.Tensor, "clamp", _clamp_without_gradient_at_bounds)
    nau, nmu, npu = NAU(3, 1), NMU(3, 1), NPU(2, 1)
    with torch.no_grad():
        nau.weight.copy_(torch.tensor([[1.0, -1.0, 0.5]]))
        nmu.weight.copy_(torch.tensor([[1.0, 0.0, 0.5]]))
        npu.relevance.copy_(torch.tensor([0.0, 1.0]))
    x = torch.tensor([[2.0, 3.0, 4.0]])
    nau(x).sum().backward()
    nmu(x).sum().backward()
    npu(x[:, :2]).sum().backward()
    torch.testing.assert_close(nau.weight.grad, x)
    # ∂/∂W_i of Π_k (W_k x_k + 1 − W_k) = (x_i − 1) · Π_{k≠i} term_k, terms (2, 1, 2.5)
    torch.testing.assert_close(nmu.weight.grad, torch.tensor([[1.0 * 2.5, 2.0 * 2 * 2.5, 3.0 * 2]]))
    assert npu.relevance.grad.ne(0).all()


# --- float64 references of the published formulas, per ensemble member ---------------------------------------------


def _nac_weight(weight_hat: torch.Tensor, gate_hat: torch.Tensor) -> torch.Tensor:
    """Trask et al. (2018): ``W = tanh(Ŵ) ⊙ σ(M̂)``."""
    return torch.tanh(weight_hat) * torch.sigmoid(gate_hat)


def _nmu_reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``y_j = Π_i (W_ji x_i + 1 − W_ji)``: ``x [N, in]``, ``weight [out, in]`` → ``[N, out]``."""
    return (weight * x[:, None, :] + 1 - weight).prod(-1)


def _npu_reference(x: torch.Tensor, real: torch.Tensor, imag: torch.Tensor, relevance: torch.Tensor, eps: float):
    """Heim et al. (2020) through complex logarithms: ``Re Π_i x̃_i^{W_re + i W_im}`` with ``x̃_i = ĝ_i (|x_i| + ε)
    + 1 − ĝ_i`` carrying the phase ``π ĝ_i`` where ``x_i < 0``."""
    gate = relevance.clamp(0, 1)
    log_x = torch.complex(torch.log(gate * (x.abs() + eps) + 1 - gate), math.pi * gate * (x < 0))
    return torch.exp(log_x.to(torch.complex128) @ torch.complex(real, imag).T).real


def _reference_forward(unit, x: torch.Tensor) -> torch.Tensor:
    """The published formula of an unbatched ``unit`` on ``x [N, in]`` (all float64) → ``[N, out]``."""
    p = {name: value.detach() for name, value in unit.named_parameters()}
    if isinstance(unit, NAU):
        return x @ p["weight"].clamp(-1, 1).T
    if isinstance(unit, NMU):
        return _nmu_reference(x, p["weight"].clamp(0, 1))
    if isinstance(unit, EnsembleLinear):
        return x @ p["weight"].T + p["bias"]
    if isinstance(unit, (NPU, RealNPU)):
        imag = p.get("imag_weight", torch.zeros_like(p["real_weight"]))
        return _npu_reference(x, p["real_weight"], imag, p["relevance"], unit.eps)
    if isinstance(unit, GatedNAUNMU):
        gate = torch.sigmoid(x @ p["gate"].T)
        added = x @ p["add.weight"].clamp(-1, 1).T
        return gate * added + (1 - gate) * _nmu_reference(x, p["mul.weight"].clamp(0, 1))
    if isinstance(unit, iNALU):
        add = _nac_weight(p["add.weight_hat"], p["add.gate_hat"])
        mul = _nac_weight(p["mul.weight_hat"], p["mul.gate_hat"])
        magnitude = torch.exp((torch.log(x.abs().clamp(min=1e-7)) @ mul.T).clamp(max=20))
        sign = _nmu_reference(torch.sign(x), mul.abs())
        gate = torch.sigmoid(p["gate"])
        return gate * (x @ add.T) + (1 - gate) * magnitude * sign
    if isinstance(unit, NALU):
        add = _nac_weight(p["add.weight_hat"], p["add.gate_hat"])
        mul = add if unit.mul is None else _nac_weight(p["mul.weight_hat"], p["mul.gate_hat"])
        gate = torch.sigmoid(x @ p["gate"].T)
        return gate * (x @ add.T) + (1 - gate) * torch.exp(torch.log(x.abs() + unit.eps) @ mul.T)
    weight = _nac_weight(p["weight_hat"], p["gate_hat"])
    if isinstance(unit, NACMul):
        return torch.exp(torch.log(x.abs() + unit.eps) @ weight.T)
    assert isinstance(unit, NAC), type(unit)
    return x @ weight.T


def _reference_regularization(unit) -> torch.Tensor:
    """The published regulariser of an unbatched ``unit`` (Madsen & Johansen 2020: ``mean min(|W|, 1 − |W|)`` of the
    weight in its range; iNALU: ``mean max(20 − |θ|, 0) / 20``; NPU: ``mean |θ|``; the NACs and Linear have none)."""
    p = {name: value.detach() for name, value in unit.named_parameters()}
    if isinstance(unit, (NAU, NMU)):
        magnitude = p["weight"].clamp(NAU.LOWER if isinstance(unit, NAU) else 0, 1).abs()
        return torch.minimum(magnitude, 1 - magnitude).mean()
    if isinstance(unit, GatedNAUNMU):
        return (_reference_regularization(unit.add) + _reference_regularization(unit.mul)) / 2
    everything = torch.cat([value.flatten() for value in p.values()])
    if isinstance(unit, iNALU):
        return ((20 - everything.abs()).clamp(min=0) / 20).mean()
    if isinstance(unit, (NPU, RealNPU)):
        return everything.abs().mean()
    return torch.zeros((), dtype=torch.float64)


def _reference_sparsity_error(unit) -> torch.Tensor:
    """Madsen & Johansen (2019): ``max_i min(|W_i|, |1 − |W_i||)`` over the unit's effective weights."""
    p = {name: value.detach() for name, value in unit.named_parameters()}
    if isinstance(unit, (NAU, NMU)):
        weights = [p["weight"].clamp(NAU.LOWER if isinstance(unit, NAU) else 0, 1)]
    elif isinstance(unit, GatedNAUNMU):
        weights = [p["add.weight"].clamp(-1, 1), p["mul.weight"].clamp(0, 1)]
    elif isinstance(unit, (NPU, RealNPU)):
        weights = [value for name, value in p.items() if name.endswith("_weight")]
    elif isinstance(unit, EnsembleLinear):
        weights = [p["weight"]]
    else:
        prefixes = sorted({name.rpartition(".")[0] for name in p if name.endswith("weight_hat")})
        weights = [
            _nac_weight(p[f"{prefix}.weight_hat" if prefix else "weight_hat"], p[f"{prefix}.gate_hat" if prefix else "gate_hat"])
            for prefix in prefixes
        ]
    magnitude = torch.cat([weight.flatten() for weight in weights]).abs()
    return torch.minimum(magnitude, (1 - magnitude).abs()).max()


def _spread_parameters(unit, generator: torch.Generator) -> None:
    """Overwrite every parameter of ``unit`` with values in [−1.5, 1.5] (outside the clamp ranges too; every NPU input
    partly relevant, so a negative input's phase matters)."""
    with torch.no_grad():
        for name, parameter in unit.named_parameters():
            values = torch.rand(parameter.shape, generator=generator, dtype=torch.float64) * 3 - 1.5
            parameter.copy_(values.abs().clamp(0.2, 1.0) if name == "relevance" else values)


@pytest.mark.parametrize("cls", UNITS + [lambda *sizes, **options: NALU(*sizes, shared_weights=False, **options)])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_every_member_of_an_ensemble_computes_the_published_formula(cls, seed: int) -> None:
    """Forward, regulariser and sparsity error of each member of a float64 ensemble equal the paper's formula written
    out here, and a separate unbatched unit holding that member's weights computes the same."""
    generator = torch.Generator().manual_seed(seed)
    ensemble = cls(3, 2, ensemble=3).double()
    _spread_parameters(ensemble, generator)
    x = torch.rand(3, 5, 3, generator=generator, dtype=torch.float64) * 6 - 3
    got, regularization, sparsity = ensemble(x), ensemble.regularization(), ensemble.sparsity_error()
    for index in range(3):
        single = ensemble.member(index)
        expected = _reference_forward(single, x[index])
        torch.testing.assert_close(got[index], expected, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(single(x[index]), expected, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(regularization[index], _reference_regularization(single), rtol=1e-12, atol=0)
        torch.testing.assert_close(single.regularization(), regularization[index], rtol=1e-12, atol=0)
        torch.testing.assert_close(sparsity[index], _reference_sparsity_error(single), rtol=1e-12, atol=0)
        torch.testing.assert_close(single.sparsity_error(), sparsity[index], rtol=1e-12, atol=0)


def _uniform_distance(values: torch.Tensor, low: float, high: float) -> float:
    """Kolmogorov–Smirnov distance between the empirical distribution of ``values`` and ``U[low, high]``."""
    ordered = values.detach().flatten().double().sort().values
    n = ordered.numel()
    cdf = ((ordered - low) / (high - low)).clamp(0, 1)
    steps = torch.arange(1, n + 1, dtype=torch.float64) / n
    return float(torch.maximum(steps - cdf, cdf - (steps - 1 / n)).max())


INITIALISATIONS = [
    # (unit, parameter, low, high): the published distribution of each randomly initialised parameter
    (lambda e: NAU(30, 20, ensemble=e), "weight", -math.sqrt(6 / 50), math.sqrt(6 / 50)),  # Glorot, below the cap
    (lambda e: NAU(3, 2, ensemble=e), "weight", -0.5, 0.5),  # √(6/5) > 0.5: capped
    (lambda e: NMU(30, 20, ensemble=e), "weight", 0.25, 0.75),
    (lambda e: NPU(30, 20, ensemble=e), "real_weight", -math.sqrt(6 / 50), math.sqrt(6 / 50)),
    (lambda e: RealNPU(30, 20, ensemble=e), "real_weight", -math.sqrt(6 / 50), math.sqrt(6 / 50)),
    (lambda e: NALU(30, 20, ensemble=e), "gate", -math.sqrt(6 / 50), math.sqrt(6 / 50)),
    (lambda e: GatedNAUNMU(30, 20, ensemble=e), "gate", -math.sqrt(6 / 50), math.sqrt(6 / 50)),
    (lambda e: NAC(30, 20, ensemble=e), "weight_hat", -nac_glorot_matched_range(30, 20), nac_glorot_matched_range(30, 20)),
    (lambda e: EnsembleLinear(30, 20, ensemble=e), "weight", -1 / math.sqrt(30), 1 / math.sqrt(30)),
]


@pytest.mark.parametrize("ensemble", [None, 4])
@pytest.mark.parametrize("build, name, low, high", INITIALISATIONS)
def test_initial_weights_follow_the_published_uniform_distribution(build, name, low, high, ensemble) -> None:
    """600 draws (2400 in an ensemble, each member its own) within a Kolmogorov–Smirnov distance of U[low, high] that
    a wrong width (e.g. the NAU's uncapped √(6/5) ≈ 1.1 for 3 → 2) or another centre exceeds many times over."""
    torch.manual_seed(11)
    parameter = dict(build(ensemble).named_parameters())[name]
    assert low <= parameter.min().item() and parameter.max().item() <= high
    assert _uniform_distance(parameter, low, high) < 1.63 / math.sqrt(parameter.numel()) + 0.01  # 1 % KS level
    if ensemble is not None:
        assert all(not torch.equal(parameter[0], parameter[member]) for member in range(1, ensemble))


def test_the_deterministic_initial_values_are_the_published_ones() -> None:
    """NPU: ``W_im = 0``, relevance ``g = ½``; iNALU: gate ``G = 0``."""
    npu, inalu = NPU(4, 3, ensemble=2), iNALU(4, 3, ensemble=2)
    assert torch.equal(npu.imag_weight, torch.zeros(2, 3, 4)) and torch.equal(npu.relevance, torch.full((2, 4), 0.5))
    assert torch.equal(RealNPU(4, 3).relevance, torch.full((4,), 0.5)) and torch.equal(inalu.gate, torch.zeros(2, 3))


@pytest.mark.parametrize("ensemble", [None, 2])
def test_the_product_passes_gradcheck_in_float64(product_route, ensemble: int | None) -> None:
    """The custom autograd of :func:`multiplicative_product` against finite differences on both routes, with
    terms of both signs (the inputs avoid the non-differentiable clamp at W ∈ {0, 1} and exact zero terms)."""
    generator = torch.Generator().manual_seed(3)
    shape = () if ensemble is None else (ensemble,)
    x = (torch.rand(*shape, 4, 3, generator=generator, dtype=torch.float64) * 4 - 2).requires_grad_(True)
    weight = (torch.rand(*shape, 2, 3, generator=generator, dtype=torch.float64) * 0.8 + 0.1).requires_grad_(True)
    assert torch.autograd.gradcheck(multiplicative_product, (x, weight), eps=1e-6, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("cls", UNITS)
def test_units_compose_with_torch_func_transforms(cls) -> None:
    """Per-sample gradients (``vmap`` of ``grad``), ``jacrev`` and a vmapped forward agree with eager autograd,
    zero terms included: units built on the NMU product take its device route under the transforms."""
    torch.manual_seed(0)
    unit = cls(4, 3).double()
    x = torch.rand(5, 4, dtype=torch.float64) * 2 - 0.5
    x[0, 1] = 0.0
    params = {name: value.detach() for name, value in unit.named_parameters()}

    def loss(values: dict[str, torch.Tensor], row: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(unit, values, (row.unsqueeze(0),)).pow(2).sum()

    per_sample = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(params, x)
    for index, row in enumerate(x):
        leaves = {name: value.clone().requires_grad_() for name, value in params.items()}
        expected = torch.autograd.grad(loss(leaves, row), list(leaves.values()), allow_unused=True)
        for name, gradient in zip(leaves, expected):
            torch.testing.assert_close(per_sample[name][index], torch.zeros_like(params[name]) if gradient is None else gradient)
    torch.testing.assert_close(torch.func.vmap(unit)(x.unsqueeze(1)).squeeze(1), unit(x))
    rows = [torch.autograd.functional.jacobian(unit, x[index]) for index in range(2)]
    torch.testing.assert_close(torch.func.vmap(torch.func.jacrev(unit))(x[:2]), torch.stack(rows))
