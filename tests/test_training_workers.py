"""Stop signals sent to a whole process group (a Ctrl-C in a terminal, ``timeout``, a scheduler) while training reads
its data in worker processes: the run stops as it does without workers, and the workers leave the signals to the
main process, which still ends them at once."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from interrupted_training import MAX_STEPS, READY_AT, SlowSquares
from torch.utils.data import DataLoader

from neurosym.training import StopSafeLoader, TrainingInterrupted, load_checkpoint

SCRIPT = Path(__file__).with_name("interrupted_training.py")
pytestmark = pytest.mark.skipif(not hasattr(signal, "sigwaitinfo"), reason="workers take SIGTERM from others where it waits")


def _wait_for(path: Path, process: subprocess.Popen | None = None, seconds: float = 60) -> None:
    """Wait until ``path`` exists (failing after ``seconds``, or once ``process`` has ended)."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert process is None or process.poll() is None, f"the run ended early: {process.communicate()[1]}"
        assert time.monotonic() < deadline, f"no {path.name} after {seconds} s"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("stop", "start_method"),
    [
        pytest.param(signal.SIGTERM, "fork", id="SIGTERM-fork"),
        pytest.param(signal.SIGINT, "spawn", id="SIGINT-spawn", marks=pytest.mark.slow),
    ],
)
def test_a_stop_sent_to_the_process_group_stops_a_run_with_workers_as_one_without(
    tmp_path: Path, stop: signal.Signals, start_method: str
) -> None:
    """Two workers, each of a few native threads (OpenBLAS's): the run finishes its step, checkpoints and exits with the
    stop's status and message alone. A worker that the signal ended (at SIGTERM from another process than its main
    one, or a spawned one at SIGINT) failed the run ("DataLoader worker ... exited unexpectedly") before it
    checkpointed."""
    env = os.environ | {"OPENBLAS_NUM_THREADS": "4", "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, str(SCRIPT), str(tmp_path), "2", start_method]
    run = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        _wait_for(tmp_path / "ready", run)
        os.killpg(run.pid, stop)
        _, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
    path = tmp_path / "run.pt"
    assert path.exists(), stderr
    step = load_checkpoint(path)["step"]
    expected = TrainingInterrupted(step, MAX_STEPS, stop.name, path)
    assert step >= READY_AT and (run.returncode, stderr) == (expected.exit_status, f"{expected}\n")


def _blocks_sigterm(pid: int) -> list[bool]:
    """Whether each thread of process ``pid`` blocks SIGTERM (Linux's ``/proc``)."""
    statuses = [(task / "status").read_text() for task in Path(f"/proc/{pid}/task").iterdir()]
    masks = [int(status.split("SigBlk:")[1].split()[0], 16) for status in statuses]
    return [bool(mask >> (signal.SIGTERM - 1) & 1) for mask in masks]


@pytest.mark.skipif(shutil.which("kill") is None or not Path("/proc/self/task").exists(), reason="needs kill and /proc")
@pytest.mark.parametrize("start_method", ["fork", pytest.param("spawn", marks=pytest.mark.slow)])
def test_a_worker_lives_through_another_process_sigterm_and_ends_at_once_at_its_main_process(
    tmp_path: Path, start_method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker in the middle of a long read (every thread of it, OpenBLAS's included, holding SIGTERM for the one that
    waits for it) is left alive by SIGTERM from another process and ends with status 0 at its main process's, as
    torch's shutdown of the workers and Python's of daemon processes at exit expect."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    loader = StopSafeLoader(_Marked(tmp_path), num_workers=1, multiprocessing_context=start_method)
    batches = iter(loader)
    worker = batches._workers[0]  # type: ignore[attr-defined]
    _wait_for(tmp_path / "reading")
    assert _blocks_sigterm(worker.pid).count(False) <= 1  # (the thread waiting for it has it unblocked meanwhile)
    subprocess.run(["kill", "-TERM", str(worker.pid)], check=True)
    time.sleep(0.5)
    assert worker.is_alive()
    os.kill(worker.pid, signal.SIGTERM)
    worker.join(timeout=10)
    assert worker.exitcode == 0
    del batches


class _Marked(SlowSquares):
    """:class:`SlowSquares` of a minute's read that marks ``folder/reading`` as it starts one."""

    def __init__(self, folder: Path) -> None:
        super().__init__(60.0)
        self.folder = folder

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        (self.folder / "reading").touch()
        return super().__getitem__(index)


def _worker_start(worker_id: int) -> None:
    """Record, in the worker, that its own start function ran (read by :class:`_Started`)."""
    torch.utils.data.get_worker_info().dataset.started = worker_id  # type: ignore[union-attr]


class _Started(torch.utils.data.Dataset):
    """What a worker reads for each index: its id as its own start function recorded it, its torch seed and whether it
    ignores SIGINT."""

    started = -1

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> tuple[int, int, bool]:
        return self.started, torch.initial_seed(), signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_workers_own_start_function_runs_and_its_seed_is_torchs() -> None:
    options = dict(batch_size=None, num_workers=2, worker_init_fn=_worker_start)
    safe = list(StopSafeLoader(_Started(), generator=torch.Generator().manual_seed(3), **options))
    plain = list(DataLoader(_Started(), generator=torch.Generator().manual_seed(3), **options))
    assert [seed for _, seed, _ in safe] == [seed for _, seed, _ in plain]
    assert [(worker, ignored) for worker, _, ignored in safe] == [(0, True), (1, True), (0, True), (1, True)]
