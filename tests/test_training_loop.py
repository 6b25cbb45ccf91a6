"""The contract of the one training loop (:func:`neurosym.training.core.run_training`) with its callers:
step function, optimiser update, evaluation hook, checkpoint state of its own, stop and resume."""

from __future__ import annotations

import contextlib
import itertools
import random
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from neurosym.training import (
    Checkpointing,
    CheckpointMismatch,
    DistributedContext,
    TrainConfig,
    TrainingInterrupted,
    Update,
    load_checkpoint,
    run_training,
    save_checkpoint,
    train,
)
from neurosym.training.checkpoint import ABSENT_IS_DEFAULT, Setup, check_resumable, check_setup
from neurosym.training.classifier import fit_classifier
from neurosym.training.loop import MAX_SEED
from neurosym.training.update import adam

CPU = torch.device("cpu")


@dataclass(frozen=True)
class Settings:
    lr: float = 0.1
    noise: float = 0.5
    new: str = field(default="b", metadata={ABSENT_IS_DEFAULT: False})


class StopAt:
    """Stop requests from the ``at``-th question on (one question per step)."""

    def __init__(self, at: int) -> None:
        self.asked, self.at = 0, at

    def reason(self) -> str | None:
        self.asked += 1
        return "SIGTERM" if self.asked >= self.at else None


class Toy:
    """A linear model trained on batches that depend on the step only, with noise from torch's global
    generator (as dropout draws it), skipping every third step (``None`` loss), clamping its weights
    after each update, and keeping a running sum of its losses as its own checkpoint state."""

    def __init__(self, settings: Settings = Settings(), seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.settings = settings
        self.model = nn.Linear(3, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=settings.lr)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda step: 1.0 / (1 + step))
        self.steps_seen: list[int] = []
        self.clamps = 0
        self.evaluations: list[tuple[int, float | None]] = []
        self.total = 0.0

    def step(self, index: int) -> tuple[torch.Tensor | None, dict[str, float]]:
        self.steps_seen.append(index)
        x = torch.randn(8, 3, generator=torch.Generator().manual_seed(index))
        target = x.sum(dim=1, keepdim=True) + self.settings.noise * torch.rand(8, 1)
        loss = (self.model(x) - target).square().mean()
        self.total += loss.item()
        return (None if index % 3 == 2 else loss), {"total": self.total}

    def clamp(self) -> None:
        self.clamps += 1
        with torch.no_grad():
            self.model.weight.clamp_(-0.5, 0.5)

    def evaluate(self, step: int, loss: float | None) -> bool:
        self.evaluations.append((step, loss))
        return False

    def checkpointing(self, path: Path, every: int = 3) -> Checkpointing:
        def load(saved: dict) -> None:
            self.total = saved["total"]

        return Checkpointing(path, self.settings, every, (), lambda: {"total": self.total}, load)

    def run(self, steps: int = 10, path: Path | None = None, **options) -> object:
        update = Update(self.optimizer, self.scheduler, after=self.clamp)
        checkpoint = None if path is None else self.checkpointing(path)
        return run_training(self.model, self.step, update, steps, device=CPU, evaluate=self.evaluate, eval_every=4,
                            checkpoint=checkpoint, **options)  # fmt: skip


def test_a_none_loss_skips_the_update_but_counts_the_step_and_the_schedule() -> None:
    toy = Toy()
    weights = []

    def step(index: int) -> tuple[torch.Tensor | None, dict]:
        loss, logs = toy.step(index)
        weights.append(toy.model.weight.detach().clone())
        return loss, logs

    update = Update(toy.optimizer, toy.scheduler, after=toy.clamp)
    result = run_training(toy.model, step, update, 6, device=CPU)
    assert result.step == result.steps_this_call == 6 and toy.steps_seen == list(range(6))
    assert toy.clamps == 4  # after each of the 4 updates, not after the skipped steps 2 and 5
    assert torch.equal(weights[3], weights[2]) and not torch.equal(weights[2], weights[1])
    assert toy.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 / 7)  # the schedule counted all 6 steps
    assert (toy.model.weight.abs() <= 0.5).all()
    assert [entry["step"] for entry in result.history] == [1, 2, 3, 4, 5, 6]


def test_a_first_step_without_signal_steps_the_schedule_without_torchs_warning() -> None:
    toy = Toy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns when a schedule steps before its optimizer has
        Update(toy.optimizer, toy.scheduler)(None)
    assert toy.optimizer.param_groups[0]["lr"] == pytest.approx(0.1 / 2)


def test_evaluations_come_every_eval_every_steps_and_at_the_last_with_the_loss_read() -> None:
    toy = Toy()
    toy.run(10)
    assert [step for step, _ in toy.evaluations] == [4, 8, 10]
    assert all(isinstance(loss, float) for _, loss in toy.evaluations)
    toy = Toy()
    toy.evaluate = lambda step, loss: step == 4  # a true result ends training early
    result = toy.run(10)
    assert result.stopped_early and result.step == 4


def test_an_early_stop_between_checkpoint_steps_is_checkpointed_and_a_rerun_takes_no_step(tmp_path: Path) -> None:
    """Evaluated every 4 steps and checkpointed every 3, a run that its evaluation ends at step 4 keeps step 4: its
    checkpoint held step 3, and a rerun trained step 3 again (finished() had no record of the stop)."""

    path = tmp_path / "run.pt"
    first = Toy()
    first.evaluate = lambda step, loss: step == 4  # type: ignore[method-assign]
    assert first.run(10, path).stopped_early and load_checkpoint(path)["step"] == 4
    rerun = Toy(seed=1)
    result = rerun.run(10, path, finished=lambda: rerun.total == first.total)  # the state of the stop came back
    assert rerun.steps_seen == [] and result.step == 4 and result.stopped_early
    assert torch.equal(rerun.model.weight, first.model.weight)


def test_the_callers_state_round_trips_through_a_checkpoint(tmp_path: Path) -> None:
    toy = Toy()
    toy.run(6, tmp_path / "run.pt")
    saved = load_checkpoint(tmp_path / "run.pt")
    assert saved["step"] == 6 and saved["total"] == toy.total and saved["config"] == {"lr": 0.1, "noise": 0.5, "new": "b"}
    again = Toy(seed=1)
    again.run(6, tmp_path / "run.pt")  # finished: loads, trains nothing
    assert again.steps_seen == [] and again.total == toy.total
    assert torch.equal(again.model.weight, toy.model.weight)
    clashing = Checkpointing(tmp_path / "other.pt", Settings(), 1, save_extra=lambda: {"step": 3})
    with pytest.raises(ValueError, match=r"entries \['step'\] clash"):
        run_training(toy.model, toy.step, Update(toy.optimizer), 1, device=CPU, checkpoint=clashing)


def without_seconds(history: list[dict]) -> list[dict]:
    return [{key: value for key, value in entry.items() if key != "seconds"} for entry in history]


@pytest.mark.parametrize("stop_at", [2, 4, 7])
def test_a_stop_request_then_a_resume_equals_an_uninterrupted_run(tmp_path: Path, stop_at: int) -> None:
    straight = Toy()
    expected = straight.run(10, tmp_path / "straight.pt")
    path = tmp_path / "resumed.pt"
    first = Toy()
    with pytest.raises(TrainingInterrupted) as stop:
        first.run(10, path, stops=StopAt(stop_at))
    saved = load_checkpoint(path)
    assert stop.value.step == stop_at and stop.value.reason == "SIGTERM" and saved["step"] == stop_at
    assert 0 < saved["history"][-1]["seconds"] <= saved["seconds"] <= stop.value.seconds
    resumed = Toy(seed=7)  # another start: everything must come from the checkpoint
    result = resumed.run(10, path)
    assert resumed.steps_seen == list(range(stop_at, 10)) and result.steps_this_call == 10 - stop_at
    assert without_seconds(result.history) == without_seconds(expected.history) and resumed.total == straight.total
    seconds = [entry["seconds"] for entry in result.history]  # the training's time goes on counting across the stop
    assert all(a < b for a, b in itertools.pairwise(seconds)) and seconds[stop_at] > saved["seconds"]
    assert result.seconds > result.seconds_this_call and result.seconds >= seconds[-1]
    assert first.evaluations + resumed.evaluations == straight.evaluations
    for name, value in straight.model.state_dict().items():
        assert torch.equal(resumed.model.state_dict()[name], value), name
    assert resumed.optimizer.param_groups[0]["lr"] == straight.optimizer.param_groups[0]["lr"]


def test_resuming_under_another_configuration_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.pt"
    Toy().run(3, path)
    with pytest.raises(ValueError, match=r"another configuration \(lr differ\)"):
        Toy(Settings(lr=0.2)).run(3, path)
    state = load_checkpoint(path)
    del state["config"]["noise"]  # as written before the field existed: its default is what runs did
    save_checkpoint(state, path)
    Toy().run(3, path)
    del state["config"]["new"]  # a field whose default is not what runs did before it existed
    save_checkpoint(state, path)
    with pytest.raises(ValueError, match=r"new differ"):
        Toy().run(3, path)
    save_checkpoint({"model": {}}, path)
    with pytest.raises(ValueError, match="not a checkpoint of this training loop"):
        Toy().run(3, path)
    path.write_bytes(path.read_bytes()[:100])  # torn
    with pytest.raises(ValueError, match=r"run.pt is not a readable checkpoint \(RuntimeError: .*\); remove it"):
        Toy().run(3, path)
    path.write_bytes(b"cno_such_module\nthing\n.")  # corrupt bytes that unpickle into an import
    with pytest.raises(ValueError, match=r"run.pt is not a readable checkpoint \(ModuleNotFoundError: .*\); remove it"):
        Toy().run(3, path)
    torch.save(torch.zeros(3), path)  # a torch file, but no checkpoint (its keys were read: AttributeError)
    with pytest.raises(ValueError, match=r"run.pt is not a checkpoint: it holds a Tensor, not a dict; remove it"):
        Toy().run(3, path)


@pytest.mark.parametrize(
    ("entry", "value", "named"),
    [
        ("config", Settings(), "its config is a Settings"),  # the dataclass itself: TypeError 'Settings' is not a mapping
        ("config", None, "its config is a NoneType"),
        ("model", nn.Linear(3, 1), "its model is a Linear"),  # the module itself: AttributeError, no 'keys'
        ("optimizer", None, "its optimizer is a NoneType"),
        ("step", torch.tensor(2), r"its step is tensor\(2\), not a count of steps"),  # trained on, returned tensor(10) steps
        ("step", -3, "its step is -3, not a count of steps"),  # trained 13 steps
        ("step", "2", "its step is '2', not a count of steps"),  # TypeError: '>' not supported
    ],
)
def test_a_checkpoint_whose_entries_are_of_another_kind_is_named(tmp_path: Path, entry: str, value: object, named: str) -> None:
    """A file of another program with the loop's entry names but other contents."""
    path = tmp_path / "run.pt"
    Toy().run(3, path)
    save_checkpoint({**load_checkpoint(path), entry: value}, path)
    toy = Toy()
    with pytest.raises(ValueError, match=rf"run.pt is not a checkpoint of this training loop \({named}\); remove it"):
        toy.run(10, path)
    assert toy.steps_seen == []


def test_a_checkpoint_past_max_steps_is_refused_and_one_at_max_steps_returns_at_once(tmp_path: Path) -> None:
    path = tmp_path / "run.pt"
    Toy().run(6, path)
    with pytest.raises(ValueError, match=r"run.pt is at step 6, past max_steps 4: ask for at least 6 steps"):
        Toy().run(4, path)  # (returned the 6-step weights as if 4 steps had trained them)
    toy = Toy()
    result = toy.run(6, path)
    assert result.step == 6 and result.steps_this_call == 0 and toy.steps_seen == []


@dataclass(frozen=True)
class Kind:
    name: str = "plain"


@dataclass(frozen=True)
class WithKinds:
    kind: type = field(default_factory=lambda: Kind)  # a dataclass class: asdict keeps it as it is
    instance: Kind = field(default_factory=Kind)  # a dataclass instance: asdict turns it into a dict


def test_an_absent_field_defaults_as_asdict_gives_it_for_dataclass_classes_and_instances(tmp_path: Path) -> None:
    check_resumable({}, WithKinds(), (), tmp_path / "run.pt")  # both absent from the checkpoint: their defaults
    with pytest.raises(CheckpointMismatch, match="instance.name differ"):
        check_resumable({"instance": {"name": "other"}}, WithKinds(), (), tmp_path / "run.pt")


def test_resuming_under_another_setup_is_refused_and_one_written_without_a_setup_is_accepted(tmp_path: Path) -> None:
    path, toy = tmp_path / "run.pt", Toy()

    def run(setup: dict | None, steps: int = 3) -> object:
        checkpoint = replace(toy.checkpointing(path), setup=setup)
        return run_training(toy.model, toy.step, Update(toy.optimizer), steps, device=CPU, checkpoint=checkpoint)

    run({"heads": 2, "bank": "default"})
    assert load_checkpoint(path)["setup"] == {"heads": 2, "bank": "default"}
    with pytest.raises(CheckpointMismatch, match=r"for another model or data \(heads differ\): heads 2 there, 4 now"):
        run({"heads": 4, "bank": "default"}, 6)
    with pytest.raises(CheckpointMismatch, match=r"\(width differ\): width None there, 8 now"):
        run({"heads": 2, "bank": "default", "width": 8}, 6)
    state = load_checkpoint(path)
    del state["setup"]  # written before setups were kept
    save_checkpoint(state, path)
    assert run({"heads": 4}, 6).step == 6


def test_a_setup_key_at_its_default_equals_the_key_left_out_or_none() -> None:
    """An option given at its default is the run started without it (None: not given), either way round, also nested."""
    setup = Setup({"heads": 8, "dropout": 0.1, "budget": {"beam": 4, "nodes": 10}}, {"dropout": 0.1, "budget": {"nodes": 10}})
    for saved in ({"heads": 8, "dropout": None, "budget": {"beam": 4}}, {"heads": 8, "budget": {"beam": 4, "nodes": 10}}):
        check_setup(saved, setup, "run.pt")
        check_setup({**setup}, Setup({**saved}, setup.defaults), "run.pt")
    with pytest.raises(
        CheckpointMismatch, match=r"\(budget.nodes, dropout differ\): budget.nodes 10 there, 20 now; dropout 0.1 there, 0.3"
    ):
        check_setup(
            {"heads": 8, "budget": {"beam": 4}},
            Setup({**setup, "dropout": 0.3, "budget": {"beam": 4, "nodes": 20}}, setup.defaults),
            "run.pt",
        )
    with pytest.raises(CheckpointMismatch, match=r"\(heads differ\): heads None there, 8 now"):
        check_setup({"dropout": 0.1, "budget": {"beam": 4}}, setup, "run.pt")  # a key without a default: None, as before
    assert dict(setup) == {"heads": 8, "dropout": 0.1, "budget": {"beam": 4, "nodes": 10}}  # what a checkpoint keeps


def test_a_non_finite_loss_is_named_with_its_step_unless_checks_are_off() -> None:
    toy = Toy()
    toy.settings = Settings(noise=float("nan"))
    with pytest.raises(FloatingPointError, match="became nan at step 1$"):
        toy.run(3)
    assert toy.clamps == 0  # raised before its update
    toy = Toy(Settings(noise=float("nan")))
    assert toy.run(3, check_finite=False).step == 3


def test_a_non_finite_loss_after_the_last_read_is_named_at_the_last_step() -> None:
    """Read every 4 steps (as on CUDA), a NaN at step 5 of 6 was never read: the run returned its weights as trained."""
    toy = Toy()

    def step(index: int) -> tuple[torch.Tensor | None, dict]:
        loss, logs = toy.step(index)
        return (None if loss is None else loss * (float("nan") if index == 4 else 1.0)), logs

    with pytest.raises(FloatingPointError, match="became nan at step 5$"):
        run_training(toy.model, step, Update(toy.optimizer), 6, device=CPU, sync_every=4)


def test_a_resume_draws_the_numpy_and_python_numbers_of_an_uninterrupted_run(tmp_path: Path) -> None:
    """The checkpoint carries numpy's and Python's global generators too (a step's augmentations may draw from them)."""

    def run(path: Path, seed: int, stops: StopAt | None = None) -> list[tuple[float, float, float]]:
        np.random.seed(seed)
        random.seed(seed)
        model, drawn = nn.Linear(1, 1), []

        def step(index: int) -> tuple[torch.Tensor, dict]:
            drawn.append((np.random.rand(), np.random.standard_normal(), random.random()))  # (a Gaussian is cached half)
            return model(torch.ones(1)).sum(), {}

        update = Update(torch.optim.SGD(model.parameters(), lr=0.1))
        with contextlib.suppress(TrainingInterrupted):
            run_training(model, step, update, 6, device=CPU, checkpoint=Checkpointing(path, Settings(), 2), stops=stops)
        return drawn

    states = np.random.get_state(), random.getstate()
    try:
        straight = run(tmp_path / "straight.pt", 0)
        first = run(tmp_path / "resumed.pt", 0, StopAt(3))
        assert len(first) == 3 and first + run(tmp_path / "resumed.pt", 1) == straight  # another seed: the checkpoint's win
        assert set(torch.load(tmp_path / "resumed.pt", weights_only=True)["random"]) >= {
            "numpy",
            "python",
        }  # plain tensors and numbers
    finally:
        np.random.set_state(states[0])
        random.setstate(states[1])


def test_bad_arguments_are_named() -> None:
    toy = Toy()
    with pytest.raises(ValueError, match="max_steps and eval_every must be positive"):
        run_training(toy.model, toy.step, Update(toy.optimizer), 0, device=CPU)
    with pytest.raises(ValueError, match="an evaluation hook needs eval_every"):
        run_training(toy.model, toy.step, Update(toy.optimizer), 2, device=CPU, evaluate=toy.evaluate)
    with pytest.raises(ValueError, match="positive interval"):
        Checkpointing("x.pt", Settings(), 0)


def test_counts_that_are_no_positive_ints_are_named_before_any_step(tmp_path: Path) -> None:
    toy = Toy()
    for steps, every in ((2.5, None), (float("nan"), None), (True, None), (5, 2.5)):  # 2.5 steps ran 3; NaN ran none
        with pytest.raises(ValueError, match="max_steps and eval_every must be positive ints"):
            run_training(toy.model, toy.step, Update(toy.optimizer), steps, device=CPU, eval_every=every)
    with pytest.raises(ValueError, match=r"sync_every .* must be an int of at least 1, got -1"):  # read every step
        run_training(toy.model, toy.step, Update(toy.optimizer), 2, device=CPU, sync_every=-1)
    with pytest.raises(ValueError, match=r"positive interval \(an int\), got every=nan"):  # checkpointed at the end only
        Checkpointing("x.pt", Settings(), float("nan"))  # type: ignore[arg-type]
    assert toy.steps_seen == []


def test_a_checkpoint_path_that_cannot_hold_a_file_is_named_before_training(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a folder: give the path of a file"):
        Toy().checkpointing(tmp_path)  # was refused as a "checkpoint to remove"
    with pytest.raises(ValueError, match=r"lies under '.*file', which is a file, not a folder"):
        Toy().checkpointing(tmp_path / "file" / "run.pt")  # was found only at the first checkpoint, after training
    with pytest.raises(TypeError, match="config must be a dataclass instance, got dict"):
        Checkpointing(tmp_path / "run.pt", {"lr": 0.1}, 1)
    with pytest.raises(ValueError, match="is a folder, not a checkpoint"):
        load_checkpoint(tmp_path)


@pytest.mark.parametrize(
    ("clips", "named"),
    [
        ({"clip_norm": -1.0}, r"clip_norm \(None: no clipping\) must be a number above 0, got -1.0"),  # ascended the loss
        ({"clip_norm": float("nan")}, r"clip_norm .* got nan"),  # NaN weights
        ({"clip_value": 0.0}, r"clip_value \(None: no clipping\) must be a number above 0, got 0.0"),  # every gradient zeroed
        ({"clip_value": -0.5}, r"clip_value .* got -0.5"),  # every gradient set to -0.5
    ],
)
def test_an_update_names_clips_that_are_no_number_above_zero(clips: dict, named: str) -> None:
    """``Update`` took them as given (only TrainConfig checked its own)."""
    toy = Toy()
    with pytest.raises(ValueError, match=named):
        Update(toy.optimizer, **clips)
    assert Update(toy.optimizer, clip_norm=float("inf"), clip_value=0.5).clips  # infinity: a norm never clipped


def test_a_loss_that_is_no_scalar_tensor_is_named_with_its_step() -> None:
    toy = Toy()
    update = Update(toy.optimizer)
    with pytest.raises(ValueError, match=r"step 1 returned a loss of shape \[8, 1\]"):
        run_training(toy.model, lambda i: (toy.model(torch.ones(8, 3)), {}), update, 2, device=CPU)
    with pytest.raises(TypeError, match="step 1 returned a loss of type float"):
        run_training(toy.model, lambda i: (0.5, {}), update, 2, device=CPU)  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"max_steps": 2.5}, "max_steps must be an int of at least 1, got 2.5"),  # ran 3 steps
        ({"batch_size": 0}, "batch_size must be an int of at least 1, got 0"),  # torch's DataLoader named it
        ({"warmup_steps": 1.5}, "warmup_steps must be an int of at least 0"),
        ({"seed": 2**64}, r"seed must be at most 2\*\*63 - 1 \(epoch e seeds .*\), got 18446744073709551616"),  # at step 1
        ({"seed": 2**64 - 1}, r"seed must be at most 2\*\*63 - 1"),  # Overflow when unpacking long long at the second epoch
        ({"patience": 0}, r"patience \(None: no early stopping\) must be an int of at least 1, got 0"),  # acted as 1
        ({"lr": float("inf")}, "lr must be a finite number at least 0, got inf"),
        ({"clip_norm": -1.0}, r"clip_norm \(None: no clipping\) must be a number above 0, got -1.0"),  # reversed gradients
        ({"clip_value": 0.0}, "clip_value .* must be a number above 0, got 0.0"),  # zeroed every gradient
        ({"sync_every": 2.5}, "sync_every must be an int of at least 1, got 2.5"),
        ({"sync_every": "2"}, "sync_every must be an int of at least 1, got '2'"),  # TypeError: '<' not supported
        ({"eps": 0.0}, "eps must be a finite number above 0, got 0.0"),  # 0/0 for a parameter without gradient
        ({"weight_decay": -0.1}, "weight_decay must be a finite number at least 0, got -0.1"),
        ({"momentum": float("nan")}, r"momentum must be a number in \[0, 1\), got nan"),
        ({"momentum": 1.0}, r"momentum must be a number in \[0, 1\), got 1.0"),  # SGD's steps grew without bound
        ({"momentum": -0.5}, r"momentum must be a number in \[0, 1\), got -0.5"),
        ({"weight_decay": float("inf")}, "weight_decay must be a finite number at least 0, got inf"),
        ({"betas": (-0.1, 0.999)}, r"betas must be two numbers in \[0, 1\), got \(-0.1, 0.999\)"),
        (
            {"warmup_steps": 3, "schedule": "cosine"},
            "warmup_steps must be below max_steps under the cosine schedule .*, got warmup_steps=3 of max_steps=3",
        ),  # never decayed
        ({"warmup_steps": 5, "schedule": "cosine"}, "got warmup_steps=5 of max_steps=3"),  # lr never reached
        ({"betas": (0.9, 1.0)}, r"betas must be two numbers in \[0, 1\), got \(0.9, 1.0\)"),
        ({"betas": 0.9}, r"betas must be two numbers in \[0, 1\), got 0.9"),
        ({"progress": "no"}, "progress must be True or False, got 'no'"),  # read by its truth: the bar was shown
    ],
)
def test_a_train_config_names_bad_counts_and_numbers(changes: dict, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        TrainConfig(**{"max_steps": 3, "batch_size": 4, **changes})


def test_a_nan_evaluation_score_is_named_instead_of_keeping_the_first_weights_for_good() -> None:
    scores = iter([float("nan"), 1.0, 2.0])
    data = [(torch.randn(2), torch.randn(1)) for _ in range(8)]
    context = DistributedContext(0, 1, 0, CPU)
    with pytest.raises(ValueError, match="evaluate returned a NaN score after step 1"):
        train(nn.Linear(2, 1), data, lambda model, batch: (model(batch[0]) - batch[1]).square().mean(),
              TrainConfig(3, 4, eval_every=1), context, evaluate=lambda model: next(scores))  # fmt: skip


@pytest.mark.parametrize("score", [None, torch.tensor([0.5, 0.7]), "0.9"])
def test_an_evaluation_that_is_not_one_number_is_named(score) -> None:
    data = [(torch.randn(2), torch.randn(1)) for _ in range(8)]
    context = DistributedContext(0, 1, 0, CPU)
    with pytest.raises(ValueError, match="after step 1: a score must be one number, higher is better"):
        train(nn.Linear(2, 1), data, lambda model, batch: (model(batch[0]) - batch[1]).square().mean(),
              TrainConfig(3, 4, eval_every=1), context, evaluate=lambda model: score)  # fmt: skip
    one = torch.tensor([0.5])  # a one-element tensor is one number
    outcome = train(nn.Linear(2, 1), data, lambda model, batch: (model(batch[0]) - batch[1]).square().mean(),
                    TrainConfig(3, 4, eval_every=1), context, evaluate=lambda model: one)  # fmt: skip
    assert outcome.best_score == 0.5


def _regression(seed: int = 0) -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    torch.manual_seed(seed)
    data = [(x, x.sum(0, keepdim=True)) for x in torch.randn(32, 3)]
    return nn.Linear(3, 1), data


def _squared_error(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    return (model(batch[0]) - batch[1]).square().mean()


def test_a_rerun_of_a_run_that_stopped_early_takes_no_step_unless_given_more_patience(tmp_path: Path) -> None:
    """A rerun trained on past the early stop (evaluating again, perhaps finding new best weights); more patience
    continues it, as the configuration's resumable changes say."""
    context = DistributedContext(0, 1, 0, CPU)
    scores = itertools.chain([1.0], itertools.repeat(0.0))  # the first evaluation stays the best
    config = TrainConfig(40, 8, eval_every=2, patience=2, checkpoint=tmp_path / "run.pt")
    model, data = _regression()
    first = train(model, data, _squared_error, config, context, evaluate=lambda model: next(scores))
    assert first.stopped_early and first.steps == 6 and first.best_step == 2
    rerun = train(_regression()[0], data, _squared_error, config, context, evaluate=lambda model: next(scores))
    assert rerun.steps_this_call == 0 and rerun.stopped_early and rerun.history == first.history
    patient = train(_regression()[0], data, _squared_error, replace(config, patience=4), context,
                    evaluate=lambda model: next(scores))  # fmt: skip
    assert patient.steps == 10 and patient.steps_this_call == 4 and patient.stopped_early


def test_a_cosine_run_is_not_continued_to_more_steps_but_a_constant_one_is(tmp_path: Path) -> None:
    """The cosine schedule decays to zero at max_steps: resumed to more steps, its learning rate jumped back up, and the
    weights matched no uninterrupted run."""
    context = DistributedContext(0, 1, 0, CPU)
    for schedule in ("constant", "cosine"):
        model, data = _regression()
        path = tmp_path / f"{schedule}.pt"
        train(model, data, _squared_error, TrainConfig(4, 8, schedule=schedule, checkpoint=path), context)
        longer = TrainConfig(8, 8, schedule=schedule, checkpoint=path)
        if schedule == "constant":
            assert train(_regression()[0], data, _squared_error, longer, context).steps_this_call == 4
            continue
        with pytest.raises(CheckpointMismatch, match="max_steps 4 there, 8 now"):
            train(_regression()[0], data, _squared_error, longer, context)


def test_a_train_config_takes_numpy_counts_as_python_ints() -> None:
    """np.int64 counts passed the checks, then torch's BatchSampler refused batch_size=8."""
    config = TrainConfig(np.int64(3), np.int64(8), eval_every=np.int64(2), patience=np.int64(1), seed=np.int64(0))
    assert all(type(getattr(config, name)) is int for name in ("max_steps", "batch_size", "eval_every", "patience", "seed"))
    model, data = _regression()
    assert train(model, data, _squared_error, config, DistributedContext(0, 1, 0, CPU), evaluate=lambda m: 0.0).steps == 3


def test_patience_without_an_evaluation_is_named_before_any_step() -> None:
    """Nothing is scored without ``evaluate`` (nor by ``fit_classifier``): patience was ignored and every step trained."""
    model, data = _regression()
    classifier = nn.Linear(3, 2)
    before = [{name: value.clone() for name, value in module.state_dict().items()} for module in (model, classifier)]
    config = TrainConfig(6, 8, eval_every=1, patience=1)
    with pytest.raises(ValueError, match="patience=1 applies to training with an evaluate function, not to train without"):
        train(model, data, _squared_error, config, DistributedContext(0, 1, 0, CPU))
    inputs, labels = torch.randn(8, 3), torch.arange(8) % 2
    with pytest.raises(ValueError, match="patience=1 applies to training with an evaluate function, not to fit_classifier"):
        fit_classifier(classifier, inputs, labels, config, CPU)
    for module, weights in zip((model, classifier), before):
        assert all(torch.equal(weights[name], value) for name, value in module.state_dict().items())


def test_the_largest_seed_trains_through_several_epochs() -> None:
    model, data = _regression()
    config = TrainConfig(12, 8, seed=MAX_SEED)  # four batches an epoch: three epochs, seeded MAX_SEED + 0, 1, 2
    assert train(model, data, _squared_error, config, DistributedContext(0, 1, 0, CPU)).steps == 12


def test_nothing_to_train_is_named_before_torch_fails_on_it() -> None:
    """A model without parameters failed in torch's optimizer ("empty parameter list"); a frozen model, or one whose
    output was detached, in autograd ("element 0 of tensors does not require grad")."""
    with pytest.raises(ValueError, match="nothing to train: the model holds no parameters"):
        adam(nn.Identity().parameters(), 1e-3)
    frozen = nn.Linear(2, 1).requires_grad_(False)
    with pytest.raises(ValueError, match=r"nothing to train: the model holds 2 parameters, all frozen \(requires_grad=False\)"):
        adam(frozen.parameters(), 1e-3)
    model = nn.Linear(2, 1)
    update = Update(adam(model.parameters(), 1e-3))
    with pytest.raises(ValueError, match="the loss carries no gradient: the model's output was detached"):
        update(model(torch.ones(1, 2)).detach().sum())
    before = model.weight.detach().clone()
    update(model(torch.ones(1, 2)).sum())
    assert not torch.equal(model.weight, before)
