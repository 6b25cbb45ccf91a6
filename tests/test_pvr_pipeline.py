import numpy as np
import pytest
import torch
from pvr_fakes import write_fake_mnist

from neurosym.data.mnist import load_mnist
from neurosym.data.pvr import (
    DigitBank,
    VisualPVR,
    block_holdout_masks,
    block_rule,
    sequential_rule,
)
from neurosym.pipelines.pvr import CellLayout, NeuroSymbolicPVR, train_digit_reader
from neurosym.training import loop
from neurosym.training.loop import TrainConfig
from neurosym.training.stopping import TIME_LIMIT, TrainingInterrupted


@pytest.fixture(scope="module")
def banks(tmp_path_factory):
    mnist = load_mnist(write_fake_mnist(tmp_path_factory.mktemp("mnist") / "mnist.pkl.gz"))
    return DigitBank.from_mnist(mnist, "train"), DigitBank.from_mnist(mnist, "test")


@pytest.fixture(scope="module")
def reader(banks):
    config = TrainConfig(max_steps=100, batch_size=32, optimizer="adam", lr=3e-3, clip_norm=None)
    trained = train_digit_reader(
        banks[0], cell=28, device=torch.device("cpu"), examples=2000, config=config, width=8, progress=False
    )
    return trained


def test_neuro_symbolic_model_recovers_the_block_rule_and_is_exact_under_holdout(banks, reader):
    train_bank, test_bank = banks
    rule = block_rule()
    masks = block_holdout_masks()
    rng = np.random.default_rng(0)
    images, _, labels = VisualPVR(train_bank, rule, block=28, allowed=masks["train"]).sample(300, rng)
    model = NeuroSymbolicPVR(reader, CellLayout("block", grid=2, cell=28), torch.device("cpu"))
    found = model.fit(images, labels, complexities=[0, 1])
    assert found.rule.pointer_table == rule.pointer_table and found.rule.pointer_position == 0
    assert found.agreement > 0.95
    for split in ("holdout", "dshift"):
        images, _, labels = VisualPVR(test_bank, rule, block=28, allowed=masks[split]).sample(300, rng)
        assert (model.predict(images) == labels).mean() > 0.95


def test_neuro_symbolic_model_on_sequences_with_a_window(banks, reader):
    rule = sequential_rule(length=6, complexity=1, aggregation="max")
    rng = np.random.default_rng(1)
    images, _, labels = VisualPVR(banks[0], rule, style="sequential").sample(300, rng)
    model = NeuroSymbolicPVR(reader, CellLayout("sequential", cell=28), torch.device("cpu"))
    found = model.fit(images, labels)
    assert (found.rule.complexity, found.rule.aggregation) == (1, "max") and found.agreement == 1.0


def test_layout_and_unfitted_model_errors(reader):
    with pytest.raises(ValueError, match="block images of size"):
        CellLayout("block", 2, 40).split(np.zeros((1, 64, 64)))
    with pytest.raises(ValueError, match="style must be"):
        CellLayout("ring", 2, 40).split(np.zeros((1, 80, 80)))
    with pytest.raises(RuntimeError, match="call fit"):
        NeuroSymbolicPVR(reader, CellLayout(), torch.device("cpu")).predict(np.zeros((1, 80, 80), dtype=np.uint8))


def test_digit_reader_training_stops_at_its_time_limit_and_resumes_to_the_same_weights(banks, tmp_path, monkeypatch):
    config = TrainConfig(max_steps=6, batch_size=16, optimizer="adam", lr=3e-3, clip_norm=None)
    common = dict(cell=28, device=torch.device("cpu"), examples=96, config=config, width=4, progress=False)
    straight = train_digit_reader(banks[0], **common)
    with pytest.raises(TrainingInterrupted) as stop:
        train_digit_reader(banks[0], **common, checkpoint=tmp_path / "reader.pt", time_limit=0)
    assert (stop.value.step, stop.value.reason) == (1, TIME_LIMIT) and (tmp_path / "reader.pt").exists()
    batches, move = [], loop.move_to

    def counting(batch, device):
        if not isinstance(batch, torch.Tensor):  # the step's batch, not the tensors inside it
            batches.append(1)
        return move(batch, device)

    monkeypatch.setattr(loop, "move_to", counting)
    resumed = train_digit_reader(banks[0], **common, checkpoint=tmp_path / "reader.pt")
    assert len(batches) == 5  # steps 2 to 6: the first came from the checkpoint
    for name, value in straight.state_dict().items():
        torch.testing.assert_close(resumed.state_dict()[name], value, rtol=0, atol=0)
