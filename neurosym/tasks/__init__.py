"""Tasks for the grammar pipeline: each is a small module beside its grammar file (``*.lark``) that says
what the symbols are, what a sentence means and where the examples come from.

A task module gives ``build(seed, ...) -> Task``; :data:`TASKS` names the shipped ones (imported when chosen). A
module of one's own (any importable dotted path, e.g. ``my_tasks.binary``) serves as well: :func:`build_task`
and ``neurosym pipeline --task my_tasks.binary`` import it and call its ``build``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from types import ModuleType
from typing import Any

import numpy as np
from torch import nn

from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.grammar_abduction import AbductionBudget
from neurosym.pipelines.sentences import SentenceSource
from neurosym.pipelines.trainer import GRAMMAR_PSEUDO_LABELS
from neurosym.semantics.tree_semantics import TreeSemantics
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.training.checks import fraction, int_at_least, positive_number

__all__ = [
    "TASKS",
    "Task",
    "Published",
    "build_task",
    "task_module",
    "grammar_file",
    "check_labelled_images",
    "READER_WIDTH",
    "READER_CONVS",
]

TASKS: dict[str, str] = {
    "mnist-add": "neurosym.tasks.mnist_add",
    "hwf": "neurosym.tasks.hwf",
    "hint-grammar": "neurosym.tasks.hint",
}
"""Task name -> the module that builds it."""


@dataclass(frozen=True)
class Published:
    """A published result beside ours: ``method``, ``accuracy`` in %, ``std`` (or ``None``) and a ``note``."""

    method: str
    accuracy: float
    std: float | None = None
    note: str = ""


@dataclass
class Task:
    """Everything the pipeline needs for one task.

    ``make_reader()`` makes a fresh reader; ``train``/``validation``/``test`` are the examples; ``abduction``
    is the task's abduction budget, ``curriculum`` its default schedule of lengths, ``pseudo_labels`` its
    default pseudo-labels (:data:`~neurosym.pipelines.trainer.GRAMMAR_PSEUDO_LABELS`), ``epochs`` its passes over
    ``train`` in steps of ``batch_size`` examples at Adam's peak ``learning_rate``, ``augment_shift`` the pixels its
    training windows are shifted by and ``augment_style`` the strength they are redrawn in another hand at
    (:func:`~neurosym.perception.augment.random_style`), each chosen on validation; ``restarts`` how often a reader
    that has read no training example right by a third of its schedule is started afresh (0: never);
    ``published`` the rows printed beside ours; ``data_note`` how our data differ from theirs; ``subsets`` named
    parts of ``validation`` and of ``test`` scored apart as well, with their mean (e.g. HINT's I, SS, LS, SL, LL);
    ``seed_assigns_splits`` whether the build's ``seed`` decides which examples or images go to which split (HINT's
    generated expressions and image pools): a run of another seed then trained on what this one tests on, so
    ``--ensemble`` reads only members of its own seed; ``equal`` when a value counts as an example's result (``None``:
    ``==``; e.g. ``math.isclose`` for real results computed elsewhere), the
    :class:`~neurosym.pipelines.grammar_pipeline.GrammarPipeline`'s ``equal``; ``white_on_black`` whether its images
    show white ink on black, as the shipped tasks' do: the pipeline :func:`~neurosym.experiments.pipeline.trained_pipeline`
    reads a run back with then refuses a read window with a bright border (black on white, read as other symbols).
    """

    name: str
    grammar: SymbolGrammar
    semantics: TreeSemantics
    make_reader: Callable[[], nn.Module]
    train: SentenceSource
    validation: SentenceSource
    test: SentenceSource
    abduction: AbductionBudget = field(default_factory=AbductionBudget)
    curriculum: Curriculum = field(default_factory=Curriculum.none)
    pseudo_labels: str = "all"
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 1e-3
    augment_shift: int = 0
    augment_style: float = 0.0
    restarts: int = 0
    published: Sequence[Published] = ()
    data_note: str = ""
    subsets: Mapping[str, Mapping[str, SentenceSource]] = field(default_factory=dict)
    seed_assigns_splits: bool = False
    equal: Callable[[Any, Any], bool] | None = None
    white_on_black: bool = False

    def __post_init__(self) -> None:  # a task module's mistake, named at its build rather than deep inside a run
        for value, kind, what in ((self.grammar, SymbolGrammar, "grammar"), (self.semantics, TreeSemantics, "semantics")):
            if not isinstance(value, kind):
                raise TypeError(f"task {self.name!r}: {what} must be a {kind.__name__}, got {type(value).__name__}")
        if not callable(self.make_reader):
            raise TypeError(f"task {self.name!r}: make_reader must be callable (it builds a fresh reader)")
        if self.equal is not None and not callable(self.equal):
            raise TypeError(f"task {self.name!r}: equal must be callable (value, result) -> bool, or None for ==")
        where = f"task {self.name!r}:"
        positive_number(self.epochs, f"{where} epochs")
        positive_number(self.learning_rate, f"{where} learning_rate")
        fraction(self.augment_style, f"{where} augment_style")  # (1.5 was refused only by the run, not naming the task)
        if self.pseudo_labels not in GRAMMAR_PSEUDO_LABELS:
            raise ValueError(
                f"{where} pseudo_labels must be one of {', '.join(GRAMMAR_PSEUDO_LABELS)}, got {self.pseudo_labels!r}"
            )
        int_at_least(self.batch_size, f"{where} batch_size", 1)
        int_at_least(self.augment_shift, f"{where} augment_shift", 0)
        int_at_least(self.restarts, f"{where} restarts", 0)


READER_WIDTH = 32
"""Channels of the tasks' readers' first convolution: MNIST-add N = 1, one epoch, validation 98.16 % against 97.88 %
with 48 (benchmarks/RESULTS.md); narrower readers (16) cap the symbols read right lower."""
READER_CONVS = (1, 1, 1)
"""Convolutions in each of the three stages of the tasks' readers (:class:`~neurosym.perception.cnn.SmallCNN`)."""


def grammar_file(name: str) -> str:
    """The text of the grammar ``name`` shipped beside the task modules (e.g. ``"mnist_add.lark"``)."""
    return (files("neurosym.tasks") / name).read_text(encoding="utf-8")


def check_labelled_images(images: np.ndarray, labels: np.ndarray, who: str) -> None:
    """Raise ``ValueError`` naming ``who`` unless ``labels`` are ``[M]``, one per image of ``images [M, H, W]``: with
    more or fewer labels than images, sentences were drawn with images that other images' labels named."""
    if np.shape(labels) != (len(images),):
        raise ValueError(f"{who} needs one label per image: {len(images)} images, labels of shape {list(np.shape(labels))}")


def task_module(name: str) -> ModuleType:
    """The module of task ``name``: one of :data:`TASKS`, or an importable module of one's own with a ``build``;
    ``ValueError`` naming what is wrong otherwise."""
    if name in TASKS:
        return importlib.import_module(TASKS[name])
    if not all(part.isidentifier() for part in name.split(".")):  # ("" and ".x" raised import's own errors)
        raise ValueError(f"unknown task {name!r}: neither one of {sorted(TASKS)} nor a dotted module path (e.g. my_tasks.binary)")
    try:
        module = importlib.import_module(name)
    except ImportError as error:  # (ModuleNotFoundError, or an import inside the module that failed)
        missing = getattr(error, "name", None)
        if missing is not None and not (name == missing or name.startswith(missing + ".")):  # the module is there
            raise ValueError(f"task module {name!r} cannot be imported: {error}") from None
        raise ValueError(f"unknown task {name!r}: neither one of {sorted(TASKS)} nor an importable module ({error})") from None
    if not callable(getattr(module, "build", None)):
        raise ValueError(f"task module {name!r} has no build(seed, ...) function returning a neurosym.tasks.Task")
    return module


def build_task(name: str, **options: Any) -> Task:
    """The task ``name`` (:func:`task_module`), built with its ``options`` (``ValueError`` where its ``build`` takes
    none of that name)."""
    build = task_module(name).build
    signature = inspect.signature(build)
    try:
        signature.bind(**options)
    except TypeError as error:  # e.g. --reader-width for a task whose build takes no reader_width
        raise ValueError(f"task {name!r}: its build({', '.join(signature.parameters)}) {error}") from None
    task = build(**options)
    if not isinstance(task, Task):
        raise TypeError(f"task module {name!r}: build() returned {type(task).__name__}, not a neurosym.tasks.Task")
    return task
