"""Seeding and evaluation mode for one block: what the block sees, and what the caller gets back."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from neurosym.training.modes import evaluation_mode
from neurosym.training.seeding import STEP_SEED_STRIDE, seeded, step_generator


def test_a_seeded_block_draws_the_same_whatever_came_before_and_the_callers_stream_goes_on():
    draws = []
    for caller_seed in (1, 2):
        torch.manual_seed(caller_seed)
        expected_next = torch.rand(3)
        torch.manual_seed(caller_seed)
        with seeded(7):
            draws.append((torch.rand(3), nn.Linear(2, 2).weight.detach().clone()))
        torch.testing.assert_close(torch.rand(3), expected_next)  # as if the block had not run
    assert torch.equal(draws[0][0], draws[1][0]) and torch.equal(draws[0][1], draws[1][1])
    with seeded(8, "cpu"):
        assert not torch.equal(torch.rand(3), draws[0][0])


class FakeGenerator:
    """A CUDA device's generator, as ``torch.cuda.default_generators`` holds it: the seeds it was given."""

    def __init__(self) -> None:
        self.seeds: list[int] = []

    def manual_seed(self, seed: int) -> None:
        self.seeds.append(seed)


def test_a_seeded_block_seeds_only_the_generators_it_gives_back(monkeypatch):
    """On a machine with CUDA: torch.manual_seed also seeded every CUDA generator (queued until CUDA starts), which a
    block on the CPU never gave back, so the caller's GPU stream (dropout masks) restarted from the block's seed; a
    block on one GPU gave back that GPU's generator only."""
    queued: list[int] = []
    monkeypatch.setattr(torch.cuda, "manual_seed_all", queued.append)  # (torch.manual_seed's call for every GPU)
    monkeypatch.setattr(torch.cuda, "manual_seed", queued.append)
    generators = [FakeGenerator(), FakeGenerator()]
    monkeypatch.setattr(torch.cuda, "default_generators", generators)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    forked: list[list[int]] = []
    fork_rng = torch.random.fork_rng
    monkeypatch.setattr(torch.random, "fork_rng", lambda devices: forked.append(devices) or fork_rng(devices=[]))
    for device, given_back in (("cpu", []), ("cuda", [1]), ("cuda:0", [0]), (torch.device("cuda", 1), [1])):
        with seeded(5, device):
            pass
        assert forked[-1] == given_back and queued == []
        assert [generator.seeds for generator in generators] == [[5] * given_back.count(k) for k in range(2)], device
        for generator in generators:
            generator.seeds.clear()


@given(seed=st.integers(0, 2**80), step=st.integers(0, 10**9))
def test_every_seed_and_step_have_a_step_generator_and_neighbouring_steps_differ(seed: int, step: int) -> None:
    generator = step_generator(seed, step)  # (seeds past 2**64 / 1_000_003 overflowed torch's seed: the run failed)
    assert generator.initial_seed() == (seed * STEP_SEED_STRIDE + step) % 2**64
    assert not torch.equal(torch.rand(4, generator=generator), torch.rand(4, generator=step_generator(seed, step + 1)))


def test_a_runs_step_generators_are_its_seeds_steps_apart_below_the_wrap() -> None:
    assert [step_generator(7, step).initial_seed() for step in (0, 1, 5)] == [7_000_021, 7_000_022, 7_000_026]


def test_evaluation_mode_gives_every_module_its_own_mode_back_even_after_an_error():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.BatchNorm1d(2))
    model[1].eval()  # a mixed model: dropout off, the rest training
    with pytest.raises(RuntimeError, match="stop"), evaluation_mode(model):
        assert not any(module.training for module in model.modules())
        raise RuntimeError("stop")
    assert [module.training for module in model.modules()] == [True, True, False, True]
