"""The common skeleton of every arithmetic unit: shapes, the ensemble (batched-seeds) dimension,
input validation, member extraction, and the default regulariser / sparsity error."""

from __future__ import annotations

import contextlib
import inspect
from abc import ABCMeta, abstractmethod
from collections.abc import Sequence
from typing import Any

import torch
from einops import pack, rearrange
from torch import Tensor, nn

from neurosym.layers.factory import factory_kwargs
from neurosym.layers.shape_checks import autocast_enabled, check_dtype_of, check_tensor
from neurosym.training.checks import check_flags, int_at_least, is_int, positive_number

from .numerics import DEFAULT_EPS, MIN_EPS

RUN_OPTIONS = frozenset({"compiled"})
"""Constructor options that choose how a unit computes, not what: :meth:`ArithmeticUnit.set_member` lets them differ."""

HALF_PRECISION = (torch.float16, torch.bfloat16)
"""The floating-point dtypes the units do not compute in (their sums and products of values in the thousands are not
exact there, and float16 overflows to ``inf`` beyond 65504)."""


def check_compute_dtype(unit: str, dtype: torch.dtype) -> None:
    """Raise ``ValueError`` naming the ``unit`` when its parameters' ``dtype`` is float16 or bfloat16
    (:data:`HALF_PRECISION`), which the units do not compute in."""
    if dtype in HALF_PRECISION:
        raise ValueError(
            f"{unit}: the arithmetic units compute in float32 or float64, its parameters are {dtype}; "
            "keep the unit in float32 (unit.float()): under autocast (AMP) it computes in float32 by itself, "
            "so a mixed-precision model needs no half-precision copy of it"
        )


def ensemble_linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x Wᵀ (+ b)`` for a plain or an ensemble weight.

    Plain: ``x [..., in]``, ``weight [out, in]``, ``bias [out]`` → ``[..., out]``.
    Ensemble: ``x [S, ..., in]``, ``weight [S, out, in]``, ``bias [S, out]`` → ``[S, ..., out]``;
    member ``s`` only ever sees ``weight[s]``.

    The ensemble product is computed as ``W xᵀ`` (``[S, out, rows]``) and returned as its transposed
    view: with few outputs (the benchmark's ``out = 2``) that batched GEMM is about twice as fast as
    ``x Wᵀ``, and the rows are flattened by a view, not a copy.
    """
    if weight.dim() == 2:
        return nn.functional.linear(x, weight, bias)
    if weight.dim() != 3 or x.dim() < 2 or x.shape[0] != weight.shape[0] or x.shape[-1] != weight.shape[-1]:
        raise ValueError(
            f"ensemble_linear: x of shape {list(x.shape)} does not fit weight of shape {list(weight.shape)} "
            "(x [..., in] with weight [out, in], or x [S, ..., in] with weight [S, out, in])"
        )
    rows = rearrange(x, "s ... i -> s i (...)")  # [S, in, rows], a view of x
    if bias is None:
        out = torch.bmm(weight, rows)
    else:
        out = torch.baddbmm(bias.unsqueeze(-1), weight, rows)
    return out.transpose(1, 2).reshape(*x.shape[:-1], weight.shape[1])


def broadcast_per_member(values: Tensor, ensemble: int | None, dims: int) -> Tensor:
    """View per-member vectors ``[S, d]`` as ``[S, 1, …, 1, d]`` (``dims`` dimensions in all) so they
    broadcast against an ensemble activation ``[S, ..., d]``; plain ``[d]`` vectors broadcast as they are."""
    if ensemble is None:
        return values
    return values.reshape(values.shape[0], *([1] * (dims - 2)), values.shape[-1])


def per_member_mean(values: Tensor, ensemble: int | None) -> Tensor:
    """Mean over everything but the ensemble dimension: ``[S, ...]`` → ``[S]``, or ``[...]`` → ``[]``."""
    return values.mean() if ensemble is None else values.flatten(1).mean(1)


def flatten_per_member(tensors: Sequence[Tensor], ensemble: int | None) -> Tensor:
    """All entries of ``tensors`` side by side: ``[S, total]`` per member with an ensemble (every tensor
    ``[S, ...]``), ``[total]`` without."""
    return pack(tensors, "*" if ensemble is None else "s *")[0]


def weight_sparsity_error(weights: list[Tensor], ensemble: int | None) -> Tensor:
    """``max_i min(|W_i|, |1 − |W_i||)`` over all entries of ``weights`` (Madsen & Johansen 2019),
    per ensemble member: ``[S]`` with an ensemble, a 0-d tensor without."""
    magnitude = flatten_per_member([weight.detach() for weight in weights], ensemble).abs()
    return torch.minimum(magnitude, (1 - magnitude).abs()).amax(-1)


class ArithmeticUnit(nn.Module, metaclass=ABCMeta):
    """Base class: an ``nn.Linear``-shaped unit mapping ``[..., in]`` → ``[..., out]``.

    With ``ensemble=S`` every parameter gets a leading dimension ``S``, the input must be
    ``[S, ..., in]`` and the output is ``[S, ..., out]``; the ``S`` members share nothing, so summing
    their losses trains ``S`` independent units at once. :meth:`regularization` and
    :meth:`sparsity_error` then return one value per member (shape ``[S]``).

    ``device`` and ``dtype`` are torch's factory keyword arguments (``nn.Linear``'s): every parameter is created there
    (``device="meta"`` allocates nothing); ``dtype`` is float32 or float64 (``ValueError`` for float16 and bfloat16, as
    :meth:`check_precision` gives, and for a dtype that is not floating point).

    Subclasses pass their extra constructor options as keyword arguments to ``__init__`` (they are
    replayed by :meth:`member`), create parameters with :meth:`make_parameter` and build their sub-units with
    ``**self._factory_kwargs`` (the ``device`` and ``dtype`` they were given), implement their
    formula in :meth:`compute` (``forward`` validates the input first), and list the weights the
    sparsity error is measured on in :meth:`sparsity_weights`.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        *,
        ensemble: int | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
        **options: Any,
    ):
        super().__init__()
        unit = type(self).__name__
        self._factory_kwargs = factory_kwargs(device, dtype, unit)
        check_compute_dtype(unit, torch.get_default_dtype() if dtype is None else dtype)
        accepted = inspect.signature(type(self).__init__).parameters  # the unit's own options, not a base's **options
        if unknown := [name for name in options if name not in accepted]:
            raise TypeError(f"{unit}() got an unexpected keyword argument {unknown[0]!r}")
        # added inside a log: 0 or less gave log(0) or NaN, infinity a constant unit
        eps = positive_number(options.get("eps", DEFAULT_EPS), f"{unit}: eps")
        if eps < MIN_EPS:
            raise ValueError(
                f"{unit}: eps must be at least {MIN_EPS:.6g}: the gradient of log(|x| + eps) reaches 1/eps at x = 0, and "
                f"times an output of the unit it overflowed float32 (inf, and NaN at x = 0), got {options['eps']!r}"
            )
        # numpy's ints are accepted (as MultiheadAttention accepts them) and stored as Python ints
        check_flags(f"{unit}: ", **{name: value for name, value in options.items() if isinstance(accepted[name].default, bool)})
        self.in_features = int_at_least(in_features, f"{unit}: in_features", 1)
        self.out_features = int_at_least(out_features, f"{unit}: out_features", 1)
        self.ensemble = None if ensemble is None else int_at_least(ensemble, f"{unit}: ensemble", 1)
        self._options = options

    @property
    def ensemble_shape(self) -> tuple[int, ...]:
        """``(S,)`` with an ensemble, ``()`` without."""
        return () if self.ensemble is None else (self.ensemble,)

    def make_parameter(self, *shape: int) -> nn.Parameter:
        """An uninitialised parameter of shape ``[S, *shape]`` (or ``shape`` without an ensemble), on the ``device`` and
        of the ``dtype`` the unit was built with."""
        return nn.Parameter(torch.empty(*self.ensemble_shape, *shape, **self._factory_kwargs))

    def check_input(self, x: Tensor) -> None:
        """Raise ``ValueError`` naming expected and received shapes unless ``x`` is ``[(S,) ..., in]`` (``TypeError``
        unless it is a tensor)."""
        check_tensor(x, f"{type(self).__name__}: the input")
        expected = f"[..., {self.in_features}]" if self.ensemble is None else f"[{self.ensemble}, ..., {self.in_features}]"
        min_dims = 1 + len(self.ensemble_shape)
        if x.dim() < min_dims or x.shape[-1] != self.in_features or (self.ensemble is not None and x.shape[0] != self.ensemble):
            shared = (  # (a batch meant for every member is refused, or read as one example per member where [S, in])
                f" (one batch for every member: x.expand({self.ensemble}, *x.shape))"
                if self.ensemble is not None and x.shape[-1:] == (self.in_features,)
                else ""
            )
            raise ValueError(f"{type(self).__name__}: expected input of shape {expected}, got {list(x.shape)}{shared}")
        if not x.is_floating_point():
            raise ValueError(f"{type(self).__name__}: expected a floating-point input, got dtype {x.dtype}")

    def check_precision(self) -> None:
        """Raise ``ValueError`` when the parameters are float16 or bfloat16 (``unit.half()``): the guards of the units
        (the exponent cap, the input bound) are sized for float32 and float64, and in float16 the NMU and NPUs gave
        ``inf`` outputs and gradients, the ``GatedNAUNMU`` NaN, from finite inputs."""
        check_compute_dtype(type(self).__name__, next(self.parameters()).dtype)

    def forward(self, x: Tensor) -> Tensor:
        """Validate ``x [(S,) ..., in]`` and apply :meth:`compute` → ``[(S,) ..., out]``.

        Under autocast (AMP) the unit still computes in float32: sums and products of values in the
        thousands lose their exactness in float16/bfloat16, which defeats the purpose of these units.
        For the same reason a unit whose parameters are float16/bfloat16 is refused (:meth:`check_precision`).
        """
        self.check_input(x)
        self.check_precision()
        autocast = autocast_enabled(x)
        with torch.autocast(x.device.type, enabled=False) if autocast else contextlib.nullcontext():
            x = x.float() if autocast and x.dtype in HALF_PRECISION else x
            if x.dtype in HALF_PRECISION:  # (check_dtype_of would tell to convert the unit, which check_precision refuses)
                dtype = next(self.parameters()).dtype
                raise ValueError(
                    f"the input has dtype {x.dtype}, but the {type(self).__name__} computes in float32 or float64 (its "
                    f"parameters are {dtype}): convert the input (x.to({dtype})), or run under autocast, where the "
                    "unit converts it by itself"
                )
            check_dtype_of(x, self, "the input")
            return self.compute(x)

    @abstractmethod
    def compute(self, x: Tensor) -> Tensor:
        """The unit's formula on a validated input ``[(S,) ..., in]`` → ``[(S,) ..., out]``."""

    @abstractmethod
    def sparsity_weights(self) -> list[Tensor]:
        """The effective weights the sparsity error is measured on (each ``[(S,) ..., out, in]``)."""

    def regularization(self) -> Tensor:
        """The unit's sparsity regulariser: ``[S]`` per member, or 0-d; zeros for units without one."""
        reference = next(self.parameters())
        return reference.new_zeros(self.ensemble_shape)

    def sparsity_error(self) -> Tensor:
        """``max_i min(|W_i|, |1 − |W_i||)`` over :meth:`sparsity_weights`: ``[S]`` or 0-d (no gradient)."""
        return weight_sparsity_error(self.sparsity_weights(), self.ensemble)

    def member(self, index: int) -> ArithmeticUnit:
        """An unbatched copy (``ensemble=None``) holding member ``index``'s parameters (copied, not shared).

        Torch's global random state is left as it was: the copy's own initialisation, overwritten at once, drew from
        it, so calling ``member`` mid-training (to log the best seed) changed every later draw."""
        self._check_member_index(index, "member")
        reference = next(self.parameters())
        with torch.random.fork_rng(devices=[]):  # built on the CPU: only the CPU's generator is drawn from
            unit = type(self)(self.in_features, self.out_features, **self._options)
        unit.to(device=reference.device, dtype=reference.dtype)
        unit.load_state_dict({name: value[index].clone() for name, value in self.state_dict().items()})
        return unit

    def _check_member_index(self, index: int, method: str) -> None:
        """``ValueError`` unless this is an ensemble unit, ``TypeError`` unless ``index`` is an int (numpy's too; not a
        bool, which torch read as a mask, nor a float), ``IndexError`` unless it names one of its members."""
        if self.ensemble is None:
            raise ValueError(f"{type(self).__name__}: {method}() needs an ensemble unit, this one has ensemble=None")
        if not is_int(index):
            raise TypeError(f"{type(self).__name__}: {method}() takes a member's int index, got {type(index).__name__} {index!r}")
        if not -self.ensemble <= index < self.ensemble:
            raise IndexError(f"{type(self).__name__}: member {index} out of range for ensemble={self.ensemble}")

    def set_member(self, index: int, unit: ArithmeticUnit) -> None:
        """Copy the parameters of the unbatched ``unit`` into member ``index`` of this ensemble.

        ``unit`` must be of this class and built with the same sizes and options (``eps``, ``shared_weights``, …;
        only ``compiled``, which changes how the unit computes and not what, may differ): a unit built with other
        options computes another function from the same parameters. Everything is checked before anything is
        copied, so a refused ``unit`` leaves the ensemble as it was."""
        name = type(self).__name__
        if type(unit) is not type(self) or unit.ensemble is not None:
            raise ValueError(
                f"set_member copies an unbatched {name} into an ensemble one, "
                f"got {type(unit).__name__}(ensemble={unit.ensemble}) into ensemble={self.ensemble}"
            )
        self._check_member_index(index, "set_member")
        for option in sorted((self._options.keys() | unit._options.keys()) - RUN_OPTIONS):
            if self._options.get(option) != unit._options.get(option):
                raise ValueError(
                    f"set_member: the {name} copied in has {option}={unit._options.get(option)!r}, "
                    f"the ensemble has {option}={self._options.get(option)!r}"
                )
        source, targets = unit.state_dict(), self.state_dict()
        if source.keys() != targets.keys():
            raise ValueError(f"set_member: the {name} copied in holds {sorted(source)}, the ensemble's members {sorted(targets)}")
        for key, target in targets.items():
            if target[index].shape != source[key].shape:
                raise ValueError(f"set_member: {key} expected shape {list(target[index].shape)}, got {list(source[key].shape)}")
        with torch.no_grad():
            for key, target in targets.items():
                target[index].copy_(source[key])

    def extra_repr(self) -> str:
        """The sizes, ``ensemble`` and the unit's options, as the module's ``repr`` shows them."""
        options = "".join(f", {key}={value!r}" for key, value in self._options.items())
        return f"in_features={self.in_features}, out_features={self.out_features}, ensemble={self.ensemble}{options}"
