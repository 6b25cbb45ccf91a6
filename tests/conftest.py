"""Fixtures shared by the test suite, the hypothesis profiles and the ``mathematics_generator`` marker.

The suite runs hypothesis derandomized (the same examples on every run, so CI cannot turn red by the
draw); ``HYPOTHESIS_PROFILE=explore pytest tests`` draws fresh examples, to hunt for new failures.

Tests marked ``mathematics_generator`` run DeepMind's generator in its isolated environment. ``make test``
creates that environment once under ``.cache/`` and names it in ``$NEUROSYM_MATHEMATICS_ENV``; a named
environment that is not ready fails these tests, and without the variable they are skipped when the
default environment (``<cache>/mathematics-env``) is absent.

Tests marked ``cuda`` need a CUDA device and are skipped without one; ``make gpu-check`` runs them.
``NEUROSYM_CUDA_TESTS_ON=cpu`` runs them on the CPU instead, to check the tests themselves.

Tests marked ``slow`` (the longest on a GPU worker) are collected first, each followed by one other test, so that
with pytest-xdist's ``--maxschedchunk 2`` every worker starts on one of them and the longest tests run side by side
from the start instead of ending the run one after another.
"""

import os

import pytest
import torch
from hypothesis import settings

from neurosym.data.mathematics.environment import ENV_VARIABLE, generator_env_dir, generator_env_ready

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mathematics_generator: runs DeepMind's generator in its isolated environment")
    config.addinivalue_line("markers", "cuda: needs a CUDA device (skipped without one; make gpu-check runs it)")
    config.addinivalue_line("markers", "slow: one of the longest tests: collected first, one in every two places")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    others = [item for item in items if item.get_closest_marker("slow") is None]
    interleaved = [test for pair in zip(slow, others) for test in pair]
    items[:] = interleaved + slow[len(interleaved) // 2 :] + others[len(interleaved) // 2 :]


CUDA_TESTS_ON = "NEUROSYM_CUDA_TESTS_ON"
"""Set to ``cpu`` to run the ``cuda`` tests on the CPU (a check of the tests, not of CUDA)."""


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("cuda") is not None and not torch.cuda.is_available() and os.environ.get(CUDA_TESTS_ON) != "cpu":
        pytest.skip("needs a CUDA device (make gpu-check runs it on one)")
    if item.get_closest_marker("mathematics_generator") is None or generator_env_ready():
        return
    if os.environ.get(ENV_VARIABLE):
        pytest.fail(f"${ENV_VARIABLE} names {generator_env_dir()}, which is not a ready generator environment")
    pytest.skip(f"the mathematics_dataset environment is absent at {generator_env_dir()} (make test creates one)")


@pytest.fixture
def accelerator() -> torch.device:
    """The device of the ``cuda`` tests: CUDA, or the CPU under ``NEUROSYM_CUDA_TESTS_ON=cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


TEST_THREADS = int(os.environ.setdefault("OMP_NUM_THREADS", "1"))
"""Torch threads of each test process, the commands tests start as subprocesses included: one unless
``OMP_NUM_THREADS`` says otherwise (the device check gives each worker its share of the cores). The suite's models
are tiny, and pytest-xdist's two workers of two threads each on CI's two cores made a training test 4x slower (134 s
against 17 s at one thread each; the whole suite 499 s against 307 s)."""
torch.set_num_threads(TEST_THREADS)


@pytest.fixture(autouse=True)
def threads_per_test() -> None:
    """Every test starts on :data:`TEST_THREADS`, whatever the test before it set (``--threads 2`` of a command)."""
    torch.set_num_threads(TEST_THREADS)


@pytest.fixture
def small_hwf(monkeypatch: pytest.MonkeyPatch) -> None:
    """HWF's splits at a tenth of their sizes (1,000 training, 100 validation and 200 test formulas), for the tests of
    what ``neurosym pipeline --task hwf`` does (steps, checkpoints, resumes, files) rather than what it learns: building,
    scoring and (with a refit) labelling the full splits took most of their minutes. The tests give ten times the
    ``--epochs`` for the steps of the full splits."""
    from neurosym.tasks import hwf

    for split, size in hwf.SIZES.items():
        monkeypatch.setitem(hwf.SIZES, split, size // 10)


@pytest.fixture
def tiny_hwf(monkeypatch: pytest.MonkeyPatch) -> None:
    """HWF's splits at a hundredth of their sizes (100 training, 10 validation and 20 test formulas), for the tests of
    what a run with a refit writes and reads back (a resume, a time limit), where even :func:`small_hwf`'s building, scoring and
    labelling of its 1,300 formulas took most of their seconds."""
    from neurosym.tasks import hwf

    for split, size in hwf.SIZES.items():
        monkeypatch.setitem(hwf.SIZES, split, size // 100)
