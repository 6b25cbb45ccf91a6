"""Maximum-likelihood profile confidence intervals for a mean, as Madsen & Johansen (2019) report the step a run is
solved at (under a gamma distribution) and its sparsity error (under a beta distribution scaled to ``[0, 0.5]``).
Their published sparsity errors are about half of what this fit gives: their analysis evaluates the beta density at the
unscaled error ``x`` instead of at ``2x`` (docs/arithmetic_benchmark.md).

The profile log-likelihood of a mean maximises the log-likelihood over the other parameter (the gamma's shape, the
beta's concentration); the interval holds the means whose profile is within ``χ²₁(confidence) / 2`` of the maximum
(``χ²₁(0.95) = 1.96² = 3.8415``). Both log-likelihoods are written with Stirling's remainder and ``log z − ψ(z)``, so
that they stay exact for the large shapes of nearly equal values, where ``log Γ`` and ``ψ`` cancel.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from neurosym.metrics.interval import normal_quantile
from neurosym.training.checks import holds_bool, is_real

Array = NDArray[np.float64]

SPREAD = 1e-6
"""Values whose spread (largest minus smallest) is at most this fraction of their mean (for the beta, of the scaled
mean's distance to the nearer bound) count as all equal: their likelihood grows without bound with the shape, and
the interval is the single point ``(mean, mean, mean)`` (narrower than ``2·SPREAD·mean`` in truth)."""
EDGE = 2.0**-52
"""A beta distribution has no likelihood for a value at 0 or at ``upper``: scaled to ``[0, 1]``, values are clipped
into ``[EDGE, 1 − EDGE]`` (2.2e-16, both ends exact in float64), as Madsen & Johansen's analysis clipped sparsity
errors into ``[1e-16, 0.5 − 1e-16]``."""
RESOLVED = 2.0**-20
"""The smallest drop of a profile below its maximum that its ends are searched at, as a fraction of the maximum's size
(at least 1). The profile is exact to a few units in the last place of that size, so an end found at a drop ``d`` is
off by about ``2**-52 / d`` of its distance from the centre (by 14 % at a confidence of 1e-7 for four values; below
1e-8 the drop vanished in the rounding and no end was found): smaller drops are interpolated in ``√drop``."""
_POINTS, _ROUNDS, _DOUBLINGS = 33, 11, 11
"""Root finding: ``_POINTS`` points a round narrow a bracket ``(_POINTS − 1)``-fold, ``_ROUNDS`` times; a bracket is
searched for up to ``2 ** _DOUBLINGS − 1`` (on a log or logit scale) from its start: past the 1454 between the
smallest and the largest positive float on a log scale."""


def gamma_mean_interval(values: Sequence[float] | Array | torch.Tensor, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of the positive ``values [n]`` (``n >= 2``; a tensor, an array or a list) and its
    ``confidence`` interval under a gamma distribution, by profiling the shape. Ints of any size are taken as their
    nearest floats. The maximum-likelihood mean is the sample mean. Values all equal (:data:`SPREAD`) give
    ``(mean, mean, mean)``; ``high`` is ``inf`` where it lies beyond the largest float (a confidence near 1, as
    ``1 - 1e-16`` for 1, 2, 3; values far apart give a huge but finite one, ``3.4e245`` for 1e-300 and 1). ``ValueError`` naming values that are not finite (ints beyond the largest float too) or
    not positive; ``TypeError`` for values that are no ints or floats (bools, complex numbers, text)."""
    x = _sample(values)
    if bad := np.flatnonzero(x <= 0).tolist():
        raise ValueError(f"a gamma distribution needs positive values, got {x[bad].tolist()} at {bad}")
    drop = _profile_drop(confidence, len(x))
    mean = _mean(x)
    if np.ptp(x) <= SPREAD * mean:
        return mean, mean, mean
    mean_log = float(_log_ratio(x, mean).mean())  # of the values scaled to mean 1 (< 0 unless all are equal)

    def profile(log_mean: Array) -> Array:
        """The profile log-likelihood per value (up to a constant) at the means ``exp(log_mean)`` of the scaled values."""
        excess = log_mean + np.expm1(-log_mean) - mean_log  # (> 0)

        def minus_score(log_shape: Array) -> Array:
            return excess[..., None] - _log_minus_digamma(np.exp(log_shape))

        shape = np.exp(_zero(minus_score, -np.log(2 * excess)))  # log k − ψ(k) = excess: k is about 1 / (2 excess)
        return 0.5 * np.log(shape) - _stirling_remainder(shape) - shape * excess

    low, high = _interval(profile, 0.0, drop, ceiling=math.log(sys.float_info.max) - math.log(mean))
    return mean, _times_exp(mean, low), _times_exp(mean, high)


def _log_ratio(x: Array, mean: float) -> Array:
    """``log(x / mean)`` of the positive ``x [n]``, finite where ``x / mean`` is below the smallest float (values
    spanning more than 1e308 gave ``-inf``): taken apart into mantissas and powers of two."""
    mantissas, powers = np.frexp(x)
    mean_mantissa, mean_power = math.frexp(mean)
    return np.log(mantissas / mean_mantissa) + (powers - mean_power) * math.log(2)


def _times_exp(value: float, exponent: float) -> float:
    """``value · exp(exponent)`` for a positive ``value``, finite wherever the product is (``exp`` alone overflowed
    past 709.78, ``math.exp`` raising ``OverflowError``); ``inf`` beyond the largest float."""
    if exponent == math.inf:
        return math.inf
    power = math.floor(exponent / math.log(2))
    mantissa, value_power = math.frexp(value)
    with np.errstate(over="ignore"):
        return float(np.ldexp(mantissa * math.exp(exponent - power * math.log(2)), value_power + power))


def beta_mean_interval(
    values: Sequence[float] | Array | torch.Tensor, upper: float = 0.5, confidence: float = 0.95
) -> tuple[float, float, float]:
    """``(mean, low, high)``: the maximum-likelihood mean of ``values [n]`` in ``[0, upper]`` (``n >= 2``; a tensor,
    an array or a list) under a beta distribution scaled to ``[0, upper]``, and its ``confidence`` interval, by
    profiling the concentration. Ints of any size are taken as their nearest floats. Values at 0 or ``upper`` are
    clipped inside (:data:`EDGE`; so values at 0 pull the mean below the sample mean); values all equal
    (:data:`SPREAD`) give ``(mean, mean, mean)`` of the sample mean. ``ValueError`` naming values that are not finite
    (ints beyond the largest float too) or outside ``[0, upper]``; ``TypeError`` for values that are no ints or floats
    (bools, complex numbers, text)."""
    if not (is_real(upper) and 0 < upper < math.inf):
        raise ValueError(f"upper must be a positive finite number, got {upper!r}")
    x = _sample(values)
    if bad := np.flatnonzero((x < 0) | (x > upper)).tolist():
        raise ValueError(f"a beta distribution on [0, {upper}] needs values in it, got {x[bad].tolist()} at {bad}")
    drop = _profile_drop(confidence, len(x))
    y = np.clip(x / upper, EDGE, 1 - EDGE)
    if np.ptp(y) <= SPREAD * min(y.mean(), 1 - y.mean()):
        mean = _mean(x)
        return mean, mean, mean
    mean_logs = np.log(y).mean(), np.log1p(-y).mean()

    def profile(logit: Array) -> Array:
        """The profile log-likelihood per value (up to a constant) at the scaled means ``sigmoid(logit)``."""
        means, logs, fit, concentration = _beta_fit(logit, mean_logs)
        parts = sum(_stirling_remainder(mean * concentration) for mean in means)
        return concentration * fit + 0.5 * (np.log(concentration) + sum(logs)) + _stirling_remainder(concentration) - parts

    def slope(logit: Array) -> Array:
        """Increasing where the profile decreases: minus its derivative in the mean, divided by the concentration."""
        means, logs, _, concentration = _beta_fit(logit, mean_logs)
        below, above = (log - mean_log - _log_minus_digamma(mean * concentration)
                        for log, mean_log, mean in zip(logs, mean_logs, means))  # fmt: skip
        return below - above

    centre = float(_zero(slope, np.log(y.mean()) - np.log1p(-y.mean())))
    mean, low, high = upper * np.exp(_log_sigmoid(np.array([centre, *_interval(profile, centre, drop)])))
    return float(mean), float(low), float(high)


def _sample(values: Sequence[float] | Array | torch.Tensor) -> Array:
    """``values`` as a float64 array ``[n]``; ``TypeError`` unless they are ints or floats (bools, complex numbers and
    text were read as numbers), ``ValueError`` unless 1-D, ``n >= 2`` and finite (naming the others)."""
    x = _float64(values)
    if x.ndim != 1 or len(x) < 2:
        raise ValueError(f"a profile interval needs a 1-D sequence of at least 2 values, got shape {list(x.shape)}")
    if bad := np.flatnonzero(~np.isfinite(x)).tolist():
        raise ValueError(f"values must be finite numbers, got {x[bad].tolist()} at {bad}")
    return x


def _mean(x: Array) -> float:
    """The mean of ``x [n]``, summed at a power-of-two scale: the same digits, and finite near the largest float too
    (the sum of 1e307 and 1.7e308 overflowed)."""
    exponent = int(np.frexp(np.abs(x).max())[1])
    return float(np.ldexp(np.ldexp(x, -exponent).mean(), exponent))


def _float64(values: Sequence[float] | Array | torch.Tensor) -> Array:
    """``values`` as a float64 array (ints of any size, each to the nearest float); ``TypeError`` unless they are ints
    or floats (a list or tuple holding a bool among numbers too)."""
    if isinstance(values, torch.Tensor):
        if values.dtype == torch.bool or values.is_complex():
            raise TypeError(f"a profile interval needs ints or floats, got a tensor of {values.dtype}")
        return values.detach().cpu().double().numpy()
    array = np.asarray(values)
    if array.dtype == object and all(map(is_real, array.flat)):  # (Python ints past int64, e.g. 2**64, kept as objects)
        return _large_ints(array)
    if array.dtype.kind not in "iuf":  # (text was parsed, a generator failed inside numpy)
        raise TypeError(f"a profile interval needs ints or floats, got {type(values).__name__} of {array.dtype}")
    if holds_bool(values):  # ([True, 2] was read as the ints 1, 2)
        raise TypeError(f"a profile interval needs ints or floats, got {type(values).__name__} holding a bool")
    return array.astype(np.float64)


def _large_ints(array: NDArray[Any]) -> Array:
    """``array`` of Python numbers (ints beyond int64 among them) as float64, each to the nearest float; ``ValueError``
    naming the positions (flat) of ints beyond the largest float, which no float is near."""
    if beyond := [index for index, value in enumerate(array.flat) if abs(value) > sys.float_info.max]:
        raise ValueError(
            f"values must be finite numbers, got ints beyond the largest float ({sys.float_info.max:.4g}) at {beyond}"
        )
    return array.astype(np.float64)


def _profile_drop(confidence: float, count: int) -> float:
    """How far below its maximum the profile log-likelihood per value may fall inside the interval:
    ``χ²₁(confidence) / (2 · count)``."""
    return normal_quantile(confidence) ** 2 / (2 * count)


def _beta_fit(logit: Array, mean_logs: tuple[float, float]) -> tuple[tuple[Array, Array], tuple[Array, Array], Array, Array]:
    """At the scaled means ``m = sigmoid(logit) [..., P]`` of values with ``mean_logs = (mean log y, mean log(1 − y))``:
    ``(m, 1 − m)``, their logs, ``fit = m (mean log y − log m) + (1 − m) (mean log(1 − y) − log(1 − m))`` (< 0) and the
    maximum-likelihood concentration ``φ``, the root of ``fit + m L(mφ) + (1 − m) L((1 − m)φ) − L(φ)`` with
    ``L(z) = log z − ψ(z)``."""
    logs = _log_sigmoid(logit), _log_sigmoid(-logit)
    means: tuple[Array, Array] = (np.exp(logs[0]), np.exp(logs[1]))
    fit: Array = means[0] * (mean_logs[0] - logs[0]) + means[1] * (mean_logs[1] - logs[1])

    def minus_score(log_concentration: Array) -> Array:
        concentration = np.exp(log_concentration)
        below, above = (mean[..., None] * _log_minus_digamma(mean[..., None] * concentration) for mean in means)
        return _log_minus_digamma(concentration) - fit[..., None] - below - above

    return means, logs, fit, np.exp(_zero(minus_score, -np.log(-2 * fit)))


def _log_sigmoid(logit: Array) -> Array:
    """``log(1 / (1 + exp(−logit)))``, exact where the sigmoid is near 0 or 1 too."""
    return -np.logaddexp(0.0, -logit)


def _interval(profile: Callable[[Array], Array], centre: float, drop: float, ceiling: float = math.inf) -> tuple[float, float]:
    """The ends of the points where the unimodal ``profile`` (of points ``[..., P]``) is within ``drop`` of its
    maximum at ``centre``; the upper end is ``inf`` where the profile is still within ``drop`` at ``ceiling``. A drop
    below :data:`RESOLVED` of the maximum's size is interpolated (:func:`_interpolated_ends`)."""
    top = profile(np.array([centre]))[0]
    resolved = RESOLVED * max(1.0, abs(top))
    if drop < resolved:
        return _interpolated_ends(profile, centre, drop, resolved, ceiling)
    level = top - drop
    bounded = ceiling == math.inf or profile(np.array([ceiling]))[0] <= level
    side = np.array([[-1.0], [1.0]])[: 1 + bounded]  # below the centre the profile increases, above it decreases
    ends = _zero(lambda point: side * (level - profile(point)), np.full(len(side), centre))
    return float(ends[0]), float(ends[1]) if bounded else math.inf


def _interpolated_ends(
    profile: Callable[[Array], Array], centre: float, drop: float, resolved: float, ceiling: float
) -> tuple[float, float]:
    """The ends of :func:`_interval` at a ``drop`` below ``resolved``: each end's distance from the centre is a smooth
    function of ``√drop`` that is 0 at 0, taken from the cubic through 0 and the distances at 1, 4 and 9 times
    ``resolved`` (``√drop`` at 0, 1, 2 and 3 times ``√resolved``); where the profile is within one of those drops up to
    ``ceiling``, the upper end is ``inf`` (wider than the exact one, never narrower)."""
    u = math.sqrt(drop / resolved)  # in [0, 1)
    weights = np.array([u * (u - 2) * (u - 3) / 2, -u * (u - 1) * (u - 3) / 2, u * (u - 1) * (u - 2) / 6])
    distances = np.array([_interval(profile, centre, k * k * resolved, ceiling) for k in (1, 2, 3)]) - centre  # [3, 2]
    if np.isinf(distances[:, 1]).any():  # within a larger drop up to the ceiling: no upper end is interpolated, and
        return float(centre + weights @ distances[:, 0]), math.inf  # the interval is kept open there (inf - inf: NaN)
    low, high = centre + weights @ distances
    return float(low), float(high)


def _zero(increasing: Callable[[Array], Array], start: Array) -> Array:
    """Where ``increasing`` crosses zero, searched from ``start [...]``: it maps points ``[..., P]`` to values
    ``[..., P]``, for every leading index an increasing function of the points (in sign at least)."""
    start = np.asarray(start, dtype=np.float64)
    return _narrow(increasing, *_bracket(increasing, start))


def _bracket(increasing: Callable[[Array], Array], start: Array) -> tuple[Array, Array]:
    """``(low, high) [...]`` with ``increasing`` at most 0 at ``low`` and positive at ``high``: steps of doubling
    length away from ``start`` towards the crossing (up to ``2 ** _DOUBLINGS − 1``)."""
    positive = increasing(start[..., None])[..., 0] > 0
    direction = np.where(positive, -1.0, 1.0)
    inner, step = start, np.ones_like(start)
    for _ in range(_DOUBLINGS):
        outer = inner + direction * step
        crossed = (increasing(outer[..., None])[..., 0] > 0) != positive
        if crossed.all():
            return np.minimum(inner, outer), np.maximum(inner, outer)
        inner, step = np.where(crossed, inner, outer), np.where(crossed, step, 2 * step)
    raise ArithmeticError(f"the profile search found no crossing within {2**_DOUBLINGS - 1} of {start[~crossed].tolist()}")


def _narrow(increasing: Callable[[Array], Array], low: Array, high: Array) -> Array:
    """The crossing inside brackets ``low``, ``high [...]``: each round keeps the step of a grid of ``_POINTS``
    points over the bracket where ``increasing`` turns positive."""
    fractions = np.linspace(0.0, 1.0, _POINTS)
    for _ in range(_ROUNDS):
        grid = low[..., None] + (high - low)[..., None] * fractions
        positive = increasing(grid) > 0
        positive[..., 0], positive[..., -1] = False, True  # the bracket's ends, whatever rounding says there
        first = positive.argmax(axis=-1)[..., None]
        low, high = np.take_along_axis(grid, first - 1, -1)[..., 0], np.take_along_axis(grid, first, -1)[..., 0]
    return (low + high) / 2


STIRLING_FROM = 10.0
"""From here on the special functions below take their asymptotic series (terms beyond them are under 1e-13)."""


def _stirling_remainder(z: Array) -> Array:
    """``log Γ(z) − (z − ½) log z + z`` for ``z > 0``: ``½ log 2π + 1/(12z) − …`` for large ``z``."""
    small = np.minimum(z, STIRLING_FROM)
    direct = torch.lgamma(torch.from_numpy(small)).numpy() - (small - 0.5) * np.log(small) + small
    w = 1 / np.maximum(z, STIRLING_FROM) ** 2
    series = 0.5 * math.log(2 * math.pi) + (1 / 12 - w * (1 / 360 - w * (1 / 1260 - w * (1 / 1680 - w / 1188)))) * np.sqrt(w)
    return np.where(z < STIRLING_FROM, direct, series)


def _log_minus_digamma(z: Array) -> Array:
    """``log z − ψ(z)`` for ``z > 0`` (positive, decreasing): ``1/(2z) + 1/(12z²) − …`` for large ``z``."""
    small = np.minimum(z, STIRLING_FROM)
    direct = np.log(small) - torch.special.digamma(torch.from_numpy(small)).numpy()
    w = 1 / np.maximum(z, STIRLING_FROM) ** 2
    series = 0.5 * np.sqrt(w) + w * (1 / 12 - w * (1 / 120 - w * (1 / 252 - w * (1 / 240 - w / 132))))
    return np.where(z < STIRLING_FROM, direct, series)
