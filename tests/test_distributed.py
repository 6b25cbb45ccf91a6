"""The shared training loop: DDP over two gloo processes equals one process on the same global batch;
resume, early stopping and best-weight restoring."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from itertools import pairwise
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch.utils.data import Dataset, TensorDataset

from neurosym.training import (
    StopRequests,
    TrainConfig,
    TrainingInterrupted,
    distributed_process,
    load_checkpoint,
    train,
)
from neurosym.training.core import kept_random_state
from neurosym.training.distributed import DistributedContext, _env_int
from neurosym.training.loop import learning_rate_factor
from neurosym.training.stopping import TIME_LIMIT

SINGLE = DistributedContext(0, 1, 0, torch.device("cpu"))


def regression_data() -> TensorDataset:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(16, 4, generator=generator)
    return TensorDataset(x, x @ torch.tensor([1.0, -2.0, 0.5, 3.0]) + 0.1 * torch.randn(16, generator=generator))


def small_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def counted(loss_fn, counter: list[int]):
    """``loss_fn`` that appends 1 to ``counter`` at every training step."""

    def counting(model: nn.Module, batch) -> torch.Tensor:
        counter.append(1)
        return loss_fn(model, batch)

    return counting


def mse(model: nn.Module, batch) -> torch.Tensor:
    x, y = batch
    return nn.functional.mse_loss(model(x).squeeze(-1), y)


@contextmanager
def torchrun_process(rank: int, port: int) -> Iterator[DistributedContext]:
    """Process ``rank`` of a two-process gloo group, configured exactly as torchrun would configure it."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    with distributed_process("cpu") as context:
        yield context


def test_without_torchrun_the_process_runs_alone_and_joins_no_group(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    with distributed_process("cpu") as context:
        assert (context.rank, context.world_size, context.is_main, context.is_distributed) == (0, 1, True, False)
        assert not torch.distributed.is_initialized()
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "2")
    with pytest.raises(ValueError, match=r"RANK=2 is outside \[0, WORLD_SIZE=2\)"), distributed_process("cpu"):
        pass


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({"WORLD_SIZE": "0"}, "WORLD_SIZE='0' must be at least 1"),  # (these four ran as one process)
        ({"WORLD_SIZE": "-2"}, "WORLD_SIZE='-2' must be at least 1"),
        ({"WORLD_SIZE": "1", "RANK": "1"}, r"RANK=1 is outside \[0, WORLD_SIZE=1\)"),
        ({"WORLD_SIZE": "1", "RANK": "first"}, "RANK='first' is not an integer"),
        ({"WORLD_SIZE": "2.0"}, r"WORLD_SIZE='2.0' is not an integer"),
        ({"WORLD_SIZE": "2", "RANK": "-1"}, "RANK='-1' must be at least 0"),
        ({"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "x"}, "LOCAL_RANK='x' is not an integer"),
        ({"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "-1"}, "LOCAL_RANK='-1' must be at least 0"),
        ({"WORLD_SIZE": " 1 "}, r"WORLD_SIZE=' 1 ' is not an integer \(an optional sign and digits 0-9\)"),  # int() took these
        ({"WORLD_SIZE": "1", "RANK": "0_0"}, "RANK='0_0' is not an integer"),
        ({"WORLD_SIZE": "1", "RANK": "\u0660"}, "RANK='\u0660' is not an integer"),  # (an Arabic-Indic zero)
    ],
)
def test_a_torchrun_environment_that_makes_no_sense_is_refused_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], named: str
) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=named), distributed_process("cpu"):
        pass
    assert not torch.distributed.is_initialized()


@settings(max_examples=100, deadline=None)
@given(
    number=st.integers(-(10**30), 10**30),
    plus=st.booleans(),
    zeros=st.integers(0, 3),
    stray=st.sampled_from([" ", "\t", "\n", "_", "."]) | st.characters(categories=["Nd"], exclude_characters="0123456789"),
    data=st.data(),
)
def test_an_environment_int_is_an_optional_sign_and_ascii_digits_only(
    number: int, plus: bool, zeros: int, stray: str, data: st.DataObject
) -> None:
    """Any such text reads as its number; one character more of any other kind (which ``int`` would take: spaces
    around, underscores between digits, digits of other scripts) names the variable."""
    text = f"{'-' if number < 0 else '+' if plus else ''}{'0' * zeros}{abs(number)}"
    with mock.patch.dict(os.environ, {"RANK": text}):
        assert _env_int("RANK", 0, minimum=-(10**31)) == number
    where = data.draw(st.integers(0, len(text)), label="where")
    spoiled = text[:where] + stray + text[where:]
    with (
        mock.patch.dict(os.environ, {"RANK": spoiled}),
        pytest.raises(ValueError, match=re.escape(f"RANK={spoiled!r} is not an integer")),
    ):
        _env_int("RANK", 0, minimum=-(10**31))


def _worker(rank: int, port: int, folder: str) -> None:
    with torchrun_process(rank, port) as context:
        model = small_model()
        config = TrainConfig(max_steps=2, batch_size=8, lr=0.05, checkpoint=Path(folder) / "ddp.pt", progress=False)
        train(model, regression_data(), mse, config, context, evaluate=lambda m: 0.0)
        torch.save(model.state_dict(), Path(folder) / f"rank{rank}.pt")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stopping_worker(rank: int, port: int, folder: str) -> None:
    """A gloo process of which only rank 1 has a time limit (as if a signal reached one process only)."""
    with torchrun_process(rank, port) as context:
        time_limit = 0.0 if rank == 1 else None
        config = TrainConfig(max_steps=4, batch_size=8, checkpoint=Path(folder) / "ddp.pt", progress=False, time_limit=time_limit)
        try:
            train(small_model(), regression_data(), mse, config, context)
        except TrainingInterrupted as stop:
            (Path(folder) / f"rank{rank}.txt").write_text(f"{stop.step} {stop.reason}")


def _failing_evaluation_worker(rank: int, port: int, folder: str) -> None:
    """A gloo process whose rank 0 evaluates the first weights to no number (None), then to an error of its own."""
    scores = {"None": lambda model: None, "error": lambda model: 1 / 0}
    with torchrun_process(rank, port) as context:
        for name, evaluate in scores.items():
            config = TrainConfig(max_steps=4, batch_size=8, eval_every=1, progress=False)
            try:
                train(small_model(), regression_data(), mse, config, context, evaluate=evaluate)
            except (ValueError, RuntimeError, ZeroDivisionError) as error:
                (Path(folder) / f"{name}{rank}.txt").write_text(f"{type(error).__name__}: {error}")


def run_two_processes(worker, folder: Path, seconds: float = 120) -> None:
    context = mp.start_processes(worker, args=(free_port(), str(folder)), nprocs=2, join=False, start_method="spawn")
    deadline = time.monotonic() + seconds
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"the two DDP processes did not finish within {seconds} s")


def test_two_gloo_processes_take_the_same_steps_as_one_process(tmp_path: Path) -> None:
    run_two_processes(_worker, tmp_path)
    model = small_model()
    config = TrainConfig(max_steps=2, batch_size=8, lr=0.05, checkpoint=tmp_path / "single.pt", progress=False)
    train(model, regression_data(), mse, config, SINGLE, evaluate=lambda m: 0.0)
    initial = small_model().state_dict()
    for rank in (0, 1):
        replica = torch.load(tmp_path / f"rank{rank}.pt")
        for name, value in model.state_dict().items():
            torch.testing.assert_close(replica[name], value, atol=1e-6, rtol=1e-5)
            assert not torch.equal(replica[name], initial[name])  # two real steps were taken
    saved = load_checkpoint(tmp_path / "ddp.pt")
    assert saved["step"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ddp.pt", "rank0.pt", "rank1.pt", "single.pt"]


def test_resuming_continues_exactly_where_training_stopped(tmp_path: Path) -> None:
    straight = small_model()
    train(straight, regression_data(), mse, TrainConfig(max_steps=6, batch_size=4, eval_every=2, progress=False), SINGLE)
    resumed = small_model()
    path = tmp_path / "run.pt"
    train(
        resumed,
        regression_data(),
        mse,
        TrainConfig(max_steps=3, batch_size=4, eval_every=3, checkpoint=path, progress=False),
        SINGLE,
    )
    assert load_checkpoint(path)["step"] == 3
    again, steps = small_model(seed=1), []  # other weights: everything must come from the checkpoint
    result = train(
        again,
        regression_data(),
        counted(mse, steps),
        TrainConfig(max_steps=6, batch_size=4, eval_every=3, checkpoint=path, progress=False),
        SINGLE,
    )
    assert result.steps == 6 and len(steps) == 3
    assert result.steps_this_call == 3 and result.seconds_this_call > 0  # this call's share of the run
    assert result.steps_per_second == pytest.approx(3 / result.seconds_this_call)
    for name, value in straight.state_dict().items():
        torch.testing.assert_close(again.state_dict()[name], value)


def test_a_resumed_run_draws_the_dropout_masks_of_an_uninterrupted_one(tmp_path: Path) -> None:
    """The checkpoint carries torch's generator: after a resume (in a fresh process, re-seeded as at
    its start) dropout continues with the masks the uninterrupted run draws."""

    def dropout_model(seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)  # what a command does at its start, before building the model
        return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(0.5), nn.Linear(16, 1))

    config = TrainConfig(max_steps=6, batch_size=4, eval_every=3, progress=False)
    straight = dropout_model()
    train(straight, regression_data(), mse, config, SINGLE)
    path = tmp_path / "run.pt"
    train(dropout_model(), regression_data(), mse, replace(config, max_steps=3, checkpoint=path), SINGLE)
    resumed, steps = dropout_model(seed=1), []  # other weights and generator: both must come from the checkpoint
    train(resumed, regression_data(), counted(mse, steps), replace(config, checkpoint=path), SINGLE)
    assert len(steps) == 3
    for name, value in straight.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], value, rtol=0, atol=0)
    old_style = load_checkpoint(path)
    del old_style["random"]  # a checkpoint from before the generator was saved still resumes
    torch.save(old_style, path)
    assert train(dropout_model(), regression_data(), mse, replace(config, max_steps=7, checkpoint=path), SINGLE).steps == 7


NOISE = {
    "torch": lambda: torch.randn(4),
    "numpy": lambda: torch.from_numpy(np.random.standard_normal(4)).float(),
    "python": lambda: torch.tensor([random.gauss(0.0, 1.0) for _ in range(4)]),
}
"""Four numbers of noise ``[4]`` drawn from torch's, numpy's or Python's global generator."""


class Augmented(Dataset):
    """:func:`regression_data` with noise added to each input as it is read, drawn from the global generator
    ``generator`` names in :data:`NOISE` (in a loader's worker, from the worker's own, which the loader seeds)."""

    def __init__(self, generator: str) -> None:
        self.data, self.noise = regression_data(), NOISE[generator]

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        x, y = self.data[index]
        return x + 0.1 * self.noise(), y


@pytest.fixture
def global_generators() -> Iterator[None]:
    """The test may seed numpy's and Python's global generators: their states come back after it."""
    with kept_random_state(torch.device("cpu")):
        yield


def seeded_model(seed: int) -> nn.Module:
    """:func:`small_model` with numpy's and Python's global generators seeded too, as a fresh process would seed them."""
    np.random.seed(seed)
    random.seed(seed)
    return small_model(seed)


@pytest.mark.parametrize("generator", list(NOISE))
@pytest.mark.parametrize("workers", [0, 1])
def test_a_resumed_run_reads_the_augmentations_of_an_uninterrupted_one(
    tmp_path: Path, workers: int, generator: str, global_generators: None
) -> None:
    """Resumed in its second epoch (4 batches an epoch), a run reads the noise an uninterrupted one reads: reading the
    batch it skips drew from the global generators after the checkpoint's states were restored (numpy's and Python's
    were drawn from twice), and a worker's seed was drawn afresh in the resumed call's first epoch, as in the run's
    first."""
    config = TrainConfig(max_steps=7, batch_size=4, eval_every=7, num_workers=workers, progress=False)
    straight = seeded_model(0)
    train(straight, Augmented(generator), mse, config, SINGLE)
    path = tmp_path / "run.pt"
    train(seeded_model(0), Augmented(generator), mse, replace(config, max_steps=5, checkpoint=path), SINGLE)
    resumed, steps = seeded_model(1), []
    train(resumed, Augmented(generator), counted(mse, steps), replace(config, checkpoint=path), SINGLE)
    assert len(steps) == 2
    for name, value in straight.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], value, rtol=0, atol=0)


def test_every_process_stops_at_the_step_one_of_them_was_asked_to(tmp_path: Path) -> None:
    run_two_processes(_stopping_worker, tmp_path)  # without agreement rank 0 would wait for rank 1 forever
    assert [(tmp_path / f"rank{rank}.txt").read_text() for rank in (0, 1)] == ["1 time limit", "1 time limit"]
    assert load_checkpoint(tmp_path / "ddp.pt")["step"] == 1


def test_an_evaluation_that_fails_on_rank_0_raises_on_every_rank(tmp_path: Path) -> None:
    """Rank 0 raised alone; rank 1 waited for it in the next collective until the group's timeout (30 minutes)."""
    run_two_processes(_failing_evaluation_worker, tmp_path, seconds=60)
    no_number = "ValueError: evaluate returned None after step 1: a score must be one number, higher is better"
    assert [(tmp_path / f"None{rank}.txt").read_text() for rank in (0, 1)] == [no_number, no_number]
    assert (tmp_path / "error0.txt").read_text() == "ZeroDivisionError: division by zero"
    assert (
        tmp_path / "error1.txt"
    ).read_text() == "RuntimeError: evaluate raised ZeroDivisionError on rank 0 after step 1: division by zero"


def test_time_limit_checkpoints_every_step_and_the_same_call_continues_exactly(tmp_path: Path) -> None:
    straight = small_model()
    train(straight, regression_data(), mse, TrainConfig(max_steps=6, batch_size=4, eval_every=3, progress=False), SINGLE)
    path = tmp_path / "run.pt"
    config = TrainConfig(max_steps=6, batch_size=4, eval_every=3, checkpoint=path, progress=False, time_limit=0.0)
    stops = []
    while True:
        # the first call starts from the same weights as the straight run, later ones from other weights (the checkpoint's win)
        chunked = small_model() if not stops else nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        try:
            result = train(chunked, regression_data(), mse, config, SINGLE)
            break
        except TrainingInterrupted as stop:
            assert load_checkpoint(path)["step"] == stop.step
            stops.append((stop.step, stop.reason, stop.exit_status))
    assert stops == [(step, TIME_LIMIT, 75) for step in range(1, 6)]
    assert result.steps == 6
    for name, value in straight.state_dict().items():
        torch.testing.assert_close(chunked.state_dict()[name], value)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread")
def test_sigterm_finishes_the_step_checkpoints_and_restores_the_handler(tmp_path: Path) -> None:
    calls = []

    def loss_then_sigterm(model: nn.Module, batch) -> torch.Tensor:
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGTERM)
        return mse(model, batch)

    before = signal.getsignal(signal.SIGTERM)
    path = tmp_path / "run.pt"
    with pytest.raises(TrainingInterrupted) as stop:
        train(
            small_model(),
            regression_data(),
            loss_then_sigterm,
            TrainConfig(max_steps=6, batch_size=4, checkpoint=path, progress=False),
            SINGLE,
        )
    assert (stop.value.step, stop.value.reason, stop.value.exit_status) == (2, "SIGTERM", 143)
    assert f"{path} holds it: run the same command again" in str(stop.value)
    assert load_checkpoint(path)["step"] == 2
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread")
def test_a_second_sigint_interrupts_at_once() -> None:
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN under nohup
    with StopRequests() as stops:
        assert stops.reason() is None
        signal.raise_signal(signal.SIGINT)
        assert stops.reason() == "SIGINT"
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signal handlers need the main thread")
@pytest.mark.parametrize(("first", "second"), [(signal.SIGTERM, signal.SIGTERM), (signal.SIGINT, signal.SIGTERM)])
def test_a_second_sigterm_exits_at_once_with_status_143(first: signal.Signals, second: signal.Signals) -> None:
    before = signal.getsignal(signal.SIGTERM)
    with StopRequests() as stops:
        signal.raise_signal(first)
        assert stops.reason() == first.name
        with pytest.raises(SystemExit) as exit_:
            signal.raise_signal(second)
    assert exit_.value.code == 143
    assert signal.getsignal(signal.SIGTERM) is before


def test_bad_time_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="time_limit must be None or at least 0 seconds"):
        TrainConfig(max_steps=1, batch_size=1, time_limit=-1.0)
    with pytest.raises(ValueError, match="time_limit"):
        StopRequests(float("nan"))


def test_a_run_checkpointed_without_amp_continues_with_amp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU run's checkpoint (no gradient scaler state) continues where the loss is scaled, as under
    float16 AMP on a GPU."""
    from neurosym.training import update

    path = tmp_path / "run.pt"
    train(small_model(), regression_data(), mse, TrainConfig(max_steps=2, batch_size=4, checkpoint=path, progress=False), SINGLE)
    assert load_checkpoint(path)["scaler"] == {}
    monkeypatch.setattr(update, "autocast_dtype", lambda device: torch.float16)
    result = train(
        small_model(), regression_data(), mse, TrainConfig(max_steps=4, batch_size=4, checkpoint=path, progress=False), SINGLE
    )
    assert result.steps == 4 and load_checkpoint(path)["scaler"]["scale"] > 0


def test_the_loss_is_scaled_under_float16_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """bfloat16 AMP has float32's range: no GradScaler, so the checkpoint holds no scaler state."""
    from neurosym.training import update

    path = tmp_path / "run.pt"
    monkeypatch.setattr(update, "autocast_dtype", lambda device: torch.bfloat16)
    train(small_model(), regression_data(), mse, TrainConfig(max_steps=2, batch_size=4, checkpoint=path, progress=False), SINGLE)
    assert load_checkpoint(path)["scaler"] == {}
    monkeypatch.setattr(update, "autocast_dtype", lambda device: torch.float16)
    train(small_model(), regression_data(), mse, TrainConfig(max_steps=3, batch_size=4, checkpoint=path, progress=False), SINGLE)
    assert load_checkpoint(path)["scaler"]["scale"] > 0


def test_early_stopping_keeps_the_best_weights() -> None:
    model = small_model()
    scores = iter([0.5, 0.9, 0.4, 0.3, 0.2, 0.1])
    snapshots = []

    def evaluate(m: nn.Module) -> float:
        snapshots.append({k: v.clone() for k, v in m.state_dict().items()})
        return next(scores)

    config = TrainConfig(max_steps=100, batch_size=4, eval_every=1, patience=2, progress=False)
    result = train(model, regression_data(), mse, config, SINGLE, evaluate=evaluate)
    assert result.stopped_early and result.steps == 4
    assert result.best_score == 0.9 and result.best_step == 2
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value, snapshots[1][name])


def test_bad_configurations_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="not divisible"):
        train(
            small_model(),
            regression_data(),
            mse,
            TrainConfig(max_steps=1, batch_size=5),
            DistributedContext(0, 2, 0, torch.device("cpu")),
        )
    with pytest.raises(ValueError, match="smaller than one batch"):
        train(small_model(), regression_data(), mse, TrainConfig(max_steps=1, batch_size=32), SINGLE)
    with pytest.raises(FloatingPointError, match="step 1"):
        train(
            small_model(),
            regression_data(),
            lambda m, b: torch.tensor(float("nan"), requires_grad=True),
            TrainConfig(max_steps=1, batch_size=4, progress=False),
            SINGLE,
        )


def test_a_non_finite_loss_between_reads_is_reported_with_its_step(tmp_path: Path) -> None:
    """With the loss read every 5 steps (as on CUDA), a NaN at step 3 raises at step 5, naming step 3
    and its value, before any checkpoint holds weights it has updated."""
    calls = iter(range(100))

    def loss_fn(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        loss = mse(model, batch)
        return loss * float("nan") if next(calls) == 2 else loss

    path = tmp_path / "run.pt"
    config = TrainConfig(max_steps=10, batch_size=4, eval_every=10, sync_every=5, checkpoint=path, progress=False)
    with pytest.raises(FloatingPointError, match="became nan at step 3$"):
        train(small_model(), regression_data(), loss_fn, config, SINGLE)
    assert next(calls) == 5  # raised at the fifth step, before its update
    assert not path.exists()
    with pytest.raises(ValueError, match="sync_every must be an int of at least 1, got 0"):
        TrainConfig(max_steps=1, batch_size=1, sync_every=0)


def test_cosine_schedule_warms_up_then_decays_to_zero() -> None:
    config = TrainConfig(max_steps=10, batch_size=4, schedule="cosine", warmup_steps=2)
    factors = [learning_rate_factor(step, config) for step in range(10)]
    assert factors[:3] == [0.5, 1.0, 1.0]
    assert all(a > b for a, b in pairwise(factors[2:]))
    assert learning_rate_factor(10, config) == pytest.approx(0.0)
    assert learning_rate_factor(5, TrainConfig(max_steps=10, batch_size=4)) == 1.0
    with pytest.raises(ValueError, match="unknown schedule"):
        TrainConfig(max_steps=1, batch_size=1, schedule="linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown optimizer"):
        TrainConfig(max_steps=1, batch_size=1, optimizer="lamb")  # type: ignore[arg-type]


@given(max_steps=st.integers(1, 50), warmup_steps=st.integers(0, 60))
def test_every_accepted_cosine_warm_up_ends_within_the_run_at_the_full_rate(max_steps: int, warmup_steps: int) -> None:
    """A warm-up of ``max_steps`` or more was accepted: the rate rose for the whole run (lr never reached beyond it) and
    never decayed. Under the constant schedule it is accepted, as the start of a run continued to more steps."""
    config = TrainConfig(max_steps=max_steps, batch_size=4, schedule="constant", warmup_steps=warmup_steps)
    assert learning_rate_factor(warmup_steps, config) == 1.0
    try:
        config = replace(config, schedule="cosine")
    except ValueError as error:
        assert warmup_steps >= max_steps
        assert f"got warmup_steps={warmup_steps} of max_steps={max_steps}" in str(error)
        return
    assert warmup_steps in range(max_steps)  # the first step after the warm-up is one of the run's, at the full rate
    assert learning_rate_factor(warmup_steps, config) == 1.0


def test_sgd_with_value_clipping_moves_each_weight_by_at_most_lr_times_clip() -> None:
    model = nn.Linear(4, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    data = TensorDataset(torch.full((4, 4), 100.0), torch.full((4,), 1e4))  # huge gradients, all negative
    config = TrainConfig(
        max_steps=1, batch_size=4, lr=0.1, optimizer="sgd", momentum=0.0, clip_norm=None, clip_value=0.5, progress=False
    )
    train(model, data, mse, config, SINGLE)
    torch.testing.assert_close(model.weight, torch.full((1, 4), 0.05))
    torch.testing.assert_close(model.bias, torch.full((1,), 0.05))


def test_adam_settings_and_schedule_survive_a_resume(tmp_path: Path) -> None:
    def config(steps: int, checkpoint: Path | None = None) -> TrainConfig:
        return TrainConfig(
            max_steps=steps,
            batch_size=4,
            lr=0.01,
            betas=(0.9, 0.995),
            eps=1e-9,
            schedule="cosine",
            warmup_steps=2,
            clip_norm=None,
            clip_value=0.1,
            eval_every=3,
            checkpoint=checkpoint,
            progress=False,
        )

    straight = small_model()
    train(straight, regression_data(), mse, config(6), SINGLE)
    path = tmp_path / "run.pt"
    calls = iter(range(100))

    def interrupted_mse(model: nn.Module, batch) -> torch.Tensor:
        if next(calls) == 4:  # the 5th step: the checkpoint of step 3 is on disk
            raise KeyboardInterrupt
        return mse(model, batch)

    with pytest.raises(KeyboardInterrupt):
        train(small_model(), regression_data(), interrupted_mse, config(6, path), SINGLE)
    assert load_checkpoint(path)["step"] == 3
    again, steps = small_model(seed=1), []
    train(again, regression_data(), counted(mse, steps), config(6, path), SINGLE)
    assert len(steps) == 3 and load_checkpoint(path)["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.995)
    for name, value in straight.state_dict().items():
        torch.testing.assert_close(again.state_dict()[name], value)


def test_resuming_with_another_configuration_is_refused_but_more_steps_continue(tmp_path: Path) -> None:
    path = tmp_path / "run.pt"
    train(small_model(), regression_data(), mse, TrainConfig(max_steps=2, batch_size=4, checkpoint=path, progress=False), SINGLE)
    with pytest.raises(ValueError, match="another configuration \\(lr differ\\)"):
        train(
            small_model(),
            regression_data(),
            mse,
            TrainConfig(max_steps=2, batch_size=4, lr=0.5, checkpoint=path, progress=False),
            SINGLE,
        )
    longer = TrainConfig(max_steps=3, batch_size=4, checkpoint=path, progress=False)
    assert train(small_model(), regression_data(), mse, longer, SINGLE).steps == 3
    with pytest.raises(ValueError, match="max_steps differ"):
        strict = ("checkpoint", "progress")
        train(small_model(), regression_data(), mse, replace(longer, max_steps=4), SINGLE, resume_may_change=strict)


def test_resuming_into_another_model_names_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "run.pt"
    config = TrainConfig(max_steps=2, batch_size=4, checkpoint=path, progress=False)
    train(small_model(), regression_data(), mse, config, SINGLE)
    other = nn.Sequential(nn.Linear(4, 8, bias=False), nn.Tanh(), nn.Linear(8, 1))  # no first bias
    with pytest.raises(ValueError, match="run.pt holds another model .*bias"):
        train(other, regression_data(), mse, replace(config, max_steps=3), SINGLE)
