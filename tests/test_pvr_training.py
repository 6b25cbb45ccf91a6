import pytest
import torch

from neurosym.training.classifier import (
    TrainConfig,
    accuracy,
    fit_classifier,
    learning_rate_factor,
)


def _data():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(40, 6, generator=generator)
    return inputs, (inputs[:, 0] > 0).long()


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def test_warmup_then_cosine_schedule():
    config = TrainConfig(steps=110, batch_size=4, warmup_steps=10)
    assert learning_rate_factor(0, config) == pytest.approx(0.1)
    assert learning_rate_factor(9, config) == pytest.approx(1.0)
    assert learning_rate_factor(60, config) == pytest.approx(0.5)
    assert learning_rate_factor(110, config) == pytest.approx(0.0)
    assert learning_rate_factor(50, TrainConfig(steps=110, batch_size=4, schedule="constant")) == 1.0


def test_fit_learns_and_resumes_exactly_after_an_interruption(tmp_path):
    inputs, labels = _data()
    config = TrainConfig(steps=30, batch_size=8, lr=0.1, checkpoint_every=10, warmup_steps=3)
    straight = _model()
    result = fit_classifier(straight, inputs, labels, config, torch.device("cpu"), progress=False)
    assert result["steps"] == 30 and accuracy(straight, inputs, labels, torch.device("cpu")) > 0.9

    calls = {"n": 0}

    def crash_at_step_25(batch):
        calls["n"] += 1
        if calls["n"] == 26:
            raise KeyboardInterrupt
        return batch

    path = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        fit_classifier(_model(), inputs, labels, config, torch.device("cpu"), crash_at_step_25, path, progress=False)
    resumed = _model()
    fit_classifier(resumed, inputs, labels, config, torch.device("cpu"), checkpoint=path, progress=False)
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.allclose(a, b, atol=1e-6)


def test_bad_configurations_are_named(tmp_path):
    with pytest.raises(ValueError, match="unknown optimizer"):
        TrainConfig(steps=1, batch_size=1, optimizer="lbfgs")
    with pytest.raises(ValueError, match="positive"):
        TrainConfig(steps=0, batch_size=1)
    inputs, labels = _data()
    with pytest.raises(ValueError, match="as many labels"):
        fit_classifier(_model(), inputs, labels[:5], TrainConfig(steps=1, batch_size=2), torch.device("cpu"))
    path = tmp_path / "run.pt"
    fit_classifier(_model(), inputs, labels, TrainConfig(steps=2, batch_size=2), torch.device("cpu"), checkpoint=path)
    with pytest.raises(ValueError, match="another configuration"):
        fit_classifier(_model(), inputs, labels, TrainConfig(steps=3, batch_size=2), torch.device("cpu"), checkpoint=path)
