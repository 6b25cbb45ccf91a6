"""Refitting a reader to abduced readings: the windows and labels taken, the fit, its resumption and bad input."""

import copy
import itertools

import numpy as np
import pytest
import torch
from hint_pipelines import TINY_TRAINING, check_reads_in_evaluation_mode_and_keeps_training_mode, tiny_pipeline, tiny_problem
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.pipelines.refit import LabelledWindows, RefitConfig, abduced_windows, refit_reader
from neurosym.pipelines.routing import source_windows
from neurosym.pipelines.trainer import PipelineConfig, evaluate_pipeline, fit_windows, train_pipeline
from neurosym.pipelines.windows import ConcatWindows, WindowSource
from neurosym.semantics import BatchSolver
from neurosym.training import TrainingInterrupted, load_checkpoint

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def problem():
    return tiny_problem()


def _truth(source) -> LabelledWindows:
    """Every window of ``source`` with its true symbol (for fitting tests only)."""
    vocabulary = tiny_pipeline().classifier.vocabulary
    labels = torch.tensor([vocabulary.index(s) for record in source.records for s in record.expr])
    return LabelledWindows(source_windows(source, 0).windows, labels, len(source), 0)


def test_source_windows_are_every_window_of_the_source_labelled_with_where_they_came_from(problem):
    _, test = problem
    labelled = source_windows(test, 3)
    assert torch.equal(labelled.windows, torch.cat([test.windows(i) for i in range(len(test))]))
    assert labelled.labels.dtype == torch.long and labelled.labels.tolist() == [3] * sum(len(r.expr) for r in test.records)
    assert (labelled.expressions, labelled.left_out) == (len(test), 0)
    with pytest.raises(ValueError, match="source_windows needs at least one expression"):
        source_windows(WindowSource([], test.dataset.bank, "test"), 0)
    with pytest.raises(ValueError, match="label must be a class index, an int >= 0, got -1"):
        source_windows(test, -1)
    with pytest.raises(ValueError, match="label must be a class index, an int >= 0, got True"):  # was read as 1
        source_windows(test, True)


def test_abduced_windows_are_each_kept_expressions_windows_with_its_abduced_sentence(problem, monkeypatch):
    train, _ = problem
    pipeline = tiny_pipeline()
    records = train.records[:30]
    bank = train.dataset.bank
    source = ConcatWindows(WindowSource(records[:20], bank, "train"), WindowSource(records[20:], bank, "test"))
    order = iter(range(len(records)))

    def abduce(reading, targets):  # each expression's own sentence, every third one left unexplained
        picked = [next(order) for _ in targets]
        assert targets == [records[i].res for i in picked] and reading.log_probs.shape[0] == len(picked)
        return [None if i % 3 == 0 else records[i].expr for i in picked]

    monkeypatch.setattr(pipeline, "abduce", abduce)
    labelled = abduced_windows(pipeline, source, CPU, batch_size=7)
    kept = [i for i in range(len(records)) if i % 3]
    assert labelled.expressions == len(kept) and labelled.left_out == len(records) - len(kept)
    assert torch.equal(labelled.windows, torch.cat([source.windows(i) for i in kept]))
    vocabulary = pipeline.classifier.vocabulary
    assert [vocabulary[i] for i in labelled.labels] == [s for i in kept for s in records[i].expr]
    assert labelled.labels.dtype == torch.long and labelled.windows.dtype == torch.uint8


def test_abduced_windows_read_in_evaluation_mode_and_leave_the_reader_in_the_callers_mode(problem):
    train, _ = problem
    pipeline, source = tiny_pipeline(), WindowSource(train.records[:20], train.dataset.bank, "train")
    check_reads_in_evaluation_mode_and_keeps_training_mode(
        pipeline.classifier, lambda: abduced_windows(pipeline, source, CPU).labels.tolist()
    )


def test_a_trained_readers_abduced_labels_give_each_kept_expression_its_result(problem):
    train, _ = problem
    pipeline = tiny_pipeline()
    train_pipeline(pipeline, train, TINY_TRAINING, CPU, progress=False)
    whole = abduced_windows(pipeline, train, CPU)
    assert whole.expressions + whole.left_out == len(train) and whole.left_out < 0.1 * len(train)
    solver, vocabulary = BatchSolver(pipeline.table), pipeline.classifier.vocabulary
    sentences, results, agree = [], [], []
    for record in train.records[:60]:  # one expression at a time: its labels are its sentence
        one = abduced_windows(pipeline, WindowSource([record], train.dataset.bank, "train"), CPU)
        if one.expressions:
            sentences.append("".join(vocabulary[i] for i in one.labels))
            results.append(record.res)
            agree += [a == b for a, b in zip(sentences[-1], record.expr, strict=True)]
    assert len(sentences) > 50 and solver.solve(sentences) == results
    assert sum(agree) > 0.9 * len(agree)


def test_refit_learns_the_labels_and_a_resumed_refit_repeats_an_uninterrupted_one(problem, tmp_path):
    train, test = problem
    config = RefitConfig(steps=60, batch_size=64, learning_rate=3e-3, augment_shift=1, seed=2, checkpoint_every=25)
    straight = tiny_pipeline(seed=3)
    before = evaluate_pipeline(straight, test, CPU)["symbol"]
    history = refit_reader(straight.classifier, [_truth(train)], config, CPU, tmp_path / "straight.pt")
    assert len(history) == 60 and history[-1]["loss"] < history[0]["loss"]
    assert before < 0.3 and evaluate_pipeline(straight, test, CPU)["symbol"] > 0.9
    path, stops = tmp_path / "chunked.pt", []
    while True:
        chunked = tiny_pipeline(seed=99 if stops else 3)  # later calls: everything must come from the checkpoint
        try:
            chunks = refit_reader(chunked.classifier, [_truth(train)], config, CPU, path, time_limit=0.0)
            break
        except TrainingInterrupted as stop:
            stops.append(stop.step)
            assert load_checkpoint(path)["step"] == stop.step
    assert stops == list(range(1, 60))
    seconds = [h["seconds"] for h in chunks]  # the fit's time goes on counting across the sixty calls
    assert len(seconds) == 60 and all(0 < a < b for a, b in itertools.pairwise(seconds))
    for name, tensor in straight.classifier.state_dict().items():
        assert torch.equal(tensor, chunked.classifier.state_dict()[name]), name
    other = _truth(train)
    other.labels[0] = (other.labels[0] + 1) % len(chunked.classifier.vocabulary)  # one label differs
    with pytest.raises(ValueError, match="fitted to other labelled windows"):
        refit_reader(tiny_pipeline(seed=3).classifier, [other], config, CPU, path)


def test_a_refit_of_any_seed_runs(problem, tmp_path):
    train, _ = problem
    config = RefitConfig(steps=2, batch_size=8, augment_shift=1, seed=2**60)  # (its step seeds passed torch's 2**64)
    assert len(refit_reader(tiny_pipeline(seed=3).classifier, [_truth(train)], config, CPU, tmp_path / "r.pt")) == 2


def test_a_refused_refit_checkpoint_leaves_the_reader_and_the_random_generators_as_they_were(problem, tmp_path):
    _, test = problem
    path, config = tmp_path / "refit.pt", RefitConfig(steps=2, batch_size=8)
    refit_reader(tiny_pipeline(seed=1).classifier, [_truth(test)], config, CPU, path)
    reader = tiny_pipeline(seed=2).classifier
    weights, generator = copy.deepcopy(reader.state_dict()), torch.get_rng_state()
    with pytest.raises(ValueError, match="fitted to other labelled windows"):
        refit_reader(reader, [source_windows(test, 0)], config, CPU, path)
    # (was: the refused checkpoint's weights and generator states restored first, then refused)
    assert all(torch.equal(tensor, reader.state_dict()[name]) for name, tensor in weights.items())
    assert torch.equal(torch.get_rng_state(), generator)


def test_refit_refuses_bad_input(problem):
    train, _ = problem
    with pytest.raises(ValueError, match="at least one expression"):
        abduced_windows(tiny_pipeline(), WindowSource([], train.dataset.bank, "train"), CPU)
    reader = tiny_pipeline().classifier
    empty = LabelledWindows(torch.zeros(0, 32, 32, dtype=torch.uint8), torch.zeros(0, dtype=torch.long), 0, 3)
    with pytest.raises(ValueError, match="at least one labelled window"):
        refit_reader(reader, [empty], RefitConfig(steps=1), CPU)
    truth = _truth(train)
    foreign = LabelledWindows(truth.windows[:2], torch.tensor([0, len(reader.vocabulary)]), 1, 0)
    with pytest.raises(ValueError, match="outside the reader's 16 classes"):
        refit_reader(reader, [foreign], RefitConfig(steps=1), CPU)
    for label in (-1, -100):  # -100 was cross-entropy's ignored index: a NaN loss
        with pytest.raises(ValueError, match=rf"a label \({label}\) lies outside the reader's 16 classes"):
            refit_reader(reader, [LabelledWindows(truth.windows[:2], torch.tensor([0, label]), 1, 0)], RefitConfig(steps=1), CPU)
    with pytest.raises(ValueError, match=r"labels must be int64 \[5\], one per window, got torch.int64 \(4,\)"):
        LabelledWindows(truth.windows[:5], truth.labels[:4], 1, 0)  # was fitted with the windows and labels misaligned
    with pytest.raises(ValueError, match=r"labels must be int64 \[2\], one per window, got torch.int32"):
        LabelledWindows(truth.windows[:2], truth.labels[:2].int(), 1, 0)
    with pytest.raises(ValueError, match=r"truths must be int64 \[2\]"):
        LabelledWindows(truth.windows[:2], truth.labels[:2], 1, 0, truths=truth.labels[:3])
    with pytest.raises(ValueError, match="refit_reader needs at least one LabelledWindows"):
        refit_reader(reader, [], RefitConfig(steps=1), CPU)
    with pytest.raises(ValueError, match="batch_size must be positive, got 0"):
        abduced_windows(tiny_pipeline(), train, CPU, batch_size=0)
    for bad, match in (({"steps": 0}, "steps must be an int of at least 1, got 0"),
                       ({"augment_shift": -1}, "augment_shift must be an int of at least 0, got -1"),
                       ({"learning_rate": 0.0}, "learning_rate must be a finite number above 0, got 0.0"),
                       ({"schedule": "warm"}, "unknown schedule"), ({"steps": 2.5}, "steps must be an int"),
                       ({"learning_rate": float("inf")}, "learning_rate must be a finite number above 0, got inf"),
                       ({"seed": -1}, "seed must be an int of at least 0, got -1"),
                       # were accepted: a seed or shift of 2.5 failed at the first batch, deep in torch; True as 1
                       ({"seed": 2.5}, "seed must be an int of at least 0, got 2.5"),
                       ({"augment_shift": 2.5}, "augment_shift must be an int of at least 0, got 2.5"),
                       ({"batch_size": True}, "batch_size must be an int of at least 1, got True")):  # fmt: skip
        for config in (RefitConfig, PipelineConfig):  # both check the settings they share once, in WindowTraining
            with pytest.raises(ValueError, match=match):
                config(**bad)


def test_fitting_a_float64_reader_reports_its_loss_at_float64():
    """A float64 classifier's cross-entropy is taken in float64 (it was rounded to float32 first)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 3), torch.nn.LogSoftmax(-1)).double()
    windows, labels = torch.randn(5, 2, 2, dtype=torch.float64), torch.tensor([0, 1, 2, 1, 0])
    expected = torch.nn.functional.nll_loss(model(windows), labels).item()
    config = RefitConfig(steps=1, learning_rate=1e-3, checkpoint_every=1)  # (the loss is taken before the step)
    history = fit_windows(model, lambda index: (windows, labels), config, CPU)
    assert history[0]["loss"] == expected and expected != float(torch.tensor(expected, dtype=torch.float32))


class GpuIndices(torch.Tensor):
    """Indices as a GPU holds them: numpy reads them only once they are on the CPU."""

    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
        )

    def cpu(self, *args, **kwargs) -> torch.Tensor:
        return self.as_subclass(torch.Tensor)


def test_window_sources_take_indices_held_on_a_gpu(problem):
    """numpy read a tensor of indices as it was: one on a GPU raised "can't convert cuda:0 device type tensor"."""
    train, _ = problem
    indices = torch.tensor([2, 0]).as_subclass(GpuIndices)
    windows, lengths = train.batch(indices)
    assert torch.equal(windows[1, : lengths[1]], train.windows(0)) and torch.equal(lengths, train.batch([2, 0])[1])


def test_window_sources_take_integer_indices_of_their_records_alone(problem):
    train, _ = problem
    source = ConcatWindows(WindowSource(train.records[:3], train.dataset.bank, "train"), train)
    for indexed in (train, source):
        windows, lengths = indexed.batch(np.array([2, 0], np.uint8))
        assert torch.equal(windows[1, : lengths[1]], indexed.windows(0)) and indexed.batch([])[0].shape[0] == 0
        for bad in ([False, True], np.array([0.9]), [-1], [len(indexed)]):  # (a mask read records 0 and 1; -1 the last)
            with pytest.raises(ValueError, match=rf"indices must be example indices in \[0, {len(indexed)}\), got"):
                indexed.batch(bad)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=-50, max_value=50), st.integers(min_value=0, max_value=4), st.integers(min_value=1, max_value=4))
def test_one_records_windows_take_an_index_of_its_records_alone(problem, index, first, second):
    """``windows(i)`` went unchecked: past the end a bare "tuple index out of range", below 0 "list index out of range"
    or "expected non-negative integer" from deep inside (``batch`` refuses ``-1`` too), and ``True`` read record 1."""
    train, _ = problem
    bank = train.dataset.bank
    parts = WindowSource(train.records[:first], bank, "train"), WindowSource(train.records[first : first + second], bank, "test")
    for indexed, source, local in (
        (ConcatWindows(*parts), parts[index >= first], index - first * (index >= first)),
        (parts[1], parts[1], index),
    ):
        if 0 <= index < len(indexed):
            assert torch.equal(indexed.windows(index), source.windows(local))
            continue
        with pytest.raises(IndexError, match=rf"record index {index} is outside \[0, {len(indexed)}\)"):
            indexed.windows(index)
    for bad in (True, 1.0):  # (True was read as record 1, 1.0 failed in list indexing)
        with pytest.raises(TypeError, match=rf"a record index is an int, got {type(bad).__name__} {bad!r}"):
            ConcatWindows(*parts).windows(bad)
