"""The NMU product ``y_j = Π_i (W_ji x_i + 1 − W_ji)`` as a memory-bounded, NaN-free autograd function.

The product needs the full tensor of terms, laid out ``[out, batch, in]`` (so that both gradient
reductions, over ``out`` and over ``batch``, run over outer dimensions, which is the fast direction for
a CPU); at 128 × 512 × 512 that is 134 MB
per intermediate, so the computation runs over batch chunks of at most :data:`CHUNK_ELEMENTS` terms
(one reused buffer) and the backward pass recomputes the terms instead of saving them (saved: ``x``,
``W``, ``y``). When all terms fit in one chunk (small layers, e.g. the benchmark's 2 → 1 NMU) a plain
path runs instead: no chunk bookkeeping, and the terms are kept for the backward pass.

Each chunk first takes the fast route: a plain product, and gradients ``∂y/∂term_i = y / term_i``.
That is exact whenever no partial product of the terms leaves the normal float range (the product of
the terms below 1 in magnitude, a lower bound of every partial product, is at least the smallest normal
number), every output is within ``exp(MAX_LOG_MAGNITUDE)`` and every gradient is finite. Only the
entries where it is not (an exact zero term, overflow, an underflow into subnormal numbers or zero
anywhere along the product, a gradient beyond the float range) are recomputed in the log domain (in
float64), which counts zero terms and negative signs separately and never produces NaN: outputs
saturate at ``±exp(MAX_LOG_MAGNITUDE)`` (with zero gradient there, like a clamp), and the gradient at
an exactly-zero term is the exact product of the other terms, or 0 where that product passes ``exp(MAX_LOG_MAGNITUDE)``
(as at a saturated output).

Off the CPU (and under ``torch.compile``, ``torch.export``, a fake tensor or a ``torch.func`` transform such as ``vmap``), where reading a value on the host would stall the device or split
the graph (:func:`reads_on_host` is False), the *device route* (:func:`_device_product`) computes the plain and the log-domain value of every output and
picks the exact one per output with ``torch.where``; its gradients likewise. No chunking there.

Forward mode (``jvp``, ``jacfwd``) and a backward pass that is differentiated again (``create_graph=True``,
``hessian``) take a differentiable formulation instead (:func:`_others`, :func:`_product_tangent`,
:func:`_differentiable_gradients`): the same derivatives, computed from whole tensors of terms. The first-order
backward pass runs in no-grad mode and stays on the routes above.

With ``compiled=True``, products beyond one chunk take the fast route through ``torch.compile`` kernels
(:class:`~neurosym.layers.lazy_compile.LazilyCompiled`) that form the terms inside their loops, so no
chunk of terms is ever written to memory; the exactness checks and the log-domain route stay as above.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import Tensor

from neurosym.layers.shape_checks import autocast_enabled
from neurosym.layers.value_checks import is_traced

from ..lazy_compile import LazilyCompiled
from .base import HALF_PRECISION
from .numerics import MAX_LOG_MAGNITUDE

R = TypeVar("R")

CHUNK_ELEMENTS = 1 << 18
"""Largest number of product terms (``ensemble · rows · out · in``) materialised at once (1 MiB in float32)."""

_MAX_MAGNITUDE = math.exp(MAX_LOG_MAGNITUDE)


def _transformed(*tensors: Tensor) -> bool:
    """Whether any of ``tensors`` is seen through a ``torch.func`` transform (``vmap``, ``grad``, ...); never
    asked under ``torch.compile``, which takes the device route anyway and cannot trace the question."""
    return not torch.compiler.is_compiling() and any(
        torch._C._functorch.is_functorch_wrapped_tensor(tensor) for tensor in tensors
    )


def reads_on_host(x: Tensor) -> bool:
    """Whether the product of ``x`` takes the CPU route, which reads its exactness checks on the host: a CPU
    tensor in eager mode, unless a ``torch.func`` transform (:func:`_transformed`) or a tracer
    (:func:`~neurosym.layers.value_checks.is_traced`: ``torch.compile``, ``torch.export``, a fake tensor) sees it.
    Elsewhere it takes the device route, which makes no host read."""
    return x.device.type == "cpu" and not is_traced(x)


def _row_slices(rows: int, per_row: int) -> list[slice]:
    """Row ranges of at most :data:`CHUNK_ELEMENTS` terms each (at least one row)."""
    step = max(1, CHUNK_ELEMENTS // per_row)
    return [slice(start, min(start + step, rows)) for start in range(0, rows, step)]


def _shrinkage(terms: Tensor) -> Tensor:
    """``Π_i min(|term_i|, 1)`` over the last axis: a lower bound of the magnitude of every partial product
    of the terms, in whatever order the product is reduced."""
    return terms.abs().clamp(max=1.0).prod(-1)


def _in_range(product: Tensor) -> bool:
    """No output beyond ``exp(MAX_LOG_MAGNITUDE)``, inf or NaN (``inf · 0``; NaN fails the comparison)."""
    return float(product.abs().amax()) <= _MAX_MAGNITUDE


def _no_underflow(shrinkage: Tensor) -> bool:
    """Whether every :func:`_shrinkage` is at least the smallest normal number: no partial product fell
    into subnormal numbers or zero (an exact zero term fails too; NaN fails the comparison)."""
    return float(shrinkage.amin()) >= torch.finfo(shrinkage.dtype).tiny


def _terms_cannot_underflow(terms: Tensor) -> bool:
    """:func:`_no_underflow` for the rows of ``terms [..., in]``, decided by the smallest term alone when
    every term is at least ``(2·tiny)^(1/in)`` (then every partial product is above ``tiny``; the usual
    case, one reduction), else by the rows' :func:`_shrinkage`."""
    if float(terms.amin()) >= (2 * torch.finfo(terms.dtype).tiny) ** (1 / terms.shape[-1]):
        return True
    return _no_underflow(_shrinkage(terms))


def _untrusted(product: Tensor, shrinkage: Tensor) -> Tensor:
    """The entries where the plain product is not exact (:func:`_in_range`, :func:`_no_underflow`), as a mask."""
    return ~((shrinkage >= torch.finfo(product.dtype).tiny) & (product.abs() <= _MAX_MAGNITUDE))


def _terms(x: Tensor, weight: Tensor) -> Tensor:
    """``x [S, n, in]``, ``weight [S, out, 1, in]`` → the terms ``W x + 1 − W``, ``[S, out, n, in]``."""
    return torch.addcmul(1 - weight, weight, x.unsqueeze(1))


class _Terms:
    """The terms ``W x + 1 − W`` of one weight, produced chunk by chunk into a reused buffer."""

    def __init__(self, x: Tensor, weight: Tensor):
        self.x, self.weight = x, weight.unsqueeze(2)  # [S, N, in], [S, out, 1, in]
        self.bias = 1 - self.weight
        self.buffer: Tensor | None = None
        self.parts = _row_slices(x.shape[1], x.shape[0] * weight.shape[1] * weight.shape[2])

    def __call__(self, part: slice, fresh: bool = False) -> Tensor:
        """Terms of rows ``part``: ``[S, out, n, in]`` (in the shared buffer unless ``fresh``)."""
        if fresh:
            return _terms(self.x[:, part], self.weight)
        x = self.x[:, part].unsqueeze(1)
        if self.buffer is None:
            self.buffer = torch.addcmul(self.bias, self.weight, x)
            return self.buffer
        return torch.addcmul(self.bias, self.weight, x, out=self.buffer[:, :, : part.stop - part.start])

    def gradients(self, part: slice, grad_terms: Tensor, wanted: tuple[bool, bool]) -> tuple[Tensor | None, Tensor | None]:
        """This chunk's gradients (see :func:`_term_gradients`)."""
        return _term_gradients(self.x[:, part], self.weight, grad_terms, wanted)


def _term_gradients(
    x: Tensor, weight: Tensor, grad_terms: Tensor, wanted: tuple[bool, bool]
) -> tuple[Tensor | None, Tensor | None]:
    """Chain rule through ``term = W x + 1 − W``: ``x [S, n, in]``, ``weight [S, out, 1, in]`` and
    ``∂L/∂term [S, out, n, in]`` (overwritten, unless grad mode is on: then a double backward differentiates
    these sums) → (``∂L/∂x [S, n, in]``, the share of ``∂L/∂W [S, out, in]`` of these rows); an entry is
    None where ``wanted`` says so."""
    grad_x = (grad_terms * weight).sum(1) if wanted[0] else None
    if not wanted[1]:
        return grad_x, None
    shifted = x.unsqueeze(1) - 1
    return grad_x, (grad_terms * shifted if torch.is_grad_enabled() else grad_terms.mul_(shifted)).sum(2)


def _others(terms: Tensor) -> Tensor:
    """``[..., in]`` → ``[..., in]``: ``Π_{k≠i} term_k``, 0 where the product saturates (``Σ log|term_k|`` over the
    nonzero terms beyond ``MAX_LOG_MAGNITUDE``, as :meth:`_LogDomain.others` has it), built from differentiable
    operations only, so that derivatives of any order and forward mode follow: the products of the terms before
    and after each one (``cumprod``, whose derivatives are exact at zero terms), in float64 like the log domain.
    The terms of a saturated product are zeroed first: no derivative reaches them, and no partial product of
    theirs overflows (``inf`` there made a second derivative ``0 · inf = NaN``)."""
    unsaturated = _LogDomain(terms.detach()).log_sum <= MAX_LOG_MAGNITUDE
    wide = torch.where(unsaturated.unsqueeze(-1), terms.double(), 0.0)
    ones = wide.new_ones(*wide.shape[:-1], 1)
    before = torch.cumprod(torch.cat([ones, wide[..., :-1]], -1), -1)
    after = torch.cumprod(torch.cat([ones, wide[..., 1:].flip(-1)], -1), -1).flip(-1)
    return (before * after).to(terms.dtype)


def _differentiable_gradients(
    x: Tensor, weight: Tensor, grad_output: Tensor, wanted: tuple[bool, bool]
) -> tuple[Tensor | None, Tensor | None]:
    """The product's gradients as differentiable operations (:func:`_others`), for a backward pass that is
    differentiated again (``create_graph=True``, ``hessian``): ``x [S, N, in]``, ``weight [S, out, in]``,
    ``grad_output [S, out, N]`` → (``∂L/∂x [S, N, in]``, ``∂L/∂W [S, out, in]``), None where not ``wanted``.
    The same values as the first-order routes up to rounding."""
    expanded = weight.unsqueeze(2)
    return _term_gradients(x, expanded, grad_output.unsqueeze(-1) * _others(_terms(x, expanded)), wanted)


def _product_tangent(x: Tensor, weight: Tensor, x_tangent: Tensor | None, weight_tangent: Tensor | None) -> Tensor:
    """Forward-mode derivative of the product, ``Σ_i (Π_{k≠i} term_k) · ∂term_i`` (:func:`_others`: exact at zero
    terms, 0 where the output saturates) with ``∂term = W ∂x + (x − 1) ∂W``: ``x [S, N, in]``, ``weight [S, out, in]``
    and their tangents of the same shapes (None: no tangent) → ``[S, out, N]``."""
    expanded = weight.unsqueeze(2)
    term_tangents = [expanded * x_tangent.unsqueeze(1)] if x_tangent is not None else []
    if weight_tangent is not None:
        term_tangents.append(weight_tangent.unsqueeze(2) * (x.unsqueeze(1) - 1))
    return (_others(_terms(x, expanded)) * sum(term_tangents)).sum(-1)


def _finite_gradients(gradients: tuple[Tensor | None, Tensor | None], wanted: tuple[bool, bool]) -> bool:
    """Whether the fast-route gradients are all finite. A non-finite ``∂L/∂term`` (``y / term_i`` beyond
    the float range) reaches either gradient (inf·0 = NaN included), so checking one of them is enough;
    an overflowing sum only sends the computation down the exact log-domain route."""
    checked = gradients[1] if wanted[1] else gradients[0]
    return checked is None or math.isfinite(float(checked.sum()))  # None: no gradient wanted, none to check


def _fast_product(x: Tensor, weight: Tensor) -> tuple[Tensor, Tensor]:
    """The fast route's plain product in one piece, and its :func:`_shrinkage`: ``x [S, N, in]``,
    ``weight [S, out, in]`` → two ``[S, out, N]``."""
    terms = _terms(x, weight.unsqueeze(2))
    return terms.prod(-1), _shrinkage(terms)


def _fast_gradients(
    x: Tensor, weight: Tensor, grad_times_result: Tensor, want_x: bool, want_weight: bool
) -> tuple[Tensor | None, Tensor | None]:
    """The fast route's gradients in one piece, ``∂y/∂term_i = y / term_i``: ``grad_times_result``
    (``∂L/∂y · y``) ``[S, out, N, 1]`` → (``∂L/∂x [S, N, in]``, ``∂L/∂W [S, out, in]``), None where not wanted."""
    expanded = weight.unsqueeze(2)
    return _term_gradients(x, expanded, grad_times_result / _terms(x, expanded), (want_x, want_weight))


# Compiled, the terms never reach memory: they are formed inside the product's and each gradient's loops.
_compiled_product = LazilyCompiled(_fast_product, "the NMU product kernel")
_compiled_gradients = LazilyCompiled(_fast_gradients, "the NMU gradient kernels")


class _LogDomain:
    """Log-domain view of a chunk of terms: zero counts, signs and log-magnitudes, all NaN-free. Computed in
    float64 (the error of ``exp(Σ log|term|)`` grows with ``|Σ log|term||``, which float32 cannot hold to its
    own precision when products span the float range) and returned in the terms' dtype."""

    def __init__(self, terms: Tensor, totals: tuple[Tensor, Tensor, Tensor] | None = None):
        self.dtype = terms.dtype
        terms = terms.double()
        self.is_zero = terms == 0
        self.log_magnitude = torch.where(self.is_zero, 1.0, terms.abs()).log()
        self.term_sign = 1 - 2 * (terms < 0).to(terms.dtype)
        if totals is None:
            totals = (self.is_zero.sum(-1), self.log_magnitude.sum(-1), self.term_sign.prod(-1))
        self.zero_count, self.log_sum, self.sign = totals

    def totals(self) -> tuple[Tensor, Tensor, Tensor]:
        """The per-product reductions ``(zero count, Σ log|term|, sign)``, each ``[S, out, n]``: what
        :meth:`others` needs besides the terms, so a backward pass can take them from the forward."""
        return self.zero_count, self.log_sum, self.sign

    def product(self) -> Tensor:
        """``[S, out, n]``: the saturated product, exactly 0 where some term is 0."""
        value = self.sign * torch.exp(self.log_sum.clamp(max=MAX_LOG_MAGNITUDE))
        return torch.where(self.zero_count > 0, 0.0, value).to(self.dtype)

    def others(self) -> Tensor:
        """``[S, out, n, in]``: ``Π_{k≠i} term_k``, 0 where the output is saturated."""
        log_others = self.log_sum.unsqueeze(-1) - self.log_magnitude
        value = (self.sign.unsqueeze(-1) * self.term_sign) * torch.exp(log_others.clamp(max=MAX_LOG_MAGNITUDE))
        zeros = self.zero_count.unsqueeze(-1)
        defined = torch.where(self.is_zero, zeros == 1, zeros == 0)
        unsaturated = (self.log_sum <= MAX_LOG_MAGNITUDE).unsqueeze(-1)
        return torch.where(defined & unsaturated, value, 0.0).to(self.dtype)


def _device_product(x: Tensor, weight: Tensor) -> tuple[Tensor, ...]:
    """The product without host reads (accelerators, ``torch.compile``): ``x [S, N, in]``,
    ``weight [S, out, in]`` → ``(product, trusted, zero count, Σ log|term|, sign)``, each ``[S, out, N]``.

    Every output takes the plain product where that is exact (``trusted``: the test of
    :func:`_untrusted`) and the log-domain value elsewhere, both computed for every output, so no
    decision waits for the host. Compiled, the terms live only inside the kernels' loops."""
    terms = _terms(x, weight.unsqueeze(2))  # [S, out, N, in]
    plain = terms.prod(-1)
    trusted = ~_untrusted(plain, _shrinkage(terms))
    log_domain = _LogDomain(terms)
    return torch.where(trusted, plain, log_domain.product()), trusted, *log_domain.totals()


def _device_gradients(
    x: Tensor, weight: Tensor, grad_output: Tensor, saved: tuple[Tensor, ...], want_x: bool, want_weight: bool
) -> tuple[Tensor | None, Tensor | None]:
    """Gradients of :func:`_device_product` without host reads: ``∂y/∂term_i = y / term_i`` where the
    output is trusted and that quotient finite, the log-domain product of the other terms elsewhere.
    ``saved``: its outputs; ``grad_output [S, out, N]`` → (``∂L/∂x [S, N, in]``, ``∂L/∂W [S, out, in]``)."""
    product, trusted, zero_count, log_sum, sign = saved
    expanded = weight.unsqueeze(2)
    terms = _terms(x, expanded)
    fast = (grad_output * product).unsqueeze(-1) / terms
    needs_log = ~trusted.unsqueeze(-1) | ~torch.isfinite(fast)
    others = _LogDomain(terms, (zero_count, log_sum, sign)).others()
    grad_terms = torch.where(needs_log, grad_output.unsqueeze(-1) * others, fast)
    return _term_gradients(x, expanded, grad_terms, (want_x, want_weight))


_compiled_device_product = LazilyCompiled(_device_product, "the NMU product kernel (device route)")
_compiled_device_gradients = LazilyCompiled(_device_gradients, "the NMU gradient kernels (device route)")


def _on_device_route(compiled_kernel: LazilyCompiled[R], eager: Callable[..., R], compiled: bool, *args: Any) -> R:
    """``eager(*args)`` through its compiled kernel when ``compiled`` (and not already inside a traced graph, which
    fuses it anyway, nor on fake tensors, which have no values to compute: :func:`~neurosym.layers.value_checks.is_traced`),
    falling back to eager when compiling fails."""
    result = compiled_kernel(*args) if compiled and not is_traced(args[0]) else None
    return eager(*args) if result is None else result


class _DeviceRouteProduct(torch.autograd.Function):
    """The device route (:func:`_device_product`): ``x [S, N, in]``, ``weight [S, out, in]`` → its five
    ``[S, out, N]`` outputs, the product first and the rest non-differentiable. With no host reads and no
    state kept outside ``ctx``, it composes with ``torch.func`` transforms (``vmap``, ``grad``, ``jacrev``,
    ``hessian``): its vmap rule is generated, and a backward pass in grad mode (differentiated again) takes
    :func:`_differentiable_gradients`. Its forward-mode rule is in :class:`_DeviceRouteProductForwardMode`."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x: Tensor, weight: Tensor, compiled: bool) -> tuple[Tensor, ...]:
        return _on_device_route(_compiled_device_product, _device_product, compiled, x, weight)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Tensor, Tensor, bool], output: tuple[Tensor, ...]) -> None:
        x, weight, ctx.compiled = inputs
        ctx.mark_non_differentiable(*output[1:])
        ctx.save_for_backward(x, weight, *output)

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor, *_: Tensor | None) -> tuple[Tensor | None, Tensor | None, None]:
        x, weight, *saved = ctx.saved_tensors
        wanted = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        if torch.is_grad_enabled():  # differentiated again
            return (*_differentiable_gradients(x, weight, grad_output, wanted), None)
        gradients = _on_device_route(
            _compiled_device_gradients, _device_gradients, ctx.compiled, x, weight, grad_output, tuple(saved), *wanted
        )
        return (*gradients, None)


class _DeviceRouteProductForwardMode(_DeviceRouteProduct):
    """:class:`_DeviceRouteProduct` with its forward-mode rule, :func:`_product_tangent` (``jacfwd``, ``hessian``,
    ``torch.autograd.forward_ad``), for eager mode: Dynamo does not trace a Function that defines ``jvp``, so
    ``torch.compile`` and ``torch.export`` take the base class."""

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Tensor, Tensor, bool], output: tuple[Tensor, ...]) -> None:
        _DeviceRouteProduct.setup_context(ctx, inputs, output)
        ctx.save_for_forward(*inputs[:2])

    @staticmethod
    def jvp(ctx: Any, x_tangent: Tensor | None, weight_tangent: Tensor | None, _: None) -> tuple[Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        return _product_tangent(x, weight, x_tangent, weight_tangent), None, None, None, None


class _MultiplicativeProduct(torch.autograd.Function):
    """The CPU route: ``x [S, N, in]``, ``weight [S, out, in]`` → ``[S, out, N]`` (float32 or float64, no
    autocast), reading its exactness checks on the host; ``compiled``: take the fast route through the
    compiled kernels (see :func:`multiplicative_product`). Its forward-mode rule is :func:`_product_tangent`; a
    backward pass in grad mode (``create_graph=True``) takes :func:`_differentiable_gradients`."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, compiled: bool) -> Tensor:
        ctx.save_for_forward(x, weight)
        ctx.log_domain_masks, ctx.compiled = {}, False
        one_chunk = x.numel() * weight.shape[1] <= CHUNK_ELEMENTS
        if compiled and not one_chunk:  # (one chunk: the plain eager path is as fast as the kernels)
            fast = _compiled_product(x, weight)
            if fast is not None and _in_range(fast[0]) and _no_underflow(fast[1]):
                product = fast[0]
                ctx.compiled = True
                ctx.save_for_backward(x, weight, product)
                return product
        if one_chunk:  # plain tensors, terms kept
            terms = _terms(x, weight.unsqueeze(2))  # [S, out, N, in]
            product = terms.prod(-1)
            if _in_range(product) and _terms_cannot_underflow(terms):
                ctx.save_for_backward(x, weight, product, terms)
                return product
        chunked = _Terms(x, weight)
        products = []
        for part in chunked.parts:
            chunk = chunked(part)
            product = chunk.prod(-1)
            if not (_in_range(product) and _terms_cannot_underflow(chunk)):
                mask = _untrusted(product, _shrinkage(chunk))
                product = torch.where(mask, _LogDomain(chunk).product(), product)
                ctx.log_domain_masks[part.start] = mask
            products.append(product)
        result = products[0] if len(products) == 1 else torch.cat(products, dim=2)
        ctx.save_for_backward(x, weight, result)
        return result

    @staticmethod
    def jvp(ctx: Any, x_tangent: Tensor | None, weight_tangent: Tensor | None, _: None) -> Tensor:
        x, weight = ctx.saved_tensors
        return _product_tangent(x, weight, x_tangent, weight_tangent)

    @staticmethod
    def backward(ctx: Any, grad_output: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        if torch.is_grad_enabled():  # differentiated again
            x, weight = ctx.saved_tensors[:2]
            wanted = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
            return (*_differentiable_gradients(x, weight, grad_output, wanted), None)
        return (*_MultiplicativeProduct.gradients(ctx, grad_output), None)

    @staticmethod
    def gradients(ctx: Any, grad_output: Tensor) -> tuple[Tensor | None, Tensor | None]:
        """(``∂L/∂x``, ``∂L/∂W``) from ``∂L/∂y [S, out, N]``; None where no gradient is needed."""
        wanted = (ctx.needs_input_grad[0], ctx.needs_input_grad[1])
        x, weight, result, *kept_terms = ctx.saved_tensors
        grad_times_result = (grad_output * result).unsqueeze(-1)  # [S, out, N, 1]
        if ctx.compiled:
            gradients = _compiled_gradients(x, weight, grad_times_result, *wanted)
            if gradients is not None and _finite_gradients(gradients, wanted):
                return gradients
        elif kept_terms:  # the one-chunk plain path: ∂y/∂term_i = y / term_i, unless that is not finite
            gradients = _term_gradients(x, weight.unsqueeze(2), grad_times_result / kept_terms[0], wanted)
            if _finite_gradients(gradients, wanted):
                return gradients
        terms = _Terms(x, weight)
        grad_x_parts: list[Tensor] = []
        grad_weight: Tensor | None = None
        for part in terms.parts:
            mask = ctx.log_domain_masks.get(part.start)
            part_grads = None
            if mask is None:  # fast route, in place: ∂y/∂term_i = y / term_i
                chunk = terms(part)
                part_grads = terms.gradients(part, torch.div(grad_times_result[:, :, part], chunk, out=chunk), wanted)
                if not _finite_gradients(part_grads, wanted):
                    part_grads = None
            if part_grads is None:
                chunk = terms(part, fresh=True)
                fast = grad_times_result[:, :, part] / chunk
                needs_log = ~torch.isfinite(fast) if mask is None else mask.unsqueeze(-1) | ~torch.isfinite(fast)
                others = _LogDomain(chunk).others()
                grad_terms = torch.where(needs_log, grad_output[:, :, part].unsqueeze(-1) * others, fast)
                part_grads = terms.gradients(part, grad_terms, wanted)
            grad_x_part, grad_weight_part = part_grads  # each None unless wanted
            if grad_x_part is not None:
                grad_x_parts.append(grad_x_part)
            if grad_weight_part is not None:
                grad_weight = grad_weight_part if grad_weight is None else grad_weight.add_(grad_weight_part)
        if not wanted[0]:
            return None, grad_weight
        return (grad_x_parts[0] if len(grad_x_parts) == 1 else torch.cat(grad_x_parts, dim=1)), grad_weight


def multiplicative_product(x: Tensor, weight: Tensor, *, compiled: bool = False) -> Tensor:
    """``y_j = Π_i (W_ji x_i + 1 − W_ji)`` (the NMU of Madsen & Johansen 2020), NaN-free.

    Plain: ``x [..., in]``, ``weight [out, in]`` → ``[..., out]``.
    Ensemble: ``x [S, ..., in]``, ``weight [S, out, in]`` → ``[S, ..., out]``.
    Magnitudes saturate at ``exp(MAX_LOG_MAGNITUDE)``; see the module docstring for the gradient.
    Under autocast it computes in float32 (half-precision inputs are upcast); outside it a float16 or bfloat16 ``x``
    or ``weight`` raises ``ValueError`` (it overflowed to ``inf``). Shapes that fit neither form (another ``in``,
    another number of members) raise ``ValueError`` naming both.

    ``compiled=True`` takes the fast route (plain product, ``y / term_i`` gradients) of products with
    more than :data:`CHUNK_ELEMENTS` terms through ``torch.compile`` kernels that form the terms inside
    their loops instead of writing them to memory: about 10× faster at batch 128, 512 → 512 on a CPU
    core (``benchmarks/RESULTS.md``). Each new shape, dtype or device compiles first (seconds). Smaller
    products keep the plain eager path, which is as fast. Off the CPU both passes of the device route
    (see the module docstring) are compiled instead, whatever the size. Where the fast route is not exact, or
    compiling fails (a warning, once), the chunked eager route computes the same result.
    """
    ensemble = weight.dim() == 3
    members = weight.shape[0] if ensemble else 1
    if not (
        weight.dim() in (2, 3)
        and x.dim() > ensemble
        and x.shape[-1] == weight.shape[-1]
        and (not ensemble or x.shape[0] == members)
    ):
        raise ValueError(
            f"multiplicative_product: x of shape {list(x.shape)} does not fit weight of shape {list(weight.shape)} "
            "(x [..., in] with weight [out, in], or x [S, ..., in] with weight [S, out, in])"
        )
    if autocast_enabled(x):
        with torch.autocast(x.device.type, enabled=False):
            return multiplicative_product(x.float(), weight.float(), compiled=compiled)
    if half := [str(dtype) for dtype in (x.dtype, weight.dtype) if dtype in HALF_PRECISION]:
        raise ValueError(
            f"multiplicative_product computes in float32 or float64, got {' and '.join(half)} (its products overflow "
            "there): pass float32 tensors, or call it under autocast (AMP), which computes in float32 by itself"
        )
    out_features, in_features = weight.shape[-2:]
    if x.numel() == 0:  # no rows: nothing to reduce (the routes' range checks need at least one value)
        return (x[..., :1] * weight.sum() * 0).expand(*x.shape[:-1], out_features)
    flat = x.reshape(members, -1, in_features)  # plain: one member holding every row
    stacked = weight.reshape(members, out_features, in_features)
    transformed = _transformed(flat, stacked)
    if reads_on_host(flat) and not transformed:
        product = _MultiplicativeProduct.apply(flat, stacked, compiled)  # [S, out, N]
    else:  # under torch.func transforms the kernels stay eager
        function = _DeviceRouteProduct if torch.compiler.is_compiling() else _DeviceRouteProductForwardMode
        product = function.apply(flat, stacked, compiled and not transformed)[0]
    return product.transpose(1, 2).reshape(*x.shape[:-1], out_features)
