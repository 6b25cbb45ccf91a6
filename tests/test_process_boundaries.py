"""What leaves the Python process that made it: checkpoints a user loads by hand with ``torch.load``'s default
``weights_only=True``, and data sets, collate functions, layers and pipelines pickled into ``spawn`` workers or
copied."""

from __future__ import annotations

import copy
import dataclasses
import multiprocessing
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hint_banks import prototype_bank
from torch import nn

from neurosym.data.arithmetic import OPERATIONS, SimpleFunctionData
from neurosym.data.hint import HintImageDataset, HintRecord, HintSymbolDataset, collate_hint
from neurosym.data.mathematics.encoding import encode_batch
from neurosym.data.mathematics.loader import MathExample
from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.experiments.hint_pipeline.fewshot import program_from_saved, saved_program
from neurosym.layers import (
    NALU,
    NAU,
    NMU,
    MixerBlock,
    RealNPU,
    RelativeMultiheadAttention,
    TransformerEncoderLayer,
    UniversalTransformer,
    iNALU,
)
from neurosym.models import build_front_end, build_seq2seq
from neurosym.models.seq2seq.mathematics_task import collate as mathematics_collate
from neurosym.perception import SymbolClassifier
from neurosym.pipelines import READ, GrammarPipeline, ImageSentences, WindowSource
from neurosym.semantics.induction import Program
from neurosym.syntax import SymbolGrammar
from neurosym.syntax.parser import base_grammar
from neurosym.tasks import grammar_file
from neurosym.tasks.hint import hint_semantics
from neurosym.tasks.hwf import formula_semantics
from neurosym.tasks.mnist_add import addition_semantics
from neurosym.training import TrainConfig, load_checkpoint, save_checkpoint
from neurosym.training.classifier import GatherRows, RowIndices, fit_classifier

CPU = torch.device("cpu")


@pytest.fixture
def spawned_workers() -> Iterator[None]:
    """Data-loading workers started by ``spawn`` (macOS's and Windows' default), which pickle what they are sent."""
    before = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("spawn", force=True)
    try:
        yield
    finally:
        multiprocessing.set_start_method(before, force=True)


@pytest.mark.slow  # (a spawned worker imports torch and the library afresh: seconds)
def test_a_classifier_trains_with_a_spawned_worker_as_without_one(spawned_workers: None) -> None:
    """fit_classifier's collate function was a local closure: a spawned worker could not be sent it (``Can't pickle
    local object``), so ``num_workers`` failed wherever workers are spawned."""
    inputs, labels = torch.randn(16, 3), torch.arange(16) % 2
    weights = []
    for workers in (0, 1):
        torch.manual_seed(0)
        model = nn.Linear(3, 2)
        fit_classifier(model, inputs, labels, TrainConfig(max_steps=3, batch_size=4, num_workers=workers), CPU)
        weights.append(model.weight.detach())
    assert torch.equal(weights[0], weights[1])


def test_a_training_checkpoint_at_a_path_object_loads_weights_only_and_resumes(tmp_path: Path) -> None:
    """The configuration saved in a checkpoint held its ``checkpoint`` path as a ``PosixPath``, which
    ``torch.load(..., weights_only=True)`` (torch's default) refuses: a user's own look into the file failed."""
    inputs, labels = torch.randn(8, 3), torch.arange(8) % 2
    path = tmp_path / "run.pt"
    fit_classifier(nn.Linear(3, 2), inputs, labels, TrainConfig(max_steps=2, batch_size=4, checkpoint=path), CPU)
    saved = torch.load(path, weights_only=True)
    assert saved["config"]["checkpoint"] == str(path) and saved["step"] == 2
    again = TrainConfig(max_steps=2, batch_size=4, checkpoint=str(path))  # the path's text: the same run, finished
    resumed = fit_classifier(nn.Linear(3, 2), inputs, labels, again, CPU)
    assert (resumed.steps, resumed.steps_this_call) == (2, 0)


def test_saved_paths_become_text_at_any_depth_and_the_rest_stays_as_it_was(tmp_path: Path) -> None:
    model = nn.Linear(2, 1)
    state = {"setup": {"data": [tmp_path / "a", (tmp_path / "b", 1)]}, "model": model.state_dict(), "name": "x"}
    save_checkpoint(state, tmp_path / "c.pt")
    saved = torch.load(tmp_path / "c.pt", weights_only=True)
    assert saved["setup"] == {"data": [str(tmp_path / "a"), (str(tmp_path / "b"), 1)]} and saved["name"] == "x"
    assert saved["model"]._metadata == model.state_dict()._metadata  # (load_state_dict reads the versions there)
    assert state["setup"]["data"][0] == tmp_path / "a"  # the caller's own state is left as it was


def test_a_checkpoint_written_with_a_path_object_still_loads(tmp_path: Path) -> None:
    """Files written before paths were saved as text hold a ``PosixPath``: :func:`load_checkpoint` still reads them."""
    torch.save({"config": {"checkpoint": tmp_path / "old.pt"}}, tmp_path / "old.pt")
    assert load_checkpoint(tmp_path / "old.pt") == {"config": {"checkpoint": tmp_path / "old.pt"}}


def _same(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` are equal, tensors and arrays (nested in dicts, lists, tuples) by their values."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return a == b


RECORDS = [
    HintRecord("0", "1+2", (1, -1, 1), 3, (1, 3, 2)),
    HintRecord("1", "(3*4)", (-1, 2, -1, 2, -1), 12, (-1, 3, 12, 4, -1), "I"),
]
MATHEMATICS = [MathExample("What is 1+1?", "2", "add", "train-easy"), MathExample("What is 2*3?", "6", "mul", "train-easy")]


def _items(dataset: Any) -> list[Any]:
    """Every item of a map-style ``dataset``."""
    return [dataset[index] for index in range(len(dataset))]


def _public_data() -> dict[str, tuple[Any, Callable[[Any], Any]]]:
    """Every public data set, collate function and data source a worker may be sent, with what to compare of it."""
    bank = prototype_bank(per_symbol=12)
    windows = WindowSource(RECORDS, bank, "train", seed=3)
    return {
        "HintSymbolDataset": (HintSymbolDataset(RECORDS), _items),
        "HintImageDataset": (HintImageDataset(RECORDS, bank, "train", seed=3), _items),
        "collate_hint": (collate_hint, lambda collate: collate(_items(HintSymbolDataset(RECORDS)))),
        "RowIndices": (RowIndices(5), _items),
        "GatherRows": (GatherRows(torch.arange(12.0).view(4, 3), torch.arange(4)), lambda gather: gather([3, 1])),
        "encode_batch": (encode_batch, lambda collate: collate(MATHEMATICS)),
        "mathematics collate": (mathematics_collate, lambda collate: collate(MATHEMATICS)),
        "SymbolBank": (bank, lambda bank: (bank.images, bank.sample(list("1+2"), "val", 0))),
        "WindowSource": (windows, lambda source: source.batch([1, 0])),
        "ImageSentences": (
            ImageSentences(torch.rand(3, 4, 4), np.array([[0, 2]]), np.full((1, 2), READ), np.array([2]), [5]),
            lambda sentences: dataclasses.astuple(sentences.batch([0])),
        ),
        "SimpleFunctionData": (
            SimpleFunctionData(list(OPERATIONS), range(len(OPERATIONS)), evaluation_size=4),
            lambda data: list(data.evaluation_batches("test")),
        ),
    }


@pytest.mark.parametrize("name", sorted(_public_data()))
def test_public_data_pickles_for_spawned_workers_and_gives_the_same_items(name: str) -> None:
    """A spawned data-loading worker is sent its data set and collate function pickled. The arithmetic task's
    ``square`` and ``sqrt`` were lambdas: a :class:`SimpleFunctionData` with either did not pickle."""
    made, read = _public_data()[name]
    assert _same(read(pickle.loads(pickle.dumps(made))), read(made))


TASK_SEMANTICS = {
    "mnist_add": (
        lambda: SymbolGrammar(grammar_file("mnist_add.lark")),
        addition_semantics,
        ["12+9", "0+0"],
        ("start", 5, (2, 4)),
    ),
    "hwf": (lambda: SymbolGrammar(grammar_file("hwf.lark")), formula_semantics, ["3*4-2", "8/2"], ("binary", 6, (2, "*", 4))),
    "hint": (
        lambda: SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS),
        hint_semantics,
        ["(3+4)*2", "9/3"],
        ("binary", 9, (2, "+", 4)),
    ),
}


@pytest.mark.parametrize("task", sorted(TASK_SEMANTICS))
def test_a_pipeline_over_a_shipped_tasks_semantics_pickles_and_reads_the_same(task: str) -> None:
    """The shipped tasks' semantics were built of local functions and lambdas: a pipeline over any of them could not be
    pickled (into a worker process, or to a file), as one over the library's HINT pipeline can."""
    make_grammar, make_semantics, sentences, (rule, wanted, children) = TASK_SEMANTICS[task]
    grammar = make_grammar()
    pipeline = GrammarPipeline(grammar, make_semantics(), SymbolClassifier(list(grammar.symbols), width=4))
    twin = pickle.loads(pickle.dumps(pipeline))
    assert twin.executor.values(sentences) == pipeline.executor.values(sentences)
    preimages = [list(semantics.preimages(rule, wanted, children)) for semantics in (twin.semantics, pipeline.semantics)]
    assert preimages[0] == preimages[1] and preimages[0]


def test_a_concepts_program_is_saved_weights_only_and_read_back_from_either_form(tmp_path: Path) -> None:
    program = Program(("max", ("i",), ("j",)))
    save_checkpoint({"program": saved_program(program)}, tmp_path / "concept.pt")
    assert program_from_saved(torch.load(tmp_path / "concept.pt", weights_only=True)["program"]) == program
    assert program_from_saved(program) is program and program_from_saved(None) is None  # files written before


def _seq2seq(name: str) -> nn.Module:
    size = {"dim": 8} if name.startswith("transformer") else {"hidden": 8}
    return build_seq2seq(name, build_front_end("symbol", 8, vocab_size=10), 12, encoder_layers=1, dropout=0.0, **size)


SEQUENCE, TOKENS = torch.randn(2, 5, 8), torch.randint(1, 10, (2, 5))
SEQ2SEQ_INPUTS = (TOKENS, torch.zeros(2, 5, dtype=torch.bool), torch.randint(1, 12, (2, 4)))
MODELS: dict[str, tuple[Callable[[], nn.Module], tuple[torch.Tensor, ...]]] = {
    **{unit.__name__: (lambda unit=unit: unit(4, 2), (torch.rand(3, 4) + 0.5,)) for unit in (NMU, NAU, NALU, iNALU, RealNPU)},
    "MixerBlock": (lambda: MixerBlock(5, 8, 4, 4), (SEQUENCE,)),
    "RelativeMultiheadAttention": (lambda: RelativeMultiheadAttention(8, 2), (SEQUENCE,)),
    "UniversalTransformer": (lambda: UniversalTransformer(TransformerEncoderLayer(8, 2, 16, 0.0), 3, act=True), (SEQUENCE,)),
    **{name: (lambda name=name: _seq2seq(name), SEQ2SEQ_INPUTS) for name in ("gru_att", "transformer_rel_uni")},
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_layers_and_models_copy_and_pickle_after_a_forward_pass_with_the_same_outputs(name: str) -> None:
    make, inputs = MODELS[name]
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        before = model(*inputs)
        copies = copy.deepcopy(model), pickle.loads(pickle.dumps(model))
        assert all(_same(twin(*inputs), before) for twin in copies)
