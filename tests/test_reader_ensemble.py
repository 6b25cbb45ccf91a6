"""ReaderEnsemble: the log of its members' mean probability; readers_from_checkpoints: every bad file named."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.perception.ensemble import ReaderEnsemble, readers_from_checkpoints
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.training.checkpoint import save_checkpoint

VOCABULARY = list("0123456789+-*/()")


def reader(seed: int, width: int = 4) -> SymbolClassifier:
    torch.manual_seed(seed)
    return SymbolClassifier(VOCABULARY, features=8, width=width).eval()


@settings(max_examples=10, deadline=None)
@given(members=st.integers(1, 4), seed=st.integers(0, 1000))
def test_ensemble_reads_the_log_of_its_members_mean_probability(members, seed):
    readers = [reader(seed + k) for k in range(members)]
    windows = torch.randint(0, 256, (5, 32, 32), dtype=torch.uint8)
    with torch.no_grad():
        mean = torch.stack([r(windows).exp() for r in readers]).mean(dim=0)
        read = ReaderEnsemble(readers).eval()(windows)
    assert read.shape == (5, len(VOCABULARY))
    torch.testing.assert_close(read, mean.log(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(read.exp().sum(dim=-1), torch.ones(5))


def test_a_trained_ensemble_reads_as_the_mixture_and_trains_each_member_as_if_alone():
    windows, labels = torch.randint(0, 256, (6, 32, 32), dtype=torch.uint8), torch.randint(0, len(VOCABULARY), (6,))
    together = ReaderEnsemble([reader(1).train(), reader(2).train()])
    apart = [reader(1).train(), reader(2).train()]
    read = together(windows)
    torch.nn.functional.nll_loss(read, labels).backward()
    sum(torch.nn.functional.nll_loss(member(windows), labels) for member in apart).div(2).backward()
    with torch.no_grad():
        mixture = torch.stack([member(windows).exp() for member in apart]).mean(dim=0).log()
    torch.testing.assert_close(read.detach(), mixture, rtol=1e-5, atol=1e-5)  # batch norms in training mode alike
    for trained, alone in zip(together.readers, apart):
        for a, b in zip(trained.parameters(), alone.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-6)


class RulingOut(torch.nn.Module):
    """A reader of trainable scores that rules the symbols of ``ruled_out [V]`` (bool) out: log-probability ``-inf``."""

    def __init__(self, scores: list[float], ruled_out: list[bool]):
        super().__init__()
        self.vocabulary = [str(k) for k in range(len(scores))]
        self.scores, self.ruled_out = torch.nn.Parameter(torch.tensor(scores)), torch.tensor(ruled_out)

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        return self.scores.masked_fill(self.ruled_out, -torch.inf).log_softmax(-1).expand(len(windows), -1)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 3).flatmap(lambda k: st.lists(  # k members over 4 symbols, each ruling some (not all) out
    st.tuples(st.lists(st.floats(-3, 3), min_size=4, max_size=4),
              st.lists(st.booleans(), min_size=4, max_size=4).filter(lambda out: not all(out))),
    min_size=k, max_size=k)))  # fmt: skip
def test_a_symbol_one_member_rules_out_trains_as_it_reads(members):
    ensemble = ReaderEnsemble([RulingOut(scores, out) for scores, out in members])
    windows = torch.zeros(2, 32, 32)
    with torch.no_grad():
        expected = ensemble(windows)
    read = ensemble(windows)  # with gradients: was NaN in every column some member ruled out
    torch.testing.assert_close(read.detach(), expected, rtol=1e-5, atol=1e-6)
    read[torch.isfinite(read)].sum().backward()
    for member in ensemble.readers:
        assert torch.isfinite(member.scores.grad).all()


def test_ensemble_needs_readers_of_one_vocabulary():
    with pytest.raises(ValueError, match="at least one reader"):
        ReaderEnsemble([])
    other = SymbolClassifier(VOCABULARY[:-1], features=8, width=4)
    with pytest.raises(ValueError, match="share one vocabulary"):
        ReaderEnsemble([reader(0), other])
    with pytest.raises(TypeError, match="must be readers"):
        ReaderEnsemble([reader(0), torch.nn.Linear(2, 2)])
    with pytest.raises(
        TypeError, match=r"An ensemble calls its reader as reader\(windows, groups\) .* OneArgument's forward takes"
    ):
        ReaderEnsemble([reader(0), OneArgument()])  # (accepted, and failed at the first read inside the ensemble)


class OneArgument(torch.nn.Module):
    """A reader whose forward takes no ``groups``."""

    vocabulary = VOCABULARY

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(windows), len(VOCABULARY))


def test_members_of_other_window_sides_are_refused_when_ensembled_and_an_ensemble_states_its_side():
    small = SymbolClassifier(VOCABULARY, features=8, width=4, window=28)
    with pytest.raises(ValueError, match=r"the readers of an ensemble must read windows of one side, got sides \[28, 32\]"):
        ReaderEnsemble([reader(0), small])
    inner = ReaderEnsemble([reader(0), reader(1)])
    assert inner.window == 32 and ReaderEnsemble([inner, reader(2)]).window == 32
    with pytest.raises(ValueError, match=r"got sides \[28, 32\]"):  # an ensemble of ensembles too
        ReaderEnsemble([inner, ReaderEnsemble([small])])
    assert ReaderEnsemble([RulingOut([0.0, 0.0], [False, False])]).window is None  # a reader that states no side


def test_as_reader_names_a_module_without_a_vocabulary():
    from neurosym.perception.reader import as_reader

    one = reader(0)
    assert as_reader(one) is one
    with pytest.raises(TypeError, match="Linear has none"):
        as_reader(torch.nn.Linear(2, 2))


def test_readers_from_checkpoints_loads_each_runs_weights(tmp_path):
    saved = [reader(seed) for seed in (1, 2)]
    paths = [save_checkpoint({"config": {"steps": 3}, "step": 3, "model": r.state_dict()}, tmp_path / f"{i}.pt")
             for i, r in enumerate(saved)]  # fmt: skip
    ensemble = readers_from_checkpoints(paths, lambda: reader(99))
    windows = torch.rand(3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(ensemble(windows), ReaderEnsemble(saved)(windows))
    assert not ensemble.readers[0].training


def test_runs_that_each_trained_an_ensemble_read_as_the_mixture_of_every_member(tmp_path):
    runs = [ReaderEnsemble([reader(seed), reader(seed + 10)]) for seed in (1, 2)]
    paths = [save_checkpoint({"config": {"steps": 3}, "step": 3, "model": r.state_dict()}, tmp_path / f"{i}.pt")
             for i, r in enumerate(runs)]  # fmt: skip
    ensemble = readers_from_checkpoints(paths, lambda: ReaderEnsemble([reader(99), reader(98)]))
    every_member = ReaderEnsemble([member for run in runs for member in run.readers])  # equal members per run
    windows = torch.rand(3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(ensemble(windows), every_member(windows))


def test_readers_from_checkpoints_names_each_bad_file(tmp_path):
    make = lambda: reader(0)
    with pytest.raises(ValueError, match=f"no checkpoint at {tmp_path / 'absent.pt'}"):
        readers_from_checkpoints([tmp_path / "absent.pt"], make)
    (tmp_path / "torn.pt").write_bytes(b"PK\x03\x04 torn")
    with pytest.raises(ValueError, match="torn.pt is not a readable checkpoint"):
        readers_from_checkpoints([tmp_path / "torn.pt"], make)
    save_checkpoint({"weights": {}}, tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="foreign.pt is not a training checkpoint"):
        readers_from_checkpoints([tmp_path / "foreign.pt"], make)
    state = reader(0).state_dict()
    save_checkpoint({"config": {"steps": 10}, "step": 4, "model": state}, tmp_path / "unfinished.pt")
    with pytest.raises(ValueError, match="unfinished.pt holds a reader trained for 4 of 10 steps"):
        readers_from_checkpoints([tmp_path / "unfinished.pt"], make)
    save_checkpoint({"config": {"steps": 10}, "model": state}, tmp_path / "unstarted.pt")  # (no step entry)
    with pytest.raises(ValueError, match="unstarted.pt holds a reader trained for 0 of 10 steps"):
        readers_from_checkpoints([tmp_path / "unstarted.pt"], make)
    save_checkpoint({"config": [10], "step": 4, "model": state}, tmp_path / "listed.pt")  # (was an AttributeError)
    with pytest.raises(ValueError, match="listed.pt is not a checkpoint of a reader's training: its config is a list"):
        readers_from_checkpoints([tmp_path / "listed.pt"], make)
    save_checkpoint({"config": {"steps": 1}, "step": 1, "model": reader(0, width=8).state_dict()}, tmp_path / "wide.pt")
    with pytest.raises(ValueError, match="wide.pt holds another reader"):
        readers_from_checkpoints([tmp_path / "wide.pt"], make)


def saved_reader(path, model: torch.nn.Module, **entries) -> object:
    """A finished training checkpoint at ``path`` holding ``model``'s weights and ``entries``."""
    return save_checkpoint({"config": {"steps": 1}, "step": 1, "model": model.state_dict(), **entries}, path)


def test_an_ensemble_read_from_checkpoints_is_in_evaluation_mode_as_its_members_stay(tmp_path):
    from neurosym.perception.batch_statistics import batch_statistics_of

    members = []
    for seed in (1, 2):
        trained = reader(seed).train()
        with torch.no_grad():  # running statistics of its own
            trained(torch.rand(16, 32, 32) * 0.5)
        members.append(saved_reader(tmp_path / f"{seed}.pt", trained))
    ensemble = readers_from_checkpoints(members, lambda: reader(99))
    assert not ensemble.training and not any(member.training for member in ensemble.readers)
    windows = torch.rand(4, 32, 32)
    with torch.no_grad():
        before = ensemble(windows)
    with batch_statistics_of(ensemble, [torch.rand(8, 32, 32)]):  # restores the mode it found, on every member
        pass
    assert not any(member.training for member in ensemble.readers)
    with torch.no_grad():
        torch.testing.assert_close(ensemble(windows), before)


def test_readers_from_checkpoints_refuses_one_path_for_a_sequence_of_them(tmp_path):
    path = saved_reader(tmp_path / "one.pt", reader(0))
    for one in (path, str(path)):
        with pytest.raises(TypeError, match=re.escape(f"got the one path '{path}': pass ['{path}']")):
            readers_from_checkpoints(one, lambda: reader(0))


def test_a_checkpoint_recording_another_vocabulary_is_refused(tmp_path):
    from neurosym.training.checkpoint import CheckpointMismatch

    other = VOCABULARY[::-1]  # as many symbols, each column another one
    path = saved_reader(tmp_path / "other.pt", SymbolClassifier(other, features=8, width=4), vocabulary=other)
    with pytest.raises(CheckpointMismatch, match=re.escape("other.pt holds a reader of another vocabulary: [')', '(', ")):
        readers_from_checkpoints([path], lambda: reader(0))
    same = saved_reader(tmp_path / "same.pt", reader(1), vocabulary=VOCABULARY)
    assert readers_from_checkpoints([same], lambda: reader(0)).vocabulary == VOCABULARY


def test_a_checkpoint_recording_other_values_than_asked_is_refused_naming_each(tmp_path):
    from neurosym.training.checkpoint import CheckpointMismatch

    setup = {"stroke_width": 2, "bank": "default", "abduction_changes": 2}
    path = saved_reader(tmp_path / "member.pt", reader(1), setup=setup, config={"steps": 1, "seed": 1})
    asked = {"setup": {"stroke_width": 2, "bank": "default"}, "config": {"seed": 1}}  # abduction_changes: not asked
    assert readers_from_checkpoints([path], lambda: reader(0), asked).readers[0].state_dict().keys()
    other = {"setup": {"stroke_width": 3, "bank": "default"}, "config": {"seed": 0}}
    with pytest.raises(  # (advised to remove the checkpoint, as a refused resume is)
        CheckpointMismatch, match="config.seed 1 there, 0 now; setup.stroke_width 2 there, 3 now; read it under the values"
    ):
        readers_from_checkpoints([path], lambda: reader(0), other)
    unrecorded = saved_reader(tmp_path / "older.pt", reader(1))  # records no setup: nothing to vouch for it
    with pytest.raises(CheckpointMismatch, match="setup.stroke_width None there, 2 now"):
        readers_from_checkpoints([unrecorded], lambda: reader(0), asked)
