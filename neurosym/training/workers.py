"""Data-loading worker processes that leave stop requests to the process that started them.

A Ctrl-C in a terminal sends SIGINT to the whole foreground process group, and ``timeout``, ``kill -- -PGID`` or a
batch scheduler send SIGTERM to every process of a job: a :class:`~torch.utils.data.DataLoader`'s workers got them
too. A worker that took SIGINT ended, one that took SIGTERM from anyone but its main process was killed (torch's
workers exit calmly only at their main process's SIGTERM), and the main process then failed with "DataLoader worker
... exited unexpectedly" or "... is killed by signal" instead of finishing its step and checkpointing
(:class:`~neurosym.training.stopping.StopRequests`). The workers of a :class:`StopSafeLoader` leave both signals to
the main process, which stops as it decides and then shuts them down.
"""

from __future__ import annotations

import functools
import multiprocessing
import multiprocessing.resource_tracker
import os
import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from torch.utils.data import DataLoader, Dataset
from torch.utils.data.dataloader import _BaseDataLoaderIter

T = TypeVar("T")
WorkerInit = Callable[[int], None]
"""A ``DataLoader`` ``worker_init_fn``: called with the worker's id in each worker process as it starts."""

WAITS_FOR_SIGTERM = hasattr(signal, "sigwaitinfo")
"""Whether a worker can tell its main process's SIGTERM from another's (Linux); elsewhere SIGTERM acts on workers
as on torch's own."""


def _held_signals() -> tuple[signal.Signals, ...]:
    """:data:`HELD_SIGNALS` on this platform."""
    if not hasattr(signal, "pthread_sigmask"):  # (Windows)
        return ()
    return (signal.SIGINT, signal.SIGTERM) if WAITS_FOR_SIGTERM else (signal.SIGINT,)


HELD_SIGNALS = _held_signals()
"""The signals workers start with blocked, so that one that comes while they start waits for them to ignore it (none
where threads have no signal masks)."""


def leave_stops_to_main(worker_init_fn: WorkerInit | None = None) -> WorkerInit:
    """A ``worker_init_fn`` under which a worker ignores SIGINT, and SIGTERM from any process but its main one, then
    runs ``worker_init_fn(worker_id)`` (when given). SIGTERM from the main process (its loader's shutdown, Python's
    ending of daemon processes at exit) still ends the worker at once, with status 0 as torch's workers do; and a
    worker whose main process died unannounced still exits once its read is done (torch's watchdog). The seeds torch
    gives the worker before are untouched. The worker's own child processes inherit the ignored SIGINT and the
    blocked SIGTERM."""
    return functools.partial(_leave_stops_to_main, worker_init_fn)


def _leave_stops_to_main(worker_init_fn: WorkerInit | None, worker_id: int) -> None:
    """The body of :func:`leave_stops_to_main`'s ``worker_init_fn`` in worker ``worker_id``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if WAITS_FOR_SIGTERM:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # in this thread and those it starts
        main = getattr(multiprocessing.parent_process(), "pid", None) or os.getppid()  # (under forkserver: not the parent)
        threading.Thread(target=_exit_at_sigterm_from, args=(main,), name="sigterm-from-main", daemon=True).start()
    if worker_init_fn is not None:
        worker_init_fn(worker_id)


def _exit_at_sigterm_from(main: int) -> None:
    """Take SIGTERM as it comes (blocked, so it waits here rather than kill the process); exit with status 0 at the
    first sent by process ``main``."""
    while signal.sigwaitinfo({signal.SIGTERM}).si_pid != main:
        pass
    os._exit(0)  # (what torch's SIGTERM handler does for the main process's: a nonzero status is reported as a failure)


class StopSafeLoader(DataLoader[T]):
    """A :class:`~torch.utils.data.DataLoader` whose workers leave SIGINT and SIGTERM to the main process
    (:func:`leave_stops_to_main`, composed with any ``worker_init_fn`` given). Under the ``fork`` and ``spawn`` start
    methods they start with both signals blocked, so that one sent while they start (seconds under ``spawn``) reaches
    none of them, nor any thread they start (OpenBLAS's); the main process takes it once they are started. Under
    ``forkserver`` Python's fork server forks them, as it is (a SIGTERM to the whole process group ends that server,
    and the workers with it). Its options are ``DataLoader``'s, given by name after ``dataset``; without workers it
    is a plain ``DataLoader``."""

    def __init__(self, dataset: Dataset[T], *, worker_init_fn: WorkerInit | None = None, **options: Any) -> None:
        super().__init__(dataset, worker_init_fn=leave_stops_to_main(worker_init_fn), **options)

    def __iter__(self) -> _BaseDataLoaderIter:
        start_method = self._start_method()
        if start_method not in ("fork", "spawn") or not HELD_SIGNALS:
            return super().__iter__()
        if start_method == "spawn":  # Python's resource tracker, started with the first such process, unblocks them here
            multiprocessing.resource_tracker.ensure_running()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)  # (the workers started here inherit the mask)
        try:
            return super().__iter__()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def _start_method(self) -> str | None:
        """How iterating starts the worker processes (``None``: there are none)."""
        if not self.num_workers:
            return None
        return (self.multiprocessing_context or multiprocessing).get_start_method()
