"""Learning perception and semantics together from handwritten expressions and their results alone.

A classifier with ``K`` anonymous classes (``c0 .. c{K-1}``) is grounded in four stages, given only
the grammar's shape (numbers are single tokens; binary operators; one pair of round brackets) and
``K``; no symbol label, value or operator meaning is read:

1. **Numbers.** A one-symbol expression is a number whose value is its result: its windows, grouped
   by result, train one class per distinct result.
2. **Operators.** The middle window of a three-symbol expression is an operator. These windows are
   clustered (k-means on pixels, ``restarts`` times) into ``over_clustering`` times as many fine
   clusters as there are operator classes (``K - numbers - 2``); per fine cluster a program is induced
   from ``(left, right) -> result`` with the operands read by the classifier, fine clusters computing the
   same function merge, the functions explaining the most expressions become the operator classes, and
   the clustering whose programs explain the most expressions is kept. A window that
   exactly one cluster's program explains moves to that cluster. Then, ``operator_rounds`` times, each
   half of the operator windows is read by a classifier trained on the numbers and the other half
   (cross-fitting: it cannot memorise a window's own cluster), the programs are induced and the windows
   moved once more: the network's view of a glyph's shape purifies clusters that pixel distances mixed
   (real handwritten operators are not far apart in pixels). The classifier then learns numbers and
   operators together.
3. **Brackets and meaning.** Every training expression is read by grammar-constrained decoding, with
   the two bracket classes scored ``log(1 - max p)`` (the mass the classifier does not give a known
   glyph), and :func:`neurosym.pipelines.ground_symbols.learn_grounding` learns roles, values,
   programs and precedence from the readings. The classifier learns the readings that the grounding
   evaluates to their results.
4. **Refinement.** The pipeline's abduction trainer (:func:`~neurosym.pipelines.trainer.train_pipeline`)
   trains the perception with the learned table; the grounding is learned once more from the refined
   readings.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable, Sequence
from copy import deepcopy
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from neurosym.data.randomness import as_generator
from neurosym.layers.shape_checks import check_tensor
from neurosym.paths import user_path
from neurosym.perception.reader import Reader, reader_module
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.concepts import ConceptNotLearned
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.decoding import TokenRoles, constrained_decode
from neurosym.pipelines.fewshot import with_new_symbol
from neurosym.pipelines.ground_symbols import GroundingConfig, learn_grounding
from neurosym.pipelines.grounding import Grounding
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.refit import RefitConfig
from neurosym.pipelines.trainer import PipelineConfig, fit_windows, train_pipeline
from neurosym.pipelines.windows import WindowSource, real_positions
from neurosym.semantics.induction import induce_noisy_operator
from neurosym.training.checkpoint import check_setup, load_checkpoint, load_model_state, require_entries, save_checkpoint
from neurosym.training.checks import int_at_least, positive_number
from neurosym.training.device import moved_to
from neurosym.training.modes import evaluation_mode
from neurosym.training.seeding import seeded
from neurosym.training.stopping import time_left


@dataclass(frozen=True)
class ImageGroundingConfig:
    """Budget of :func:`learn_grounding_from_images`.

    ``classes`` anonymous classes; ``glyph_steps`` supervised steps of ``glyph_batch`` windows per
    classifier stage; operator glyphs clustered ``restarts`` times (``kmeans_iterations`` each, into
    ``over_clustering`` times as many fine clusters, merged by their programs), then
    re-read by the classifier ``operator_rounds`` times;
    expressions up to ``max_reading_length`` symbols are read in stage 3; ``programs`` says how programs
    explain their (noisy) examples (:class:`~neurosym.pipelines.ground_symbols.GroundingConfig`): up to
    ``max_program_size`` nodes, explaining ``min_agreement`` of them, lowered in steps of 0.05 down to
    ``lowest_agreement`` for an operator that no program explains so well (operands misread by a young
    classifier make a right program's examples wrong: × suffers most);
    ``refine_steps`` abduction steps of ``batch_size`` expressions (0: no refinement); Adam at
    ``learning_rate``; the classifier's ``backbone``, ``width`` and ``features``
    (:class:`~neurosym.perception.symbol_classifier.SymbolClassifier`).
    """

    classes: int = 16
    glyph_steps: int = 300
    glyph_batch: int = 128
    restarts: int = 4
    kmeans_iterations: int = 30
    over_clustering: int = 3
    operator_rounds: int = 2
    max_reading_length: int = 11
    programs: GroundingConfig = field(default_factory=lambda: GroundingConfig(min_agreement=0.8, lowest_agreement=0.5))
    refine_steps: int = 200
    batch_size: int = 32
    learning_rate: float = 1e-3
    backbone: str = "small"
    width: int = 32
    features: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        int_at_least(self.classes, "classes (a number, an operator, two brackets at least)", 4)
        for name in ("glyph_steps", "glyph_batch", "restarts", "kmeans_iterations", "over_clustering", "batch_size"):
            int_at_least(getattr(self, name), name, 1)
        for name, least in (("refine_steps", 0), ("operator_rounds", 0), ("max_reading_length", 3), ("seed", 0)):
            int_at_least(getattr(self, name), name, least)
        positive_number(self.learning_rate, "learning_rate")


@dataclass(frozen=True)
class ImageGrounding:
    """The learned ``pipeline`` (its classifier's vocabulary is the grounding's display symbols) and
    ``grounding``; ``log`` records each stage (sizes, explained fractions, seconds)."""

    pipeline: HintPipeline
    grounding: Grounding
    log: dict


def _stopwatch() -> Callable[[], float]:
    """A function that returns the seconds since its previous call (the first time: since its creation)."""
    last = [time.perf_counter()]

    def lap() -> float:
        now = time.perf_counter()
        seconds, last[0] = now - last[0], now
        return round(seconds, 1)

    return lap


def class_names(size: int) -> list[str]:
    """The anonymous class names ``c0 .. c{size-1}``."""
    return [f"c{c}" for c in range(size)]


def _lengths(source: WindowSource) -> np.ndarray:
    """Number of windows of each expression ``[N]`` (what the images show, not the symbols)."""
    return np.array([len(source.image_indices(i)) for i in range(len(source))])


def _windows_at(source: WindowSource, indices: Sequence[int] | np.ndarray, position: int) -> torch.Tensor:
    """The windows at ``position`` of the expressions at ``indices`` -> uint8 ``[n, 32, 32]``."""
    if not len(indices):
        return torch.zeros(0, 32, 32, dtype=torch.uint8)
    windows, _ = source.batch(indices)
    return windows[:, position]


def _fit(
    classifier: SymbolClassifier,
    windows: torch.Tensor,
    labels: torch.Tensor,
    config: ImageGroundingConfig,
    device: torch.device,
    seed: int,
) -> None:
    """Cross-entropy on ``windows [N, 32, 32]`` with classes ``labels [N]`` for ``glyph_steps`` steps
    (:func:`~neurosym.pipelines.trainer.fit_windows`)."""
    rng = as_generator(seed)

    def batch(index: int) -> tuple[torch.Tensor, torch.Tensor]:
        pick = torch.from_numpy(rng.integers(len(windows), size=config.glyph_batch))
        return windows[pick], labels[pick]

    schedule = RefitConfig(steps=config.glyph_steps, learning_rate=config.learning_rate, schedule="constant")
    fit_windows(classifier.to(device), batch, schedule, device, description="glyphs")


def _predict(classifier: Reader, windows: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Log-probabilities ``[N, K]`` of ``windows [N, 32, 32]`` (no gradients, CPU), read on ``device``; the classifier
    is back on its own device after (:func:`~neurosym.training.device.moved_to`)."""
    module = reader_module(classifier)
    with torch.no_grad(), moved_to(module, device), evaluation_mode(module):
        parts = [classifier(part.to(device)).float().cpu() for part in windows.split(1024)]
    return torch.cat(parts) if parts else torch.zeros(0, len(classifier.vocabulary))


def kmeans(points: torch.Tensor, clusters: int, iterations: int, seed: int) -> tuple[torch.Tensor, float]:
    """Lloyd's k-means on ``points [N, D]`` from a k-means++ start -> (assignments ``[N]``, inertia)."""
    check_tensor(points, "points")
    if points.dim() != 2 or not points.is_floating_point():
        raise ValueError(f"points must be a floating-point tensor [N, D], got {points.dtype} {list(points.shape)}")
    clusters = int_at_least(clusters, "clusters", 1)
    if len(points) < clusters:
        raise ConceptNotLearned(f"{len(points)} glyphs cannot form {clusters} clusters")
    generator = torch.Generator().manual_seed(seed)
    centres = points[torch.randint(len(points), (1,), generator=generator)]
    while len(centres) < clusters:
        distance = torch.cdist(points, centres).min(dim=1).values ** 2
        pick = torch.multinomial(distance + 1e-12, 1, generator=generator)
        centres = torch.cat([centres, points[pick]])
    for _ in range(iterations):
        assignment = torch.cdist(points, centres).argmin(dim=1)
        for k in range(clusters):
            members = points[assignment == k]
            if len(members):
                centres[k] = members.mean(dim=0)
    distance = torch.cdist(points, centres)
    assignment = distance.argmin(dim=1)
    return assignment, float(distance.min(dim=1).values.pow(2).sum())


def _programs(triples: list[tuple[int, int, int]], assignment: torch.Tensor, clusters: int, config: ImageGroundingConfig) -> list:
    """Per cluster the program :func:`induce_noisy_operator` finds for its ``(i, j, result)`` triples, from
    ``min_agreement`` down to ``lowest_agreement``, or ``None``."""
    settings = config.programs
    lowest = settings.min_agreement if settings.lowest_agreement is None else settings.lowest_agreement
    programs = []
    for k in range(clusters):
        members = [triples[i] for i in (assignment == k).nonzero().flatten().tolist()]
        programs.append(
            induce_noisy_operator(members, settings.max_program_size, settings.min_agreement, lowest) if members else None
        )
    return programs


def _explained(triples: list[tuple[int, int, int]], assignment: torch.Tensor, programs: list) -> float:
    """Fraction of triples whose cluster's program gives their result."""
    return float(
        np.mean([programs[k] is not None and programs[k](i, j) == v for k, (i, j, v) in zip(assignment.tolist(), triples)])
    )


def _move_to_programs(triples: list[tuple[int, int, int]], assignment: torch.Tensor, programs: list) -> torch.Tensor:
    """``assignment [N]`` with each triple that exactly one cluster's program explains moved to that cluster."""
    moved = assignment.clone()
    for row, (i, j, v) in enumerate(triples):
        fits = [k for k, p in enumerate(programs) if p is not None and p(i, j) == v]
        if len(fits) == 1:
            moved[row] = fits[0]
    return moved


def _merge_by_program(
    points: torch.Tensor, triples: list[tuple[int, int, int]], fine: torch.Tensor, clusters: int, config: ImageGroundingConfig
) -> tuple[torch.Tensor, list]:
    """Merge the fine clusters ``fine [N]`` whose programs compute the same function of the operands, keep the
    ``clusters`` functions that explain the most triples, and put every window of a dropped fine cluster in
    the kept cluster with the nearest centre (``points [N, D]``) -> (assignment ``[N]``, programs)."""
    programs = _programs(triples, fine, int(fine.max()) + 1, config)
    operands = sorted({i for i, _, _ in triples} | {j for _, j, _ in triples})
    by_function: dict[tuple, list[int]] = {}
    for k, program in enumerate(programs):
        if program is not None:
            by_function.setdefault(tuple(program(i, j) for i in operands for j in operands), []).append(k)
    explained = {
        function: sum(programs[k](i, j) == v for k in members for (i, j, v), f in zip(triples, fine.tolist()) if f == k)
        for function, members in by_function.items()
    }
    kept = sorted(by_function, key=lambda function: explained[function], reverse=True)[:clusters]
    if not kept:
        raise ConceptNotLearned("no program up to the size limit explains any cluster of operator glyphs")
    group = torch.full((int(fine.max()) + 1,), -1, dtype=torch.long)
    for index, function in enumerate(kept):
        group[by_function[function]] = index
    assignment = group[fine]
    centres = torch.stack([points[assignment == index].mean(dim=0) for index in range(len(kept))])
    dropped = assignment < 0
    assignment[dropped] = torch.cdist(points[dropped], centres).argmin(dim=1)
    kept_programs = [programs[by_function[function][0]] for function in kept]
    return assignment, kept_programs + [None] * (clusters - len(kept))


def _cluster_operators(
    windows: torch.Tensor, triples: list[tuple[int, int, int]], clusters: int, config: ImageGroundingConfig
) -> tuple[torch.Tensor, float]:
    """Operator class per window ``[N]`` (in ``0 .. clusters-1``) and the fraction of triples explained.

    Each restart clusters the pixels into ``over_clustering × clusters`` fine clusters (one operator's
    handwriting may form several; two operators rarely share a fine cluster), induces each one's program
    and merges the fine clusters that compute the same function (:func:`_merge_by_program`); the restart
    whose programs explain the most triples wins, and a window explained by exactly one program moves there.
    """
    points = F.avg_pool2d(windows[:, None].float() / 255.0, 2).flatten(1)
    best: tuple[float, torch.Tensor, list] | None = None
    for restart in range(config.restarts):
        fine, _ = kmeans(points, clusters * config.over_clustering, config.kmeans_iterations, config.seed * 1000 + restart)
        assignment, programs = _merge_by_program(points, triples, fine, clusters, config)
        explained = _explained(triples, assignment, programs)
        if best is None or explained > best[0]:
            best = (explained, assignment, programs)
    assert best is not None  # config.restarts >= 1
    _, assignment, programs = best
    moved = _move_to_programs(triples, assignment, programs)
    return moved, _explained(triples, moved, programs)


def _read_triples(
    classifier: SymbolClassifier, windows: torch.Tensor, results: np.ndarray, values: list[int], device: torch.device
) -> list[tuple[int, int, int]]:
    """Read three-symbol expressions ``windows [N, 3, 32, 32]``: the ``(left, right, result)`` triples with
    the operands' values."""
    log_probs = _predict(classifier, windows[:, [0, 2]].flatten(0, 1), device).view(len(windows), 2, -1)
    operands = torch.tensor(values)[log_probs[..., : len(values)].argmax(dim=-1)].tolist()
    return [(i, j, int(v)) for (i, j), v in zip(operands, results)]


def _cross_read_operators(
    classifier: SymbolClassifier,
    number_windows: torch.Tensor,
    number_labels: torch.Tensor,
    windows: torch.Tensor,
    clusters: torch.Tensor,
    config: ImageGroundingConfig,
    device: torch.device,
    repeat: int,
) -> torch.Tensor:
    """Each operator window's class ``[N]`` as read by a copy of ``classifier`` trained on the numbers and on
    the *other* half of the operator windows (``windows [N, 3, 32, 32]``, classes ``clusters [N]``): a
    network that never saw a window's own (possibly wrong) cluster reads it by its shape, so clusters that
    pixel distances mixed become purer. ``classifier`` itself is not changed."""
    numbers = int(number_labels.max()) + 1
    operators = len(classifier.vocabulary) - numbers - 2
    fold = torch.arange(len(windows)) % 2 == 1
    read = torch.empty_like(clusters)
    for held_out in (fold, ~fold):
        copy = deepcopy(classifier)
        glyphs = torch.cat([number_windows, windows[~held_out, 1]])
        _fit(copy, glyphs, torch.cat([number_labels, clusters[~held_out] + numbers]), config, device, config.seed + 10 + repeat)
        read[held_out] = _predict(copy, windows[held_out, 1], device)[:, numbers : numbers + operators].argmax(dim=-1)
    return read


def _read_with_brackets(
    classifier: SymbolClassifier,
    source: WindowSource,
    indices: Sequence[int],
    numbers: int,
    operators: int,
    device: torch.device,
) -> list[tuple[int, ...]]:
    """Class-id readings of the expressions at ``indices``: grammar-constrained decoding where classes
    ``numbers + operators`` and the next one (open, close) score ``log(1 - max p)`` over the others."""
    known = numbers + operators
    names = class_names(known + 2)
    roles = TokenRoles(tuple(names), tuple(range(numbers)), tuple(range(numbers, known)), known, known + 1)
    readings: list[tuple[int, ...]] = []
    for start in range(0, len(indices), 256):
        windows, lengths = source.batch(indices[start : start + 256])
        flat = _predict(classifier, windows.flatten(0, 1), device)[:, :known].log_softmax(dim=-1)
        scores = with_new_symbol(flat.view(*windows.shape[:2], known))
        scores = torch.cat([scores, scores[..., -1:]], dim=-1)
        tokens = constrained_decode(scores, lengths, roles).tokens.tolist()
        readings += [tuple(t for t in row if t >= 0) for row in tokens]
    return readings


def _verified_windows(
    source: WindowSource, indices: Sequence[int], readings: Sequence[tuple[int, ...]], grounding: Grounding, results: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """The windows ``[N, 32, 32]`` and classes ``[N]`` of the readings the grounding evaluates to their result."""
    values = grounding.solve(readings)
    keep = [k for k, (value, index) in enumerate(zip(values, indices)) if value == results[index]]
    if not keep:
        raise ConceptNotLearned("no reading evaluates to its result under the learned grounding")
    windows, lengths = source.batch([indices[k] for k in keep])
    mask = real_positions(lengths, windows.shape[1])
    labels = torch.tensor([c for k in keep for c in readings[k]])
    return windows[mask], labels


REFINEMENT_FIELDS = ("refine_steps", "batch_size")
"""The :class:`ImageGroundingConfig` fields that only the refinement (stage 4) reads: stages 1–3 kept under other
values are resumed."""


def stages_checkpoint(checkpoint: str | os.PathLike) -> Path:
    """Where :func:`learn_grounding_from_images` keeps stages 1–3 (the classifier and grounding they learned) beside
    the refinement's ``checkpoint``: ``checkpoint.pt`` -> ``checkpoint_stages.pt``."""
    path = user_path(checkpoint)
    return path.with_name(f"{path.stem}_stages{path.suffix}")


STAGES_ENTRIES = ("setup", "classifier", "grounding", "readings", "log")
"""The entries of the checkpoint of stages 1–3 (:func:`stages_checkpoint`) that a rerun reads back."""


def learn_grounding_from_images(
    source: WindowSource,
    device: torch.device,
    config: ImageGroundingConfig = ImageGroundingConfig(),
    checkpoint: str | os.PathLike | None = None,
    progress: bool = False,
    time_limit: float | None = None,
) -> ImageGrounding:
    """Learn a classifier over ``config.classes`` anonymous classes and its grounding from the images of
    ``source``'s expressions and their results (see the module's stages); the learned pipeline's classifier is returned
    in evaluation mode, ready to read. Raises
    :class:`~neurosym.pipelines.concepts.ConceptNotLearned` when a stage finds no meaning.

    With a ``checkpoint``, what stages 1–3 learned is written beside it once they are done (:func:`stages_checkpoint`)
    and read back by a rerun instead of learning it again (minutes; refused with
    :class:`~neurosym.training.checkpoint.CheckpointMismatch` when written for other expressions, other images of them or
    another configuration of those stages, and with ``ValueError`` naming the entries of :data:`STAGES_ENTRIES` it lacks
    when written by another program or cut short). The refinement (stage 4, most of the time) shows ``progress``, writes
    ``checkpoint`` and resumes from it; SIGINT, SIGTERM or ``time_limit`` seconds (for all the stages together: the
    refinement gets what stages 1–3 left of them) stop it with :class:`~neurosym.training.stopping.TrainingInterrupted`
    (:func:`train_pipeline`); stages 1–3 run to their end."""
    started = time.perf_counter()
    with seeded(config.seed, device):  # (the classifier's initial weights, dropout)
        results = np.array([record.res for record in source.records])
        lengths = _lengths(source)
        classifier = SymbolClassifier(class_names(config.classes), config.backbone, features=config.features, width=config.width)
        readable = np.flatnonzero(lengths <= config.max_reading_length).tolist()  # stage 3 reads them, stage 4 re-reads them
        lap = _stopwatch()
        stages = None if checkpoint is None else stages_checkpoint(checkpoint)
        setup = {
            "config": {key: value for key, value in asdict(config).items() if key not in REFINEMENT_FIELDS},
            "expressions": len(source),
            "data": zlib.crc32(results.astype(np.int64).tobytes() + "\n".join(r.expr for r in source.records).encode()),
            "images": zlib.crc32(source.images.numpy().tobytes() + _drawn_images(source).tobytes()),
        }
        saved = None if stages is None else load_checkpoint(stages)
        if saved is not None:
            require_entries(saved, STAGES_ENTRIES, stages, "learn_grounding_from_images' stages 1-3")
            check_setup(saved["setup"], setup, stages)
            load_model_state(classifier, saved["classifier"], str(stages), "classifier")
            grounding, readings, log = Grounding.from_json(saved["grounding"]), saved["readings"], saved["log"]
        else:
            grounding, readings, log = _first_stages(classifier, source, results, lengths, readable, config, device, lap)
            if stages is not None:
                save_checkpoint({"setup": setup, "classifier": classifier.state_dict(), "grounding": grounding.to_json(),
                                 "readings": readings, "log": log}, stages)  # fmt: skip

        # 4. refinement by abduction with the learned table, then the grounding of the refined readings
        classifier.vocabulary = list(grounding.symbols)
        pipeline = HintPipeline(classifier, grounding.table)
        if config.refine_steps:
            schedule = PipelineConfig(
                steps=config.refine_steps,
                batch_size=config.batch_size,
                learning_rate=config.learning_rate,
                curriculum=Curriculum(((config.max_reading_length, config.refine_steps),)),
                seed=config.seed,
            )
            left = time_left(time_limit, time.perf_counter() - started)
            train_pipeline(pipeline, source, schedule, device, checkpoint, progress, left)
            readings = read_classes(pipeline, source, readable, device)
            grounding = learn_grounding(readings, results[readable].tolist(), config.classes, config.programs)
            classifier.vocabulary = list(grounding.symbols)
            pipeline = HintPipeline(classifier, grounding.table)
        log["final"] = {"explained": float(np.mean(np.array(grounding.solve(readings)) == results[readable])), "seconds": lap()}
        classifier.eval()
        return ImageGrounding(pipeline, grounding, log)


def _drawn_images(source: WindowSource) -> np.ndarray:
    """Bank indices of the images showing every symbol of every expression of ``source``, in order ``[total symbols]``."""
    return np.concatenate([np.zeros(0, np.int64), *(source.image_indices(i) for i in range(len(source)))]).astype(np.int64)


def _first_stages(
    classifier: SymbolClassifier,
    source: WindowSource,
    results: np.ndarray,
    lengths: np.ndarray,
    readable: list[int],
    config: ImageGroundingConfig,
    device: torch.device,
    lap: Callable[[], float],
) -> tuple[Grounding, list[tuple[int, ...]], dict]:
    """Stages 1–3 (numbers, operators, brackets and meaning): ``classifier`` trained in place; the grounding learned
    from its readings of the ``readable`` expressions (up to ``max_reading_length`` symbols), those readings, and the
    stages' log."""
    log: dict = {}
    # 1. numbers: one class per result of the one-symbol expressions
    singles = np.flatnonzero(lengths == 1)
    if not len(singles):
        raise ConceptNotLearned("no one-symbol expression: the numbers' values are learned from them")
    values = sorted(set(results[singles].tolist()))
    operators = config.classes - len(values) - 2
    if operators < 1:
        raise ConceptNotLearned(f"{len(values)} one-symbol results leave no class for operators among {config.classes}")
    number_windows = _windows_at(source, singles, 0)
    number_labels = torch.tensor([values.index(v) for v in results[singles].tolist()])
    _fit(classifier, number_windows, number_labels, config, device, config.seed)
    log["numbers"] = {"expressions": len(singles), "classes": len(values), "seconds": lap()}

    # 2. operators: cluster the middle windows of three-symbol expressions
    triples_at = np.flatnonzero(lengths == 3)
    if len(triples_at) < operators:
        raise ConceptNotLearned(f"{len(triples_at)} three-symbol expressions cannot show {operators} operators")
    windows = source.batch(triples_at)[0]
    triples = _read_triples(classifier, windows, results[triples_at], values, device)
    clusters, explained = _cluster_operators(windows[:, 1], triples, operators, config)
    explained_by_round = [explained]
    for repeat in range(config.operator_rounds):
        operators_read = _cross_read_operators(
            classifier, number_windows, number_labels, windows, clusters, config, device, repeat
        )
        programs = _programs(triples, operators_read, operators, config)
        clusters = _move_to_programs(triples, operators_read, programs)
        explained_by_round.append(_explained(triples, clusters, programs))
    glyphs, glyph_labels = torch.cat([number_windows, windows[:, 1]]), torch.cat([number_labels, clusters + len(values)])
    _fit(classifier, glyphs, glyph_labels, config, device, config.seed + 1)
    log["operators"] = {"expressions": len(triples_at), "classes": operators, "explained": explained_by_round, "seconds": lap()}

    # 3. brackets and meaning from readings of the expressions
    readings = _read_with_brackets(classifier, source, readable, len(values), operators, device)
    grounding = learn_grounding(readings, results[readable].tolist(), config.classes, config.programs)
    windows, labels = _verified_windows(source, readable, readings, grounding, results)
    _fit(classifier, windows, labels, config, device, config.seed + 2)
    log["readings"] = {"expressions": len(readable), "verified": len(labels) / int(lengths[readable].sum()), "seconds": lap()}

    return grounding, readings, log


def read_classes(
    pipeline: HintPipeline, source: WindowSource, indices: Sequence[int], device: torch.device
) -> list[tuple[int, ...]]:
    """The pipeline's grammar-constrained readings of the expressions at ``indices``, as class ids, read in evaluation
    mode (:meth:`HintPipeline.read` without gradients; the reader keeps its own mode)."""
    index = {s: c for c, s in enumerate(pipeline.classifier.vocabulary)}
    reader_module(pipeline.classifier).to(device)
    readings: list[tuple[int, ...]] = []
    for start in range(0, len(indices), 256):
        windows, lengths = source.batch(indices[start : start + 256])
        with torch.no_grad():
            sentences = pipeline.read(windows.to(device), lengths.to(device)).sentences
        readings += [tuple(index[s] for s in sentence) for sentence in sentences]
    return readings


def symbol_accuracy(pipeline: HintPipeline, source: WindowSource, device: torch.device) -> tuple[float, dict[int, str]]:
    """Per-window accuracy of the classifier's argmax under a one-to-one class-to-symbol matching
    (greedy on the confusion counts, largest first), and the matching. Reads the records' symbols:
    for reports only."""
    windows, lengths = source.batch(range(len(source)))
    mask = real_positions(lengths, windows.shape[1])
    predicted = _predict(pipeline.classifier, windows[mask], device).argmax(dim=-1).tolist()
    truth = [s for record in source.records for s in record.expr]
    symbols = sorted(set(truth))
    confusion = np.zeros((len(pipeline.classifier.vocabulary), len(symbols)), dtype=np.int64)
    for c, s in zip(predicted, truth):
        confusion[c, symbols.index(s)] += 1
    matching: dict[int, str] = {}
    counts = confusion.copy()
    while counts.max() > 0:
        row, column = np.unravel_index(int(counts.argmax()), counts.shape)
        matching[int(row)] = symbols[column]
        counts[row, :] = -1
        counts[:, column] = -1
    right = sum(confusion[c, symbols.index(s)] for c, s in matching.items())
    return float(right / max(len(truth), 1)), matching


def glyph_grid(pipeline: HintPipeline, source: WindowSource, per_class: int, device: torch.device) -> np.ndarray:
    """The ``per_class`` windows read most confidently as each class -> uint8 ``[K, per_class, 32, 32]``
    (black where a class has fewer windows)."""
    windows, lengths = source.batch(range(len(source)))
    mask = real_positions(lengths, windows.shape[1])
    flat = windows[mask]
    log_probs = _predict(pipeline.classifier, flat, device)
    confidence, predicted = log_probs.max(dim=-1)
    grid = np.zeros((log_probs.shape[1], per_class, *flat.shape[1:]), dtype=np.uint8)
    for c in range(log_probs.shape[1]):
        members = (predicted == c).nonzero().flatten()
        best = members[confidence[members].argsort(descending=True)[:per_class]]
        grid[c, : len(best)] = flat[best].numpy()
    return grid


def save_glyph_grid(grid: np.ndarray, names: Sequence[str], path: str | os.PathLike) -> None:
    """Plot ``grid [K, n, H, W]`` as a picture: one row per class, labelled with ``names``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows, columns = grid.shape[:2]
    figure = Figure(figsize=(columns * 0.6 + 1, rows * 0.6))
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False)
    for r in range(rows):
        for c in range(columns):
            axes[r, c].imshow(grid[r, c], cmap="gray", vmin=0, vmax=255)
            axes[r, c].set_xticks([])
            axes[r, c].set_yticks([])
        axes[r, 0].set_ylabel(names[r], rotation=0, ha="right", va="center", fontsize=7)
    figure.savefig(path, dpi=100, bbox_inches="tight")
