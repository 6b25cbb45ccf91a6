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

import argparse
import json
import time
from typing import Any

from neurosym.benchmarking.pvr_runs import BUDGETS, PVRRuns, RunStore
from neurosym.benchmarking.pvr_sweeps import (
    NOISE_DELTAS,
    block_sweep,
    digit_banks,
    holdout_i_sweep,
    noise_curves,
    sequential_sweep,
    vector_sweep,
)
from neurosym.experiments.options import (
    add_preset_option,
    add_run_options,
    apply_threads,
    comma_list,
    existing_file,
    non_negative_int,
    positive_int,
)
from neurosym.experiments.report import format_table
from neurosym.metrics.published import PVR
from neurosym.models.pvr import VECTOR_MODELS, VISUAL_MODELS
from neurosym.plots.pvr import plot_holdouts, plot_noise_sensitivity, plot_vector_sweep
from neurosym.semantics.pvr_rules import AGGREGATIONS
from neurosym.training import resolve_device
from neurosym.training.checkpoint import save_json
from neurosym.training.device import amp_available
from neurosym.training.stopping import minutes_to_seconds

SWEEPS = ("noise", "vector", "holdout_i", "block", "sequential")

PRESET_MEANINGS = {
    "smoke": "seconds-long runs that check the plumbing",
    "cpu": "shrunk models and schedules for a CPU (the default without CUDA)",
    "paper": "the paper's sizes and schedules (the default on CUDA)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sweeps",
        type=comma_list(str, what="sweep", choices=SWEEPS),
        default=list(SWEEPS),
        help=f"comma-separated subset of {SWEEPS}",
    )
    add_preset_option(parser, PRESET_MEANINGS, default=None)
    add_run_options(parser, out="results/pvr")
    parser.add_argument(
        "--vector-models",
        type=comma_list(str, what="vector model", choices=VECTOR_MODELS),
        default=["mlp", "mixer"],
        help="vector models: mlp, mlp2x, transformer, mixer",
    )
    parser.add_argument(
        "--complexities", type=comma_list(non_negative_int, what="complexity"), default=[0, 1], help="vector sweep complexities m"
    )
    parser.add_argument(
        "--train-sizes",
        type=comma_list(positive_int, what="training-set size"),
        default=[1000, 5000],
        help="vector sweep training-set sizes",
    )
    parser.add_argument(
        "--vector-epochs",
        type=positive_int,
        default=None,
        help="epochs of every vector run (default: the budget's, 200 as in the paper)",
    )
    parser.add_argument("--aggregation", choices=sorted(AGGREGATIONS), default="mod_sum", help="aggregation of the vector sweeps")
    parser.add_argument("--holdout-model", choices=VECTOR_MODELS, default="mixer", help="vector model of the holdout-i sweep")
    parser.add_argument("--holdout-complexity", type=non_negative_int, default=1, help="complexity m of the holdout-i sweep")
    parser.add_argument("--holdout-train-size", type=positive_int, default=10000, help="training-set size of holdout-i")
    parser.add_argument(
        "--visual-models",
        type=comma_list(str, what="visual model", choices=VISUAL_MODELS),
        default=["resnet18", "vgg11bn"],
        help="CNNs of the block sweep: resnet18, vgg11bn, small_cnn",
    )
    parser.add_argument(
        "--sequential-models",
        type=comma_list(str, what="visual model", choices=VISUAL_MODELS),
        default=["resnet18"],
        help="CNNs of the sequential sweep: resnet18, vgg11bn",
    )
    parser.add_argument(
        "--sequence-length", type=positive_int, default=11, help="digits in a sequential image: the pointer and the values"
    )
    parser.add_argument(
        "--visual-epochs", type=positive_int, default=None, help="epochs of every CNN run (default: the budget's)"
    )
    parser.add_argument(
        "--rule-examples",
        type=positive_int,
        default=300,
        help="task examples from which the neuro-symbolic model induces its rule",
    )
    parser.add_argument("--ns-samples", type=positive_int, default=10_000, help="bit strings per noise-sensitivity estimate")
    parser.add_argument("--ns-repeats", type=positive_int, default=10, help="estimates averaged per noise-sensitivity point")
    parser.add_argument("--ns-max-complexity", type=non_negative_int, default=5, help="largest m of the noise-sensitivity sweep")
    parser.add_argument("--mnist", type=existing_file, default=None, help="path to mnist.pkl.gz (default: cached download)")


def sweep_noise(args: argparse.Namespace, runs: PVRRuns) -> dict[str, Any]:
    """``NS_delta`` for every aggregation and m = 0..max (Figure 10), stored like a run."""
    sizes = args.ns_max_complexity, args.ns_samples, args.ns_repeats
    key = f"noise-m{sizes[0]}-n{sizes[1]}-r{sizes[2]}-seed{args.seed}"
    curves = runs.store.get(key) or runs.store.put(key, noise_curves(*sizes, args.seed))
    complexities = range(args.ns_max_complexity + 1)
    rows = [[a, *[curves[f"{a}/{m}"]["average"] for m in complexities]] for a in AGGREGATIONS]
    print("\n### Noise sensitivity, averaged over delta in [e^-7, e^-1]\n")
    print(format_table(["aggregation", *[f"m={m}" for m in complexities]], rows))
    plot_noise_sensitivity(NOISE_DELTAS, curves, list(AGGREGATIONS), args.ns_max_complexity, args.out / "noise_sensitivity.png")
    return {"deltas": NOISE_DELTAS.tolist(), "curves": curves}


def sweep_vector(args: argparse.Namespace, runs: PVRRuns) -> dict[str, Any]:
    """Test accuracy over training-set size x complexity for each vector model (Figures 9 and 11)."""
    results = vector_sweep(runs, args.vector_models, args.complexities, args.train_sizes, args.aggregation)
    print(f"\n### Vector PVR ({args.aggregation}): accuracy by model, complexity and training-set size\n")
    keys = ("model", "scale", "complexity", "train_size", "steps", "train_accuracy", "test_accuracy")
    headers = ["model", "scale", "m", "train size", "steps", "train acc", "test acc"]
    print(format_table(headers, [[r[k] for k in keys] for r in results]))
    plot_vector_sweep(results, args.out / "vector_sweep.png")
    return {"aggregation": args.aggregation, "runs": results}


def sweep_holdout_i(args: argparse.Namespace, runs: PVRRuns) -> dict[str, Any]:
    """Vector holdout-i at complexity m for i = 1..(m+1)! (Figure 13): neural and neuro-symbolic."""
    m, n = args.holdout_complexity, args.holdout_train_size
    results = holdout_i_sweep(runs, args.holdout_model, m, n, args.aggregation, args.rule_examples)
    print(f"\n### Vector holdout-i (m={m}, {args.aggregation}, {n} training examples)\n")
    keys = ("i", "model", "train_accuracy", "iid_accuracy", "holdout_accuracy", "neurosymbolic_holdout_accuracy")
    headers = ["i", "model", "train acc", "iid test", "holdout test", "neuro-symbolic holdout"]
    print(format_table(headers, [[r[k] for k in keys] for r in results]))
    return {"complexity": m, "runs": results}


def sweep_block(args: argparse.Namespace, runs: PVRRuns) -> dict[str, Any]:
    """Visual block-style holdout (Figure 7): CNNs and the neuro-symbolic model on iid/dshift/holdout."""
    results, rows = block_sweep(runs, args.visual_models, digit_banks(args.mnist), args.rule_examples)
    print(f"\n### Block MNIST PVR, trained on the holdout split ({runs.budget.visual_train} images)\n")
    print(format_table(["model", "train acc", "iid test", "dshift test", "holdout test"], rows))
    return {"runs": results}


def sweep_sequential(args: argparse.Namespace, runs: PVRRuns) -> dict[str, Any]:
    """Visual sequential task: a row of ``--sequence-length`` MNIST digits, the leftmost is the pointer."""
    banks = digit_banks(args.mnist)
    results, rows = sequential_sweep(runs, args.sequential_models, banks, args.sequence_length, args.rule_examples)
    print(f"\n### Sequential MNIST PVR ({args.sequence_length} digits, {runs.budget.visual_train} training images)\n")
    print(format_table(["model", "train acc", "test"], rows))
    return {"sequence_length": args.sequence_length, "runs": results}


def merge_results(previous: dict[str, Any] | None, current: dict[str, Any]) -> dict[str, Any]:
    """``pvr.json`` of an output folder collects its sweeps: the sweeps of an earlier invocation on the
    same device and budget stay, those run again are replaced (a sweep's entry is that of its latest
    invocation; every single run also stays under ``runs/``); another device or budget starts afresh."""
    if previous is None or (previous.get("device"), previous.get("budget")) != (current["device"], current["budget"]):
        return current
    return {**previous, **current}


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = resolve_device(args.device)
    apply_threads(args.threads)
    budget_name = args.preset or ("paper" if device.type == "cuda" else "cpu")
    deadline = None if args.time_limit is None else time.monotonic() + minutes_to_seconds(args.time_limit)
    store = RunStore(args.out)
    if not args.resume:
        store.clear()
    runs = PVRRuns(
        device, BUDGETS[budget_name], store, args.seed, args.progress, deadline, args.vector_epochs, args.visual_epochs
    )
    print(f"PVR benchmark on {device} ({'AMP' if amp_available(device) else 'fp32'}), budget {budget_name!r}")
    sweeps = {
        "noise": sweep_noise,
        "vector": sweep_vector,
        "holdout_i": sweep_holdout_i,
        "block": sweep_block,
        "sequential": sweep_sequential,
    }
    results: dict[str, Any] = {"device": str(device), "budget": budget_name, "published": PVR}
    for name in args.sweeps:
        results[name] = sweeps[name](args, runs)
    path = args.out / "pvr.json"
    results = merge_results(json.loads(path.read_text()) if path.exists() else None, results)
    if "holdout_i" in results or "block" in results:
        plot_holdouts(results.get("block"), results.get("holdout_i"), args.out / "holdout.png")
    save_json(results, path)
    print(f"\nSaved {path} and plots in {args.out}")
    return results
