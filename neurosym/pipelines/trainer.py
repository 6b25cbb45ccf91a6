"""Training the pipeline's perception from results alone, and evaluating it per test subset.

Each step draws a batch allowed by the curriculum, reads it (perception + constrained decoding),
abduces a pseudo-label sentence for every example (top-down back-search towards the known result)
and trains the classifier with cross-entropy on the windows of the examples that got one. No symbol
label is used anywhere. ``learning="reinforce"`` replaces abduction by the REINFORCE baseline.
The steps run in the library's one training loop (:func:`neurosym.training.core.run_training`): its
checkpoints are atomic and a resumed run repeats an uninterrupted one exactly (batches depend only on
``(seed, step)``; the REINFORCE baseline is saved with the checkpoint).
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from neurosym.paths import user_path
from neurosym.perception.augment import augment_windows
from neurosym.perception.batch_statistics import batch_statistics_of
from neurosym.perception.reader import Reader, reader_module
from neurosym.perception.saved_reader import check_vocabulary
from neurosym.pipelines.curriculum import Curriculum, stage_lengths
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.reinforce import reinforce_loss
from neurosym.pipelines.subsets import subset_scores
from neurosym.pipelines.windows import ConcatWindows, WindowSource, reading_batches, real_positions
from neurosym.training.checkpoint import RESUME_ADVICE, require_entries
from neurosym.training.checks import fraction, int_at_least, positive_number
from neurosym.training.core import Checkpointing, run_training
from neurosym.training.device import at_least_float32, mixed_precision, moved_to
from neurosym.training.distributed import DistributedContext
from neurosym.training.loop import SCHEDULES, schedule_factor
from neurosym.training.modes import evaluation_mode, modes_kept, training_modes
from neurosym.training.seeding import step_generator
from neurosym.training.update import Update, adam, grad_scaler

LEARNING_RULES = ("abduction", "reinforce")
#: Which symbols of a pseudo-label are trained on: those the result pins down, or all of them.
PSEUDO_LABELS = ("verified", "all", "marginal", "truths")
HINT_PSEUDO_LABELS = ("verified", "all")
"""What :func:`train_pipeline` trains on; the grammar pipeline takes :data:`GRAMMAR_PSEUDO_LABELS`."""
GRAMMAR_PSEUDO_LABELS = ("all", "marginal", "truths")


@dataclass(frozen=True)
class WindowTraining:
    """How a reader is fitted to windows: ``steps`` batches of ``batch_size`` examples, Adam at ``learning_rate``
    under ``schedule`` (``"constant"``, or ``"cosine"`` decay to zero at ``steps``); each training window shifted by
    up to ``augment_shift`` pixels (:func:`neurosym.perception.augment.augment_windows`: windows must then be images
    ``[H, W]`` or ``[C, H, W]``, else ``ValueError`` at the first batch); batches drawn from ``seed``; a
    checkpoint every ``checkpoint_every`` steps. The settings every trainer of a reader shares
    (:class:`PipelineConfig`, :class:`~neurosym.pipelines.refit.RefitConfig`), checked once here."""

    steps: int = 2000
    batch_size: int = 32
    learning_rate: float = 1e-3
    schedule: str = "constant"
    augment_shift: int = 0
    seed: int = 0
    checkpoint_every: int = 100

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "checkpoint_every"):
            int_at_least(getattr(self, name), name, 1)
        for name in ("augment_shift", "seed"):  # a seed of 2.5 failed at the first batch, deep in torch
            int_at_least(getattr(self, name), name, 0)
        positive_number(self.learning_rate, "learning_rate")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}: choose one of {SCHEDULES}")


@dataclass(frozen=True)
class PipelineConfig(WindowTraining):
    """:class:`WindowTraining` of a pipeline on expressions (``batch_size`` expressions a step), whose training
    windows are also redrawn in another hand at ``augment_style`` strength in ``[0, 1]``
    (:func:`~neurosym.perception.augment.random_style`), in the ``curriculum``'s order of lengths.
    ``pseudo_labels="all"`` trains on every symbol of a pseudo-label, ``"verified"`` only on those the
    result pins down (:meth:`HintPipeline.verified_positions`), ``"marginal"`` (grammar pipeline only) on every
    explanation found, weighted by its probability, ``"truths"`` (grammar pipeline only) on the true sentences
    themselves: the same reader and schedule supervised by the symbols' labels, a reference for what learning from
    results could reach, not learning from results. ``distill`` weighs the KL divergence from an
    :class:`Anchor`'s reading (learning without forgetting; 0 = off)."""

    augment_style: float = 0.0
    curriculum: Curriculum = field(default_factory=Curriculum)
    learning: str = "abduction"
    pseudo_labels: str = "all"
    distill: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.learning not in LEARNING_RULES:
            raise ValueError(f"unknown learning rule {self.learning!r}: choose one of {LEARNING_RULES}")
        if self.pseudo_labels not in PSEUDO_LABELS:
            raise ValueError(f"unknown pseudo_labels {self.pseudo_labels!r}: choose one of {PSEUDO_LABELS}")
        fraction(self.augment_style, "augment_style")  # (True passed as 1)
        if not isinstance(self.curriculum, Curriculum):
            raise ValueError(f"curriculum must be a Curriculum (Curriculum.none() for none), got {self.curriculum!r}")
        positive_number(self.distill, "distill", zero=True)  # NaN or infinity made every loss NaN


@dataclass(frozen=True)
class Anchor:
    """What training keeps (learning without forgetting): the frozen ``reader``'s distribution over the
    windows of the records marked in ``records`` (bool ``[R]``, one flag per record of the training source),
    e.g. the trained reader on replayed first-writer expressions while adapting to a new writer."""

    reader: nn.Module
    records: np.ndarray


def _distillation_loss(anchor: nn.Module, windows: torch.Tensor, lengths: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """KL(anchor's reading || ``log_probs [B, T, V]``) per window of ``windows [B, T, ...]`` (``lengths [B]``) -> scalar
    (float32, or the wider dtype of the two readings). A symbol the anchor rules out (``-inf``) has no share in it
    (``0 · log 0 = 0``; torch's ``kl_div`` made the loss NaN there)."""
    mask = real_positions(lengths, windows.shape[1])
    with torch.no_grad():
        target = anchor(windows[mask])
    read = log_probs[mask]
    dtype = torch.promote_types(torch.promote_types(target.dtype, read.dtype), torch.float32)
    ruled_out = target == -torch.inf
    read, target = read.to(dtype).masked_fill(ruled_out, 0.0), target.to(dtype).masked_fill(ruled_out, 0.0)
    return F.kl_div(read, target, reduction="batchmean", log_target=True)


def _windows_on(
    source: WindowSource | ConcatWindows, indices: Iterable[int], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    windows, lengths = source.batch(indices)
    return windows.to(device), lengths.to(device)


def pseudo_label_loss(
    log_probs: torch.Tensor,
    labels: Sequence[str | None],
    vocabulary: Sequence[str],
    trained: Sequence[Sequence[bool] | None] | np.ndarray | None = None,
) -> torch.Tensor | None:
    """Cross-entropy of the windows of examples with a pseudo-label: ``log_probs [B, T, V]`` (columns in
    ``vocabulary`` order) -> scalar (float32, or ``log_probs``' dtype where it is wider), ``None`` when no position is
    trained; with ``trained``, only of the positions it marks (per label, one flag per symbol, or a bool array
    ``[B, T]``)."""
    if len(labels) != len(log_probs) or (trained is not None and len(trained) != len(labels)):
        raise ValueError(f"{len(log_probs)} examples of log-probabilities and {len(labels)} labels: one label (or None) each")
    index = {s: i for i, s in enumerate(vocabulary)}
    rows, columns, classes = [], [], []
    for row, label in enumerate(labels):
        if label is None:
            continue
        if len(label) > log_probs.shape[1] or not set(label) <= index.keys():
            raise ValueError(f"label {row} ({label!r}) is longer than the {log_probs.shape[1]} windows or has symbols "
                             f"outside the vocabulary {''.join(vocabulary)!r}")  # fmt: skip
        flags = None if trained is None else trained[row]
        if trained is not None and flags is None:
            raise ValueError(f"label {row} ({label!r}) has no flags of the positions trained")
        for column, symbol in enumerate(label):
            if flags is None or flags[column]:
                rows.append(row)
                columns.append(column)
                classes.append(index[symbol])
    if not rows:
        return None
    picked = log_probs[torch.tensor(rows), torch.tensor(columns)]
    return F.nll_loss(at_least_float32(picked), torch.tensor(classes, device=picked.device))


def train_pipeline(
    pipeline: HintPipeline,
    source: WindowSource | ConcatWindows,
    config: PipelineConfig,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = False,
    time_limit: float | None = None,
    anchor: Anchor | None = None,
    setup: Mapping[str, Any] | None = None,
) -> list[dict]:
    """Train ``pipeline.classifier`` on ``source``'s records from their results; returns the history
    (one dict per step: ``step``, ``max_length``, ``loss`` (None when no example of the batch gave a
    training signal), ``labelled`` = fraction of the batch with a pseudo-label or, for REINFORCE, the
    mean reward). Resumes from ``checkpoint`` when it exists (``ValueError`` naming it where it lacks the REINFORCE
    ``baseline`` it keeps, before any of it is restored). SIGINT, SIGTERM or ``time_limit`` seconds
    end the step under way, write the checkpoint and raise
    :class:`~neurosym.training.stopping.TrainingInterrupted`. With ``config.distill > 0``, ``anchor``'s reading
    of its records' windows is kept (added loss: ``distill`` times :func:`_distillation_loss`; the anchor reads in
    evaluation mode, without gradients, and has its own train/eval mode back on return). ``setup``: what the
    reader and data were built from, kept in the checkpoint (:class:`~neurosym.training.core.Checkpointing`)."""
    if config.pseudo_labels not in HINT_PSEUDO_LABELS:
        raise ValueError(f"HintPipeline trains on {HINT_PSEUDO_LABELS} pseudo-labels, got {config.pseudo_labels!r}")
    if config.distill > 0 and (anchor is None or len(anchor.records) != len(source.records)):
        raise ValueError("config.distill > 0 needs an anchor with one flag per training record")
    anchored = anchor if config.distill > 0 else None
    model = reader_module(pipeline.classifier).to(device)
    if anchor is not None:
        anchor.reader.to(device)
    lengths = stage_lengths(source.records)
    targets = np.fromiter((r.res for r in source.records), dtype=np.int64, count=len(source.records))
    baseline = 0.0
    in_training_mode = training_modes(model)

    def step(index: int) -> tuple[torch.Tensor | None, dict[str, Any]]:
        nonlocal baseline
        in_training_mode()
        indices = config.curriculum.sample(lengths, index, config.batch_size, config.seed)
        windows, batch_lengths = _windows_on(source, indices, device)
        generator = step_generator(config.seed, index)
        windows = augment_windows(windows, config.augment_shift, config.augment_style, generator, batch_dims=2)
        with mixed_precision(device):
            reading = pipeline.read(windows, batch_lengths)
        batch_targets = targets[indices].tolist()
        if config.learning == "abduction":
            labels = pipeline.abduce(reading, batch_targets)
            trained = pipeline.verified_positions(labels, batch_targets) if config.pseudo_labels == "verified" else None
            loss = pseudo_label_loss(reading.log_probs, labels, pipeline.classifier.vocabulary, trained)
            signal = sum(label is not None for label in labels) / len(labels)
        else:
            loss, signal = reinforce_loss(
                reading.log_probs,
                batch_lengths,
                batch_targets,
                pipeline.classifier.vocabulary,
                pipeline.solver,
                baseline,
                generator,
            )
            baseline = 0.9 * baseline + 0.1 * signal
        if anchored is not None and (kept := anchored.records[indices]).any():
            rows = torch.from_numpy(kept).to(device)
            with mixed_precision(device):
                kl = _distillation_loss(anchored.reader, windows[rows], batch_lengths[rows], reading.log_probs[rows])
            loss = config.distill * kl if loss is None else loss + config.distill * kl
        logs = {"max_length": config.curriculum.max_length(index), "loss": None if loss is None else loss.item()}
        return loss, {**logs, "labelled": signal}

    def save() -> dict[str, Any]:
        return {"baseline": baseline}

    def load(saved: dict[str, Any]) -> None:
        nonlocal baseline
        baseline = saved["baseline"]

    def check(saved: dict[str, Any]) -> None:
        require_entries(saved, ["baseline"], checkpoint, "train_pipeline")

    with nullcontext() if anchor is None else evaluation_mode(anchor.reader):  # (the anchor's own mode back on return)
        return run_reader_training(
            model, step, config, device, checkpoint, progress, time_limit, "pipeline", save, load, setup=setup, check=check
        )


def run_reader_training(
    model: nn.Module,
    step: Callable[[int], tuple[torch.Tensor | None, dict[str, Any]]],
    config: Any,
    device: torch.device,
    checkpoint: str | os.PathLike | None,
    progress: bool,
    time_limit: float | None,
    description: str,
    save: Callable[[], dict[str, Any]] | None = None,
    load: Callable[[dict[str, Any]], None] | None = None,
    context: DistributedContext | None = None,
    setup: Mapping[str, Any] | None = None,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict]:
    """``config.steps`` steps ``step(i) -> (loss, logs)`` of Adam at ``config.learning_rate`` under
    ``config.schedule``, in the library's one training loop, checkpointing to ``checkpoint`` every
    ``config.checkpoint_every`` steps (with the caller's ``save``/``load`` entries and ``setup``; ``check(saved)`` may
    refuse a checkpoint to resume by raising, before any of it is restored); returns the history.
    With a distributed ``context`` the processes agree on stops and only rank 0 writes. Every module of ``model`` gets
    the train/eval mode it had back on return (the steps set training mode), also when training stops with an error.
    The checkpoint of a ``model`` that is a :class:`~neurosym.perception.reader.Reader` records its ``"vocabulary"``,
    which a resume (:func:`_of_its_vocabulary`) and :func:`~neurosym.perception.saved_reader.load_reader` check."""
    optimizer = adam(model.parameters(), config.learning_rate)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda index: schedule_factor(index, config.steps, config.schedule))
    checkpointing = None
    if checkpoint is not None:
        entries = _with_vocabulary(model, save)
        refuse = _of_its_vocabulary(model, checkpoint, check)
        checkpointing = Checkpointing(
            user_path(checkpoint), config, config.checkpoint_every, (), entries, load, setup=setup, check_extra=refuse
        )
    with modes_kept(model):
        result = run_training(
            model,
            step,
            Update(optimizer, scheduler, grad_scaler(device)),
            config.steps,
            device=device,
            checkpoint=checkpointing,
            time_limit=time_limit,
            progress=progress,
            description=description,
            context=context,
        )
    return result.history


def _with_vocabulary(model: nn.Module, save: Callable[[], dict[str, Any]] | None) -> Callable[[], dict[str, Any]] | None:
    """``save`` (a checkpoint's own entries) with the ``"vocabulary"`` of ``model`` where it is a reader: the weights of
    a reader whose vocabulary has as many symbols in another order load into it alike, and read every symbol wrong."""
    if not isinstance(model, Reader):
        return save
    return lambda: {"vocabulary": list(model.vocabulary), **(save() if save is not None else {})}


def _of_its_vocabulary(
    model: nn.Module, path: str | os.PathLike, check: Callable[[dict[str, Any]], None] | None
) -> Callable[[dict[str, Any]], None] | None:
    """``check`` (what refuses a checkpoint at ``path`` to resume) refusing also, where ``model`` is a reader, the
    checkpoint of a reader of another recorded ``"vocabulary"`` (:func:`_with_vocabulary`; one that recorded none is
    accepted) with :class:`~neurosym.training.checkpoint.CheckpointMismatch`: its weights would load alike."""
    if not isinstance(model, Reader):
        return check

    def checked(saved: dict[str, Any]) -> None:
        check_vocabulary(saved, model, f"checkpoint {path}", f"; {RESUME_ADVICE}")
        if check is not None:
            check(saved)

    return checked


WindowBatches = Callable[[int], tuple[torch.Tensor, torch.Tensor]]
"""Step index -> a batch ``(windows [B, ...] on the CPU, classes [B])``, depending only on the index."""


def fit_windows(
    model: nn.Module,
    batches: WindowBatches,
    config: Any,
    device: torch.device,
    checkpoint: str | os.PathLike | None = None,
    progress: bool = False,
    time_limit: float | None = None,
    description: str = "fit",
    save: Callable[[], dict[str, Any]] | None = None,
    load: Callable[[dict[str, Any]], None] | None = None,
    context: DistributedContext | None = None,
    check: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict]:
    """Fit a window classifier (windows -> log-probabilities) to ``batches(i)`` by cross-entropy: the one fit
    of every window classifier here (glyphs, refits, routers), by :func:`run_reader_training` (``config``:
    ``steps``, ``learning_rate``, ``schedule``, ``checkpoint_every``; ``save``, ``load`` and ``check`` as there); returns
    the history (``loss`` and ``seconds`` of training so far, over every call of a resumed fit, per step).
    With a distributed ``context`` each process learns from its share (every ``world_size``-th row, from its
    ``rank`` on) of the global batch ``batches(i)`` through DistributedDataParallel, and the logged loss is its
    share's."""
    share = slice(context.rank, None, context.world_size) if context is not None and context.is_distributed else None
    forward = DistributedDataParallel(model) if share is not None else model
    in_training_mode = training_modes(model)

    def step(index: int) -> tuple[torch.Tensor, dict[str, float]]:
        in_training_mode()
        windows, labels = batches(index)
        if share is not None:
            windows, labels = windows[share], labels[share]
        with mixed_precision(device):
            log_probs = forward(windows.to(device))
        loss = F.nll_loss(at_least_float32(log_probs), labels.to(device))
        return loss, {"loss": loss.item()}

    return run_reader_training(
        model, step, config, device, checkpoint, progress, time_limit, description, save, load, context, check=check
    )


def evaluate_pipeline(
    pipeline: HintPipeline,
    source: WindowSource | ConcatWindows,
    device: torch.device,
    batch_size: int = 256,
    progress: bool = False,
    statistics: Iterable[torch.Tensor] | None = None,
) -> dict[str, Any]:
    """Accuracy of the results per test subset (``eval`` field, HINT's subsets in the order ``I SS LS SL LL``;
    ``"all"`` for every record without one) and over every record, ``"avg"`` (HINT's "Avg.": a subset weighs by its
    size), and, for diagnosis only, the perception's symbol accuracy ``"symbol"`` and per true symbol ``"symbol_by_class"`` (``{symbol: accuracy}``).

    With ``statistics`` (batches of windows ``[n, 32, 32]``, e.g. a writer's unlabelled images from
    :meth:`WindowSource.window_batches`) the reader reads with their batch-norm statistics instead of its
    running ones (:func:`~neurosym.perception.batch_statistics.batch_statistics_of`), restored afterwards. The reader
    reads in evaluation mode (:meth:`HintPipeline.read` without gradients) and keeps its own mode and device: it reads
    on ``device`` and is back where it was after (:func:`~neurosym.training.device.moved_to`)."""
    with _reading_on(pipeline, device, statistics):
        return _scores(pipeline, source, device, batch_size, progress, "evaluate")


@contextmanager
def _reading_on(pipeline: HintPipeline, device: torch.device, statistics: Iterable[torch.Tensor] | None) -> Iterator[None]:
    """Within the block the reader is on ``device`` (:func:`~neurosym.training.device.moved_to`) and, with
    ``statistics``, reads with their batch-norm statistics, gathered there (:func:`batch_statistics_of`)."""
    model = reader_module(pipeline.classifier)
    with moved_to(model, device):  # (first: the statistics are gathered on ``device``)
        gathered = (windows.to(device) for windows in statistics) if statistics is not None else None
        with nullcontext() if gathered is None else batch_statistics_of(model, gathered):
            yield


def _scores(
    pipeline: HintPipeline,
    source: WindowSource | ConcatWindows,
    device: torch.device,
    batch_size: int,
    progress: bool,
    desc: str,
) -> dict[str, Any]:
    """:func:`evaluate_pipeline`'s scores, the reader on ``device`` (``progress``: a bar named ``desc``)."""
    hits: dict[str, list[bool]] = defaultdict(list)
    by_class: dict[str, list[bool]] = defaultdict(list)
    for indices in tqdm(reading_batches(stage_lengths(source.records), batch_size), disable=not progress, desc=desc):
        windows, lengths = _windows_on(source, indices, device)
        with torch.no_grad(), mixed_precision(device):
            reading = pipeline.read(windows, lengths)
        for index, sentence, value in zip(indices, reading.sentences, reading.values):
            record = source.records[int(index)]
            hits[record.eval or "all"].append(value == record.res)
            for position, symbol in enumerate(record.expr):
                by_class[symbol].append(position < len(sentence) and sentence[position] == symbol)
    scores: dict[str, Any] = subset_scores(hits)
    scores["symbol"] = float(np.mean([hit for flags in by_class.values() for hit in flags])) if by_class else 0.0
    scores["symbol_by_class"] = {symbol: float(np.mean(flags)) for symbol, flags in sorted(by_class.items())}
    return scores


def evaluate_pipeline_on_each(
    pipeline: HintPipeline,
    sources: Mapping[str, WindowSource | ConcatWindows],
    device: torch.device,
    batch_size: int = 256,
    statistics: Iterable[torch.Tensor] | None = None,
    progress: bool = False,
) -> dict[str, dict[str, Any]]:
    """:func:`evaluate_pipeline` of each of ``sources`` (``{name: source}``): ``{name: scores}``. With ``statistics`` the
    reader reads all of them with the batch-norm statistics of those windows, estimated once (each estimate reads every
    window of ``statistics`` through the reader, as many as reading the splits scored may take). ``progress``: a
    progress bar per source, named by it."""
    with _reading_on(pipeline, device, statistics):
        return {
            name: _scores(pipeline, source, device, batch_size, progress, f"evaluate {name}") for name, source in sources.items()
        }
