"""Resuming the training loop from a checkpoint that does not fit the run: refused before anything is restored, with
the checkpoint and what differs named."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
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
from neurosym.training.checkpoint import check_resumable, check_setup
from neurosym.training.classifier import fit_classifier

CPU = torch.device("cpu")


@dataclass(frozen=True)
class Plain:
    lr: float = 0.1


OptimiserOf = Callable[[nn.Linear], torch.optim.Optimizer]


def adam_over_all(model: nn.Linear) -> torch.optim.Optimizer:
    return torch.optim.Adam(model.parameters(), lr=0.1)


def linear_run(path: Path, steps: int, optimiser_of: OptimiserOf = adam_over_all, seed: int = 0) -> tuple[nn.Linear, Update]:
    """``steps`` steps of a ``Linear(3, 2)`` (drawn from ``seed``) under the optimiser ``optimiser_of`` gives it, with a
    schedule, checkpointed at ``path`` every step; returns the model and its update."""
    torch.manual_seed(seed)
    model = nn.Linear(3, 2)
    optimizer = optimiser_of(model)
    update = Update(optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + step)))

    def step(index: int) -> tuple[torch.Tensor, dict]:
        return (model(torch.full((4, 3), float(index))) - 1.0).square().mean(), {}

    run_training(model, step, update, steps, device=CPU, checkpoint=Checkpointing(path, Plain(), 1))
    return model, update


def unchanged(module: nn.Module, before: dict[str, torch.Tensor]) -> bool:
    return all(torch.equal(before[name], value) for name, value in module.state_dict().items())


def copies(values: Iterable[tuple[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    return {name: value.clone() for name, value in values}


@pytest.mark.parametrize(
    ("optimiser_of", "named"),
    [
        (lambda model: torch.optim.Adam([model.weight], lr=0.1), r"parameters per group \[2\] there, \[1\] here"),
        (
            lambda model: torch.optim.Adam([{"params": [model.weight]}, {"params": [model.bias]}], lr=0.1),
            r"parameters per group \[2\] there, \[1, 1\] here",
        ),
        (
            lambda model: torch.optim.Adam([model.bias, model.weight], lr=0.1),  # as many parameters, in another order
            r"exp_avg of parameter 0 \[2, 3\] there, \[2\] here; exp_avg_sq of parameter 0",
        ),
        (
            lambda model: torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
            r"group 0 has options \['amsgrad', 'betas', .*\] that this optimiser lacks",
        ),
    ],
)
def test_an_optimiser_state_of_other_parameters_is_refused_before_the_model_is_restored(
    tmp_path: Path, optimiser_of: OptimiserOf, named: str
) -> None:
    """The model's weights were loaded first, then the optimiser's state refused with torch's message (or loaded, with
    Adam's moments of one parameter on another, and training went on): the model was left half-restored."""
    path = tmp_path / "run.pt"
    linear_run(path, 2)
    torch.manual_seed(1)
    model = nn.Linear(3, 2)
    optimizer = optimiser_of(model)
    weights, options = copies(model.state_dict().items()), optimizer.state_dict()["param_groups"]
    update = Update(optimizer)
    with pytest.raises(CheckpointMismatch, match=rf"checkpoint {path} holds the state of another optimiser .*{named}"):
        run_training(model, lambda index: (model(torch.ones(1, 3)).sum(), {}), update, 3, device=CPU,
                     checkpoint=Checkpointing(path, Plain(), 1))  # fmt: skip
    assert unchanged(model, weights) and optimizer.state_dict() == {"state": {}, "param_groups": options}


def test_a_checkpoint_that_fails_to_restore_puts_the_optimiser_back_and_leaves_the_model(tmp_path: Path) -> None:
    """A part that passes the checks but fails as it loads (here the schedule's state) puts back the optimiser's state
    loaded before it, and the model (loaded last) is untouched."""
    path = tmp_path / "run.pt"
    linear_run(path, 2)
    save_checkpoint({**load_checkpoint(path), "scheduler": {"last_epoch": 2}}, path)  # no lr_lambdas: KeyError
    torch.manual_seed(1)
    model = nn.Linear(3, 2)
    optimizer = adam_over_all(model)
    weights = copies(model.state_dict().items())
    update = Update(optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0))
    with pytest.raises(CheckpointMismatch, match=rf"checkpoint {path} cannot be restored here \(KeyError: 'lr_lambdas'\)"):
        run_training(model, lambda index: (model(torch.ones(1, 3)).sum(), {}), update, 3, device=CPU,
                     checkpoint=Checkpointing(path, Plain(), 1))  # fmt: skip
    assert unchanged(model, weights) and optimizer.state_dict()["state"] == {}
    assert optimizer.param_groups[0]["lr"] == 0.1 and update.scheduler is not None and update.scheduler.last_epoch == 0


def resume_linear(path: Path, steps: int = 3) -> nn.Linear:
    """Resume ``linear_run``'s checkpoint at ``path`` in a model drawn from another seed; returns it."""
    torch.manual_seed(1)
    model = nn.Linear(3, 2)
    optimizer = adam_over_all(model)
    update = Update(optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0))
    run_training(model, lambda index: (model(torch.ones(1, 3)).sum(), {}), update, steps, device=CPU,
                 checkpoint=Checkpointing(path, Plain(), 1))  # fmt: skip
    return model


@pytest.mark.parametrize(
    ("cut", "named"),
    [
        (lambda saved: saved.pop("scheduler"), r"is not a checkpoint of this training loop: it lacks \['scheduler'\] "),
        (
            lambda saved: saved["random"].pop("cpu"),
            r"is not a checkpoint of this training loop \(its random holds no state of the CPU generator\)",
        ),
    ],
)
def test_a_checkpoint_without_an_entry_the_loop_restores_is_named_with_it(
    tmp_path: Path, cut: Callable[[dict], object], named: str
) -> None:
    """Written by an older version or cut short: resuming it failed with a bare KeyError ('scheduler', 'cpu') after
    the model's weights were loaded."""
    path = tmp_path / "run.pt"
    linear_run(path, 2)
    saved = load_checkpoint(path)
    cut(saved)
    save_checkpoint(saved, path)
    with pytest.raises(ValueError, match=rf"{path} {named}.*; remove it"):
        resume_linear(path)


def regression(seed: int = 0) -> tuple[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]:
    torch.manual_seed(seed)
    inputs = torch.randn(16, 3)
    return nn.Linear(3, 1), list(zip(inputs, inputs.sum(dim=1, keepdim=True)))


def squared_error(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    inputs, targets = batch
    return (model(inputs) - targets).square().mean()


@pytest.mark.parametrize(
    ("cut", "named"),
    [
        (lambda saved: saved.pop("loop"), r"is not a checkpoint of train: it lacks \['loop'\]"),
        (
            lambda saved: saved["loop"].pop("best_model"),
            r"is not a checkpoint of train \(its loop state\): it lacks \['best_model'\]",
        ),
        (lambda saved: saved["loop"].pop("history"), r"is not a checkpoint of train \(its loop state\): it lacks \['history'\]"),
        # (said to lack every entry of the loop state)
        (lambda saved: saved.update(loop=[1]), r"is not a checkpoint of train: its loop is a list, not a mapping; remove it$"),
    ],
)
def test_a_train_checkpoint_without_its_loop_state_is_named_with_what_it_lacks(
    tmp_path: Path, cut: Callable[[dict], object], named: str
) -> None:
    path = tmp_path / "run.pt"
    model, data = regression()
    context = DistributedContext(0, 1, 0, CPU)
    train(model, data, squared_error, TrainConfig(2, 8, checkpoint=path), context)
    saved = load_checkpoint(path)
    cut(saved)
    save_checkpoint(saved, path)
    other, _ = regression(1)
    weights = copies(other.state_dict().items())
    with pytest.raises(ValueError, match=rf"{path} {named}"):
        train(other, data, squared_error, TrainConfig(4, 8, checkpoint=path), context)
    assert unchanged(other, weights)


@dataclass(frozen=True)
class Placed:
    device: str | torch.device = "cpu"
    betas: tuple[float, float] | list[float] = (0.9, 0.999)
    data: str | Path = "data"


def as_json(values: dict) -> dict:
    """``values`` written to a JSON file and read back (a configuration file's values)."""
    return json.loads(json.dumps(values, default=str))


devices = st.sampled_from(["cpu", "cuda:0", "meta"]).flatmap(lambda name: st.sampled_from([name, torch.device(name)]))
betas = st.tuples(st.floats(0, 0.99), st.floats(0, 0.99)).flatmap(lambda pair: st.sampled_from([pair, list(pair)]))
paths = st.sampled_from(["data", "runs/a.npz"]).flatmap(lambda name: st.sampled_from([name, Path(name)]))


@settings(max_examples=30, deadline=None)
@given(devices, betas, paths, st.booleans())
def test_a_configuration_resumes_the_run_of_its_json_round_trip_both_ways(device, pair, data, saved_first: bool) -> None:
    """A tuple of betas against the list a JSON file gives, a device against its text, a path against its text: each
    was refused as another configuration."""
    config = Placed(device, pair, data)
    read_back = Placed(**as_json(asdict(config)))
    saved, now = (config, read_back) if saved_first else (read_back, config)
    check_resumable(asdict(saved), now, (), "run.pt")
    check_setup(asdict(saved), asdict(now), "run.pt")


@pytest.mark.parametrize(
    ("saved", "now", "named"),
    [
        (Placed(device="cpu"), Placed(device=torch.device("meta")), r"device 'cpu' there, device\(type='meta'\) now"),
        (Placed(betas=[0.9, 0.999]), Placed(betas=(0.9, 0.99)), r"betas \[0.9, 0.999\] there, \(0.9, 0.99\) now"),
        (Placed(data=Path("a")), Placed(data="b"), r"data 'a' there, 'b' now"),
    ],
)
def test_other_values_in_another_form_are_still_refused(saved: Placed, now: Placed, named: str) -> None:
    with pytest.raises(CheckpointMismatch, match=named):
        check_resumable(asdict(saved), now, (), "run.pt")


def test_a_train_config_read_from_json_resumes_a_run_started_in_code_and_the_other_way(tmp_path: Path) -> None:
    """TrainConfig's betas from a JSON file are a list: a run started with the tuple was refused (betas differ)."""
    context = DistributedContext(0, 1, 0, CPU)
    in_code = TrainConfig(2, 8, checkpoint=tmp_path / "code.pt")
    from_file = TrainConfig(**as_json(asdict(replace(in_code, checkpoint=tmp_path / "file.pt"))))
    assert isinstance(from_file.betas, list)
    for first, then in ((in_code, from_file), (from_file, in_code)):
        train(regression()[0], regression()[1], squared_error, first, context)
        longer = replace(then, max_steps=4, checkpoint=first.checkpoint)
        assert train(regression()[0], regression()[1], squared_error, longer, context).steps_this_call == 2


@pytest.mark.parametrize(("first", "then"), [("cpu", "cpu:0"), ("cpu:0", "cpu")])
def test_a_run_on_the_cpu_resumes_on_cpu_0_and_the_other_way(tmp_path: Path, first: str, then: str) -> None:
    """torch.load knows no map location "cpu:0": such a resume was told its checkpoint "is not a readable checkpoint
    ...; remove it"."""
    path = tmp_path / "run.pt"
    train(*regression(), squared_error, TrainConfig(2, 8, checkpoint=path), DistributedContext(0, 1, 0, torch.device(first)))
    resumed = train(
        *regression(), squared_error, TrainConfig(4, 8, checkpoint=path), DistributedContext(0, 1, 0, torch.device(then))
    )
    assert resumed.steps_this_call == 2


FIT_INPUTS, FIT_LABELS = torch.randn(32, 4, generator=torch.Generator().manual_seed(0)), torch.arange(32) % 3


@pytest.fixture(scope="module")
def stopped_fit(tmp_path_factory: pytest.TempPathFactory) -> TrainConfig:
    """The configuration of a classifier fit on ``FIT_INPUTS`` and ``FIT_LABELS`` that stopped after its first step (its
    time limit), to resume."""
    config = TrainConfig(4, 8, eval_every=2, checkpoint=tmp_path_factory.mktemp("fit") / "fit.pt", time_limit=0)
    with pytest.raises(TrainingInterrupted):
        fit_classifier(nn.Linear(4, 3), FIT_INPUTS, FIT_LABELS, config, CPU)
    return replace(config, time_limit=None)


def refused_fit(config: TrainConfig, inputs: torch.Tensor, labels: torch.Tensor, named: str) -> None:
    """Resuming ``config``'s fit on ``inputs`` and ``labels`` is refused naming ``named`` and leaves the model as it was."""
    model = nn.Linear(4, 3)
    weights = copies(model.state_dict().items())
    with pytest.raises(
        CheckpointMismatch, match=rf"{config.checkpoint} was written for another model or data \({named} differ\)"
    ):
        fit_classifier(model, inputs, labels, config, CPU)
    assert unchanged(model, weights)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, FIT_INPUTS.numel() - 1), st.floats(-3, 3, width=32), st.integers(0, len(FIT_LABELS) - 1))
def test_fit_classifier_refuses_to_resume_on_inputs_or_labels_with_any_value_changed(
    stopped_fit: TrainConfig, position: int, value: float, row: int
) -> None:
    """It resumed on any inputs and labels of the right sizes: it went on training on other data as if on the same."""
    inputs = FIT_INPUTS.clone()
    inputs.view(-1)[position] = value if value != inputs.view(-1)[position] else value + 1
    refused_fit(stopped_fit, inputs, FIT_LABELS, "inputs.bytes")
    labels = FIT_LABELS.clone()
    labels[row] = (labels[row] + 1) % 3
    refused_fit(stopped_fit, FIT_INPUTS, labels, "labels.bytes")


def test_fit_classifier_refuses_other_shapes_or_dtypes_and_resumes_on_the_same_data(stopped_fit: TrainConfig) -> None:
    refused_fit(stopped_fit, FIT_INPUTS.double(), FIT_LABELS, "inputs.bytes, inputs.dtype")
    refused_fit(stopped_fit, FIT_INPUTS, FIT_LABELS.int(), "labels.bytes, labels.dtype")
    refused_fit(stopped_fit, FIT_INPUTS[:24], FIT_LABELS[:24], "inputs.bytes, inputs.shape, labels.bytes, labels.shape")
    resumed = fit_classifier(nn.Linear(4, 3), FIT_INPUTS.clone(), FIT_LABELS.clone(), stopped_fit, CPU)
    assert resumed.steps == 4 and resumed.steps_this_call == 3


def dropout_model(seed: int) -> nn.Module:
    """A tiny model whose steps draw from torch's global generator (dropout), built from ``seed`` (which then seeds
    the generator for its steps)."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.3), nn.Linear(4, 1))


SCORED = torch.randn(6, 3, generator=torch.Generator().manual_seed(1))


def negative_error(model: nn.Module) -> float:
    """A validation score that depends on the weights alone: minus the squared error on :data:`SCORED`."""
    return -(model(SCORED) - SCORED.sum(dim=1, keepdim=True)).square().mean().item()


configs = st.builds(
    TrainConfig,
    max_steps=st.integers(2, 7),
    batch_size=st.sampled_from([4, 8]),  # 12 examples: three batches an epoch, or one (its last four left out)
    lr=st.sampled_from([0.01, 0.1]),
    optimizer=st.sampled_from(["adam", "sgd"]),
    schedule=st.sampled_from(["constant", "cosine"]),
    warmup_steps=st.integers(0, 2),
    clip_norm=st.sampled_from([None, 0.5]),
    clip_value=st.sampled_from([None, 0.1]),
    eval_every=st.integers(1, 3),
    patience=st.sampled_from([None, 1, 2]),
    seed=st.integers(0, 3),
)


def trained(config: TrainConfig, model: nn.Module, evaluate: bool, stop_after: int | None = None) -> object:
    """``train`` of ``model`` on 12 examples under ``config``, asking to stop (SIGINT, as Ctrl-C does) during step
    ``stop_after`` (1-based); the result, or the ``TrainingInterrupted`` raised."""
    data = regression()[1][:12]
    steps = 0

    def loss(network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        nonlocal steps
        steps += 1
        if steps == stop_after:
            signal.raise_signal(signal.SIGINT)
        return squared_error(network, batch)

    if not evaluate:
        config = replace(config, patience=None)  # (patience needs evaluations)
    try:
        return train(model, data, loss, config, DistributedContext(0, 1, 0, CPU), evaluate=negative_error if evaluate else None)
    except TrainingInterrupted as stop:
        return stop


def same_weights(resumed: nn.Module, straight: nn.Module) -> bool:
    return all(torch.equal(value, straight.state_dict()[name]) for name, value in resumed.state_dict().items())


def without_seconds(history: list[dict]) -> list[dict]:
    return [{key: value for key, value in entry.items() if key != "seconds"} for entry in history]


@settings(max_examples=10, deadline=None)
@given(configs, st.data(), st.booleans())
def test_a_run_stopped_after_any_step_and_resumed_ends_bit_for_bit_as_an_uninterrupted_one(
    tmp_path_factory: pytest.TempPathFactory, config: TrainConfig, data: st.DataObject, evaluate: bool
) -> None:
    """N steps straight against stop requests (Ctrl-C: the checkpoint is written) after any steps k < N, each followed
    by a resume, the last to N: the same weights to the bit, evaluations, best step and early stop (patience may end
    either run before a request)."""
    stops = data.draw(st.lists(st.integers(1, config.max_steps - 1), min_size=1, max_size=2, unique=True).map(sorted))
    path = tmp_path_factory.mktemp("resume") / "run.pt"
    straight = dropout_model(config.seed)
    expected = trained(config, straight, evaluate)
    done = 0
    for stop in stops:
        model = dropout_model(config.seed + 100 * bool(done))  # the first run starts as the straight one did
        outcome = trained(replace(config, checkpoint=path), model, evaluate, stop_after=stop - done)
        if not isinstance(outcome, TrainingInterrupted):  # (an early stop before the request)
            assert outcome.stopped_early
            break
        done = stop
    resumed = dropout_model(config.seed + 100)  # another start: all of it must come from the checkpoint
    again = trained(replace(config, checkpoint=path), resumed, evaluate)
    assert same_weights(resumed, straight) and without_seconds(again.history) == without_seconds(expected.history)
    assert [again.steps, again.best_score, again.best_step, again.stopped_early] == [
        expected.steps,
        expected.best_score,
        expected.best_step,
        expected.stopped_early,
    ]


@settings(max_examples=6, deadline=None)
@given(configs.map(lambda config: replace(config, schedule="constant", patience=None)), st.data())
def test_a_run_of_k_steps_continued_to_n_ends_bit_for_bit_as_n_steps_straight(
    tmp_path_factory: pytest.TempPathFactory, config: TrainConfig, data: st.DataObject
) -> None:
    """Under the constant schedule a finished run continues to more steps (max_steps may change on resume): k steps,
    then N, equal N straight (the history differs: the shorter run evaluated its last step)."""
    first_steps = data.draw(st.integers(1, config.max_steps - 1), label="first_steps")
    path = tmp_path_factory.mktemp("continue") / "run.pt"
    straight = dropout_model(config.seed)
    expected = trained(config, straight, evaluate=False)
    trained(replace(config, max_steps=first_steps, checkpoint=path), dropout_model(config.seed), evaluate=False)
    resumed = dropout_model(config.seed + 100)
    again = trained(replace(config, checkpoint=path), resumed, evaluate=False)
    assert (
        same_weights(resumed, straight)
        and again.steps == expected.steps
        and again.steps_this_call == expected.steps - first_steps
    )


@pytest.mark.parametrize("state", [[], None, "weights", torch.zeros(2)])
def test_a_model_state_that_is_no_mapping_is_named_and_nothing_is_loaded(state) -> None:
    from neurosym.training.checkpoint import CheckpointMismatch, load_model_state

    model = nn.Linear(2, 1)
    before = {name: value.clone() for name, value in model.state_dict().items()}
    with pytest.raises(CheckpointMismatch, match=f"run.pt holds no reader state: its weights are a {type(state).__name__}"):
        load_model_state(model, state, "run.pt", "reader")
    assert all(torch.equal(before[name], value) for name, value in model.state_dict().items())


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_good_checkpoint_loaded_onto_a_missing_gpu_names_the_device_not_the_file(tmp_path: Path) -> None:
    """A good checkpoint mapped onto CUDA on a machine without it was said to be "not a readable checkpoint ...;
    remove it"."""
    path = tmp_path / "run.pt"
    train(*regression(), squared_error, TrainConfig(2, 8, checkpoint=path), DistributedContext(0, 1, 0, torch.device("cpu")))
    with pytest.raises(ValueError, match="CUDA is not available") as raised:
        load_checkpoint(path, "cuda")
    assert "remove it" not in str(raised.value)
    assert load_checkpoint(path, "cpu") is not None
