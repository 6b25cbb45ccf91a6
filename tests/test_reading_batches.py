"""Evaluation reads examples in batches bounded by their symbols as well as their count."""

import itertools

import numpy as np
import pytest
from hint_pipelines import tiny_pipeline, tiny_problem
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.pipelines import trainer
from neurosym.pipelines.trainer import evaluate_pipeline
from neurosym.pipelines.windows import reading_batches
from neurosym.training import resolve_device


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(1, 90), max_size=60), batch_size=st.integers(1, 20), max_windows=st.integers(1, 200))
def test_reading_batches_partition_the_examples_shortest_first_within_both_bounds(lengths, batch_size, max_windows):
    batches = reading_batches(lengths, batch_size, max_windows)
    flat = np.concatenate(batches).tolist() if batches else []
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths)  # shortest first
    for batch in batches:
        symbols = sum(lengths[i] for i in batch)
        assert 1 <= len(batch) <= batch_size and (symbols <= max_windows or len(batch) == 1)
    for batch, following in itertools.pairwise(batches):  # a batch is closed only when the next example would not fit
        assert len(batch) == batch_size or sum(lengths[i] for i in batch) + lengths[following[0]] > max_windows
    with pytest.raises(ValueError, match="max_windows must be an int of at least 1, got 0"):
        reading_batches([3], 4, 0)
    for size in (0, 2.5):  # 0 was named with max_windows, which the caller never gave; 2.5 passed
        with pytest.raises(ValueError, match=f"batch_size must be an int of at least 1, got {size}"):
            reading_batches([3], size)


def test_evaluation_is_the_same_however_the_examples_are_batched(monkeypatch):
    _, test = tiny_problem()
    pipeline = tiny_pipeline(0)
    whole = evaluate_pipeline(pipeline, test, resolve_device("cpu"))
    bounded = []
    monkeypatch.setattr(trainer, "reading_batches", lambda lengths, size: bounded.append(1) or reading_batches(lengths, size, 7))
    assert evaluate_pipeline(pipeline, test, resolve_device("cpu"), batch_size=256) == whole
    assert bounded  # the bounded batches were the ones read
