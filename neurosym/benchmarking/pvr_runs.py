"""The runs of the Pointer Value Retrieval benchmark (``neurosym pvr``): the budgets, the training
configurations of the vector and visual models, a store of finished runs with their checkpoints, and the
comparison of CNNs with the neuro-symbolic model on image tasks.

A run is trained once: its result is stored as JSON under ``<out>/runs`` (keyed by everything that names
it) and reused when the command is repeated; a checkpoint under ``<out>/checkpoints`` lets an interrupted
run resume.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from neurosym.data.mnist import given_mnist
from neurosym.data.pvr import DigitBank, render_blocks
from neurosym.models.pvr import build_visual_model
from neurosym.perception.cnn import SmallCNN
from neurosym.pipelines.pvr import READER_WIDTH, CellLayout, NeuroSymbolicPVR, images_to_float, train_digit_reader
from neurosym.semantics.pvr_rules import PVRRule
from neurosym.training import load_checkpoint, save_checkpoint
from neurosym.training.checkpoint import files_stamp, load_json, load_model_state, require_entries, save_json
from neurosym.training.classifier import Prepare, accuracy, fit_classifier, identity
from neurosym.training.loop import TrainConfig

CHECKPOINT_EVERY = 200
"""Training steps between checkpoints of a run."""


@dataclass(frozen=True)
class Budget:
    """Sizes and schedules of one budget: the vector models' width scales, batch, epochs and step bounds; the
    visual models' width scale, training images, epochs, batch and learning rate; the digit reader's
    training examples; the size of every test set."""

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


_BUDGET_NAMES = ("paper", "cpu", "smoke")
_BUDGET_TABLE: dict[str, tuple[Any, Any, Any]] = {  # one row per setting: its value in each budget, in that order
    "vector_scale": (
        {"mlp": 1.0, "mlp2x": 1.0, "transformer": 1.0, "mixer": 1.0},
        {"mlp": 0.25, "mlp2x": 0.25, "transformer": 0.125, "mixer": 0.125},
        {"mlp": 0.05, "mlp2x": 0.05, "transformer": 0.03, "mixer": 0.03},
    ),
    "vector_batch": (1024, 256, 32),
    "vector_epochs": (200, 200, 1),
    "vector_min_steps": (800, 1000, 3),
    "vector_max_steps": (None, None, 3),
    "visual_scale": (1.0, 0.25, 0.0625),
    "visual_train": (60_000, 6_000, 64),
    "visual_epochs": (10, 2, 1),
    "visual_batch": (50, 50, 32),
    "visual_lr": (1e-4, 1e-3, 1e-3),
    "reader_examples": (60_000, 30_000, 256),
    "test_size": (10_000, 2_000, 64),
}
BUDGETS = {
    name: Budget(**{setting: values[column] for setting, values in _BUDGET_TABLE.items()})
    for column, name in enumerate(_BUDGET_NAMES)
}
"""``paper``: the paper's sizes and schedules; ``cpu``: shrunk for a CPU; ``smoke``: seconds-long runs that only
check the plumbing (used by the tests)."""


class RunStore:
    """One JSON per finished run under ``out/runs`` (repeated commands reuse them) and checkpoints under
    ``out/checkpoints``. A store that does not ``reuse`` (``--no-resume``) ignores what earlier commands left:
    each run it is asked for is trained afresh, overwriting its stored result and checkpoint, while runs it is
    not asked for (other sweeps') stay."""

    def __init__(self, out: Path, reuse: bool = True) -> None:
        self.runs, self.checkpoints = out / "runs", out / "checkpoints"
        self.reuse = reuse
        self.stored: set[str] = set()  # keys of the results this store has written
        self.checkpointed: set[str] = set()  # keys of the checkpoint paths this store has handed out

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.runs / f"{key}.json"
        return load_json(path) if path.exists() and (self.reuse or key in self.stored) else None

    def put(self, key: str, result: dict[str, Any]) -> dict[str, Any]:
        save_json(result, self.runs / f"{key}.json")
        self.stored.add(key)
        return result

    def checkpoint(self, key: str) -> Path:
        """The checkpoint path of ``key``; without ``reuse``, an earlier command's checkpoint there is removed."""
        path = self.checkpoints / f"{key}.pt"
        if not self.reuse and key not in self.checkpointed:
            path.unlink(missing_ok=True)
        self.checkpointed.add(key)
        return path


@dataclass
class PVRRuns:
    """Everything a run needs: the device, the budget, the run store, the seed, the progress switch, the
    ``time.monotonic()`` deadline of a time limit (None: none), optional overrides of the epochs, and ``digits``: what
    names the MNIST file of the image runs in their keys (:func:`mnist_tag`; empty for the packaged default)."""

    device: torch.device
    budget: Budget
    store: RunStore
    seed: int = 0
    progress: bool = False
    deadline: float | None = None
    vector_epochs: int | None = None
    visual_epochs: int | None = None
    digits: str = ""

    def time_left(self) -> float | None:
        """Seconds until the deadline (0 once passed; None without one): the next training's time limit."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def vector_config(self, n: int) -> TrainConfig:
        """The paper's schedule of a vector model on ``n`` examples: SGD with momentum, cosine decay after a
        warm-up of the first 5 % of the steps (10 of its 200 epochs), within the budget's step bounds (its cap only for
        its own epochs: epochs given are trained)."""
        b = self.budget
        epochs = b.vector_epochs if self.vector_epochs is None else self.vector_epochs
        steps = max(b.vector_min_steps, epochs * math.ceil(n / b.vector_batch))
        steps = min(steps, b.vector_max_steps) if b.vector_max_steps and self.vector_epochs is None else steps
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
            seed=self.seed,
        )

    def visual_config(self) -> TrainConfig:
        """Adam for the budget's epochs over its training images (a CNN on an image task)."""
        b = self.budget
        epochs = b.visual_epochs if self.visual_epochs is None else self.visual_epochs
        return TrainConfig(
            max_steps=max(1, epochs * b.visual_train // b.visual_batch),
            batch_size=b.visual_batch,
            optimizer="adam",
            lr=b.visual_lr,
            clip_norm=None,
            eval_every=CHECKPOINT_EVERY,
            seed=self.seed,
        )

    def train_and_score(
        self,
        key: str,
        model: torch.nn.Module,
        train: tuple[np.ndarray, np.ndarray],
        tests: dict[str, tuple[np.ndarray, np.ndarray]],
        config: TrainConfig,
        prepare: Prepare = identity,
    ) -> dict[str, Any]:
        """Train (or resume) ``model`` on ``train`` (inputs ``[N, ...]``, labels ``[N]``) and score it on its
        training set and each test set; a run stored under ``key`` on this kind of device is returned without
        training (one stored on another, or before runs recorded theirs, is trained anew: a CPU run was reported as
        the CUDA one, its seconds included)."""
        done = self.store.get(key)
        if done is not None and done.get("device") == self.device.type:
            return done
        if done is not None:
            self.store.checkpoint(key).unlink(missing_ok=True)  # (finished there: resuming it would take no step)
        started = time.perf_counter()
        config = replace(config, checkpoint=self.store.checkpoint(key), progress=self.progress, time_limit=self.time_left())
        trained = fit_classifier(model, _tensor(train[0]), _tensor(train[1]), config, self.device, prepare)
        result = {
            "device": self.device.type,
            "steps": config.max_steps,
            "parameters": sum(p.numel() for p in model.parameters()),
            "train_accuracy": accuracy(model, _tensor(train[0]), _tensor(train[1]), self.device, prepare),
        }
        for name, (inputs, labels) in tests.items():
            result[f"{name}_accuracy"] = accuracy(model, _tensor(inputs), _tensor(labels), self.device, prepare)
        result["training_seconds"] = trained.seconds  # over every call of a resumed run
        result["seconds"] = time.perf_counter() - started  # of this call: training and scoring
        return self.store.put(key, result)

    def digit_reader(self, train_bank: DigitBank, test_bank: DigitBank, cell: int) -> tuple[SmallCNN, float]:
        """Train (or load) the neuro-symbolic model's digit reader for ``cell`` × ``cell`` digits; returns it
        and its accuracy on digits of ``test_bank``. A stored reader's checkpoint without its ``model``, or holding a
        reader of other sizes, raises ``ValueError`` naming it."""
        key = f"reader-{cell}-n{self.budget.reader_examples}-e3-seed{self.seed}{self.digits}"
        path = self.store.checkpoint(key)
        saved = load_checkpoint(path)
        if saved is None:
            reader = train_digit_reader(
                train_bank,
                cell,
                self.device,
                self.budget.reader_examples,
                seed=self.seed,
                progress=self.progress,
                checkpoint=self.store.checkpoint(f"{key}-training"),
                time_limit=self.time_left(),
            )
            save_checkpoint({"model": reader.state_dict()}, path)
        else:
            require_entries(saved, ["model"], path, "a PVR digit reader")
            reader = SmallCNN(1, 10, input_size=cell, width=READER_WIDTH)
            load_model_state(reader, saved["model"], str(path), "digit reader")
            reader.to(self.device).eval()
        rng = np.random.default_rng(self.seed + 7)
        classes = rng.integers(0, 10, size=(self.budget.test_size, 1))
        digits = render_blocks(test_bank.draw(classes, rng), grid=1, block=cell, rng=rng)
        return reader, accuracy(reader, _tensor(digits), _tensor(classes[:, 0]), self.device, images_to_float)

    def compare_on_images(
        self,
        task: str,
        models: list[str],
        train: tuple[np.ndarray, np.ndarray],
        tests: dict[str, tuple[np.ndarray, np.ndarray]],
        layout: CellLayout,
        banks: tuple[DigitBank, DigitBank],
        rule_examples: int,
    ) -> tuple[list[dict[str, Any]], list[list[Any]]]:
        """Train each CNN of ``models`` on ``train`` (images ``[N, H, W]`` uint8, labels ``[N]``) and the
        neuro-symbolic model (digit reader for ``layout``'s cells + a rule induced from the first
        ``rule_examples`` training pairs); score both on every test set. Returns the runs and table rows."""
        b = self.budget
        runs, rows = [], []
        config = self.visual_config()
        for name in models:
            key = f"{task}-{name}-s{b.visual_scale}-n{len(train[1])}-{schedule_name(config)}{self.digits}"
            torch.manual_seed(self.seed)
            model = build_visual_model(name, train[0].shape[1:], scale=b.visual_scale)
            result = self.train_and_score(key, model, train, tests, config, images_to_float)
            runs.append({"model": name, "scale": b.visual_scale, "train_size": len(train[1]), **result})
            rows.append([name, result["train_accuracy"], *(result[f"{split}_accuracy"] for split in tests)])
        reader, reader_accuracy = self.digit_reader(*banks, cell=layout.cell)
        solver = NeuroSymbolicPVR(reader, layout, self.device)
        rule_examples = min(rule_examples, len(train[1]))  # (a smaller training set: all of it, reported as such)
        induced = solver.fit(train[0][:rule_examples], train[1][:rule_examples])
        symbolic = {
            f"{split}_accuracy": float(np.mean(solver.predict(images) == labels)) for split, (images, labels) in tests.items()
        }
        runs.append(
            {
                "model": "neurosymbolic",
                "rule_examples": rule_examples,
                "reader_digit_accuracy": reader_accuracy,
                "rule_agreement": induced.agreement,
                "induced_rule": describe_rule(induced.rule),
                **symbolic,
            }
        )
        rows.append([f"neuro-symbolic ({rule_examples} task examples)", induced.agreement, *symbolic.values()])
        return runs, rows


def _tensor(array: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array))


def mnist_tag(mnist: Path | None) -> str:
    """What the keys of runs on the MNIST digits of ``mnist`` (``--mnist``, else ``$NEUROSYM_MNIST``; neither: the
    packaged default, tagged by nothing) end with: ``-mnist`` and the stamp of its file, or of every file in its idx folder
    (each one's size and modification time, :func:`~neurosym.training.checkpoint.files_stamp`), so that runs on other
    MNIST files, or on files rewritten since, are not reused."""
    given = given_mnist(mnist)
    return "" if given is None else f"-mnist{files_stamp(given)}"


def schedule_name(config: TrainConfig) -> str:
    """The parts of a training configuration that name a stored run."""
    return f"{config.optimizer}{config.lr:g}-st{config.max_steps}-b{config.batch_size}-seed{config.seed}"


def describe_rule(rule: PVRRule) -> dict[str, Any]:
    """A rule as JSON: length, pointer position and table, complexity, aggregation, boundary."""
    return {
        "length": rule.length,
        "pointer_position": rule.pointer_position,
        "pointer_table": list(rule.pointer_table),
        "complexity": rule.complexity,
        "aggregation": rule.aggregation,
        "boundary": rule.boundary,
    }
