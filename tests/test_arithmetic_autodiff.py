"""Forward-mode AD and second derivatives of every arithmetic unit: ``gradcheck`` with forward mode, ``gradgradcheck``,
and ``jacfwd`` / ``hessian`` against reverse mode, with exact zero terms in the NMU product."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.func import functional_call, hessian, jacfwd, jacrev

from neurosym.layers import arithmetic
from neurosym.layers.arithmetic import MAX_LOG_MAGNITUDE, NMU, ArithmeticUnit, iNALU, multiplicative_product, product

pytestmark = pytest.mark.filterwarnings(  # (torch's own forward-mode decompositions script themselves when first used)
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning"
)

UNITS = [
    unit
    for unit in (getattr(arithmetic, name) for name in arithmetic.__all__)
    if isinstance(unit, type) and issubclass(unit, ArithmeticUnit) and not inspect.isabstract(unit)
]
PRODUCT_UNITS = [unit for unit in UNITS if unit.__name__ in ("NMU", "iNALU", "GatedNAUNMU")]


def _unit(cls: type[ArithmeticUnit], ensemble: int | None) -> ArithmeticUnit:
    """A float64 ``cls(3, 2)`` whose NMU product (if it has one) has exact zero terms at ``x_0 = x_1 = −1``:
    NMU weights 0.5 there, and for the iNALU ``|W_m| = tanh(20) · σ(0) = 0.5`` exactly."""
    torch.manual_seed(0)
    unit = cls(3, 2, ensemble=ensemble, dtype=torch.float64)
    with torch.no_grad():
        for module in unit.modules():
            if isinstance(module, NMU):
                module.weight[..., :2].fill_(0.5)
        if isinstance(unit, iNALU):
            unit.mul.weight_hat[..., :2].fill_(20.0)
            unit.mul.gate_hat[..., :2].fill_(0.0)
    return unit


def _input(ensemble: int | None) -> torch.Tensor:
    """``[(S,) 4, 3]`` float64: row 0 with one and row 1 with two exact zero terms (see :func:`_unit`)."""
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(*(() if ensemble is None else (ensemble,)), 4, 3, generator=generator, dtype=torch.float64) * 3 - 1.5
    x[..., 0, 0] = -1.0
    x[..., 1, :2] = -1.0
    return x


def _nmu_product(unit: ArithmeticUnit, x: torch.Tensor) -> torch.Tensor:
    """The NMU product inside ``unit`` (the iNALU's sign retrieval, else its :class:`NMU`'s output): ``[(S,) 4, 2]``."""
    if isinstance(unit, iNALU):
        return multiplicative_product(torch.sign(x), unit.mul.weight().abs())
    return next(module for module in unit.modules() if isinstance(module, NMU))(x)


def _as_function(unit: ArithmeticUnit) -> tuple[Callable[..., torch.Tensor], tuple[torch.Tensor, ...]]:
    """``unit`` as a function of ``(x, *parameters)`` and its parameters, for ``gradcheck``."""
    names = [name for name, _ in unit.named_parameters()]

    def function(x: torch.Tensor, *values: torch.Tensor) -> torch.Tensor:
        return functional_call(unit, dict(zip(names, values)), (x,))

    return function, tuple(value.detach().clone().requires_grad_() for _, value in unit.named_parameters())


@pytest.mark.parametrize("ensemble", [None, 2])
@pytest.mark.parametrize("cls", UNITS)
def test_units_pass_gradcheck_in_forward_and_reverse_mode_and_gradgradcheck(cls, ensemble: int | None) -> None:
    """With respect to the input and every parameter, on the CPU route (``torch.autograd.forward_ad`` for forward
    mode), zero terms in the NMU product included."""
    unit = _unit(cls, ensemble)
    x = _input(ensemble).requires_grad_()
    if cls in PRODUCT_UNITS:  # the zero terms are there
        assert torch.all(_nmu_product(unit, x.detach())[..., :2, :] == 0)
    function, parameters = _as_function(unit)
    inputs = (x, *parameters)
    assert torch.autograd.gradcheck(function, inputs, check_forward_ad=True, check_backward_ad=True)
    assert torch.autograd.gradgradcheck(function, inputs)


@pytest.fixture(params=["host reads", "device route"])
def product_route(request, monkeypatch) -> str:
    """The product as the CPU runs it (one chunk per row, so the log-domain route runs for the rows with zero terms)
    and down the accelerators' route."""
    if request.param == "device route":
        monkeypatch.setattr(product, "reads_on_host", lambda tensor: False)
    else:
        monkeypatch.setattr(product, "CHUNK_ELEMENTS", 6)
    return request.param


def test_the_product_passes_gradcheck_and_gradgradcheck_at_zero_and_saturated_terms(product_route) -> None:
    """Exact zero terms (one and two per product) and a saturated product (zero derivatives, as a clamp has)."""
    x = _input(None)
    x[3] = 1e40
    weight = torch.tensor([[0.5, 0.5, 0.9], [0.5, 0.5, 0.3]], dtype=torch.float64)
    torch.testing.assert_close(multiplicative_product(x, weight)[3].abs(), torch.full((2,), math.exp(MAX_LOG_MAGNITUDE)).double())
    inputs = (x.requires_grad_(), weight.requires_grad_())
    assert torch.autograd.gradcheck(multiplicative_product, inputs, check_forward_ad=True, check_backward_ad=True)
    assert torch.autograd.gradgradcheck(multiplicative_product, inputs, check_fwd_over_rev=True)


def test_a_gradient_with_create_graph_equals_the_first_order_one(product_route) -> None:
    """The differentiable backward a double backward takes agrees with the first-order one, zero terms included."""
    x = (_input(2) * 1e3).requires_grad_()
    weight = torch.rand(2, 5, 3, dtype=torch.float64).requires_grad_()
    output = multiplicative_product(x, weight)
    first_order = torch.autograd.grad(output.sum(), (x, weight), retain_graph=True)
    torch.testing.assert_close(torch.autograd.grad(output.sum(), (x, weight), create_graph=True), first_order)


def test_second_derivatives_of_a_saturated_product_are_zero_not_nan(product_route) -> None:
    """Inputs of 1e6 saturate an NMU of 100 inputs; its partial products (1e600) overflow even float64, and must not
    reach the second derivative as ``0 · inf``."""
    x = torch.full((2, 100), 1e6, requires_grad=True)
    weight = torch.ones(1, 100, requires_grad=True)
    first = torch.autograd.grad(multiplicative_product(x, weight).sum(), (x, weight), create_graph=True)
    second = torch.autograd.grad(first[0].sum() + first[1].sum(), (x, weight))
    for gradient in (*first, *second):
        assert torch.equal(gradient, torch.zeros_like(gradient))


def _squared_output(unit: ArithmeticUnit) -> Callable[[torch.Tensor, dict[str, torch.Tensor]], torch.Tensor]:
    def loss(x: torch.Tensor, parameters: dict[str, torch.Tensor]) -> torch.Tensor:
        return functional_call(unit, parameters, (x,)).square().sum()

    return loss


@pytest.mark.parametrize("ensemble", [None, 3])
@pytest.mark.parametrize("cls", UNITS)
def test_jacfwd_and_hessian_equal_reverse_mode(cls, ensemble: int | None) -> None:
    """``jacfwd`` equals ``jacrev`` and ``hessian`` (forward over reverse) equals reverse over reverse, with respect to
    the input and every parameter, and per-sample under ``vmap``."""
    unit = _unit(cls, ensemble)
    x = _input(ensemble)
    parameters = {name: value.detach() for name, value in unit.named_parameters()}
    loss = _squared_output(unit)
    torch.testing.assert_close(jacfwd(unit)(x), jacrev(unit)(x))
    arguments = (0, 1)
    torch.testing.assert_close(
        hessian(loss, argnums=arguments)(x, parameters), jacrev(jacrev(loss, argnums=arguments), argnums=arguments)(x, parameters)
    )
    if ensemble is None:
        per_sample = torch.func.vmap(hessian(loss), in_dims=(0, None))(x.unsqueeze(1), parameters)
        torch.testing.assert_close(per_sample, torch.stack([hessian(loss)(row.unsqueeze(0), parameters) for row in x]))


@settings(max_examples=15, deadline=None)
@given(
    values=st.lists(st.floats(-3, 3, allow_nan=False), min_size=12, max_size=12),
    zeros=st.lists(st.booleans(), min_size=12, max_size=12),
    cls=st.sampled_from(PRODUCT_UNITS),
)
def test_forward_mode_equals_reverse_mode_on_drawn_inputs(values: list[float], zeros: list[bool], cls) -> None:
    """Drawn inputs, any of them −1 (an exact zero term where the weight is 0.5): the forward-mode Jacobian and
    Hessian of the units built on the NMU product equal the reverse-mode ones, and ``torch.autograd.forward_ad``
    (the CPU route) gives the ``jacrev`` column."""
    unit = _unit(cls, None)
    x = torch.tensor([-1.0 if zero else value for value, zero in zip(values, zeros)], dtype=torch.float64).reshape(4, 3)
    torch.testing.assert_close(jacfwd(unit)(x), jacrev(unit)(x))
    loss = _squared_output(unit)
    parameters = {name: value.detach() for name, value in unit.named_parameters()}
    torch.testing.assert_close(hessian(loss)(x, parameters), jacrev(jacrev(loss))(x, parameters))
    tangent = torch.zeros_like(x)
    tangent[0, 0] = 1.0
    with torch.autograd.forward_ad.dual_level():
        column = torch.autograd.forward_ad.unpack_dual(unit(torch.autograd.forward_ad.make_dual(x, tangent))).tangent
    torch.testing.assert_close(column, jacrev(unit)(x)[..., 0, 0])
