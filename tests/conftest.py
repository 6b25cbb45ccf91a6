"""Fixtures shared by the test suite."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Run a test on one torch thread: tiny models train faster and steadier on a shared CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
