"""Adaptation to a new writer as a library call: what it draws, trains, checkpoints and refuses."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hint_banks import prototype_bank
from hint_pipelines import TINY_TRAINING, short_training_records, tiny_pipeline

from neurosym.perception.routed import RoutedReader
from neurosym.pipelines import AdaptConfig, adapt_to_writer, evaluate_pipeline, train_pipeline
from neurosym.pipelines.adapt import STAGE_CHECKPOINTS
from neurosym.pipelines.windows import WindowSource
from neurosym.training.checkpoint import CheckpointMismatch
from neurosym.training.stopping import TrainingInterrupted

CPU = torch.device("cpu")


def test_adaptation_reads_the_new_writer_better_and_routes_between_the_two_readers(tmp_path):
    records, first, new = short_training_records(), prototype_bank(), prototype_bank(seed=1)
    pipeline = tiny_pipeline()
    train_pipeline(pipeline, WindowSource(records, first, "train"), TINY_TRAINING, CPU)
    new_test = WindowSource(records[:80], new, "test")
    before = evaluate_pipeline(pipeline, new_test, CPU)["symbol"]
    trained = {name: tensor.clone() for name, tensor in pipeline.classifier.state_dict().items()}
    adapt = AdaptConfig(examples=60, replay=30, steps=40, refit_steps=3, route_steps=2, seed=1)
    done = adapt_to_writer(pipeline, records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)
    assert (done.examples, done.replayed, done.learning_rate) == (60, 30, TINY_TRAINING.learning_rate)
    assert {name for name in STAGE_CHECKPOINTS.values()} <= {path.name for path in tmp_path.iterdir()}
    assert isinstance(pipeline.classifier, RoutedReader)
    first_reader, adapted = pipeline.classifier.readers
    assert all(torch.equal(first_reader.state_dict()[name], tensor) for name, tensor in trained.items())  # kept as trained
    assert not all(torch.equal(adapted.state_dict()[name], tensor) for name, tensor in trained.items())
    assert evaluate_pipeline(pipeline, new_test, CPU)["symbol"] > before
    again = tiny_pipeline()
    train_pipeline(again, WindowSource(records, first, "train"), TINY_TRAINING, CPU)
    routed_again = adapt_to_writer(again, records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)  # every stage resumes
    assert [len(s) for s in routed_again.sources.values()] == [len(s) for s in done.sources.values()]
    for name, tensor in pipeline.classifier.state_dict().items():
        assert torch.equal(again.classifier.state_dict()[name], tensor), name
    with pytest.raises(ValueError, match="fitted to other labelled windows"):  # unrouted, the refit fits both banks
        as_trained = tiny_pipeline()
        as_trained.classifier.load_state_dict(trained)  # (the reader the finished adaptation adapted)
        adapt_to_writer(
            as_trained, records, new, first, TINY_TRAINING, AdaptConfig(60, 30, 40, refit_steps=3, seed=1), CPU, tmp_path
        )


def test_an_adaptation_of_another_trained_reader_is_refused_not_resumed(tmp_path):
    records, first, new = short_training_records(), prototype_bank(), prototype_bank(seed=1)
    adapt = AdaptConfig(examples=20, replay=10, steps=2, refit_steps=1, seed=1)
    adapt_to_writer(tiny_pipeline(0), records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)
    retrained = tiny_pipeline(1)  # the main reader trained anew after the adaptation had finished
    kept = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    message = (r"adapt_checkpoint.pt was written for another model or data \(trained_reader differ\): trained_reader "
               r"'[0-9a-f]{16}' there, '[0-9a-f]{16}' now; it adapted another trained reader .*: remove it and "
               "refit_checkpoint.pt beside it to adapt this one")  # fmt: skip
    with pytest.raises(CheckpointMismatch, match=message):  # (was: the old reader's adaptation resumed, as finished)
        adapt_to_writer(retrained, records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == kept  # refused before any stage ran
    saved = torch.load(tmp_path / "adapt_checkpoint.pt", weights_only=False)
    del saved["setup"]["trained_reader"]  # as written before the digest was kept: whose reader it adapted is unknown
    torch.save(saved, tmp_path / "adapt_checkpoint.pt")
    with pytest.raises(CheckpointMismatch, match="trained_reader None there, .* now; it adapted a reader it kept no digest of"):
        adapt_to_writer(tiny_pipeline(0), records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)
    for name in ("adapt_checkpoint.pt", "refit_checkpoint.pt"):
        (tmp_path / name).unlink()
    adapt_to_writer(retrained, records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)  # adapted anew
    adapt_to_writer(tiny_pipeline(1), records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)  # and resumed as adapted


@pytest.mark.parametrize(
    ("options", "message"),
    [({"examples": 0}, "examples must be an int of at least 1, got 0"), ({"replay": 0}, "replay must be an int of at least 1"),
     ({"refit_steps": -1}, "refit_steps must be an int of at least 0, got -1"),
     ({"distill": float("nan")}, "distill must be a finite number at least 0, got nan"),
     ({"learning_rate": 0.0}, "learning_rate must be a finite number above 0, got 0.0"),
     ({"learning_rate": float("inf")}, "learning_rate must be a finite number above 0, got inf"),  # was accepted
     ({"examples": 2.5}, "examples must be an int of at least 1, got 2.5"), ({"refit_steps": 1.5}, "refit_steps must be an int"),
     ({"steps": True}, "steps must be an int of at least 1, got True"),  # was accepted, as one step
     ({"seed": -1}, "seed must be an int of at least 0, got -1"),
     ({"router_backbone": "resnet"}, r"unknown router_backbone 'resnet': choose one of \('small', 'resnet18'\)")],
)  # fmt: skip
def test_adapt_config_refuses_bad_values(options, message):
    with pytest.raises(ValueError, match=message):
        AdaptConfig(**options)


def test_adaptation_refuses_expressions_it_cannot_feed_every_stage_before_training(tmp_path):
    records, first, new = short_training_records()[:40], prototype_bank(), prototype_bank(seed=1)
    with pytest.raises(ValueError, match="adapt_to_writer needs at least one expression"):
        adapt_to_writer(tiny_pipeline(), [], new, first, TINY_TRAINING, AdaptConfig(5, refit_steps=0), CPU, tmp_path)
    for stages in ({"refit_steps": 3}, {"distill": 1.0, "refit_steps": 0}, {"distill": 0.0, "refit_steps": 0, "route_steps": 2}):
        with pytest.raises(ValueError, match="40 expressions leave none to replay after the 40 of the new writer"):
            # was a refit or routing failure after the whole adaptation, or silently no distillation
            adapt_to_writer(tiny_pipeline(), records, new, first, TINY_TRAINING, AdaptConfig(40, **stages), CPU, tmp_path)
    assert not any(tmp_path.iterdir())  # refused before any stage ran


def test_the_first_writers_labeller_decodes_as_the_pipeline_does(tmp_path, monkeypatch):
    import neurosym.pipelines.adapt as adapt_module
    from neurosym.pipelines.pipeline import HintPipeline

    seen: list[bool] = []
    labelled = adapt_module.abduced_windows

    def spied(labeller, *args, **kwargs):
        seen.append(labeller.minimal_brackets)
        return labelled(labeller, *args, **kwargs)

    monkeypatch.setattr(adapt_module, "abduced_windows", spied)
    records, first, new = short_training_records(), prototype_bank(), prototype_bank(seed=1)
    pipeline = HintPipeline(tiny_pipeline().classifier, minimal_brackets=False)
    adapt = AdaptConfig(examples=20, replay=10, steps=2, distill=0.0, refit_steps=1, seed=1)
    adapt_to_writer(pipeline, records, new, first, TINY_TRAINING, adapt, CPU, tmp_path)
    assert seen == [False, False]  # the first writer's labeller decoded with minimal brackets (True)


def test_a_time_limit_stops_each_stage_at_its_checkpoint_and_the_same_call_continues(tmp_path):
    records, first, new = short_training_records(), prototype_bank(), prototype_bank(seed=1)
    adapt = AdaptConfig(examples=20, replay=10, steps=3, refit_steps=3, route_steps=3, seed=1)
    stopped: list[tuple[str, int]] = []
    while True:  # no time left: each call takes one step, then checkpoints and stops (was: every stage to its end)
        pipeline = tiny_pipeline()
        try:
            adapt_to_writer(pipeline, records, new, first, TINY_TRAINING, adapt, CPU, tmp_path, time_limit=0.0)
            break
        except TrainingInterrupted as stop:
            assert stop.checkpoint is not None and torch.load(stop.checkpoint, weights_only=False)["step"] == stop.step
            stopped.append((Path(stop.checkpoint).name, stop.step))
    names = [STAGE_CHECKPOINTS[stage] for stage in ("adapt", "refit", "route")]
    assert stopped == [(name, step) for name in names for step in (1, 2)]  # each stage's last step ends it, not a stop
    assert isinstance(pipeline.classifier, RoutedReader)
