"""The sweeps of the Pointer Value Retrieval benchmark (Zhang et al. 2021) as library calls: each trains and
scores its runs through :class:`~neurosym.benchmarking.pvr_runs.PVRRuns` and returns them as JSON-ready dicts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurosym.benchmarking.pvr_runs import PVRRuns, describe_rule, schedule_name
from neurosym.data.mnist import load_mnist
from neurosym.data.pvr import (
    DigitBank,
    VectorPVR,
    VisualPVR,
    block_holdout_masks,
    block_rule,
    held_out_windows,
    sample_vector_holdout_test,
    sample_vector_holdout_train,
    sequential_rule,
    vector_rule,
)
from neurosym.metrics.noise_sensitivity import noise_sensitivity_curve
from neurosym.models.pvr import build_vector_model
from neurosym.pipelines.pvr import CellLayout
from neurosym.semantics.pvr_rules import AGGREGATIONS, induce_rule

NOISE_DELTAS = np.exp(np.linspace(-7.0, -1.0, 7))
"""The deltas of the noise-sensitivity sweep: 7 spread over [e^-7, e^-1] (Figure 10)."""


def noise_curves(max_complexity: int, samples: int, repeats: int, seed: int) -> dict[str, dict[str, Any]]:
    """``NS_delta`` of the vector task's labelling function for every aggregation and m = 0..max at
    :data:`NOISE_DELTAS` (Figure 10): ``{"<aggregation>/<m>": {"mean": [7], "std": [7], "average"}}`` (mean
    and std over ``repeats`` estimates of ``samples`` bit strings each; their average over delta)."""
    rng = np.random.default_rng(seed)
    curves = {}
    for aggregation in AGGREGATIONS:
        for m in range(max_complexity + 1):
            label = vector_rule(m, aggregation).label
            mean, std = noise_sensitivity_curve(label, 11, 10, NOISE_DELTAS, samples, repeats, rng)
            curves[f"{aggregation}/{m}"] = {"mean": mean.tolist(), "std": std.tolist(), "average": float(mean.mean())}
    return curves


def vector_sweep(
    runs: PVRRuns, models: list[str], complexities: list[int], train_sizes: list[int], aggregation: str
) -> list[dict[str, Any]]:
    """Test accuracy over training-set size x complexity for each vector model (Figures 9 and 11)."""
    results = []
    for m in complexities:
        task = VectorPVR(vector_rule(m, aggregation))
        test = task.sample(runs.budget.test_size, np.random.default_rng(runs.seed + 1))
        for n in train_sizes:
            train = task.sample(n, np.random.default_rng([runs.seed, m, n]))
            for name in models:
                scale = runs.budget.vector_scale[name]
                config = runs.vector_config(n)
                key = f"vector-{name}-s{scale}-{aggregation}-m{m}-n{n}-{schedule_name(config)}"
                torch.manual_seed(runs.seed)
                model = build_vector_model(name, 11, scale=scale)
                result = runs.train_and_score(key, model, train, {"test": test}, config)
                results.append(
                    {"model": name, "scale": scale, "complexity": m, "train_size": n, "aggregation": aggregation, **result}
                )
    return results


def holdout_i_sweep(
    runs: PVRRuns, model_name: str, m: int, train_size: int, aggregation: str, rule_examples: int
) -> list[dict[str, Any]]:
    """Vector holdout-i at complexity ``m`` for i = 1..(m+1)! (Figure 13): the neural model, and a rule
    induced from the first ``rule_examples`` training pairs, tested as the paper tests every i: on rows whose
    pointed window is ``(0, ..., m)`` (held out from holdout-1 on)."""
    rule = vector_rule(m, aggregation)
    scale = runs.budget.vector_scale[model_name]
    iid_test = VectorPVR(rule).sample(runs.budget.test_size, np.random.default_rng(runs.seed + 1))
    results = []
    for i in range(1, math.factorial(m + 1) + 1):
        held = held_out_windows(m, i)
        train = sample_vector_holdout_train(rule, train_size, held, np.random.default_rng([runs.seed, i]))
        test = sample_vector_holdout_test(rule, runs.budget.test_size, held[:1], np.random.default_rng([runs.seed, i, 1]))
        config = runs.vector_config(train_size)
        key = f"holdout{i}-test0to{m}-{model_name}-s{scale}-{aggregation}-m{m}-n{train_size}-{schedule_name(config)}"
        torch.manual_seed(runs.seed)
        model = build_vector_model(model_name, 11, scale=scale)
        neural = runs.train_and_score(key, model, train, {"holdout": test, "iid": iid_test}, config)
        induced = induce_rule(train[0][:rule_examples], train[1][:rule_examples])
        symbolic = float(np.mean(induced.rule.label(test[0]) == test[1]))
        results.append(
            {
                "i": i,
                "held_out": held.tolist(),
                "model": model_name,
                "scale": scale,
                **neural,
                "neurosymbolic_holdout_accuracy": symbolic,
                "induced_rule": describe_rule(induced.rule),
            }
        )
    return results


def digit_banks(mnist_path: Path | None) -> tuple[DigitBank, DigitBank]:
    """The MNIST training and test digits (``mnist_path``: ``mnist.pkl.gz`` or a folder of MNIST's idx files, None: the
    cached download)."""
    mnist = load_mnist(mnist_path)
    return DigitBank.from_mnist(mnist, "train"), DigitBank.from_mnist(mnist, "test")


def block_sweep(
    runs: PVRRuns, models: list[str], banks: tuple[DigitBank, DigitBank], rule_examples: int
) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Visual block-style holdout (Figure 7): CNNs and the neuro-symbolic model trained on the holdout split,
    tested on iid, dshift and holdout images. Returns the runs and table rows."""
    b, (train_bank, test_bank) = runs.budget, banks
    rule, masks = block_rule(), block_holdout_masks()
    train_images, _, train_labels = VisualPVR(train_bank, rule, allowed=masks["train"]).sample(
        b.visual_train, np.random.default_rng([runs.seed, 10])
    )
    samples = {
        split: VisualPVR(test_bank, rule, allowed=masks[split]).sample(b.test_size, np.random.default_rng([runs.seed, k]))
        for k, split in enumerate(("iid", "dshift", "holdout"), start=11)
    }
    tests = {split: (images, labels) for split, (images, _, labels) in samples.items()}
    layout = CellLayout("block", grid=2, cell=40)
    return runs.compare_on_images("block", models, (train_images, train_labels), tests, layout, banks, rule_examples)


def sequential_sweep(
    runs: PVRRuns, models: list[str], banks: tuple[DigitBank, DigitBank], length: int, rule_examples: int
) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Visual sequential task: a row of ``length`` MNIST digits, the leftmost is the pointer; CNNs and the
    neuro-symbolic model, trained on MNIST training digits and tested on MNIST test digits."""
    b, (train_bank, test_bank) = runs.budget, banks
    rule = sequential_rule(length=length)
    train_images, _, train_labels = VisualPVR(train_bank, rule, style="sequential").sample(
        b.visual_train, np.random.default_rng([runs.seed, 20])
    )
    test_images, _, test_labels = VisualPVR(test_bank, rule, style="sequential").sample(
        b.test_size, np.random.default_rng([runs.seed, 21])
    )
    layout = CellLayout("sequential", cell=train_images.shape[1])
    tests = {"test": (test_images, test_labels)}
    return runs.compare_on_images(
        f"sequential{length}", models, (train_images, train_labels), tests, layout, banks, rule_examples
    )
