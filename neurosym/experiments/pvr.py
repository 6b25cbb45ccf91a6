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
import math
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurosym.data.mnist import load_mnist
from neurosym.data.pvr import (
    DigitBank,
    VectorPVR,
    VisualPVR,
    block_holdout_masks,
    block_rule,
    held_out_windows,
    render_blocks,
    sample_vector_holdout_test,
    sample_vector_holdout_train,
    sequential_rule,
    vector_rule,
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
from neurosym.experiments.published import PVR
from neurosym.experiments.pvr_plots import (
    plot_holdouts,
    plot_noise_sensitivity,
    plot_vector_sweep,
)
from neurosym.experiments.report import format_table, save_json
from neurosym.metrics.noise_sensitivity import noise_sensitivity_curve
from neurosym.models.pvr import (
    VECTOR_MODELS,
    VISUAL_MODELS,
    build_vector_model,
    build_visual_model,
)
from neurosym.perception.cnn import SmallCNN
from neurosym.pipelines.pvr import (
    READER_WIDTH,
    CellLayout,
    NeuroSymbolicPVR,
    images_to_float,
    train_digit_reader,
)
from neurosym.semantics.pvr_rules import AGGREGATIONS, PVRRule, induce_rule
from neurosym.training import load_checkpoint, resolve_device, save_checkpoint
from neurosym.training.classifier import (
    Prepare,
    accuracy,
    fit_classifier,
    identity,
)
from neurosym.training.device import amp_available
from neurosym.training.loop import TrainConfig
from neurosym.training.stopping import minutes_to_seconds

SWEEPS = ("noise", "vector", "holdout_i", "block", "sequential")
CHECKPOINT_EVERY = 200
"""Training steps between checkpoints of a run."""


@dataclass(frozen=True)
class Budget:
    """Sizes and schedules of one budget (see the module docstring)."""

    vector_scale: dict[str, float]
    vector_batch: int
    vector_epochs: int
    vector_min_steps: int
    vector_max_steps: int | None
    visual_scale: float
    visual_train: int
    visual_epochs: int
    visual_batch: int
    visual_lr: float
    reader_examples: int
    test_size: int


PRESET_MEANINGS = {
    "smoke": "seconds-long runs that check the plumbing",
    "cpu": "shrunk models and schedules for a CPU (the default without CUDA)",
    "paper": "the paper's sizes and schedules (the default on CUDA)",
}

BUDGETS = {
    "paper": Budget(
        vector_scale={"mlp": 1.0, "mlp2x": 1.0, "transformer": 1.0, "mixer": 1.0},
        vector_batch=1024,
        vector_epochs=200,
        vector_min_steps=800,
        vector_max_steps=None,
        visual_scale=1.0,
        visual_train=60_000,
        visual_epochs=10,
        visual_batch=50,
        visual_lr=1e-4,
        reader_examples=60_000,
        test_size=10_000,
    ),
    "cpu": Budget(
        vector_scale={"mlp": 0.25, "mlp2x": 0.25, "transformer": 0.125, "mixer": 0.125},
        vector_batch=256,
        vector_epochs=200,
        vector_min_steps=1000,
        vector_max_steps=None,
        visual_scale=0.25,
        visual_train=6_000,
        visual_epochs=2,
        visual_batch=50,
        visual_lr=1e-3,
        reader_examples=30_000,
        test_size=2_000,
    ),
    "smoke": Budget(  # seconds-long runs that only check the plumbing (used by the tests)
        vector_scale={"mlp": 0.05, "mlp2x": 0.05, "transformer": 0.03, "mixer": 0.03},
        vector_batch=32,
        vector_epochs=1,
        vector_min_steps=3,
        vector_max_steps=3,
        visual_scale=0.0625,
        visual_train=64,
        visual_epochs=1,
        visual_batch=32,
        visual_lr=1e-3,
        reader_examples=256,
        test_size=64,
    ),
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


class RunStore:
    """One JSON per finished run under ``out/runs`` (repeated commands reuse them) and checkpoints."""

    def __init__(self, out: Path) -> None:
        self.runs, self.checkpoints = out / "runs", out / "checkpoints"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.runs / f"{key}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def put(self, key: str, result: dict[str, Any]) -> dict[str, Any]:
        save_json(result, self.runs / f"{key}.json")
        return result

    def checkpoint(self, key: str) -> Path:
        return self.checkpoints / f"{key}.pt"

    def clear(self) -> None:
        """Forget every stored run and checkpoint (``--no-resume``)."""
        for folder in (self.runs, self.checkpoints):
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Context:
    """What every sweep needs: the parsed arguments, device, budget, run store, progress switch and the
    ``time.monotonic()`` deadline of ``--time-limit`` (None: none)."""

    args: argparse.Namespace
    device: torch.device
    budget: Budget
    store: RunStore
    deadline: float | None = None

    @property
    def progress(self) -> bool:
        return self.args.progress

    def time_left(self) -> float | None:
        """Seconds until the deadline (0 once passed; None without one): the next training's time limit."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array))


def _vector_config(ctx: Context, n: int) -> TrainConfig:
    b = ctx.budget
    epochs = b.vector_epochs if ctx.args.vector_epochs is None else ctx.args.vector_epochs
    steps = max(b.vector_min_steps, epochs * math.ceil(n / b.vector_batch))
    steps = min(steps, b.vector_max_steps) if b.vector_max_steps else steps
    # the paper warms up for 10 of its 200 epochs: the first 5% of the steps
    return TrainConfig(
        max_steps=steps,
        batch_size=min(b.vector_batch, n),
        optimizer="sgd",
        lr=0.05,
        momentum=0.9,
        weight_decay=1e-5,
        schedule="cosine",
        warmup_steps=max(1, steps // 20),
        clip_norm=None,
        eval_every=CHECKPOINT_EVERY,
        seed=ctx.args.seed,
    )


def _visual_config(ctx: Context) -> TrainConfig:
    b = ctx.budget
    epochs = b.visual_epochs if ctx.args.visual_epochs is None else ctx.args.visual_epochs
    return TrainConfig(
        max_steps=max(1, epochs * b.visual_train // b.visual_batch),
        batch_size=b.visual_batch,
        optimizer="adam",
        lr=b.visual_lr,
        clip_norm=None,
        eval_every=CHECKPOINT_EVERY,
        seed=ctx.args.seed,
    )


def _schedule(config: TrainConfig) -> str:
    """The parts of a training configuration that name a stored run."""
    return f"{config.optimizer}{config.lr:g}-st{config.max_steps}-b{config.batch_size}-seed{config.seed}"


def train_and_score(
    ctx: Context,
    key: str,
    model: torch.nn.Module,
    train: tuple[np.ndarray, np.ndarray],
    tests: dict[str, tuple[np.ndarray, np.ndarray]],
    config: TrainConfig,
    prepare: Prepare = identity,
) -> dict[str, Any]:
    """Train (or resume) ``model`` on ``train`` and score it on its training set and each test set."""
    done = ctx.store.get(key)
    if done is not None:
        return done
    started = time.perf_counter()
    config = replace(config, checkpoint=ctx.store.checkpoint(key), progress=ctx.progress, time_limit=ctx.time_left())
    fit_classifier(model, _tensor(train[0]), _tensor(train[1]), config, ctx.device, prepare)
    trained = time.perf_counter()
    result = {
        "steps": config.max_steps,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_accuracy": accuracy(model, _tensor(train[0]), _tensor(train[1]), ctx.device, prepare),
    }
    for name, (inputs, labels) in tests.items():
        result[f"{name}_accuracy"] = accuracy(model, _tensor(inputs), _tensor(labels), ctx.device, prepare)
    result["training_seconds"] = trained - started  # of this invocation: a resumed run counts only its rest
    result["seconds"] = time.perf_counter() - started
    return ctx.store.put(key, result)


def sweep_noise(ctx: Context) -> dict[str, Any]:
    """``NS_delta`` for every aggregation and m = 0..max at deltas spread over [e^-7, e^-1] (Figure 10)."""
    args = ctx.args
    deltas = np.exp(np.linspace(-7.0, -1.0, 7))
    key = f"noise-m{args.ns_max_complexity}-n{args.ns_samples}-r{args.ns_repeats}-seed{args.seed}"
    curves = ctx.store.get(key)
    if curves is None:
        rng = np.random.default_rng(args.seed)
        curves = {}
        for aggregation in AGGREGATIONS:
            for m in range(args.ns_max_complexity + 1):
                mean, std = noise_sensitivity_curve(
                    vector_rule(m, aggregation).label, 11, 10, deltas, args.ns_samples, args.ns_repeats, rng
                )
                curves[f"{aggregation}/{m}"] = {"mean": mean.tolist(), "std": std.tolist(), "average": float(mean.mean())}
        ctx.store.put(key, curves)
    headers = ["aggregation", *[f"m={m}" for m in range(args.ns_max_complexity + 1)]]
    rows = [[a, *[curves[f"{a}/{m}"]["average"] for m in range(args.ns_max_complexity + 1)]] for a in AGGREGATIONS]
    print("\n### Noise sensitivity, averaged over delta in [e^-7, e^-1]\n")
    print(format_table(headers, rows))
    plot_noise_sensitivity(deltas, curves, list(AGGREGATIONS), args.ns_max_complexity, args.out / "noise_sensitivity.png")
    return {"deltas": deltas.tolist(), "curves": curves}


def sweep_vector(ctx: Context) -> dict[str, Any]:
    """Test accuracy over training-set size x complexity for each vector model (Figures 9 and 11)."""
    args = ctx.args
    runs = []
    for m in args.complexities:
        task = VectorPVR(vector_rule(m, args.aggregation))
        test = task.sample(ctx.budget.test_size, np.random.default_rng(args.seed + 1))
        for n in args.train_sizes:
            train = task.sample(n, np.random.default_rng([args.seed, m, n]))
            for name in args.vector_models:
                scale = ctx.budget.vector_scale[name]
                config = _vector_config(ctx, n)
                key = f"vector-{name}-s{scale}-{args.aggregation}-m{m}-n{n}-{_schedule(config)}"
                torch.manual_seed(args.seed)
                model = build_vector_model(name, 11, scale=scale)
                result = train_and_score(ctx, key, model, train, {"test": test}, config)
                runs.append({"model": name, "scale": scale, "complexity": m, "train_size": n, **result})
    print(f"\n### Vector PVR ({args.aggregation}): accuracy by model, complexity and training-set size\n")
    print(
        format_table(
            ["model", "scale", "m", "train size", "steps", "train acc", "test acc"],
            [
                [r["model"], r["scale"], r["complexity"], r["train_size"], r["steps"], r["train_accuracy"], r["test_accuracy"]]
                for r in runs
            ],
        )
    )
    plot_vector_sweep(runs, args.out / "vector_sweep.png")
    return {"aggregation": args.aggregation, "runs": runs}


def sweep_holdout_i(ctx: Context) -> dict[str, Any]:
    """Vector holdout-i at complexity m for i = 1..(m+1)! (Figure 13): neural and neuro-symbolic."""
    args, m = ctx.args, ctx.args.holdout_complexity
    rule = vector_rule(m, args.aggregation)
    scale = ctx.budget.vector_scale[args.holdout_model]
    iid_test = VectorPVR(rule).sample(ctx.budget.test_size, np.random.default_rng(args.seed + 1))
    runs = []
    for i in range(1, math.factorial(m + 1) + 1):
        held = held_out_windows(m, i)
        train = sample_vector_holdout_train(rule, args.holdout_train_size, held, np.random.default_rng([args.seed, i]))
        test = sample_vector_holdout_test(rule, ctx.budget.test_size, held, np.random.default_rng([args.seed, i, 1]))
        config = _vector_config(ctx, args.holdout_train_size)
        key = f"holdout{i}-{args.holdout_model}-s{scale}-{args.aggregation}-m{m}-n{args.holdout_train_size}-{_schedule(config)}"
        torch.manual_seed(args.seed)
        model = build_vector_model(args.holdout_model, 11, scale=scale)
        neural = train_and_score(ctx, key, model, train, {"holdout": test, "iid": iid_test}, config)
        few = slice(0, args.rule_examples)
        induced = induce_rule(train[0][few], train[1][few])
        symbolic = float(np.mean(induced.rule.label(test[0]) == test[1]))
        runs.append(
            {
                "i": i,
                "held_out": held.tolist(),
                "model": args.holdout_model,
                "scale": scale,
                **neural,
                "neurosymbolic_holdout_accuracy": symbolic,
                "induced_rule": _describe(induced.rule),
            }
        )
    print(f"\n### Vector holdout-i (m={m}, {args.aggregation}, {args.holdout_train_size} training examples)\n")
    print(
        format_table(
            ["i", "model", "train acc", "iid test", "holdout test", "neuro-symbolic holdout"],
            [
                [
                    r["i"],
                    r["model"],
                    r["train_accuracy"],
                    r["iid_accuracy"],
                    r["holdout_accuracy"],
                    r["neurosymbolic_holdout_accuracy"],
                ]
                for r in runs
            ],
        )
    )
    return {"complexity": m, "runs": runs}


def _describe(rule: PVRRule) -> dict[str, Any]:
    return {
        "length": rule.length,
        "pointer_position": rule.pointer_position,
        "pointer_table": list(rule.pointer_table),
        "complexity": rule.complexity,
        "aggregation": rule.aggregation,
        "boundary": rule.boundary,
    }


def _digit_reader(ctx: Context, train_bank: DigitBank, test_bank: DigitBank, cell: int):
    """Train (or load) the neuro-symbolic model's digit reader; returns it and its test accuracy."""
    key = f"reader-{cell}-n{ctx.budget.reader_examples}-e3-seed{ctx.args.seed}"
    path = ctx.store.checkpoint(key)
    saved = load_checkpoint(path)
    if saved is None:
        reader = train_digit_reader(
            train_bank,
            cell,
            ctx.device,
            ctx.budget.reader_examples,
            seed=ctx.args.seed,
            progress=ctx.progress,
            checkpoint=ctx.store.checkpoint(f"{key}-training"),
            time_limit=ctx.time_left(),
        )
        save_checkpoint({"model": reader.state_dict()}, path)
    else:
        reader = SmallCNN(1, 10, input_size=cell, width=READER_WIDTH)
        reader.load_state_dict(saved["model"])
        reader.to(ctx.device).eval()
    rng = np.random.default_rng(ctx.args.seed + 7)
    classes = rng.integers(0, 10, size=(ctx.budget.test_size, 1))
    digits = render_blocks(test_bank.draw(classes, rng), grid=1, block=cell, rng=rng)
    return reader, accuracy(reader, _tensor(digits), _tensor(classes[:, 0]), ctx.device, images_to_float)


def _compare_on_images(
    ctx: Context,
    task: str,
    models: list[str],
    train: tuple[np.ndarray, np.ndarray],
    tests: dict[str, tuple[np.ndarray, np.ndarray]],
    layout: CellLayout,
    banks: tuple[DigitBank, DigitBank],
) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    """Train each CNN of ``models`` on ``train`` (images ``[N, H, W]`` uint8, labels ``[N]``) and the
    neuro-symbolic model (digit reader for ``layout``'s cells + a rule induced from the first
    ``--rule-examples`` training pairs); score both on every test set. Returns the runs and table rows."""
    args, b = ctx.args, ctx.budget
    runs, rows = [], []
    config = _visual_config(ctx)
    for name in models:
        key = f"{task}-{name}-s{b.visual_scale}-n{len(train[1])}-{_schedule(config)}"
        torch.manual_seed(args.seed)
        model = build_visual_model(name, train[0].shape[1:], scale=b.visual_scale)
        result = train_and_score(ctx, key, model, train, tests, config, images_to_float)
        runs.append({"model": name, "scale": b.visual_scale, "train_size": len(train[1]), **result})
        rows.append([name, result["train_accuracy"], *(result[f"{split}_accuracy"] for split in tests)])
    reader, reader_accuracy = _digit_reader(ctx, *banks, cell=layout.cell)
    solver = NeuroSymbolicPVR(reader, layout, ctx.device)
    induced = solver.fit(train[0][: args.rule_examples], train[1][: args.rule_examples])
    symbolic = {
        f"{split}_accuracy": float(np.mean(solver.predict(images) == labels)) for split, (images, labels) in tests.items()
    }
    runs.append(
        {
            "model": "neurosymbolic",
            "rule_examples": args.rule_examples,
            "reader_digit_accuracy": reader_accuracy,
            "rule_agreement": induced.agreement,
            "induced_rule": _describe(induced.rule),
            **symbolic,
        }
    )
    rows.append([f"neuro-symbolic ({args.rule_examples} task examples)", induced.agreement, *symbolic.values()])
    return runs, rows


def _banks(ctx: Context) -> tuple[DigitBank, DigitBank]:
    mnist = load_mnist(ctx.args.mnist)
    return DigitBank.from_mnist(mnist, "train"), DigitBank.from_mnist(mnist, "test")


def sweep_block(ctx: Context) -> dict[str, Any]:
    """Visual block-style holdout (Figure 7): CNNs and the neuro-symbolic model on iid/dshift/holdout."""
    args, b = ctx.args, ctx.budget
    train_bank, test_bank = _banks(ctx)
    rule, masks = block_rule(), block_holdout_masks()
    train_images, _, train_labels = VisualPVR(train_bank, rule, allowed=masks["train"]).sample(
        b.visual_train, np.random.default_rng([args.seed, 10])
    )
    tests = {
        split: VisualPVR(test_bank, rule, allowed=masks[split]).sample(b.test_size, np.random.default_rng([args.seed, k]))
        for k, split in enumerate(("iid", "dshift", "holdout"), start=11)
    }
    tests = {split: (images, labels) for split, (images, _, labels) in tests.items()}
    runs, rows = _compare_on_images(
        ctx,
        "block",
        args.visual_models,
        (train_images, train_labels),
        tests,
        CellLayout("block", grid=2, cell=40),
        (train_bank, test_bank),
    )
    print(f"\n### Block MNIST PVR, trained on the holdout split ({b.visual_train} images)\n")
    print(format_table(["model", "train acc", "iid test", "dshift test", "holdout test"], rows))
    return {"runs": runs}


def sweep_sequential(ctx: Context) -> dict[str, Any]:
    """Visual sequential task: a row of ``--sequence-length`` MNIST digits, the leftmost is the pointer;
    CNNs and the neuro-symbolic model, trained on MNIST training digits and tested on MNIST test digits."""
    args, b = ctx.args, ctx.budget
    train_bank, test_bank = _banks(ctx)
    rule = sequential_rule(length=args.sequence_length)
    train_images, _, train_labels = VisualPVR(train_bank, rule, style="sequential").sample(
        b.visual_train, np.random.default_rng([args.seed, 20])
    )
    test_images, _, test_labels = VisualPVR(test_bank, rule, style="sequential").sample(
        b.test_size, np.random.default_rng([args.seed, 21])
    )
    runs, rows = _compare_on_images(
        ctx,
        f"sequential{args.sequence_length}",
        args.sequential_models,
        (train_images, train_labels),
        {"test": (test_images, test_labels)},
        CellLayout("sequential", cell=train_images.shape[1]),
        (train_bank, test_bank),
    )
    print(f"\n### Sequential MNIST PVR ({args.sequence_length} digits, {b.visual_train} training images)\n")
    print(format_table(["model", "train acc", "test"], rows))
    return {"sequence_length": args.sequence_length, "runs": runs}


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
    ctx = Context(args, device, BUDGETS[budget_name], store, deadline)
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
        results[name] = sweeps[name](ctx)
    path = args.out / "pvr.json"
    results = merge_results(json.loads(path.read_text()) if path.exists() else None, results)
    if "holdout_i" in results or "block" in results:
        plot_holdouts(results.get("block"), results.get("holdout_i"), args.out / "holdout.png")
    save_json(results, path)
    print(f"\nSaved {path} and plots in {args.out}")
    return results
