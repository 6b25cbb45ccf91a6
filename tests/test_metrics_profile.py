import math
import sys
from functools import partial

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from neurosym.metrics.interval import normal_quantile
from neurosym.metrics.profile import EDGE, SPREAD, beta_mean_interval, gamma_mean_interval

CHI2_95 = 3.841458820694124  # the chi-square(1) quantile at 95 %
SHAPES = np.geomspace(1e-2, 1e5, 4001)[None]  # the gamma's shape, the beta's concentration: a grid to maximise over


def _lgamma(z: np.ndarray) -> np.ndarray:
    return torch.lgamma(torch.from_numpy(z)).numpy()


def _gamma_log_likelihood(x: np.ndarray, shapes: np.ndarray = SHAPES):
    """The summed gamma log-likelihood at means ``[M, 1]`` and every shape of ``shapes [1, K]``: ``[M, K]``."""
    mean, mean_log = x.mean(), np.log(x).mean()
    return lambda mu: (
        len(x) * ((shapes - 1) * mean_log - shapes * mean / mu + shapes * (np.log(shapes) - np.log(mu)) - _lgamma(shapes))
    )


def _beta_log_likelihood(x: np.ndarray, upper: float = 0.5):
    """The summed log-likelihood of the beta on ``[0, upper]`` at means ``[M, 1]`` and every concentration: ``[M, K]``;
    values at the bounds clipped :data:`EDGE` inside."""
    y = np.clip(x / upper, EDGE, 1 - EDGE)
    log_y, log_rest = np.log(y).mean(), np.log1p(-y).mean()

    def log_likelihood(mu: np.ndarray) -> np.ndarray:
        a, b = mu / upper * SHAPES, (1 - mu / upper) * SHAPES
        return len(x) * ((a - 1) * log_y + (b - 1) * log_rest - _lgamma(a) - _lgamma(b) + _lgamma(SHAPES))

    return log_likelihood


def _grid_profile(log_likelihood, mean: float, ends: tuple[float, float], level: float = CHI2_95) -> tuple[float, list[float]]:
    """The maximum-likelihood mean on a grid of means within 1 % of ``mean`` (x every shape), and the interval's ends:
    where the profile deviance crosses ``level`` on grids within 1 % of ``ends``, interpolated linearly."""
    relative = 1 + np.linspace(-0.01, 0.01, 201)
    profile = log_likelihood(mean * relative[:, None]).max(axis=1)
    top, best = profile.max(), mean * relative[profile.argmax()]
    found = []
    for end in ends:
        means = end * relative
        excess = 2 * (top - log_likelihood(means[:, None]).max(axis=1)) - level
        (i,) = np.flatnonzero(np.sign(excess[1:]) != np.sign(excess[:-1]))  # one crossing in the grid
        found.append(means[i] - excess[i] * (means[i + 1] - means[i]) / (excess[i + 1] - excess[i]))
    return best, found


@pytest.mark.parametrize(
    ("interval", "log_likelihood", "values"),
    [
        (gamma_mean_interval, _gamma_log_likelihood, [3.1, 1.2, 5.5, 2.2, 4.0, 0.7, 2.9, 3.3]),
        (gamma_mean_interval, _gamma_log_likelihood, [1.2e6, 1.5e6, 1.9e6, 2.4e6, 3.1e6, 1.37e6]),
        (gamma_mean_interval, _gamma_log_likelihood, [1.0, 3.0]),
        (beta_mean_interval, _beta_log_likelihood, [0.01, 0.05, 0.12, 0.2, 0.07, 0.03]),
        (beta_mean_interval, _beta_log_likelihood, [1e-4, 5e-4, 2e-3, 8e-4, 3e-4]),
        (beta_mean_interval, _beta_log_likelihood, [0.3, 0.45, 0.4, 0.49]),
        (beta_mean_interval, _beta_log_likelihood, [0.0, 0.1, 0.2, 0.5, 0.3]),  # at both bounds
    ],
)
def test_profile_intervals_agree_with_a_profile_over_a_grid_of_both_parameters(interval, log_likelihood, values):
    x = np.array(values)
    mean, low, high = interval(x)
    best, (grid_low, grid_high) = _grid_profile(log_likelihood(x), mean, (low, high))
    assert best == pytest.approx(mean, rel=1e-3)  # (the grid's step is 1e-4 of the mean)
    assert low == pytest.approx(grid_low, rel=1e-5) and high == pytest.approx(grid_high, rel=1e-5)
    assert low < mean < high


def test_the_interval_at_a_confidence_ends_where_the_deviance_reaches_its_chi_square_quantile():
    assert normal_quantile(0.95) ** 2 == pytest.approx(CHI2_95, rel=1e-12)
    x = np.array([3.1, 1.2, 5.5, 2.2, 4.0, 0.7, 2.9, 3.3])
    mean, low, high = gamma_mean_interval(x, confidence=0.5)
    _, ends = _grid_profile(_gamma_log_likelihood(x), mean, (low, high), level=0.4549364231195724)  # chi-square(1) at 50 %
    assert ends == pytest.approx([low, high], rel=1e-5)
    _, wide_low, wide_high = gamma_mean_interval(x)
    assert wide_low < low < mean < high < wide_high


SMALL_SHAPES = np.geomspace(1e-7, 10.0, 200_001)[None]  # the gamma's shape of values far apart is near 0


@settings(max_examples=15, deadline=None)
@given(smallest=st.floats(5e-324, 1e-100), largest=st.floats(1e-50, 1e300), confidence=st.sampled_from([0.5, 0.95, 0.99]))
@example(smallest=5e-324, largest=1e300, confidence=0.95).via("values spanning more than 1e308")
@example(smallest=1e-300, largest=1.0, confidence=0.95).via("an end beyond the search's former reach")
@example(smallest=5e-324, largest=1e-200, confidence=0.994).via("an end more than exp(709) times the mean")
@example(smallest=1.0, largest=3.0, confidence=1 - 1e-15).via("a confidence near 1")
def test_the_gamma_interval_of_values_far_apart_ends_where_the_deviance_reaches_its_quantile(smallest, largest, confidence):
    # (an ArithmeticError from the search, an OverflowError from the upper end, or -inf from x / mean)
    x = np.array([smallest, largest])
    mean, low, high = gamma_mean_interval(x, confidence)
    log_likelihood = _gamma_log_likelihood(x, SMALL_SHAPES)
    top = log_likelihood(np.array([[mean]])).max()

    def deviance(mu: float) -> float:
        return 2 * (top - log_likelihood(np.array([[mu]])).max())

    assert 0 < low < mean < high and deviance(low) == pytest.approx(normal_quantile(confidence) ** 2, rel=1e-6)
    if high < math.inf:
        assert deviance(high) == pytest.approx(normal_quantile(confidence) ** 2, rel=1e-6)
    else:  # the end lies beyond the largest float
        assert deviance(sys.float_info.max) < normal_quantile(confidence) ** 2


positive_samples = st.lists(st.floats(1e-3, 1e3), min_size=2, max_size=25)
sparsity_samples = st.lists(st.one_of(st.floats(0.0, 0.5), st.sampled_from([0.0, 0.5, 1e-9])), min_size=2, max_size=25)


@settings(max_examples=25, deadline=None)
@given(values=positive_samples, scale=st.floats(1e-6, 1e6))
def test_the_gamma_interval_holds_the_sample_mean_scales_with_the_values_and_narrows_with_more_of_them(values, scale):
    x = np.array(values)
    assume(np.ptp(x) > 1e-3 * x.mean())
    mean, low, high = gamma_mean_interval(x)
    assert mean == pytest.approx(x.mean(), rel=1e-12)  # the maximum-likelihood mean of a gamma is the sample mean
    assert 0 < low < mean < high
    assert gamma_mean_interval(scale * x) == pytest.approx((scale * mean, scale * low, scale * high), rel=1e-6)
    twice_mean, twice_low, twice_high = gamma_mean_interval(np.concatenate([x, x]))  # the same likelihood, doubled
    assert twice_mean == pytest.approx(mean) and low < twice_low < mean < twice_high < high


@settings(max_examples=10, deadline=None)
@given(values=sparsity_samples)
def test_the_beta_interval_holds_its_mean_mirrors_with_the_values_and_narrows_with_more_of_them(values):
    x = np.array(values)
    assume(np.ptp(x) > 1e-4)
    mean, low, high = beta_mean_interval(x)
    assert 0 < low < mean < high < 0.5
    mirrored = beta_mean_interval(0.5 - x)  # a beta on [0, 0.5] of 0.5 − x has the mean 0.5 − mean
    assert mirrored == pytest.approx((0.5 - mean, 0.5 - high, 0.5 - low), rel=1e-4, abs=1e-12)
    twice_mean, twice_low, twice_high = beta_mean_interval(np.concatenate([x, x]))
    assert twice_mean == pytest.approx(mean, rel=1e-6) and low < twice_low < twice_high < high


def test_beta_values_at_the_bounds_are_clipped_inside_them():
    at_bounds = [0.0, 0.1, 0.2, 0.5]
    clipped = [0.5 * EDGE, 0.1, 0.2, 0.5 * (1 - EDGE)]
    assert beta_mean_interval(at_bounds) == beta_mean_interval(clipped)
    mean, low, high = beta_mean_interval(at_bounds)
    assert 0 < low < mean < high < 0.5
    assert beta_mean_interval([0.0, 0.0, 0.0]) == (0.0, 0.0, 0.0)  # all at a bound: all equal once clipped
    assert beta_mean_interval([0.5, 0.5]) == (0.5, 0.5, 0.5)
    zeros_mean, _, _ = beta_mean_interval([0.0, 0.001, 0.002, 0.0005])
    assert zeros_mean < 0.000875  # a value at 0 pulls the fitted mean below the sample mean
    twice = [2 * value for value in beta_mean_interval([0.0, 0.1, 0.2])]
    assert beta_mean_interval([0.0, 0.2, 0.4], upper=1.0) == pytest.approx(twice, rel=1e-9)  # scaled by its upper bound


def test_values_all_equal_give_a_point_and_values_just_apart_an_interval():
    assert gamma_mean_interval([3.0, 3.0, 3.0]) == (3.0, 3.0, 3.0)
    assert beta_mean_interval(torch.tensor([0.1, 0.1], dtype=torch.float64)) == (0.1, 0.1, 0.1)
    nearly = 1000.0 * (1 + SPREAD / 2)
    _, low, high = gamma_mean_interval([1000.0, nearly])
    assert low == high  # (not NaN from an unbounded shape)
    # nearly equal values: both distributions are nearly normal, whose profile deviance of the mean is
    # n log(1 + (mu - mean)^2 / variance) (maximum-likelihood variance): at n = 2, |mu - mean| = 2.41 sd at 95 %
    for interval, x in ((gamma_mean_interval, [1000.0, 1000.0 * (1 + 100 * SPREAD)]), (beta_mean_interval, [0.25, 0.25001])):
        mean, low, high = interval(x)
        half_width = np.std(x) * math.sqrt(math.exp(CHI2_95 / 2) - 1)
        assert mean - low == pytest.approx(half_width, rel=1e-3) and high - mean == pytest.approx(half_width, rel=1e-3)


def test_for_many_values_the_intervals_approach_the_normal_approximation():
    generator = np.random.default_rng(0)
    for interval, x in (
        (gamma_mean_interval, generator.gamma(4.0, 2.5, size=20_000)),
        (beta_mean_interval, 0.5 * generator.beta(2.0, 30.0, size=20_000)),
    ):
        mean, low, high = interval(x)
        half_width = normal_quantile(0.95) * x.std(ddof=1) / math.sqrt(len(x))
        assert mean == pytest.approx(x.mean(), rel=2e-3)
        assert mean - low == pytest.approx(half_width, rel=0.03) and high - mean == pytest.approx(half_width, rel=0.03)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: gamma_mean_interval([1.0]), r"at least 2 values, got shape \[1\]"),
        (lambda: beta_mean_interval([]), r"at least 2 values, got shape \[0\]"),
        (lambda: gamma_mean_interval([[1.0, 2.0]]), r"a 1-D sequence .* got shape \[1, 2\]"),
        (lambda: gamma_mean_interval([1.0, math.nan, 2.0, math.inf]), r"finite numbers, got \[nan, inf\] at \[1, 3\]"),
        (lambda: beta_mean_interval(torch.tensor([0.1, -math.inf])), r"finite numbers, got \[-inf\] at \[1\]"),
        (lambda: gamma_mean_interval([1.0, 0.0, -2.0]), r"positive values, got \[0.0, -2.0\] at \[1, 2\]"),
        (lambda: beta_mean_interval([0.1, 0.6, -0.1]), r"on \[0, 0.5\] needs values in it, got \[0.6, -0.1\] at \[1, 2\]"),
        (lambda: beta_mean_interval([0.1, 0.2], upper=0.0), r"upper must be a positive finite number, got 0.0"),
        (lambda: gamma_mean_interval([1.0, 2.0], confidence=1.0), r"confidence must be a number in \(0, 1\), got 1.0"),
        (
            lambda: gamma_mean_interval([1, 10**400]),
            r"finite numbers, got ints beyond the largest float \(1.798e\+308\) at \[1\]",
        ),
    ],
)
def test_bad_values_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("upper", [None, 1.5])  # the gamma, a beta on [0, 1.5]
@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.floats(1.0, 1.5), min_size=2, max_size=30), power=st.integers(-1000, 1022))
@example(values=[1.0, 1.25, 1.5, 1.5], power=1022).via("a sum beyond the largest float")
@example(values=[1.5, 1.5, 1.5], power=1022).via("values all equal")
def test_the_intervals_scale_with_a_power_of_two_up_to_the_largest_float(upper, values, power):
    x, scale = np.array(values), 2.0**power  # (the sum of values near the largest float overflowed: a mean of inf)
    interval = gamma_mean_interval if upper is None else partial(beta_mean_interval, upper=upper)
    unscaled = interval(x)
    assume(unscaled[2] * scale < 1.7e308)
    scaled = gamma_mean_interval(x * scale) if upper is None else beta_mean_interval(x * scale, upper=upper * scale)
    assert scaled == tuple(scale * value for value in unscaled)  # exactly: the scale only changes the exponent


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        (torch.tensor([True, True, False]), r"a tensor of torch.bool"),  # read as 1, 1, 0
        (torch.tensor([1.0 + 0j, 2.0 + 0j]), r"a tensor of torch.complex64"),
        (np.array([0.1 + 0.5j, 0.2]), r"ndarray of complex128"),  # the imaginary part was dropped with a warning
        (["0.1", "0.2"], r"list of <U3"),  # parsed as numbers
        ((value for value in [0.1, 0.2]), r"generator of object"),  # failed inside numpy
        ([0.1, None], r"list of object"),
        ([True, 2], r"list holding a bool"),  # read as the ints 1, 2
        ((0.5, np.True_), r"tuple holding a bool"),  # read as the floats 0.5, 1.0
    ],
)
def test_values_that_are_no_ints_or_floats_are_named(values, kind):
    for interval in (gamma_mean_interval, beta_mean_interval):
        with pytest.raises(TypeError, match=rf"^a profile interval needs ints or floats, got {kind}$"):
            interval(values)
    assert gamma_mean_interval(np.array([1, 3], dtype=np.uint8)) == gamma_mean_interval([1.0, 3.0])  # ints are numbers


@pytest.mark.parametrize("upper", [None, 2.0**1001])  # the gamma, a beta on [0, 2**1001]
@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.integers(1, 2**1000), min_size=2, max_size=10).filter(lambda values: max(values) >= 2**64))
@example(values=[1, 2**64])
@example(values=[2**64 + 1, 2**64 + 5])
def test_ints_past_int64_are_taken_as_their_nearest_floats(upper, values):
    """numpy keeps them as objects: they were refused as "list of object", as if they were no numbers."""
    interval = gamma_mean_interval if upper is None else partial(beta_mean_interval, upper=upper)
    assert interval(values) == interval([float(value) for value in values])


def _psi(z: float, order: int = 0) -> float:
    """The digamma function (``order`` 0) or its ``order``-th derivative at ``z``."""
    return float(torch.special.polygamma(order, torch.tensor(z, dtype=torch.float64)))


def _increasing_root(function, low: float, high: float) -> float:
    """Where the increasing ``function`` crosses 0 between ``low`` and ``high``, by bisection."""
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if function(middle) < 0 else (low, middle)
    return (low + high) / 2


def _gamma_half_width(x: np.ndarray, mean: float) -> float:
    """The interval's half-width per unit of the normal quantile as the confidence goes to 0: ``mean / √(n k)`` with
    the maximum-likelihood shape ``k`` (``log k − ψ(k) = log mean − mean log x``; the profile's curvature in the mean is
    ``n k / mean²``, the shape's score being 0 at the sample mean for any mean)."""
    excess = math.log(mean) - np.log(x).mean()
    log_shape = _increasing_root(lambda s: excess - s + _psi(math.exp(s)), -40.0, 40.0)
    return mean / math.sqrt(len(x) * math.exp(log_shape))


def _beta_half_width(x: np.ndarray, mean: float, upper: float = 0.5) -> float:
    """As :func:`_gamma_half_width` for the beta on ``[0, upper]`` at its maximum-likelihood ``mean``: ``upper`` over
    the square root of ``n`` times the information of the scaled mean ``m`` with the concentration ``φ`` profiled out,
    ``I_mm − I_mφ² / I_φφ`` (the observed information at the maximum is the expected one)."""
    y, m = x / upper, mean / upper
    log_y, log_rest = np.log(y).mean(), np.log1p(-y).mean()

    def minus_score(log_concentration: float) -> float:
        phi = math.exp(log_concentration)
        return m * _psi(m * phi) + (1 - m) * _psi((1 - m) * phi) - _psi(phi) - m * log_y - (1 - m) * log_rest

    phi = math.exp(_increasing_root(minus_score, -40.0, 40.0))
    below, above = _psi(m * phi, 1), _psi((1 - m) * phi, 1)
    mean_mean = phi**2 * (below + above)
    mean_concentration = phi * (m * below - (1 - m) * above)
    concentration_concentration = m**2 * below + (1 - m) ** 2 * above - _psi(phi, 1)
    return upper / math.sqrt(len(x) * (mean_mean - mean_concentration**2 / concentration_concentration))


@settings(max_examples=30, deadline=None)
@given(
    values=st.lists(st.floats(0.01, 0.49), min_size=2, max_size=12),
    confidence=st.one_of(st.floats(1e-10, 1e-4), st.floats(4.0, 10.0).map(lambda digits: 10**-digits)),
    beta=st.booleans(),
)
@example(values=[0.1, 0.2, 0.3, 0.15], confidence=1e-7, beta=False).via("ends off by 14 %")
@example(values=[0.1, 0.2, 0.3, 0.15], confidence=1e-8, beta=True).via("no end found")
def test_at_small_confidences_the_half_width_is_the_quantile_over_the_root_of_the_information(values, confidence, beta):
    # (below a confidence of about 1e-6 the drop of the profile was lost in its rounding: ends off by 14 % at 1e-7 and an
    # ArithmeticError below 1e-8)
    x = np.array(values)
    assume(np.ptp(x) > 1e-3)
    mean, low, high = (beta_mean_interval if beta else gamma_mean_interval)(x, confidence=confidence)
    expected = normal_quantile(confidence) * (_beta_half_width(x, mean) if beta else _gamma_half_width(x, mean))
    assert (high - low) / 2 == pytest.approx(expected, rel=1e-6, abs=4 * np.spacing(mean))  # (the rest: z² terms)
    assert low <= mean <= high


def test_a_confidence_near_0_gives_the_point_of_the_mean():
    for interval in (gamma_mean_interval, beta_mean_interval):
        mean, low, high = interval([0.1, 0.2, 0.3, 0.15], confidence=1e-300)
        assert low == mean == high
