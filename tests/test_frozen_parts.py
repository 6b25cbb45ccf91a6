"""Every trainer keeps a part its caller left in evaluation mode there, step after step (a frozen backbone's batch
norms keep their running statistics), and trains a model handed over in evaluation mode as a whole in training mode."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from hint_pipelines import TINY_TRAINING, tiny_pipeline, tiny_problem
from test_reading_modes import _bits, _grammar_pipeline
from torch import nn

from neurosym.pipelines import Curriculum, PipelineConfig, train_grammar_pipeline
from neurosym.pipelines.trainer import fit_windows, train_pipeline
from neurosym.training import DistributedContext, TrainConfig, train
from neurosym.training.modes import modes_kept, training_modes

CPU = torch.device("cpu")


def _norms(model: nn.Module) -> list[nn.Module]:
    return [module for module in model.modules() if isinstance(module, nn.modules.batchnorm._BatchNorm)]


def _statistics(norm: nn.Module) -> list[torch.Tensor]:
    return [norm.running_mean.clone(), norm.running_var.clone()]


def _moved(before: list[torch.Tensor], norm: nn.Module) -> bool:
    return not all(torch.equal(a, b) for a, b in zip(before, _statistics(norm), strict=True))


def _frozen_first_norm(model: nn.Module) -> tuple[nn.Module, nn.Module, list[torch.Tensor], list[torch.Tensor]]:
    """Put ``model``'s first batch norm in evaluation mode; returns it, the last one (left training) and both's
    statistics."""
    norms = _norms(model)
    assert len(norms) >= 2
    norms[0].eval()
    return norms[0], norms[-1], _statistics(norms[0]), _statistics(norms[-1])


def _every_step_evaluates(model: nn.Module) -> float:
    model.eval()  # (an evaluate function of one's own, which leaves the model in evaluation mode)
    return 0.0


def _mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))


def _train_mlp(model: nn.Module) -> None:
    data = [(torch.randn(3), torch.randn(1)) for _ in range(32)]
    config = TrainConfig(max_steps=4, batch_size=8, lr=1e-2, eval_every=1)
    loss = lambda net, batch: nn.functional.mse_loss(net(batch[0]), batch[1])
    train(model, data, loss, config, DistributedContext(0, 1, 0, CPU), evaluate=_every_step_evaluates)


def test_train_keeps_a_part_left_in_evaluation_mode_there_also_after_an_evaluation_that_switched_everything():
    model = _mlp()
    frozen, trained, frozen_before, trained_before = _frozen_first_norm(model)
    _train_mlp(model)
    assert not _moved(frozen_before, frozen) and _moved(trained_before, trained)


def test_train_trains_a_model_handed_over_in_evaluation_mode_in_training_mode():
    model = _mlp().eval()
    norms = _norms(model)
    before = [_statistics(norm) for norm in norms]
    _train_mlp(model)
    assert all(_moved(statistics, norm) for statistics, norm in zip(before, norms, strict=True))


def test_training_modes_sets_the_modes_of_the_start_again():
    model = _mlp()
    model[1].eval()
    again = training_modes(model)
    model.train()
    again()
    assert [module.training for module in model.modules()] == [True, True, False, True, True, True, True]
    model.eval()
    again()
    assert not model[1].training and model[4].training and model.training


@pytest.mark.parametrize("trainer", ["grammar", "hint", "fit_windows"])
def test_the_pipelines_trainers_keep_a_frozen_part_of_the_reader_frozen(trainer):
    if trainer == "grammar":
        pipeline, source = _grammar_pipeline(), _bits(48, seed=0)
        reader = pipeline.reader
        frozen, trained, frozen_before, trained_before = _frozen_first_norm(reader)
        train_grammar_pipeline(pipeline, source, PipelineConfig(steps=3, batch_size=16, curriculum=Curriculum.none()), CPU)
    elif trainer == "hint":
        train_data, _ = tiny_problem()
        pipeline = tiny_pipeline()
        reader = pipeline.classifier
        frozen, trained, frozen_before, trained_before = _frozen_first_norm(reader)
        train_pipeline(pipeline, train_data, replace(TINY_TRAINING, steps=2), CPU)
    else:
        reader = _grammar_pipeline().reader
        frozen, trained, frozen_before, trained_before = _frozen_first_norm(reader)
        windows, labels = torch.rand(16, 28, 28), torch.randint(0, 2, (16,))
        fit_windows(reader, lambda index: (windows, labels), PipelineConfig(steps=2, batch_size=16), CPU)
    assert not frozen.training and reader.training
    assert not _moved(frozen_before, frozen) and _moved(trained_before, trained)


def test_the_modes_kept_are_every_modules_own_whatever_the_nesting():
    torch.manual_seed(0)
    model = nn.Sequential(_mlp(), nn.Sequential(_mlp(), nn.Dropout()), nn.ReLU())
    for draw in range(20):
        modes = (torch.rand(len(list(model.modules()))) < 0.5).tolist()
        for module, training in zip(model.modules(), modes, strict=True):
            module.training = training
        again = training_modes(model) if modes[0] else None
        with modes_kept(model):
            model.eval() if draw % 2 else model.train()
        assert [module.training for module in model.modules()] == modes
        if again is not None:
            model.train(draw % 2 == 0)
            again()
            assert [module.training for module in model.modules()] == modes
