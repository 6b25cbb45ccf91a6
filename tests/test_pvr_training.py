import copy
import re

import pytest
import torch

from neurosym.training import load_checkpoint
from neurosym.training.classifier import RowIndices, accuracy, fit_classifier, predict
from neurosym.training.loop import TrainConfig


def _data():
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(40, 6, generator=generator)
    return inputs, (inputs[:, 0] > 0).long()


def _model(seed: int = 0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _config(**changes) -> TrainConfig:
    """SGD with cosine decay after a warm-up of a tenth of ``max_steps`` (30), which ``changes`` may change."""
    max_steps = changes.pop("max_steps", 30)
    settings = dict(
        max_steps=max_steps,
        batch_size=8,
        optimizer="sgd",
        lr=0.1,
        schedule="cosine",
        warmup_steps=max_steps // 10,
        clip_norm=None,
        eval_every=10,
        progress=False,
    )
    return TrainConfig(**{**settings, **changes})


def test_fit_learns_and_resumes_exactly_after_an_interruption(tmp_path):
    inputs, labels = _data()
    straight = _model()
    result = fit_classifier(straight, inputs, labels, _config(), torch.device("cpu"))
    assert result.steps == 30 and [entry["step"] for entry in result.history] == [10, 20, 30]
    assert accuracy(straight, inputs, labels, torch.device("cpu")) > 0.9

    calls = {"n": 0}

    def crash_at_step_26(batch):
        calls["n"] += 1
        if calls["n"] == 26:
            raise KeyboardInterrupt
        return batch

    path = tmp_path / "run.pt"
    with pytest.raises(KeyboardInterrupt):
        fit_classifier(_model(), inputs, labels, _config(checkpoint=path), torch.device("cpu"), crash_at_step_26)
    before = load_checkpoint(path)["seconds"]  # of the interrupted call's first 20 steps
    resumed, steps = _model(seed=1), []  # other weights: it starts from the step-20 checkpoint

    def count(batch):
        steps.append(1)
        return batch

    result = fit_classifier(resumed, inputs, labels, _config(checkpoint=path, progress=True), torch.device("cpu"), count)
    assert result.steps == 30 and [entry["step"] for entry in result.history] == [10, 20, 30] and len(steps) == 10
    assert before > 0 and result.seconds == pytest.approx(before + result.seconds_this_call, abs=0.05)
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert torch.equal(a, b)


def test_prepare_runs_on_every_batch_and_batches_cover_the_data(tmp_path):
    inputs, labels = _data()
    seen = []

    def record(batch):
        seen.append(batch.clone())
        return batch

    fit_classifier(_model(), inputs, labels, _config(max_steps=5), torch.device("cpu"), record)
    assert len(seen) == 5 and all(batch.shape == (8, 6) for batch in seen)
    epoch = torch.cat(seen)  # 5 batches of 8 = one epoch over the 40 rows, each row once
    assert torch.equal(torch.sort(epoch[:, 0]).values, torch.sort(inputs[:, 0]).values)
    assert RowIndices(3)[2] == 2 and len(RowIndices(3)) == 3


def test_predict_returns_classes_in_input_order():
    model = torch.nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        model.weight.copy_(torch.eye(2))
    inputs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    assert predict(model, inputs, torch.device("cpu"), batch_size=2).tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match="empty set"):
        accuracy(model, inputs[:0], torch.zeros(0, dtype=torch.long), torch.device("cpu"))


def test_bad_inputs_and_foreign_checkpoints_are_named(tmp_path):
    inputs, labels = _data()
    with pytest.raises(ValueError, match="as many labels"):
        fit_classifier(_model(), inputs, labels[:5], _config(max_steps=1), torch.device("cpu"))
    path = tmp_path / "run.pt"
    fit_classifier(_model(), inputs, labels, _config(max_steps=2, checkpoint=path), torch.device("cpu"))
    with pytest.raises(ValueError, match="another configuration"):
        fit_classifier(_model(), inputs, labels, _config(max_steps=3, checkpoint=path), torch.device("cpu"))


def test_a_fit_resumes_under_another_sync_every(tmp_path):
    """How often the loop reads the loss on the host changes no step: a resume under another ``sync_every`` was refused
    as a checkpoint of another configuration."""
    inputs, labels = _data()
    path = tmp_path / "run.pt"
    fit_classifier(_model(), inputs, labels, _config(max_steps=2, checkpoint=path), torch.device("cpu"))
    again = fit_classifier(_model(), inputs, labels, _config(max_steps=2, checkpoint=path, sync_every=5), torch.device("cpu"))
    assert again.steps == 2 and again.steps_this_call == 0


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_labels_of_any_integer_dtype_train_as_int64_ones_do(dtype):
    """int32 labels failed inside cross_entropy."""
    inputs, labels = _data()
    reference, narrow = _model(), _model()
    fit_classifier(reference, inputs, labels, _config(max_steps=5), torch.device("cpu"))
    fit_classifier(narrow, inputs, labels.to(dtype), _config(max_steps=5), torch.device("cpu"))
    assert all(torch.equal(a, b) for a, b in zip(reference.parameters(), narrow.parameters()))


@pytest.mark.parametrize("labels", [torch.zeros(40), torch.zeros(40, dtype=torch.bool), torch.zeros(40, 2, dtype=torch.long)])
def test_labels_that_are_no_class_indices_are_named(labels):
    with pytest.raises(ValueError, match=r"labels must be class indices: an integer tensor \[N\]"):
        fit_classifier(_model(), _data()[0], labels, _config(max_steps=1), torch.device("cpu"))


def test_a_float64_model_learns_from_its_float64_cross_entropy():
    inputs, labels = _data()
    inputs = inputs.double()
    torch.manual_seed(0)
    model = torch.nn.Linear(6, 2).double()
    expected = copy.deepcopy(model)
    loss = torch.nn.functional.cross_entropy(expected(inputs), labels)
    loss.backward()
    with torch.no_grad():
        for parameter in expected.parameters():
            parameter -= 0.1 * parameter.grad
    config = _config(max_steps=1, batch_size=len(labels), schedule="constant", warmup_steps=0, momentum=0.0)
    fit_classifier(model, inputs, labels, config, torch.device("cpu"))
    for trained, wanted in zip(model.parameters(), expected.parameters(), strict=True):
        assert trained.dtype == torch.float64
        torch.testing.assert_close(trained, wanted, rtol=0, atol=1e-14)  # (float32 logits: about 7e-10 off)


def test_predict_reads_in_evaluation_mode_and_each_module_keeps_its_mode():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Dropout(0.9), torch.nn.Linear(64, 5), torch.nn.Dropout(0.5))
    model.train()
    model[3].eval()  # a part its caller froze
    modes = [module.training for module in model.modules()]
    inputs = torch.randn(200, 8)
    calls = [predict(model, inputs, torch.device("cpu")) for _ in range(3)]
    assert all(torch.equal(classes, calls[0]) for classes in calls)  # (dropout on: other classes at every call)
    assert torch.equal(calls[0], model.eval()(inputs).argmax(-1))
    model.train()
    model[3].eval()
    predict(model, inputs, torch.device("cpu"))
    assert [module.training for module in model.modules()] == modes  # (was left in evaluation mode)


def test_accuracy_is_the_exact_fraction_of_right_predictions():
    inputs = torch.eye(3)  # the model predicts each row's class as its input's argmax: 0, 1, 2
    labels = torch.tensor([0, 0, 0])
    assert accuracy(torch.nn.Identity(), inputs, labels, torch.device("cpu")) == 1 / 3  # (float32: 0.3333333432674408)


@pytest.mark.parametrize("labels", [torch.tensor([[0], [1], [2]]), torch.tensor([0, 1]), torch.tensor(0)])
def test_accuracy_names_labels_that_are_not_one_per_input(labels):
    inputs = torch.eye(3)  # predicted 0, 1, 2: all right; labels [3, 1] were compared [3, 3], 3 of 9 pairs: 1/3
    shape = re.escape(str(list(labels.shape)))
    with pytest.raises(ValueError, match=rf"^labels must be one class per input, \[3\], got {shape}$"):
        accuracy(torch.nn.Identity(), inputs, labels, torch.device("cpu"))
    assert accuracy(torch.nn.Identity(), inputs, torch.tensor([0, 1, 2]), torch.device("cpu")) == 1.0


@pytest.mark.cuda
def test_predict_gives_the_model_back_on_its_device(accelerator):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    inputs = torch.randn(5, 4)
    assert torch.equal(predict(model, inputs, accelerator), model.eval()(inputs).argmax(-1))
    assert {tensor.device.type for tensor in [*model.parameters(), *model.buffers()]} == {"cpu"}  # (was left there)


def test_predict_refuses_a_model_spread_over_devices_and_leaves_it_there():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Linear(3, 2, device="meta"))
    with pytest.raises(ValueError, match=r"several devices \(cpu, meta\)"):  # (was gathered onto one)
        predict(model, torch.randn(5, 4), torch.device("cpu"))
    assert [layer.weight.device.type for layer in model] == ["cpu", "meta"]
