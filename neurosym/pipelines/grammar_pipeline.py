"""The weak-supervision pipeline as a component: any reader, any Lark grammar, any semantics, learned from results.

A :class:`GrammarPipeline` reads each window of an example as one symbol of a
:class:`~neurosym.syntax.symbol_grammar.SymbolGrammar` (positions whose symbol is *given* instead, e.g. the
``+`` between two numbers that are shown as images, are not read), decodes the most probable sentence the
grammar accepts (:class:`~neurosym.pipelines.grammar_decoding.GrammarDecoder`, exact), and executes it with
the user's :class:`~neurosym.semantics.tree_semantics.TreeSemantics`. :func:`train_grammar_pipeline` learns
the reader from results alone: each step abduces, for every example, the most probable grammatical sentence
within a change budget that gives its result (:class:`~neurosym.pipelines.grammar_abduction.GrammarAbducer`)
and trains the reader with cross-entropy on those pseudo-labels, in the library's one training loop (curriculum,
atomic checkpoints, resume, signals, ``time_limit``, progress; DistributedDataParallel under ``torchrun``).
"""

from __future__ import annotations

import os
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from einops import rearrange, repeat
from lark import Token, Transformer, Tree
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from neurosym.layers.value_checks import check_intensities
from neurosym.perception.augment import augment_windows
from neurosym.perception.reader import Reader, check_log_probs, check_reader, reader_module
from neurosym.pipelines.abduction import Correction
from neurosym.pipelines.grammar_abduction import AbductionBudget, GrammarAbducer
from neurosym.pipelines.grammar_decoding import GrammarDecoder, NoSentenceFits
from neurosym.pipelines.pipeline import Reading, check_white_on_black
from neurosym.pipelines.sentences import READ, SentenceBatch, SentenceSource
from neurosym.pipelines.trainer import GRAMMAR_PSEUDO_LABELS, PipelineConfig, pseudo_label_loss, run_reader_training
from neurosym.pipelines.windows import reading_batches, real_positions
from neurosym.semantics.tree_semantics import Executor, TreeSemantics
from neurosym.syntax.errors import AmbiguousGrammarWarning, ParseError
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.training.checks import int_at_least
from neurosym.training.device import at_least_float32, mixed_precision, moved_to
from neurosym.training.distributed import DistributedContext
from neurosym.training.modes import reading_mode, training_modes
from neurosym.training.seeding import step_generator

ReadWindows = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""What reads windows for :meth:`GrammarPipeline.read`: ``(windows [n, ...], groups int64 [n]) -> log-probabilities
[n, V]``, a :class:`~neurosym.perception.reader.Reader` or one wrapped for DistributedDataParallel."""


class GrammarPipeline:
    """A reader, a grammar and its semantics, wired together.

    Args:
        grammar: the language; its vocabulary must hold every symbol of ``reader.vocabulary``.
        semantics: what a parse tree means (with inverses, abduction also searches top-down).
        reader: windows -> log-probabilities over its vocabulary, each symbol once (symbols it lacks can only be
            given).
        budget: abduction's search budget (default: :class:`AbductionBudget`'s); equal: when a value counts as the result (default ``==``).
        white_on_black: the reader reads images of white ink on black: :meth:`read` and :meth:`predict` then refuse
            (``ValueError``) a read window ``[(1,) H, W]`` whose border is mostly bright, as black-on-white images are
            read as other symbols (default ``False``: the pipeline knows nothing of its images).
    """

    def __init__(
        self,
        grammar: SymbolGrammar,
        semantics: TreeSemantics,
        reader: Reader,
        budget: AbductionBudget | None = None,
        equal: Callable[[Any, Any], bool] | None = None,
        white_on_black: bool = False,
    ):
        for given, kind, hint in (
            (grammar, SymbolGrammar, "SymbolGrammar(text or path)"),
            (semantics, TreeSemantics, "TreeSemantics(rules)"),
        ):
            if not isinstance(given, kind):
                raise TypeError(f"GrammarPipeline takes a {kind.__name__} ({hint}), got {type(given).__name__}")
        self.grammar = grammar
        self.reader = reader  # (checked against the grammar)
        if unknown := sorted(semantics.names - grammar.names):
            helpers = "; a Transformer's helper methods must start with '_'" if isinstance(semantics.rules, Transformer) else ""
            raise ValueError(
                f"the semantics name {unknown}, which no node or token of the grammar's parse trees carries "
                f"(they carry {sorted(grammar.names)}; Lark inlines rules named '_rule', puts the one child of a ?rule's "
                "alternative in its place, names the nodes of an alternative with an alias by the alias, and drops terminals "
                f"named '_TERMINAL' and anonymous ones such as \"+\", but in a !rule{helpers})"
            )
        if alike := {rule: forms for rule, forms in grammar.indistinct_alternatives.items() if rule in semantics.names}:
            rule, forms = next(iter(alike.items()))
            raise ValueError(
                f"the alternatives {' | '.join(forms)} of rule {rule!r} give parse-tree nodes alike (Lark drops anonymous "
                f'tokens such as "+"), so its semantics cannot tell them apart: give each an alias (-> name) and its '
                'semantics, or name the terminals that differ (PLUS: "+")'
            )
        _check_callables(grammar, semantics)
        _warn_if_ambiguous(grammar)
        self.semantics, self.white_on_black = semantics, white_on_black
        self.executor = Executor(grammar, semantics)
        self.decoder = GrammarDecoder(grammar)
        self.abducer = GrammarAbducer(self.executor, budget or AbductionBudget(), equal)

    @property
    def reader(self) -> Reader:
        """The reader; one assigned is checked against the grammar as the constructor's is, and its vocabulary's
        columns among the grammar's symbols (``columns [V_reader]``) follow it (they were the first reader's: a reader
        of another symbol order assigned read every symbol as another)."""
        return self._reader

    @reader.setter
    def reader(self, reader: Reader) -> None:
        check_reader(reader, "GrammarPipeline")
        symbols = self.grammar.symbols
        if missing := [s for s in reader.vocabulary if s not in symbols]:
            raise ValueError(f"the reader's symbols {missing} are not in the grammar's vocabulary {list(symbols)}")
        if repeated := [s for s, count in Counter(reader.vocabulary).items() if count > 1]:
            # (one column per grammar symbol: the other columns of a repeated symbol were dropped with their mass)
            raise ValueError(f"the reader's vocabulary {list(reader.vocabulary)} repeats the symbols {repeated}")
        self._reader = reader
        self.columns = torch.tensor([symbols.index(s) for s in reader.vocabulary])

    def log_probs(self, batch: SentenceBatch, reader: ReadWindows | None = None) -> torch.Tensor:
        """Per-position log-probabilities over the grammar's symbols ``[B, T, V]``: the reader's (or
        ``reader``'s, e.g. the reader wrapped for DistributedDataParallel) at read positions (``-inf`` for
        symbols it lacks), one-hot at given ones, zero at padding; in float32, or in the reader's dtype where it is
        wider (:func:`~neurosym.perception.reader.at_least_float32`). Without gradients the reader reads in evaluation
        mode (:func:`~neurosym.training.modes.reading_mode`), with them in the mode its caller set."""
        size, steps = batch.given.shape
        real = real_positions(batch.lengths, steps)
        read = real & (batch.given == READ)
        groups = repeat(torch.arange(size, device=batch.given.device), "b -> b t", t=steps)
        flat = rearrange(batch.windows, "b t ... -> (b t) ...")
        with reading_mode(reader or self.reader):
            read_log_probs = (reader or self.reader)(flat[read.flatten()], groups[read])  # [n, V_reader]
        check_log_probs(read_log_probs, len(self.columns), int(read.sum()))  # (in the reader's dtype, which rounds them)
        read_log_probs = at_least_float32(read_log_probs)
        vocabulary = len(self.grammar.symbols)
        out = read_log_probs.new_full((size * steps, vocabulary), -torch.inf)
        columns = self.columns.to(out.device)
        out[read.flatten().nonzero().flatten()[:, None], columns[None, :]] = read_log_probs
        given = (batch.given != READ) & real
        if (given & ((batch.given < 0) | (batch.given >= vocabulary))).any():
            raise ValueError(f"a given symbol id is outside the grammar's vocabulary [0, {vocabulary}) (READ = {READ} is read)")
        out[given.flatten()] = F.one_hot(batch.given[given], vocabulary).to(out.dtype).log()
        out[~real.flatten()] = 0.0
        return rearrange(out, "(b t) v -> b t v", b=size)

    def read(self, batch: SentenceBatch, reader: ReadWindows | None = None) -> Reading:
        """Read (with ``reader`` instead of the pipeline's, where given), decode and execute a batch: sentences,
        log-probabilities ``[B, T, V]`` (with gradients where computed in training) and values (``None`` where
        invalid), read as :meth:`log_probs` reads (a pipeline made ``white_on_black`` first refuses a read window with a
        bright border)."""
        if self.white_on_black:
            _check_read_white_on_black(batch)
        log_probs = self.log_probs(batch, reader)
        decoded = self.decoder.decode(log_probs.detach(), batch.lengths)
        sentences = decoded.sentences(self.grammar.symbols)
        return Reading(sentences, log_probs, self.executor.values(sentences))

    def predict(self, batch: SentenceBatch) -> list[Any]:
        """Results of a batch, ``B`` values (``None`` where the sentence read has none, e.g. a division by zero), read as
        :meth:`read` reads (no gradients: the reader reads in evaluation mode). ``ValueError`` for a length no sentence
        of the grammar has, given its given symbols (naming the example)."""
        with torch.no_grad():
            return self.read(batch).values

    def abduce(self, reading: Reading, targets: Sequence[Any], given: torch.Tensor) -> list[Correction | None]:
        """Per example, the most probable correction found within the budget that gives its target."""
        return self._per_example(self.abducer.abduce, reading, targets, given)

    def explain(self, reading: Reading, targets: Sequence[Any], given: torch.Tensor) -> list[list[Correction]]:
        """Per example, every sentence within the budget that gives its target, most probable first
        (:meth:`GrammarAbducer.explanations`)."""
        return self._per_example(self.abducer.explanations, reading, targets, given)

    def _per_example(self, search: Callable, reading: Reading, targets: Sequence[Any], given: torch.Tensor) -> list:
        if not len(reading.sentences) == len(targets) == len(given):
            raise ValueError(
                f"{len(reading.sentences)} readings, {len(targets)} targets and {len(given)} rows of given symbols: "
                "one each per example"
            )
        log_probs = abduction_scores(reading.log_probs)
        found = []
        for sentence, scores, target, fixed in zip(reading.sentences, log_probs, targets, given.cpu().numpy()):
            positions = np.flatnonzero(fixed[: len(sentence)] != READ).tolist()
            found.append(search(sentence, scores[: len(sentence)], target, positions))
        return found


def _check_read_white_on_black(batch: SentenceBatch) -> None:
    """Raise ``ValueError`` naming the first read window of ``batch`` (images ``[B, T, (1,) H, W]``; other windows are
    left to the reader) with values ``check_intensities`` refuses or a mostly bright border
    (:func:`~neurosym.pipelines.pipeline.check_white_on_black`)."""
    if batch.windows.dim() not in (4, 5):
        return
    read = real_positions(batch.lengths, batch.given.shape[1]) & (batch.given == READ)
    check_intensities(batch.windows[read.to(batch.windows.device)])  # (first: a NaN border passed the border check)
    check_white_on_black(batch.windows, read)


def _check_callables(grammar: SymbolGrammar, semantics: TreeSemantics) -> None:
    """``ValueError`` naming the rules whose parse-tree nodes can have no child or several
    (:attr:`~neurosym.syntax.symbol_grammar.SymbolGrammar.node_children`) and that ``semantics`` give no callable: only a
    node of one child passes its child's value up, so a sentence holding such a node would fail to execute wherever it
    is first read (in a training step, where no true sentence holds one)."""
    bare = {
        name: counts for name, counts in grammar.node_children.items() if counts != {1} and semantics.callable_of(name) is None
    }
    if bare:
        shown = ", ".join(f"{name!r} ({_children_shown(counts)})" for name, counts in sorted(bare.items()))
        raise ValueError(
            f"the semantics give no callable for the rules {shown} of the grammar: a node without a callable of its own "
            "passes the value of its one child up, and these nodes can have none or several; give each a callable (or "
            "an alias per alternative, -> name, and a callable for each)"
        )


def _children_shown(counts: frozenset[int]) -> str:
    """The numbers of children ``counts`` holds (2 for two or more) in words: ``no or 2+ children``."""
    return " or ".join({0: "no", 1: "1", 2: "2+"}[count] for count in sorted(counts)) + " children"


def _warn_if_ambiguous(grammar: SymbolGrammar) -> None:
    """An :class:`~neurosym.syntax.errors.AmbiguousGrammarWarning` where ``grammar`` has a sentence of several parse trees
    (:attr:`~neurosym.syntax.symbol_grammar.SymbolGrammar.ambiguous_sentence`)."""
    if (found := grammar.ambiguous_sentence) is None:
        return
    sentence, (tree, other) = found
    warnings.warn(
        AmbiguousGrammarWarning(
            f"the grammar is ambiguous: {sentence!r} has several parse trees, e.g. {_bracketed(tree)} and {_bracketed(other)}, "
            "and the parser takes one by its own order of the rules, so the semantics may give such sentences other values "
            'than meant: write the grammar so that each sentence has one tree (a rule per precedence level, sum: sum "+" '
            "product | product), or ignore this warning where the semantics give every tree of a sentence one value"
        ),
        stacklevel=3,
    )


def _bracketed(tree: Tree | Token, width: int = 80) -> str:
    """``tree`` on one line, as ``rule(child, ...)`` with its tokens' symbols quoted, cut to ``width`` characters."""
    text = (
        repr(str(tree)) if isinstance(tree, Token) else f"{tree.data}({', '.join(_bracketed(c, width) for c in tree.children)})"
    )
    return text if len(text) <= width else text[: width - 1] + "…"


def abduction_scores(log_probs: torch.Tensor) -> np.ndarray:
    """What abduction ranks corrections on: ``log_probs [B, T, V]`` detached, on the CPU, in float32 or in their own
    dtype where it is wider (:func:`~neurosym.perception.reader.at_least_float32`: float32 tied corrections a float64
    reading tells apart)."""
    return at_least_float32(log_probs.detach()).cpu().numpy()


TARGETS_CHECKED = 16
"""How many of a source's true sentences :func:`train_grammar_pipeline` and :func:`evaluate_grammar_pipeline` execute
against their targets first (and :func:`train_grammar_pipeline` checks for symbols the reader lacks where it reads them)."""
SENTENCES_ENUMERATED = 1024
"""The most strings of one length :func:`train_grammar_pipeline` and :func:`evaluate_grammar_pipeline` parse to run every
sentence of that length (:meth:`~neurosym.syntax.symbol_grammar.SymbolGrammar.sentences`), so that a target no value of
them equals is refused; the targets of a length with more go unchecked so (abduction leaves them unexplained)."""


def _check_targets(pipeline: GrammarPipeline, source: SentenceSource) -> None:
    """Every target must be one a value can equal (:meth:`~neurosym.pipelines.grammar_abduction.GrammarAbducer.check_target`,
    the example named), and one the value of some sentence of its example's length equals where that length has few
    sentences (:func:`_check_reachable`). Where ``source`` knows its true sentences, some of its first ones must also
    execute to their targets: targets of another kind than the semantics' values (``"37"`` for 37) would leave every
    example unexplained (in training) or wrong (in evaluation), silently."""
    check_target_kinds(pipeline, source.targets)  # (a target no value can equal failed inside the comparisons below)
    truths = getattr(source, "truths", None)
    if truths is not None:
        _check_truths_give_targets(pipeline, source, truths)
    _check_reachable(pipeline, source)


def check_evaluation_source(pipeline: GrammarPipeline, source: SentenceSource, name: str) -> None:
    """What :func:`evaluate_grammar_pipeline` checks of ``source`` before it reads (its targets: their kinds, their
    reach, its first true sentences executing to them), an error naming ``source`` as ``name`` (``"the validation
    split"``): a runner checks its evaluation splits so before training, and a mistake in one was found after it."""
    try:
        _check_targets(pipeline, source)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{name}: {error}") from None


def check_target_kinds(pipeline: GrammarPipeline, targets: Sequence[Any]) -> None:
    """:meth:`~neurosym.pipelines.grammar_abduction.GrammarAbducer.check_target` of each of ``targets``, an error naming
    its example."""
    for index, target in enumerate(targets):
        try:
            pipeline.abducer.check_target(target)
        except (TypeError, ValueError) as error:
            raise type(error)(f"the target of example {index}: {error}") from None


def _check_truths_give_targets(pipeline: GrammarPipeline, source: SentenceSource, truths: Sequence[str]) -> None:
    """Some of the first :data:`TARGETS_CHECKED` true sentences must execute to their targets."""
    count = min(len(source), TARGETS_CHECKED)
    values = pipeline.executor.values([truths[i] for i in range(count)])
    if not any(pipeline.abducer.gives(value, source.targets[i]) for i, value in enumerate(values)):
        value, target = values[0], source.targets[0]
        _check_truth_parses(pipeline.grammar, truths[0], count)
        raise ValueError(
            f"none of the first {count} true sentences executes to its target: {truths[0]!r} gives {value!r} "
            f"({type(value).__name__}), its target is {target!r} ({type(target).__name__}); the targets must be the "
            "semantics' values, or count as them under the pipeline's equal (e.g. math.isclose for results rounded elsewhere)"
        )


def _check_reachable(pipeline: GrammarPipeline, source: SentenceSource) -> None:
    """Each example of a length whose sentences are found by parsing at most :data:`SENTENCES_ENUMERATED` strings must have
    a target that the value of one of them gives (under the pipeline's ``equal``): one that none gives (a negative sum, a
    fraction of integer semantics) would be trained on though no reading explains it. Given symbols are not held
    fixed, so a target refused is one that no reading of the example's windows can give."""
    lengths = np.asarray(source.lengths)
    for length in np.unique(lengths).tolist():
        sentences = pipeline.grammar.sentences(length, SENTENCES_ENUMERATED)
        if sentences is None:
            continue
        values = _distinct([value for value in pipeline.executor.values(sentences) if value is not None])
        reached: dict[tuple[type, Any], bool] = {}
        for index in np.flatnonzero(lengths == length).tolist():
            target = source.targets[index]
            if not _reached(pipeline.abducer.gives, values, target, reached):
                shown = ", ".join(repr(value)[:40] for value in values[:8]) + (", ..." if len(values) > 8 else "")
                raise ValueError(
                    f"the target of example {index}, {target!r:.60}, is no value of the {len(sentences)} sentences of "
                    f"length {length}: they give {shown or 'no valid value'}; no reading explains it (the targets must be the "
                    "semantics' values, or count as them under the pipeline's equal)"
                )


def _distinct(values: list[Any]) -> list[Any]:
    """``values`` in their order without repeats of one type and value (unhashable ones all kept)."""
    seen: set[tuple[type, Any]] = set()
    kept = []
    for value in values:
        try:
            key = (type(value), value)
            if key in seen:
                continue
            seen.add(key)
        except TypeError:  # (unhashable)
            pass
        kept.append(value)
    return kept


def _reached(gives: Callable[[Any, Any], bool], values: list[Any], target: Any, memory: dict[tuple[type, Any], bool]) -> bool:
    """Whether one of ``values`` gives ``target``, remembered in ``memory`` per target type and value where hashable
    (a source repeats its targets: the sums of two digits are 19)."""
    key = (type(target), target)
    try:
        return memory[key]
    except TypeError:  # (unhashable)
        return any(gives(value, target) for value in values)
    except KeyError:
        memory[key] = any(gives(value, target) for value in values)
        return memory[key]


def _check_truth_parses(grammar: SymbolGrammar, truth: str, count: int) -> None:
    """Where none of the first ``count`` true sentences executes to its target, one of them, ``truth``, that is no
    sentence of ``grammar`` is named with its parse error (the advice on the targets' kind missed the problem: a true
    sentence written in other symbols than the grammar's, or of another shape, gave ``None``)."""
    try:
        grammar.parse(truth)
    except ParseError as error:
        raise ValueError(
            f"none of the first {count} true sentences executes to its target: {truth!r} is no sentence of the grammar "
            f"({error}); the true sentences must be written in the grammar's symbols"
        ) from None


def _check_truths_read(reader: Reader, truths: Sequence[str], indices: Sequence[int], read: np.ndarray) -> None:
    """The true sentences of examples ``indices`` (``read [B, T]``: the positions the reader reads in each) must have
    only symbols of ``reader``'s vocabulary where it reads them: it gives any other a log-probability of ``-inf``, so
    it could never read them, and training on them (``pseudo_labels="truths"``) would have an infinite loss."""
    vocabulary = set(reader.vocabulary)
    for row, index in enumerate(indices):
        truth = truths[index]
        outside = [p for p, symbol in enumerate(truth) if symbol not in vocabulary and p < read.shape[1] and read[row, p]]
        if outside:
            raise ValueError(
                f"true sentence {index} ({truth!r}) has {truth[outside[0]]!r} at position {outside[0]}, which the reader "
                f"reads, but the reader's vocabulary {list(reader.vocabulary)} lacks it: the reader could never read it "
                "(and pseudo_labels='truths' would train on an infinite loss); give the reader that symbol, or give the "
                "symbol at that position"
            )


class NothingReadRight(RuntimeError):
    """Raised by :func:`train_grammar_pipeline` at its ``give_up`` step when the reader has read no training
    example right so far: a start that settled on a wrong reading, to be started afresh."""

    def __init__(self, step: int):
        super().__init__(f"the reader read no training example right in its first {step} steps")
        self.step = step


def train_grammar_pipeline(
    pipeline: GrammarPipeline,
    source: SentenceSource,
    config: PipelineConfig,
    device: torch.device | str,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = False,
    time_limit: float | None = None,
    context: DistributedContext | None = None,
    give_up: int | None = None,
    setup: Mapping[str, Any] | None = None,
) -> list[dict]:
    """Train ``pipeline.reader`` on ``source`` from its results alone; returns the history (per step:
    ``max_length``, ``loss`` (None when no example got a pseudo-label), ``labelled`` (the fraction that did),
    ``correct`` (the fraction of the global batch read right before the update: the reading executes to the result),
    and the training loop's ``seconds`` (of training so far, over every call of a resumed run: the steps a stop lost
    are counted once, when they are taken again)).
    With ``give_up``, a reader that has read no training example right in the first ``give_up`` steps stops there
    with :class:`NothingReadRight` (nothing is checkpointed for that step). ``config.learning`` must be ``"abduction"``;
    ``config.pseudo_labels`` ``"all"`` trains on each example's best correction (hard EM), ``"marginal"`` on all
    its explanations found, each as probable as the reader makes it (:func:`marginal_loss`; importance-weighted
    where abduction drew readings, :attr:`AbductionBudget.sample_readings`), ``"truths"`` on the source's true
    sentences (a supervised reference: no result is used). A true symbol the reader lacks where it reads it, which it
    could never read, is a ``ValueError`` among the first :data:`TARGETS_CHECKED` examples before any step, and, training
    on ``"truths"``, the others at the step that draws them.
    Resumes from ``checkpoint`` (refused under another ``setup``: what the data, reader and abduction were built from,
    :class:`~neurosym.training.core.Checkpointing`); SIGINT, SIGTERM or ``time_limit`` seconds checkpoint and raise
    :class:`~neurosym.training.stopping.TrainingInterrupted`. Under ``torchrun`` (a distributed ``context``,
    :func:`~neurosym.training.init_distributed`) every process draws the same global batch, reads, abduces and
    learns from its own share of it through DistributedDataParallel, and only rank 0 writes the checkpoint:
    the steps equal one process's on the global batch (for examples of one length). On return the reader has its
    train/eval mode back (:func:`~neurosym.pipelines.trainer.run_reader_training`)."""
    if config.learning != "abduction" or config.distill or config.pseudo_labels not in GRAMMAR_PSEUDO_LABELS:
        raise ValueError(
            f"the grammar pipeline learns by abduction, without distillation, from {GRAMMAR_PSEUDO_LABELS} pseudo-labels"
        )
    if give_up is not None:
        give_up = int_at_least(give_up, "give_up", 1)  # (0 gave up after one step, 2.5 after three)
    model = reader_module(pipeline.reader)
    if len(source) == 0:
        raise ValueError("the training source has no examples")
    _check_targets(pipeline, source)
    device = torch.device(device)
    truths: Sequence[str] | None = getattr(source, "truths", None)
    if config.pseudo_labels == "truths" and truths is None:
        raise ValueError("pseudo_labels='truths' trains on the true sentences, and this source has none")
    if truths is not None:  # (training on the truths, each step's batch is checked as it comes, too)
        first = list(range(min(len(source), TARGETS_CHECKED)))
        _check_truths_read(pipeline.reader, truths, first, (source.batch(first).given == READ).cpu().numpy())
    model.to(device)
    share = slice(context.rank, None, context.world_size) if context is not None and context.is_distributed else None
    distributed = share is not None
    forward = DistributedDataParallel(model) if distributed else model
    targets = list(source.targets)
    read_right = False  # whether any training example was read right so far
    in_training_mode = training_modes(model)

    def step(index: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        nonlocal read_right
        in_training_mode()
        drawn = config.curriculum.sample(source.lengths, index, config.batch_size, config.seed)
        indices = (drawn if share is None else drawn[share]).tolist()
        batch = source.batch(indices).to(device)
        generator = step_generator(config.seed, index)
        windows = augment_windows(batch.windows, config.augment_shift, config.augment_style, generator, batch_dims=2)
        batch = SentenceBatch(windows, batch.lengths, batch.given)
        with mixed_precision(device), _examples_named(indices):
            reading = pipeline.read(batch, forward)
        batch_targets = [targets[i] for i in indices]
        read = (batch.given == READ).cpu().numpy()  # given symbols are not the reader's
        if config.pseudo_labels == "marginal":
            found = pipeline.explain(reading, batch_targets, batch.given)
            sentences, proposals = [[c.sentence for c in f] for f in found], [[c.proposal for c in f] for f in found]
            loss = marginal_loss(reading.log_probs, sentences, pipeline.grammar.symbols, read, proposals)
            labelled = [bool(f) for f in found]
        elif config.pseudo_labels == "truths":  # the labels themselves, as a sentence read with certainty
            assert truths is not None  # checked before training
            _check_truths_read(pipeline.reader, truths, indices, read)
            labels = [truths[i] for i in indices]
            labelled = [True] * len(labels)
            loss = pseudo_label_loss(reading.log_probs, labels, pipeline.grammar.symbols, read)
        else:
            best = pipeline.abduce(reading, batch_targets, batch.given)
            labels = [None if c is None else c.sentence for c in best]
            labelled = [label is not None for label in labels]
            loss = pseudo_label_loss(reading.log_probs, labels, pipeline.grammar.symbols, read)
        if loss is None and distributed:  # every process must take part in the gradient's all-reduce
            loss = reading.log_probs[torch.isfinite(reading.log_probs)].sum() * 0.0
        # (not from the pseudo-labels: a chain's explanations need not hold the reading, nor is a true sentence the only
        # one that gives the result)
        hits = torch.tensor([sum(map(pipeline.abducer.gives, reading.values, batch_targets)), len(batch_targets)])
        if distributed:
            hits = hits.to(device)
            dist.all_reduce(hits)
        right, size = hits.tolist()
        read_right = read_right or right > 0
        if give_up is not None and index + 1 >= give_up and not read_right:
            raise NothingReadRight(index + 1)
        logs = {"max_length": config.curriculum.max_length(index), "loss": None if loss is None else loss.item()}
        return loss, {**logs, "labelled": float(np.mean(labelled)), "correct": right / size}

    def load(saved: dict[str, Any]) -> None:
        nonlocal read_right
        history = saved.get("history", [])
        read_right = any(entry.get("correct", 0) > 0 for entry in history)

    return run_reader_training(
        model, step, config, device, checkpoint, progress, time_limit, "pipeline", load=load, context=context, setup=setup
    )


def marginal_loss(
    log_probs: torch.Tensor,
    explanations: Sequence[Sequence[str]],
    vocabulary: Sequence[str],
    trained: np.ndarray,
    proposals: Sequence[Sequence[float]] | None = None,
) -> torch.Tensor | None:
    """The loss whose gradient is that of the negative log of each example's probability summed over its
    explanations, per trained position, averaged over the examples that have any: each explanation's negative
    log-probability weighed by its share of that sum (the share taken as a constant), so that its value is the
    explanations' mean cross-entropy. ``log_probs [B, T, V]`` (columns in ``vocabulary`` order), per example its
    explaining sentences, ``trained [B, T]`` the positions the reader reads; in float32, or ``log_probs``' dtype where
    it is wider. With one explanation each it is the cross-entropy of
    :func:`~neurosym.pipelines.trainer.pseudo_label_loss` (for examples of one length);
    ``None`` when no example has an explanation. An explanation the reader rules out (a symbol of log-probability
    ``-inf`` at a trained position) adds nothing to the sum, and an example whose explanations it all rules out has no
    probability to raise: it counts as one without explanations. ``proposals`` (per explanation, :attr:`Correction.proposal`)
    divide each explanation's probability by that of its drawn parts, taken as a constant: an importance-sampled
    likelihood, whose gradient weighs each explanation by the probability of what was solved for (or, for a
    chain's samples, by how often the chain was there)."""
    index = {s: i for i, s in enumerate(vocabulary)}
    terms = []
    for row, sentences in enumerate(explanations):
        if not sentences:
            continue
        length = len(sentences[0])
        mask = torch.as_tensor(trained[row, :length], device=log_probs.device)
        if not mask.any():
            continue
        symbols = torch.tensor([[index[c] for c in sentence] for sentence in sentences], device=log_probs.device)  # [C, n]
        picked = at_least_float32(log_probs[row, :length]).gather(1, rearrange(symbols, "c n -> n c"))  # [n, C]
        per_sentence = torch.where(mask[:, None], picked, torch.zeros_like(picked)).sum(dim=0)  # [C]
        possible = torch.isfinite(per_sentence.detach())  # [C] (0 · -inf made the loss NaN)
        if not possible.any():
            continue
        per_sentence = per_sentence[possible]
        weighted = per_sentence.detach()
        if proposals is not None:
            drawn = torch.tensor(proposals[row], dtype=per_sentence.dtype, device=log_probs.device)
            weighted = weighted - drawn[possible]
        terms.append(-(weighted.softmax(dim=0) * per_sentence).sum() / mask.sum())
    return torch.stack(terms).mean() if terms else None


def evaluate_grammar_pipeline(
    pipeline: GrammarPipeline,
    source: SentenceSource,
    device: torch.device | str,
    batch_size: int = 256,
    progress: bool = False,
) -> dict[str, float]:
    """``accuracy`` of the results over ``source`` and, where it has ``truths``, ``symbol`` (the fraction of
    read windows read right). The reader reads in evaluation mode and keeps its own mode and device: a module reads on
    ``device`` and is back where it was after (:func:`~neurosym.training.device.moved_to`)."""
    if len(source) == 0:
        raise ValueError("the source to evaluate has no examples")
    _check_targets(pipeline, source)
    device = torch.device(device)
    model = pipeline.reader
    with moved_to(model, device) if isinstance(model, torch.nn.Module) else nullcontext():
        return _scores(pipeline, source, device, batch_size, progress)


def _scores(
    pipeline: GrammarPipeline, source: SentenceSource, device: torch.device, batch_size: int, progress: bool
) -> dict[str, float]:
    """:func:`evaluate_grammar_pipeline`'s scores, the reader on ``device``."""
    hits, symbols = [], []
    truths = getattr(source, "truths", None)
    for indices in tqdm(reading_batches(source.lengths, batch_size), disable=not progress, desc="evaluate"):
        indices = indices.tolist()
        batch = source.batch(indices).to(device)
        with torch.no_grad(), mixed_precision(device), _examples_named(indices):
            reading = pipeline.read(batch)
        given = batch.given.cpu().numpy()
        for row, (index, sentence, value) in enumerate(zip(indices, reading.sentences, reading.values)):
            hits.append(pipeline.abducer.gives(value, source.targets[index]))
            if truths is not None:
                symbols += [a == b for a, b, g in zip(sentence, truths[index], given[row]) if g == READ]
    scores = {"accuracy": float(np.mean(hits))}
    if symbols:
        scores["symbol"] = float(np.mean(symbols))
    return scores


@contextmanager
def _examples_named(indices: Sequence[int]) -> Iterator[None]:
    """Within the block, a batch of the source's examples ``indices`` is read: :class:`NoSentenceFits` names the
    example by its index in the source, not by its row in the batch."""
    try:
        yield
    except NoSentenceFits as error:
        raise error.of_example(indices[error.row]) from None


def pipeline_timings(
    pipeline: GrammarPipeline, source: SentenceSource, device: torch.device, batch_size: int = 32, wrong: int = 100
) -> dict[str, float]:
    """Seconds the symbolic parts take on ``source``: ``decode_per_batch`` (the median over batches of
    ``batch_size`` examples of constrained decoding alone) and ``abduction_per_wrong`` (the median over up to
    ``wrong`` examples read wrong of one abduction towards their result), with ``abduced`` the fraction of
    those that abduction explained. Abduction ranks on the scores :meth:`GrammarPipeline.abduce` ranks on
    (:func:`abduction_scores`), so it searches as training does."""
    decode: list[float] = []
    abduce: list[float] = []
    explained: list[bool] = []
    for start in range(0, len(source), batch_size):
        batch = source.batch(list(range(start, min(start + batch_size, len(source))))).to(device)
        with torch.no_grad(), mixed_precision(device):
            log_probs = pipeline.log_probs(batch)
        began = time.perf_counter()
        sentences = pipeline.decoder.decode(log_probs, batch.lengths).sentences(pipeline.grammar.symbols)
        decode.append(time.perf_counter() - began)
        given, scores = batch.given.cpu().numpy(), abduction_scores(log_probs)
        for row, sentence in enumerate(sentences):
            target = source.targets[start + row]
            if len(abduce) >= wrong or pipeline.abducer.gives(pipeline.executor.value(sentence), target):
                continue
            began = time.perf_counter()
            fixed = np.flatnonzero(given[row, : len(sentence)] != READ).tolist()
            found = pipeline.abducer.abduce(sentence, scores[row, : len(sentence)], target, fixed)
            abduce.append(time.perf_counter() - began)
            explained.append(found is not None)
        if len(abduce) >= wrong and len(decode) >= 10:
            break
    return {
        "decode_per_batch": float(np.median(decode)),
        "abduction_per_wrong": float(np.median(abduce)) if abduce else float("nan"),
        "abduced": float(np.mean(explained)) if explained else float("nan"),
        "wrong_timed": len(abduce),
    }
