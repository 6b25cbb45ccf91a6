"""Noise sensitivity ``NS_delta[f]`` of a function of digits, estimated by sampling (O'Donnell 2014, Def. 2.40;
used for PVR tasks in Zhang et al. 2021, Section 5.1 and Appendix C).

Each of the ``L`` input digits in ``0..K-1`` is written as ``D = ceil(log2 K)`` bits (standard unsigned
binary, most significant first). ``x`` is a uniformly random bit string of ``L * D`` bits; ``y`` flips
each bit of ``x`` independently with probability ``delta``. Bit patterns above ``K - 1`` are read
``mod K``. ``NS_delta[f] = P(f(x) != f(y))``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from neurosym.data.randomness import as_generator
from neurosym.training.checks import int_at_least, is_fraction, is_int

DigitFunction = Callable[[np.ndarray], np.ndarray]
"""``digits [N, L]`` int -> outputs ``[N]``."""


def bits_per_digit(num_classes: int) -> int:
    """The smallest ``D`` with ``num_classes <= 2**D``."""
    if not is_int(num_classes) or num_classes < 2:  # 2.5 classes read digits mod 2.5
        raise ValueError(f"need an int of at least 2 digit classes, got {num_classes!r}")
    return (int(num_classes) - 1).bit_length()  # (log2 in floats gave 49 bits for 2**49 + 1 classes)


MAX_DIGIT_CLASSES = 2**63 - 1
"""The most digit classes :func:`bits_to_digits` reads: its digits, and ``K`` they are taken ``mod``, are int64."""


def _digit_width(num_classes: int) -> int:
    """:func:`bits_per_digit` of ``num_classes``; ``ValueError`` beyond :data:`MAX_DIGIT_CLASSES` (numpy raised an
    ``OverflowError`` that named nothing, after a 64-bit digit's top bit had wrapped around in int64)."""
    width = bits_per_digit(num_classes)
    if num_classes > MAX_DIGIT_CLASSES:
        raise ValueError(
            f"{num_classes} digit classes are too many: digits are read as int64, so at most 2**63 - 1 "
            f"({MAX_DIGIT_CLASSES}) classes"
        )
    return width


def bits_to_digits(bits: np.ndarray, num_classes: int) -> np.ndarray:
    """``bits [N, L * D]`` of 0/1 -> digits ``[N, L]`` (int64), each read as unsigned binary then taken ``mod K``;
    ``K`` at most :data:`MAX_DIGIT_CLASSES` (``D`` at most 63 bits), else ``ValueError``."""
    width = _digit_width(num_classes)
    if bits.shape[-1] % width:
        raise ValueError(f"{bits.shape[-1]} bits do not split into {width}-bit digits")
    grouped = bits.reshape(*bits.shape[:-1], -1, width).astype(np.int64)
    values = grouped @ (1 << np.arange(width - 1, -1, -1))
    return values % num_classes


def noise_sensitivity(
    function: DigitFunction,
    length: int,
    num_classes: int,
    delta: float,
    num_samples: int = 10_000,
    rng: np.random.Generator | int | None = None,
) -> float:
    """Estimate ``NS_delta[function]`` from ``num_samples`` pairs ``(x, y)`` of ``length`` digits each; ``function``
    must give one output per row (``[N]``)."""
    if not is_fraction(delta):  # (numpy's True was read as 1, text failed on the comparison)
        raise ValueError(f"delta is a probability, got {delta!r}")
    if not is_int(num_samples) or num_samples < 1:
        raise ValueError(f"need an int of at least one sample, got {num_samples!r}")
    length = int_at_least(length, "length (digits per input)", 1)  # 0 digits gave NS 0 for any function
    rng = np.random.default_rng() if rng is None else as_generator(rng)
    width = _digit_width(num_classes)  # (before any sampling)
    x = rng.integers(0, 2, size=(num_samples, length * width))
    y = x ^ (rng.random(x.shape) < delta)
    fx, fy = (np.asarray(function(bits_to_digits(bits, num_classes))) for bits in (x, y))
    if fx.shape != (num_samples,) or fy.shape != (num_samples,):  # [N, L] outputs were compared digit by digit
        raise ValueError(f"function must map digits [{num_samples}, {length}] to outputs [{num_samples}], got {list(fx.shape)}")
    return float(np.mean(fx != fy))


def noise_sensitivity_curve(
    function: DigitFunction,
    length: int,
    num_classes: int,
    deltas: np.ndarray,
    num_samples: int = 10_000,
    repeats: int = 10,
    rng: np.random.Generator | int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard deviation over ``repeats`` estimates at each of ``deltas [M]``: two ``[M]`` arrays. The
    deviation is the population one (``ddof=0``: 0 for one repeat), the spread of these estimates the plot's error bars
    show, not an estimate of the estimator's."""
    int_at_least(repeats, "repeats", 1)  # none gave NaN means and deviations
    if np.ndim(deltas) != 1:  # (a single delta failed as "not iterable")
        raise ValueError(f"deltas must be a 1-D sequence of probabilities, got {deltas!r:.60}")
    rng = np.random.default_rng() if rng is None else as_generator(rng)
    estimates = np.array(
        [[noise_sensitivity(function, length, num_classes, d, num_samples, rng) for d in deltas] for _ in range(repeats)]
    )
    return estimates.mean(axis=0), estimates.std(axis=0)
