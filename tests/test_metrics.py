import decimal
import math
import re

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neurosym.data.arithmetic import SimpleFunctionData, SubsetLayout
from neurosym.metrics import (
    exact_match,
    perturbed_solution_mse,
    run_outcomes,
    sequence_matches,
    summarize,
    wilson_interval,
)
from neurosym.metrics.interval import normal_quantile
from neurosym.metrics.noise_sensitivity import noise_sensitivity, noise_sensitivity_curve
from neurosym.metrics.profile import beta_mean_interval, gamma_mean_interval
from neurosym.metrics.success import sparsity_at_best


def test_wilson_interval_published_values():
    low, high = wilson_interval(98, 100)
    assert (round(low, 3), round(high, 3)) == (0.930, 0.994)
    low, high = wilson_interval(0, 100)
    assert low == 0.0 and round(high, 3) == 0.037
    low, high = wilson_interval(100, 100)
    assert high == 1.0 and round(low, 3) == 0.963


def test_wilson_interval_takes_numpy_and_tensor_counts_but_not_bools_or_fractions():
    expected = wilson_interval(3, 10)
    assert wilson_interval(np.int64(3), 10) == expected == wilson_interval(torch.tensor(3), np.int32(10))
    for successes in (True, 3.0, torch.tensor([3]), np.bool_(True), torch.tensor(True), torch.tensor(3 + 0j)):
        with pytest.raises(ValueError, match=r"successes must be an int in \[0, 10\], got "):
            wilson_interval(successes, 10)


@settings(max_examples=60, deadline=None)
@given(trials=st.integers(1, 500), data=st.data(), confidence=st.floats(0.5, 0.999))
def test_wilson_interval_contains_the_rate_and_narrows_with_confidence(trials, data, confidence):
    successes = data.draw(st.integers(0, trials))
    low, high = wilson_interval(successes, trials, confidence)
    assert 0.0 <= low <= successes / trials <= high <= 1.0
    wider_low, wider_high = wilson_interval(successes, trials, min(0.9999, confidence + 0.0005))
    assert wider_low <= low + 1e-12 and wider_high >= high - 1e-12


def _wilson_at_60_digits(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    with decimal.localcontext(prec=60):
        z_squared = decimal.Decimal(normal_quantile(confidence)) ** 2
        scale = trials + z_squared
        centre = (successes + z_squared / 2) / scale
        half_width = (z_squared * (decimal.Decimal(successes) * (trials - successes) / trials + z_squared / 4)).sqrt() / scale
        return float(centre - half_width), float(centre + half_width)


@settings(max_examples=60, deadline=None)
@given(bits=st.integers(1, 1200), data=st.data(), confidence=st.floats(0.5, 0.999))
@example(bits=1100, data=None, confidence=0.95).via("more trials than the largest float")
@example(bits=600, data=None, confidence=0.95).via("trials squared beyond the largest float")
def test_wilson_interval_of_any_number_of_trials_agrees_with_a_60_digit_one(bits, data, confidence):
    # (an OverflowError from 1e154 trials on: the interval was computed in floats)
    trials = 2**bits - 1 if data is None else data.draw(st.integers(2 ** (bits - 1), 2**bits))
    successes = 5 if data is None else data.draw(st.one_of(st.integers(0, min(trials, 100)), st.integers(0, trials)))
    low, high = wilson_interval(successes, trials, confidence)
    expected_low, expected_high = _wilson_at_60_digits(successes, trials, confidence)
    assert high == pytest.approx(expected_high, rel=1e-14, abs=1e-323)
    assert low == pytest.approx(expected_low, rel=0, abs=1e-15 * expected_high + 1e-323)  # (centre − half-width)


confidences = st.one_of(
    st.floats(0.01, 0.99),
    st.floats(1.0, 15.5).map(lambda digits: 1 - 10**-digits),  # near 1: 1 − confidence is exact
    st.floats(1.0, 300.0).map(lambda digits: 10**-digits),
)


@settings(max_examples=200, deadline=None)
@given(confidence=confidences)
def test_the_normal_quantile_of_a_confidence_is_exact_near_0_and_1_too(confidence):
    z = normal_quantile(confidence)
    assert math.erf(z / math.sqrt(2)) == pytest.approx(confidence, rel=1e-13, abs=0)
    assert math.erfc(z / math.sqrt(2)) == pytest.approx(1 - confidence, rel=1e-11, abs=0)  # the tail beyond ±z


def test_the_normal_quantile_matches_high_precision_values():
    # √2 · erf⁻¹(confidence) at 40 digits (mpmath); 0.5 + confidence / 2 rounded the tail away near 1 (8.0414 at
    # 1 − 1e-15) and the quantile itself near 0
    for confidence, expected in ((0.95, 1.9599639845400538), (1 - 1e-12, 7.130509892879273),
                                 (1 - 1e-15, 8.026957018033892), (1e-12, 1.2533141373155002e-12)):  # fmt: skip
        assert normal_quantile(confidence) == pytest.approx(expected, rel=1e-14, abs=0)


def test_wilson_interval_rejects_bad_counts():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 4)
    with pytest.raises(ValueError, match="trials"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 2, confidence=1.0)
    for confidence in ("0.9", None, True, math.nan):
        with pytest.raises(ValueError, match=r"confidence must be a number in \(0, 1\)"):
            wilson_interval(1, 2, confidence=confidence)


# Published thresholds (Madsen & Johansen 2019) with their printed precision (3 significant figures).
PUBLISHED = {"add": 1.48e-5, "sub": 1.38e-8, "mul": 0.160, "div": 4.94e-12}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_threshold_estimator_reproduces_published_thresholds(name):
    # The published numbers correspond to subsets of 26 overlapping by 13 (see neurosym.metrics.threshold).
    estimate = perturbed_solution_mse(name, layout=SubsetLayout(subset_ratio=0.26), samples=100_000, seed=1)
    rounding = 0.005 * PUBLISHED[name] / (PUBLISHED[name] / 10 ** math.floor(math.log10(PUBLISHED[name])))
    assert abs(estimate.value - PUBLISHED[name]) <= 4 * estimate.standard_error + rounding + 0.004 * PUBLISHED[name]
    assert estimate.standard_error < 0.02 * estimate.value


def test_threshold_of_the_default_task_and_its_dependence_on_epsilon():
    add = perturbed_solution_mse("add", samples=50_000)
    assert abs(add.value - 1.604e-5) < 4 * add.standard_error + 1e-8  # 2ε(a + b − Σx) with a + b − Σx ≈ −200
    smaller = perturbed_solution_mse("add", epsilon=1e-6, samples=50_000)
    assert abs(smaller.value / add.value - 1e-2) < 1e-4  # quadratic in ε
    for options, named in (({"samples": 1}, "samples"), ({"samples": 1e3}, "samples"), ({"chunk_size": 0}, "chunk_size"),
                           ({"chunk_size": -5}, "chunk_size"), ({"epsilon": math.inf}, "epsilon"), ({"seed": -1}, "seed")):  # fmt: skip
        with pytest.raises(ValueError, match=named):
            perturbed_solution_mse("add", **options)
    for option in ("chunk_size", "seed"):  # True was read as 1
        with pytest.raises(ValueError, match=f"{option} must be an int of at least ., got True"):
            perturbed_solution_mse("add", samples=10, **{option: True})
    for epsilon in (True, "1e-5", math.nan):  # (True was read as 1; the text failed on the comparison)
        with pytest.raises(ValueError, match=f"epsilon must be a finite number above 0, got {epsilon!r}"):
            perturbed_solution_mse("add", samples=10, epsilon=epsilon)
    with pytest.raises(ValueError, match="unknown operation"):
        perturbed_solution_mse("pow")
    with pytest.raises(ValueError, match="'sqrt' needs non-negative inputs"):  # was a NaN threshold
        perturbed_solution_mse("sqrt", ranges="[-2,2]", samples=10)
    # ÷ over inputs of both signs: the estimate was a random number (4 to 4e6 with the seed), and ÷ "solved" against it
    with pytest.raises(ValueError, match=r"'div' needs inputs of one sign, but range pair '\[-2,2\]' has both"):
        perturbed_solution_mse("div", ranges="[-2,2]", samples=10)
    with pytest.raises(ValueError, match="'div' needs inputs of one sign"):
        SimpleFunctionData(["div"], [0], ranges="[-2,2]", evaluation_size=10)
    assert perturbed_solution_mse("div", ranges="[-2,-1]", samples=1000).value > 0  # one sign, negative: taken
    whole_overlap = SubsetLayout(overlap_ratio=1.0)  # a - b = 0 and a / b = 1 whatever the weights: a threshold of 0
    for name in ("sub", "div"):  # (cached as 0.0, and refused by the table after the whole training budget)
        with pytest.raises(
            ValueError, match=f"the perturbed solution of '{name}' is exact .* its MSE, the success threshold, is 0"
        ):
            perturbed_solution_mse(name, layout=whole_overlap, samples=100)
    assert perturbed_solution_mse("add", layout=whole_overlap, samples=100).value > 0


def _curves(validation, extrapolation):
    return torch.tensor(validation, dtype=torch.float64).T, torch.tensor(extrapolation, dtype=torch.float64).T


def test_success_criterion_on_constructed_curves():
    steps = torch.tensor([1000, 2000, 3000, 4000])
    validation, extrapolation = _curves(
        [
            [1.0, 0.5, 0.1, 0.2],  # best validation at 3000, extrapolation there 0.01 < 0.05: solved, first under at 2000
            [1.0, 0.1, 0.5, 0.5],  # best validation at 2000 where extrapolation is 0.2: unsolved despite 0.01 later
            [math.nan, 0.3, 0.3, 0.9],  # NaN never best; tie at 2000/3000 goes to 2000 (0.04): solved at 2000
            [1.0, 0.5, 0.4, 0.3],  # best at 4000 where extrapolation is NaN: unsolved
        ],
        [
            [1.0, 0.04, 0.01, 0.3],
            [1.0, 0.2, 0.01, 0.01],
            [0.01, 0.04, 0.3, 0.3],
            [1.0, 1.0, 0.01, math.nan],
        ],
    )
    outcomes = run_outcomes(steps, validation, extrapolation, threshold=0.05)
    assert outcomes.solved.tolist() == [True, False, True, False]
    assert outcomes.best_index.tolist() == [2, 1, 1, 3]
    assert outcomes.solved_at[0].item() == 2000 and outcomes.solved_at[2].item() == 1000
    assert math.isnan(outcomes.solved_at[1].item()) and math.isnan(outcomes.solved_at[3].item())
    sparsity = torch.tensor([[0.4, 0.3, 0.2, 0.1]] * 4).T.clone()
    sparsity[1, 2] = 0.25
    summary = summarize(outcomes, sparsity)
    assert (summary.solved, summary.runs, summary.rate) == (2, 4, 0.5)
    assert summary.interval == wilson_interval(2, 4)
    assert summary.median_solved_at == summary.mean_solved_at == 1500.0
    assert (summary.mean_solved_at, *summary.solved_at_interval) == gamma_mean_interval([2000.0, 1000.0])
    solved_sparsity = sparsity[[2, 1], [0, 2]]  # each solved run's at its best evaluation
    assert (summary.mean_sparsity_error, *summary.sparsity_error_interval) == beta_mean_interval(solved_sparsity)
    assert summary.mean_sparsity_error == pytest.approx((0.2 + 0.25) / 2, rel=1e-4)  # (the beta's maximum-likelihood mean)
    assert summarize(outcomes, sparsity.tolist()) == summary  # lists, as run_outcomes takes them
    assert sparsity_at_best(outcomes, sparsity)[[0, 2]].tolist() == solved_sparsity.tolist()
    assert sparsity_at_best(outcomes, sparsity)[[1, 3]].isnan().all()  # unsolved: NaN
    narrow = summarize(outcomes, sparsity, confidence=0.5)
    assert narrow.solved_at_interval == gamma_mean_interval([2000.0, 1000.0], confidence=0.5)[1:]
    assert narrow.sparsity_error_interval == beta_mean_interval(solved_sparsity, confidence=0.5)[1:]
    per_run = run_outcomes(steps, validation[:, 0], extrapolation[:, 0], torch.tensor(0.05))
    assert per_run.solved.dim() == 0 and bool(per_run.solved) and per_run.solved_at.item() == 2000


def test_success_criterion_per_run_thresholds_and_empty_summary():
    steps = torch.tensor([10, 20])
    validation, extrapolation = _curves([[0.2, 0.1], [0.2, 0.1]], [[0.5, 0.03], [0.5, 0.03]])
    outcomes = run_outcomes(steps, validation, extrapolation, threshold=torch.tensor([0.05, 0.01]))
    assert outcomes.solved.tolist() == [True, False]
    none_solved = run_outcomes(steps, validation, extrapolation, threshold=1e-9)
    none = summarize(none_solved)
    for wrong in ([1, 2], [3, 2], [2, 1]):  # fewer or more evaluations than the outcomes' (more were read), or runs
        with pytest.raises(ValueError, match=rf"sparsity_error must be \[E, S\] = \[2, 2\], .* got \{wrong}"):
            summarize(outcomes, torch.zeros(wrong))
    assert none.solved == 0 and none.median_solved_at is None and none.mean_sparsity_error is None
    assert none.mean_solved_at is None and none.solved_at_interval is None and none.sparsity_error_interval is None
    assert none.interval == wilson_interval(0, 2)
    assert summarize(none_solved, torch.zeros(2, 2)) == none
    with pytest.raises(ValueError, match=r"sparsity_error must be \[E, S\] = \[2, 2\]"):  # (passed when no run was solved)
        summarize(none_solved, torch.zeros(2, 1))


@settings(max_examples=30, deadline=None)
@given(
    curves=st.integers(1, 6).flatmap(
        lambda evaluations: st.tuples(*(st.lists(st.floats(0.0, 0.5), min_size=evaluations, max_size=evaluations),) * 3)
    )
)
def test_one_runs_sparsity_error_is_read_as_its_curves_are_one_dimensional_or_a_column(curves):
    # (run_outcomes took one run's curves as [E], sparsity_at_best and summarize raised unless they were [E, 1])
    validation, extrapolation, sparsity = (torch.tensor(curve, dtype=torch.float64) for curve in curves)
    steps = torch.arange(len(validation))
    one_run = run_outcomes(steps, validation, extrapolation, 0.25)
    column = run_outcomes(steps, validation[:, None], extrapolation[:, None], 0.25)
    for outcomes in (one_run, column):
        read = sparsity_at_best(outcomes, sparsity)  # [1]: NaN for an unsolved run
        torch.testing.assert_close(read, sparsity_at_best(column, sparsity[:, None]), rtol=0, atol=0, equal_nan=True)
        assert summarize(outcomes, sparsity) == summarize(column, sparsity[:, None])
    two_runs = run_outcomes(steps, validation[:, None].repeat(1, 2), extrapolation[:, None].repeat(1, 2), 0.25)
    with pytest.raises(ValueError, match=rf"sparsity_error must be \[E, S\] = \[{len(steps)}, 2\], .* got \[{len(steps)}\]"):
        summarize(two_runs, sparsity)  # one curve for two runs: whose?


def test_one_solved_run_or_a_sparsity_error_above_one_half_gives_a_mean_without_an_interval():
    steps = torch.tensor([10, 20])
    validation, extrapolation = _curves([[0.2, 0.1], [0.2, 0.1], [0.1, 0.2]], [[0.5, 0.03], [0.5, 0.03], [0.5, 0.5]])
    outcomes = run_outcomes(steps, validation, extrapolation, threshold=torch.tensor([0.05, 0.01, 0.05]))  # run 0 solved
    one = summarize(outcomes, torch.tensor([[0.9, 0.9, 0.9], [0.125, 0.9, 0.9]]))
    assert (one.mean_solved_at, one.solved_at_interval, one.mean_sparsity_error, one.sparsity_error_interval) == (
        20.0, None, 0.125, None
    )  # fmt: skip
    two = run_outcomes(steps, validation, extrapolation, threshold=0.05)  # runs 0 and 1 solved
    beyond = summarize(two, torch.tensor([[0.0, 0.0, 0.0], [0.25, 0.75, 0.0]], dtype=torch.float64))  # (a weight of 1.75)
    assert beyond.mean_sparsity_error == 0.5 and beyond.sparsity_error_interval is None
    assert beyond.solved_at_interval == (20.0, 20.0)  # solved at the same step: all equal


def test_a_run_solved_at_step_0_gives_the_mean_solved_at_step_without_an_interval():
    validation, extrapolation = _curves([[0.3, 0.2, 0.1], [0.3, 0.2, 0.1]], [[0.01, 0.01, 0.01], [0.5, 0.01, 0.01]])
    outcomes = run_outcomes([0, 10, 20], validation, extrapolation, 0.05)  # evaluated untrained, then every 10 steps
    assert outcomes.solved_at.tolist() == [0.0, 10.0]
    summary = summarize(outcomes, torch.full((3, 2), 0.1, dtype=torch.float64))  # (a gamma fit of step 0 raised)
    assert (summary.mean_solved_at, summary.median_solved_at, summary.solved_at_interval) == (5.0, 5.0, None)
    assert summary.sparsity_error_interval == (0.1, 0.1)  # the other interval is still given


@pytest.mark.parametrize("missing", [math.nan, math.inf, -math.inf, -0.125, -1e-300])
def test_a_sparsity_error_that_is_no_finite_number_at_least_0_at_a_solved_runs_best_evaluation_is_named(missing):
    steps = torch.tensor([10, 20])
    validation, extrapolation = _curves([[0.2, 0.1], [0.1, 0.2], [0.2, 0.1]], [[0.5, 0.03], [0.03, 0.5], [0.5, 0.5]])
    outcomes = run_outcomes(steps, validation, extrapolation, threshold=0.05)  # runs 0 and 1 solved, at 20 and 10
    sparsity = torch.full((2, 3), 0.1, dtype=torch.float64)
    sparsity[1, 0], sparsity[0, 1], sparsity[1, 2] = missing, missing, missing
    with pytest.raises(  # the mean over the solved runs was NaN (or inf); a negative one was named by its place among
        # the solved runs (or averaged in beside a sparsity error above 0.5)
        ValueError,
        match=rf"^sparsity_error is not a finite number >= 0 at the best evaluation of solved run\(s\) \[0, 1\] "
        rf"\(evaluation \[1, 0\]\): \[{missing}, {missing}\]$",
    ):
        summarize(outcomes, sparsity)
    sparsity[0, 1] = 0.75  # beside a sparsity error above 0.5 (no interval), -0.125 was averaged in
    with pytest.raises(ValueError, match=rf"solved run\(s\) \[0\] \(evaluation \[1\]\): \[{missing}\]$"):
        summarize(outcomes, sparsity)
    sparsity[1, 0], sparsity[0, 1] = 0.2, 0.3  # the unsolved run 2 is not read, even at its best evaluation
    assert summarize(outcomes, sparsity).mean_sparsity_error == pytest.approx(0.25)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 3)),
    curve=st.sampled_from(["validation", "extrapolation"]),
    negative=st.one_of(st.floats(max_value=-1e-300, allow_infinity=True), st.just(-math.inf)),
    data=st.data(),
)
def test_a_negative_mse_is_named_where_it_was_read_as_solved(shape, curve, negative, data):
    evaluations, runs = shape
    evaluation, run = data.draw(st.integers(0, evaluations - 1)), data.draw(st.integers(0, runs - 1))
    curves = {"validation": torch.ones(shape, dtype=torch.float64), "extrapolation": torch.ones(shape, dtype=torch.float64)}
    steps = torch.arange(evaluations)
    assert not run_outcomes(steps, curves["validation"], curves["extrapolation"], 0.5).solved.any()
    curves[curve][evaluation, run] = negative  # an extrapolation MSE of -1 was under the threshold: solved
    with pytest.raises(ValueError, match=rf"^{curve} MSE must not be negative, got .* at evaluation {evaluation} of run {run}$"):
        run_outcomes(steps, curves["validation"], curves["extrapolation"], 0.5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_errors_meet_the_threshold_as_given(dtype):
    just_under = torch.tensor([[1.4797e-5], [1e-9]]).to(dtype)  # bfloat16 1.4782e-5 < 1.48e-5; float16: 1e-9 is 0
    outcomes = run_outcomes([0, 1], torch.tensor([[1.0], [2.0]]), just_under, 1.48e-5)
    assert outcomes.solved.tolist() == [True]
    assert run_outcomes([0], torch.ones(1, 1), torch.zeros(1, 1, dtype=dtype), 1e-8).solved.tolist() == [True]


def test_success_criterion_rejects_bad_input():
    good = torch.zeros(3, 2)
    with pytest.raises(ValueError, match="strictly increasing"):
        run_outcomes(torch.tensor([1, 1, 2]), good, good, 0.1)
    with pytest.raises(ValueError, match=r"shape \[3, S\]"):
        run_outcomes(torch.tensor([1, 2, 3]), good, torch.zeros(3, 3), 0.1)
    with pytest.raises(ValueError, match="threshold"):
        run_outcomes(torch.tensor([1, 2, 3]), good, good, math.nan)
    with pytest.raises(ValueError, match=r"with S >= 1 runs, got \[3, 0\]"):  # no run: no success rate to divide out
        run_outcomes(torch.tensor([1, 2, 3]), torch.zeros(3, 0), torch.zeros(3, 0), 0.1)
    with pytest.raises(ValueError, match=r"threshold must be a scalar or one per run \[2\], got shape \[3\]"):
        run_outcomes(torch.tensor([1, 2, 3]), good, good, torch.tensor([0.1, 0.1, 0.1]))
    with pytest.raises(ValueError, match="finite and strictly increasing"):
        run_outcomes(torch.tensor([1.0, math.nan, 3.0]), good, good, 0.1)
    for threshold in (True, "0.1", None):  # True was read as a threshold of 1; text failed inside torch
        with pytest.raises(ValueError, match=rf"^threshold must be a finite number above 0, got {threshold!r}$"):
            run_outcomes(torch.tensor([1, 2, 3]), good, good, threshold)
    assert run_outcomes([1, 2, 3], good, good, np.float32(0.1)).solved.all()  # numpy's numbers are numbers
    with pytest.raises(TypeError, match=r"^steps must hold ints or floats, got ndarray holding text '0'$"):
        run_outcomes(np.array(["0", "1"]), [1.0, 0.0], [1.0, 0.0], 0.5)  # (an array of text named as its text)


@pytest.mark.parametrize("kind", [torch.bool, torch.complex64])
@pytest.mark.parametrize("which", ["steps", "validation_mse", "extrapolation_mse", "threshold", "sparsity_error"])
def test_curves_of_bools_or_complex_numbers_are_named(which, kind):
    # (True was read as an MSE, a step or a threshold of 1 and False as an MSE of 0, under every threshold: solved)
    arguments = {
        "steps": torch.tensor([0, 1]),
        "validation_mse": torch.tensor([[1.0], [0.0]]),
        "extrapolation_mse": torch.tensor([[1.0], [0.0]]),
        "threshold": torch.tensor([0.5]),
    }
    sparsity = torch.tensor([[0.0], [1.0]])
    assert summarize(run_outcomes(**arguments), sparsity).solved == 1
    with pytest.raises(TypeError, match=rf"^{which} must hold ints or floats, got Tensor of {kind}$"):
        if which == "sparsity_error":
            summarize(run_outcomes(**arguments), sparsity.to(kind))
        else:
            run_outcomes(**{**arguments, which: arguments[which].to(kind)})
    with pytest.raises(TypeError, match=r"^validation_mse must hold ints or floats, got list of torch.bool$"):
        run_outcomes([0, 1], [True, False], [0.0, 0.0], 0.5)


@pytest.mark.parametrize("which", ["steps", "validation_mse", "extrapolation_mse", "threshold", "sparsity_error"])
def test_lists_mixing_bools_with_numbers_are_named(which):
    # (torch read [True, 0.0] as the floats 1.0, 0.0 and [0, True] as the ints 0, 1, silently)
    curves = [[1.0, 1.0], [0.0, 0.0]]  # [E, S]: two evaluations of two runs
    arguments = {"steps": [0, 1], "validation_mse": curves, "extrapolation_mse": curves, "threshold": [0.5, 0.5]}
    mixed = {"steps": [0, True], "validation_mse": [[True, 1.0], [0.0, 0.0]],
             "extrapolation_mse": [[1.0, 1.0], [False, 0.0]], "threshold": [True, 0.5]}  # fmt: skip
    assert summarize(run_outcomes(**arguments), [[0.0, 0.0], [0.25, 0.25]]).mean_sparsity_error == 0.25
    with pytest.raises(TypeError, match=rf"^{which} must hold ints or floats, got list holding a bool$"):
        if which == "sparsity_error":
            summarize(run_outcomes(**arguments), [[0.0, 0.0], [True, 0.25]])
        else:
            run_outcomes(**{**arguments, which: mixed[which]})


@settings(max_examples=30, deadline=None)
@given(
    which=st.sampled_from(["steps", "validation_mse", "extrapolation_mse", "threshold", "sparsity_error"]),
    text=st.text(max_size=3),
    as_array=st.booleans(),
    data=st.data(),
)
def test_curves_holding_text_are_named(which, text, as_array, data):
    # (text failed inside torch with "too many dimensions 'str'", not naming which argument held it)
    arguments = {"steps": [0, 1], "validation_mse": [[1.0], [0.0]], "extrapolation_mse": [[1.0], [0.0]], "threshold": [0.5]}
    sparsity = [[0.0], [1.0]]
    given_values = sparsity if which == "sparsity_error" else arguments[which]
    assert summarize(run_outcomes(**arguments), sparsity).solved == 1
    index = data.draw(st.integers(0, len(given_values) - 1))
    entry = text if isinstance(given_values[index], float | int) else [text]
    holding = [entry if i == index else value for i, value in enumerate(given_values)]
    if as_array:
        holding = np.array(holding, dtype=object)
    kind = type(holding).__name__
    with pytest.raises(TypeError, match=rf"^{which} must hold ints or floats, got {kind} holding text {re.escape(repr(text))}$"):
        if which == "sparsity_error":
            summarize(run_outcomes(**arguments), holding)
        else:
            run_outcomes(**{**arguments, which: holding})


@pytest.mark.parametrize("missing", [math.nan, math.inf])
def test_a_run_without_a_finite_validation_mse_is_unsolved_and_lists_and_integers_are_read_as_values(missing):
    validation = torch.tensor([[missing, 1.0], [missing, 0.5]])  # (+inf was read as the largest double: solved)
    outcomes = run_outcomes(torch.tensor([10, 20]), validation, torch.zeros(2, 2), 0.1)
    assert outcomes.solved.tolist() == [False, True] and outcomes.solved_at[0].isnan()
    listed = run_outcomes([10, 20], [[2.0], [1.0]], [[1], [1]], 1.5)  # integer MSEs keep a fractional threshold
    assert listed.solved.tolist() == [True] and listed.best_index.tolist() == [1]


def test_exact_match_for_tensors_and_sequences():
    predictions = torch.tensor([[1, 2, 0], [3, 4, 5], [6, 0, 0]])
    targets = torch.tensor([[1, 2, 0], [3, 4, 6], [6, 0, 0]])
    assert sequence_matches(predictions, targets).tolist() == [True, False, True]
    assert exact_match(predictions, targets) == pytest.approx(2 / 3)
    assert exact_match(["12+3", [1, 2]], ["12+3", (1, 2)]) == 1.0
    assert exact_match([[1, 2, 3]], [[1, 2]]) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        exact_match(predictions, targets[:, :2])
    with pytest.raises(ValueError, match="2 predictions for 1 targets"):
        exact_match([[1], [2]], [[1]])
    with pytest.raises(ValueError, match="at least one"):
        exact_match([], [])
    with pytest.raises(ValueError, match="at least one"):
        exact_match(torch.zeros(0, 3), torch.zeros(0, 3))
    assert sequence_matches(torch.tensor([1, 2, 3]), torch.tensor([1, 0, 3])).tolist() == [True, False, True]
    with pytest.raises(TypeError, match="both"):
        exact_match(predictions, targets.tolist())


CONTAINERS = {
    "list": lambda grid: [list(row) for row in grid],
    "tuple": lambda grid: tuple(tuple(row) for row in grid),
    "list of tuples": lambda grid: [tuple(row) for row in grid],
    "tuple of tensors": lambda grid: tuple(torch.tensor(row, dtype=torch.long) for row in grid),
    "array": lambda grid: np.array(grid, dtype=np.int64).reshape(len(grid), -1),
    "tensor": lambda grid: torch.tensor(grid, dtype=torch.long).reshape(len(grid), -1),
}
token_grids = st.integers(1, 3).flatmap(lambda width: st.lists(st.lists(st.integers(0, 9), min_size=width, max_size=width),
                                                          min_size=1, max_size=3))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(grids=st.lists(token_grids, min_size=1, max_size=4), data=st.data())
def test_examples_given_as_nested_sequences_match_whatever_their_containers(grids, data):
    kinds = st.sampled_from(sorted(CONTAINERS))
    predictions = [CONTAINERS[data.draw(kinds)](grid) for grid in grids]
    targets = [CONTAINERS[data.draw(kinds)](grid) for grid in grids]  # (a 2-D array against nested tuples: no match)
    assert sequence_matches(predictions, targets).all()
    changed = data.draw(st.integers(0, len(grids) - 1))
    grids[changed][0][0] += 1
    targets[changed] = CONTAINERS[data.draw(kinds)](grids[changed])
    assert sequence_matches(predictions, targets).tolist() == [k != changed for k in range(len(grids))]


def test_exact_match_reads_each_row_of_an_array_and_each_decoded_tensor_as_one_example():
    predictions, targets = np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]])
    assert exact_match(predictions, targets) == 0.5 and exact_match(list(predictions), list(targets)) == 0.5
    assert exact_match(torch.as_tensor(predictions), targets) == 0.5
    decoded = [torch.tensor([1, 2]), torch.tensor([3])]  # rows of different lengths
    assert sequence_matches(decoded, [[1, 2], (4,)]).tolist() == [True, False]
    assert exact_match([np.array([1, 2]), np.array([3])], decoded) == 1.0
    words = np.array(["12", "34"])  # arrays of text: one example per item (torch has no string tensors)
    assert sequence_matches(words, np.array(["12", "35"])).tolist() == [True, False]
    assert exact_match(np.array([["1", "2"], ["3", "4"]]), [("1", "2"), ["3", "5"]]) == 0.5


def test_tensors_on_two_devices_are_named_and_an_array_goes_to_the_tensors_device():
    # (torch raised a RuntimeError about an expected device, for an array beside a CUDA tensor too)
    on_meta = torch.tensor([[1, 2], [3, 4]], device="meta")
    with pytest.raises(ValueError, match=r"^predictions and targets must be on one device, got meta and cpu$"):
        sequence_matches(on_meta, torch.tensor([[1, 2], [3, 4]]))
    for predictions, targets in ((on_meta, np.array([[1, 2], [3, 5]])), (np.array([[1, 2], [3, 5]]), on_meta)):
        matches = sequence_matches(predictions, targets)
        assert matches.device == on_meta.device and matches.shape == (2,)
    assert sequence_matches(np.array([[1, 2], [3, 5]]), torch.tensor([[1, 2], [3, 4]])).tolist() == [True, False]


def test_exact_match_refuses_one_string_that_it_would_score_character_by_character():
    with pytest.raises(TypeError, match="not one string: got str and str"):
        exact_match("abc", "abd")  # was 2/3
    with pytest.raises(TypeError, match="not one string"):
        sequence_matches(["12"], "12")


@pytest.mark.parametrize(
    ("predictions", "targets", "kind"),
    [
        ({0: "a", 1: "b"}, {0: "a", 1: "c"}, "dict"),  # its keys were compared: 1.0
        ({"7", "8"}, {"7", "9"}, "set"),  # compared in the order of the hashes, 1/2 or 0 as they fell
        ((token for token in "ab"), ["a", "b"], "generator"),  # failed as "object of type 'generator' has no len()"
    ],
)
def test_exact_match_refuses_examples_that_are_no_sequence(predictions, targets, kind):
    with pytest.raises(TypeError, match=rf"^predictions must be a sequence of examples .*, got {kind}$"):
        exact_match(predictions, targets)
    with pytest.raises(TypeError, match=rf"^targets must be a sequence of examples .*, got {kind}$"):
        sequence_matches(["a", "b"], predictions)


def test_noise_sensitivity_names_bad_sizes_and_functions_of_the_wrong_shape():
    def total(digits):
        return digits.sum(axis=1)

    with pytest.raises(ValueError, match=r"function must map digits \[10, 3\] to outputs \[10\], got \[10, 3\]"):
        noise_sensitivity(lambda digits: digits, 3, 10, 0.1, 10)  # compared digit by digit: 0.23
    with pytest.raises(ValueError, match="need an int of at least 2 digit classes, got 2.5"):
        noise_sensitivity(total, 3, 2.5, 0.1, 10)  # digits read mod 2.5
    with pytest.raises(ValueError, match=r"length \(digits per input\) must be an int of at least 1, got 0"):
        noise_sensitivity(total, 0, 10, 0.1, 10)  # NS 0 for any function
    with pytest.raises(ValueError, match="need an int of at least one sample, got 2.5"):
        noise_sensitivity(total, 3, 10, 0.1, 2.5)
    with pytest.raises(ValueError, match="repeats must be an int of at least 1, got 0"):
        noise_sensitivity_curve(total, 3, 10, np.array([0.1]), 10, repeats=0)  # NaN means


@settings(max_examples=40, deadline=None)
@given(total=st.integers(1, 5000), data=st.data())
@example(total=2**25, data=None).via("all but one of 2**25: a float32 mean of 1.0")
def test_exact_match_is_the_count_of_matches_over_the_count_of_examples(total, data):
    # (a float32 mean: 1/3 was 0.3333333432674408, and 2**25 − 1 matches of 2**25 gave 1.0)
    matched = total - 1 if data is None else data.draw(st.integers(0, total))
    targets = torch.zeros(total, dtype=torch.uint8)
    predictions = targets.clone()
    predictions[matched:] = 1
    assert exact_match(predictions, targets) == matched / total
    if data is not None and total <= 50:
        assert exact_match(predictions.tolist(), targets.tolist()) == matched / total


def test_curves_or_a_sparsity_error_on_another_device_are_named():
    # (torch raised from deep inside: a RuntimeError about an expected device, or the meta device's NotImplementedError)
    on_cpu = torch.tensor([[1.0], [0.01]])
    with pytest.raises(ValueError, match=r"^validation_mse and extrapolation_mse must be on one device, got cpu and meta$"):
        run_outcomes([0, 1], on_cpu, on_cpu.to("meta"), 0.1)
    with pytest.raises(ValueError, match=r"^validation_mse and extrapolation_mse must be on one device, got meta and cpu$"):
        run_outcomes([0, 1], on_cpu.to("meta"), on_cpu.tolist(), 0.1)  # a list is on the CPU
    outcomes = run_outcomes([0, 1], on_cpu, on_cpu, 0.1)
    with pytest.raises(ValueError, match=r"^sparsity_error and the outcomes must be on one device, got meta and cpu$"):
        summarize(outcomes, torch.zeros(2, 1, device="meta"))


INTEGER_DTYPES = [np.uint16, np.uint32, np.uint64, np.uint8, np.int8, np.int16, np.int32, np.int64]


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 4), st.integers(1, 3)),
    dtypes=st.tuples(st.sampled_from(INTEGER_DTYPES), st.sampled_from(INTEGER_DTYPES)),
    as_tensors=st.tuples(st.booleans(), st.booleans()),
    data=st.data(),
)
def test_tokens_of_any_integer_dtypes_compare_as_numbers(shape, dtypes, as_tensors, data):
    # (uint16, uint32 and uint64 beside another integer: torch raised "Promotion for uint16, uint32, uint64 types is
    # not supported")
    grids = [np.array(data.draw(st.lists(st.integers(0, 3), min_size=shape[0] * shape[1], max_size=shape[0] * shape[1])))
             .reshape(shape) for _ in range(2)]  # fmt: skip
    given_values = [
        torch.as_tensor(grid.astype(dtype)) if tensor else grid.astype(dtype)
        for grid, dtype, tensor in zip(grids, dtypes, as_tensors)
    ]
    assert sequence_matches(*given_values).tolist() == (grids[0] == grids[1]).all(axis=1).tolist()


def test_a_uint64_beyond_every_other_integer_matches_none():
    beyond = np.array([[2**64 - 1, 5], [2**63, 5]], dtype=np.uint64)  # as int64: −1 and −2**63
    padded = torch.tensor([[-1, 5], [-(2**63), 5]])
    assert sequence_matches(beyond, padded).tolist() == [False, False]
    assert sequence_matches(padded, torch.as_tensor(beyond)).tolist() == [False, False]
    assert sequence_matches(beyond, beyond.astype(np.uint16)).tolist() == [False, False]
    assert sequence_matches(beyond, beyond).tolist() == [True, True]


NUMBER_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.complex64, torch.complex128]
TOKEN_RANGES = {torch.uint8: 2**8 - 1, torch.int32: 2**31 - 1, torch.int64: 2**63 - 1, torch.uint64: 2**63 - 1}
near_roundings = st.sampled_from([2**11, 2**24, 2**53, 2**62]).flatmap(lambda power: st.integers(power - 3, power + 3))


@settings(max_examples=80, deadline=None)
@given(
    token_dtype=st.sampled_from(sorted(TOKEN_RANGES, key=str)),
    number_dtype=st.sampled_from(NUMBER_DTYPES),
    values=st.lists(st.one_of(near_roundings, st.integers(0, 2**63 - 1)), min_size=1, max_size=6),
    shift=st.sampled_from([0.0, 0.5, 1.0, -1.0, 1j]),
    integers_first=st.booleans(),
)
@example(torch.int64, torch.float32, [2**24 + 1], 0.0, True).via("int64 2**24 + 1 matched float32 2**24")
def test_integer_tokens_and_floats_compare_exactly(token_dtype, number_dtype, values, shift, integers_first):
    # (torch compared an integer with a float in the float's dtype: int64 2**24 + 1 matched float32 2**24)
    tokens = torch.tensor([min(value, TOKEN_RANGES[token_dtype]) for value in values], dtype=token_dtype)[:, None]
    numbers = (tokens.to(torch.float64).to(number_dtype) + (shift if number_dtype.is_complex else shift.real)).to(number_dtype)
    expected = [int(token) == number for token, number in zip(tokens.flatten().tolist(), numbers.flatten().tolist())]
    pair = (tokens, numbers) if integers_first else (numbers, tokens)
    assert sequence_matches(*pair).tolist() == expected


def test_bad_curves_and_outcomes_are_named_not_failed_inside_torch():
    """A 0-d extrapolation MSE failed in unsqueeze (IndexError), None or a dict in torch (RuntimeError), and
    summarize(None) in an attribute lookup."""
    with pytest.raises(ValueError, match=r"expected validation and extrapolation MSE of shape \[1, S\] .* got \[1\] and \[\]"):
        run_outcomes([100], torch.tensor([0.5]), torch.tensor(1e-9), 1e-5)
    with pytest.raises(TypeError, match="steps must hold ints or floats, got NoneType"):
        run_outcomes(None, [1.0, 0.5], [1e-9, 1e-9], 1e-5)
    outcomes = run_outcomes([1, 2], [[1.0], [0.5]], [[1.0], [1e-9]], 1e-5)
    for bad in ({"a": 1}, [None, None]):
        with pytest.raises(TypeError, match=f"sparsity_error must hold ints or floats, got {type(bad).__name__}"):
            summarize(outcomes, sparsity_error=bad)
    with pytest.raises(TypeError, match="summarize takes the RunOutcomes of run_outcomes, got NoneType"):
        summarize(None)


@pytest.mark.parametrize(("name", "epsilon", "value"), [("add", 1e155, "inf"), ("mul", 1e78, "inf")])
def test_a_threshold_with_no_finite_value_is_refused(name, epsilon, value):
    """It was returned: NaN as a threshold failed only later, in run_outcomes, naming no epsilon."""
    with pytest.raises(ValueError, match=re.escape(f"'{name}' at epsilon={epsilon:g} has no finite MSE ({value})")):
        perturbed_solution_mse(name, epsilon=epsilon, samples=1000)
    with pytest.raises(TypeError, match="layout must be a SubsetLayout, got NoneType"):
        perturbed_solution_mse(name, layout=None, samples=100)


def test_a_perturbed_solution_leaving_the_domain_is_refused_whatever_the_samples():
    """The perturbed sums' bounds on the extrapolation range decide it (the corners of the box of inputs): two samples
    (the runner's up-front check) missed negative square roots at epsilon 0.2-0.5, and the threshold came out NaN."""
    for epsilon, low in ((0.2, "-30"), (0.4, "-110")):
        with pytest.raises(
            ValueError, match=re.escape(f"'sqrt' at epsilon={epsilon:g} takes the square root of sums down to {low}")
        ):
            perturbed_solution_mse("sqrt", epsilon=epsilon, samples=2)
    with pytest.raises(
        ValueError, match=re.escape("'div' at epsilon=0.2 divides by sums from -30 to 150 on the extrapolation range, through 0")
    ):
        perturbed_solution_mse("div", epsilon=0.2, samples=2)
    # the largest epsilon that keeps a = 25 (1+e) x_in - 75 e x_out >= 0 for x in [2, 6]: 50 / 400 = 0.125
    for name in ("sqrt", "div"):
        assert perturbed_solution_mse(name, epsilon=0.12, samples=1000).value > 0
        with pytest.raises(ValueError, match="choose a smaller epsilon"):
            perturbed_solution_mse(name, epsilon=0.126, samples=2)
    assert perturbed_solution_mse("div", ranges="[-2,-1]", epsilon=0.1, samples=1000).value > 0  # negative, one sign
