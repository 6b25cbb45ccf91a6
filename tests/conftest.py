"""Fixtures shared by the test suite, and the hypothesis profiles.

The suite runs hypothesis derandomized (the same examples on every run, so CI cannot turn red by the
draw); ``HYPOTHESIS_PROFILE=explore pytest tests`` draws fresh examples, to hunt for new failures.
"""

import os

import pytest
import torch
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture
def one_thread():
    """Run a test on one torch thread: tiny models train faster and steadier on a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
