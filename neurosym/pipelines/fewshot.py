"""Learning a new concept from a few handwritten expressions and their results: glyph, role, meaning.

A trained pipeline meets a symbol it has never seen (``x``, or an operator ``a``) in a few training
expressions, each labelled only with its result. :func:`learn_concept_from_images` learns it in four
steps, none of which uses a symbol label:

1. **Spot the glyph.** The classifier's log-probabilities get one more column for the new symbol: the
   mass it does *not* give its top class, ``log(1 - max_v p_v)``. Grammar-constrained decoding with the
   new symbol in a role (number, or binary operator) then puts it where no known symbol of the role
   the grammar demands is likely, e.g. the middle window of ``5a6`` that the classifier reads as ``(``.
   The role is the one whose readings are more probable overall.
2. **Grow the perception.** A class is added to the classifier (:meth:`SymbolClassifier.add_symbol`) and
   trained on the spotted readings, with windows of replayed main-task expressions read by the old
   classifier against forgetting.
3. **Learn the meaning** from the new readings and the results: a number's value, or an operator's
   precedence and program (:func:`neurosym.pipelines.concepts.learn_concept`).
4. **Refine by abduction** with the learned semantics (the main task's trainer on the few-shot and
   replayed expressions), then learn the meaning once more from the refined readings.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
from einops import rearrange

from neurosym.data.hint import HintRecord
from neurosym.data.symbol_images import SymbolBank
from neurosym.perception.augment import augment_windows
from neurosym.perception.batch_statistics import batch_norms
from neurosym.perception.reader import reader_module
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.concepts import (
    ROLES,
    ConceptNotLearned,
    LearnedConcept,
    learn_concept,
    learn_operator_at,
    placeholder_table,
)
from neurosym.pipelines.curriculum import UNBOUNDED, Curriculum
from neurosym.pipelines.decoding import TokenRoles, constrained_decode
from neurosym.pipelines.pipeline import HintPipeline, check_batch
from neurosym.pipelines.refit import RefitConfig
from neurosym.pipelines.trainer import PipelineConfig, fit_windows, train_pipeline
from neurosym.pipelines.windows import WindowSource, real_positions
from neurosym.semantics import OperatorTable
from neurosym.training.checks import is_fraction, is_int
from neurosym.training.device import at_least_float32
from neurosym.training.modes import evaluation_mode
from neurosym.training.seeding import seeded, step_generator


@dataclass(frozen=True)
class FewShotConfig:
    """Budget of :func:`learn_concept_from_images`.

    ``rounds`` of ``glyph_steps`` supervised steps of ``glyph_batch`` windows (half from the few-shot
    expressions, half replayed) on the spotted readings, re-read by the grown classifier after each
    round; ``abduction_steps`` trainer steps of ``batch_size`` expressions (the few-shot and the
    replayed ones) with the learned semantics; Adam at ``learning_rate``; ``role`` ``"number"``,
    ``"operator"`` or ``None`` (inferred); an operator's program is induced at each of ``agreements``
    (fractions of its examples it must explain) and the one whose meaning explains the most training
    sentences is kept. Every training window (glyph and abduction steps) is shifted by up to
    ``augment_shift`` pixels and restyled at ``augment_style``
    (:func:`~neurosym.perception.augment.augment_windows`); use the main training's augmentation, since a
    classifier trained on plain windows reads its own few shots worse when they are shifted. For a concept
    whose role is in ``only_new_class`` only the new class's output row learns: the encoder, the other rows
    and the batch-norm statistics stay, so the known symbols are read exactly as before (training
    everything costs the main task a few points), but the new glyph must be told apart with the features
    the classifier already has. The default, both roles, was chosen on the few-shot validation splits of
    ``make run``'s checkpoint (average 90.1 % against 89.2 % for operators only and 84.6 % for neither);
    ``benchmarks/RESULTS.md`` gives the rows.
    """

    glyph_steps: int = 150
    glyph_batch: int = 64
    rounds: int = 2
    abduction_steps: int = 100
    batch_size: int = 16
    learning_rate: float = 1e-3
    role: str | None = None
    agreements: tuple[float, ...] = (0.95, 0.9, 0.8, 0.7, 0.6)
    seed: int = 0
    augment_shift: int = 0
    augment_style: float = 0.0
    only_new_class: tuple[str, ...] = ("operator", "number")

    def __post_init__(self) -> None:
        if self.role is not None and self.role not in ROLES:
            raise ValueError(f"unknown role {self.role!r}: choose one of {ROLES} or None")
        if not self.agreements or any(not 0 < a <= 1 for a in self.agreements):
            raise ValueError(f"agreements must be fractions in (0, 1], got {self.agreements}")
        counts = {name: getattr(self, name) for name in ("rounds", "glyph_steps", "batch_size", "glyph_batch", "abduction_steps")}
        if not all(is_int(count) for count in counts.values()) or (
            min(self.rounds, self.glyph_steps, self.batch_size) < 1
            or self.glyph_batch < 2
            or self.glyph_batch % 2
            or self.abduction_steps < 0
        ):
            raise ValueError(
                "rounds, glyph_steps and batch_size must be positive ints, glyph_batch an even int (half few-shot, half "
                f"replayed), abduction_steps >= 0, got {counts}"
            )
        if not 0 < self.learning_rate < math.inf or not is_int(self.seed) or self.seed < 0:
            raise ValueError(f"need a finite learning_rate > 0 and an int seed >= 0, got {self.learning_rate} and {self.seed!r}")
        if not set(self.only_new_class) <= set(ROLES):
            raise ValueError(f"only_new_class takes roles of {ROLES}, got {self.only_new_class}")
        if not is_int(self.augment_shift) or self.augment_shift < 0 or not is_fraction(self.augment_style):
            raise ValueError(
                f"need augment_shift >= 0 and augment_style in [0, 1], got {self.augment_shift}, {self.augment_style}"
            )


@dataclass(frozen=True)
class FewShotResult:
    """The grown ``pipeline`` (its own classifier and table), what was ``learned``, the inferred
    ``role``, and ``spotted``: the fraction of training expressions where decoding found the new glyph
    before any was insisted on (:func:`insist_on_symbol`)."""

    pipeline: HintPipeline
    learned: LearnedConcept
    role: str
    spotted: float


def with_new_symbol(log_probs: torch.Tensor) -> torch.Tensor:
    """``[..., V]`` log-probabilities -> ``[..., V + 1]``: the last class, for a symbol never seen,
    gets the mass the classifier does not give its top class, ``log(1 - max_v p_v)`` (computed in float32, or in
    ``log_probs``' dtype where it is wider: :func:`~neurosym.perception.reader.at_least_float32`)."""
    top = at_least_float32(log_probs.max(dim=-1, keepdim=True).values).exp()  # (1 - 1e-6 is 1.0 in half precision)
    return torch.cat([log_probs, torch.log1p(-top.clamp(max=1.0 - 1e-6)).to(log_probs.dtype)], dim=-1)


def _roles(vocabulary: Sequence[str], table: OperatorTable, symbol: str, role: str) -> TokenRoles:
    """Grammatical roles of ``vocabulary`` with ``symbol`` added in ``role``."""
    numbers = _same_role(table, "number", vocabulary)
    operators = _same_role(table, "operator", vocabulary)
    return TokenRoles.from_vocabulary(
        vocabulary, numbers + [symbol] * (role == "number"), operators + [symbol] * (role == "operator")
    )


def insist_on_symbol(
    sentence: str, log_probs: torch.Tensor, vocabulary: Sequence[str], symbol: str, interchangeable: Sequence[str]
) -> str:
    """``sentence`` if it uses ``symbol``; otherwise ``sentence`` with one symbol replaced by ``symbol``: among
    the ``interchangeable`` ones (those of ``symbol``'s role, so the sentence stays grammatical), the one
    whose replacement costs the least log-probability (``log_probs [len(sentence), V]``).

    Every few-shot training expression uses its new concept, so a reading without it is wrong somewhere,
    most likely where a known symbol of the same role was read instead of the unfamiliar glyph.
    """
    if symbol in sentence:
        return sentence
    index = {s: i for i, s in enumerate(vocabulary)}
    if missing := [s for s in (symbol, *interchangeable) if s not in index]:
        raise ValueError(f"symbols {missing} are not in the reader's vocabulary {list(vocabulary)}")
    costs = [
        (float(log_probs[t, index[s]] - log_probs[t, index[symbol]]), t) for t, s in enumerate(sentence) if s in interchangeable
    ]
    if not costs:
        return sentence
    position = min(costs)[1]
    return sentence[:position] + symbol + sentence[position + 1 :]


def _same_role(table: OperatorTable, role: str, vocabulary: Sequence[str]) -> list[str]:
    """The symbols of ``table`` in ``role`` that ``vocabulary`` can read."""
    known = table.numbers if role == "number" else table.operators
    return [s for s in known if s in vocabulary]


def spot_new_symbol(
    pipeline: HintPipeline, symbol: str, windows: torch.Tensor, lengths: torch.Tensor, role: str | None = None
) -> tuple[list[str], str, float]:
    """Read ``windows [B, T, 32, 32]`` (lengths ``[B]``) with ``symbol`` as an extra, never-seen symbol
    that every expression uses (:func:`insist_on_symbol`).

    Returns the readings, the role used (``role``, or when ``None`` the role, ``"number"`` or
    ``"operator"``, whose readings have the higher total log-probability) and the fraction of
    expressions where decoding found the symbol without insisting.
    """
    if symbol in pipeline.classifier.vocabulary:
        raise ValueError(f"{symbol!r} is already in the vocabulary: it is not new")
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown role {role!r}: choose one of {ROLES} or None")
    check_batch(windows, lengths)
    with torch.no_grad(), evaluation_mode(reader_module(pipeline.classifier)):  # (train mode would move batch norms)
        parts = rearrange(windows, "b t ... -> (b t) ...").split(4096)
        flat = torch.cat([at_least_float32(pipeline.classifier(part)) for part in parts])  # (float32 tied a float64 reader's)
    extended = with_new_symbol(rearrange(flat, "(b t) v -> b t v", b=windows.shape[0])).cpu()
    vocabulary = [*pipeline.classifier.vocabulary, symbol]
    best: tuple[float, list[str], str] | None = None
    for candidate in ROLES if role is None else (role,):
        decoded = constrained_decode(extended, lengths.cpu(), _roles(vocabulary, pipeline.table, symbol, candidate))
        total = float(decoded.log_prob.sum())
        if best is None or total > best[0]:
            best = (total, decoded.sentences(vocabulary), candidate)
    assert best is not None
    _, sentences, chosen = best
    spotted = float(np.mean([symbol in sentence for sentence in sentences]))
    interchangeable = _same_role(pipeline.table, chosen, vocabulary)
    insisted = [
        insist_on_symbol(sentence, scores, vocabulary, symbol, interchangeable) for sentence, scores in zip(sentences, extended)
    ]
    return insisted, chosen, spotted


def _window_labels(
    source: WindowSource, sentences: Sequence[str], vocabulary: Sequence[str]
) -> tuple[torch.Tensor, torch.Tensor]:
    """All windows of ``source`` ``[N, 32, 32]`` and the class of each in ``sentences`` ``[N]``."""
    windows, lengths = source.batch(range(len(source)))
    mask = real_positions(lengths, windows.shape[1])
    index = {s: i for i, s in enumerate(vocabulary)}
    labels = torch.tensor([index[s] for sentence in sentences for s in sentence])
    return windows[mask], labels


def _read(
    pipeline: HintPipeline,
    source: WindowSource,
    device: torch.device,
    insist: tuple[str, str] | None = None,
    chunk: int = 128,
) -> list[str]:
    """Every expression of ``source`` read by ``pipeline`` (grammar-constrained), ``chunk`` at a time, in evaluation
    mode (:meth:`HintPipeline.read` without gradients; the reader keeps its own mode); with ``insist = (symbol, role)``
    every reading uses ``symbol`` (:func:`insist_on_symbol`)."""
    reader_module(pipeline.classifier).to(device)
    vocabulary = pipeline.classifier.vocabulary
    sentences: list[str] = []
    for start in range(0, len(source), chunk):
        windows, lengths = source.batch(range(start, min(start + chunk, len(source))))
        with torch.no_grad():
            reading = pipeline.read(windows.to(device), lengths.to(device))
        if insist is None:
            sentences += reading.sentences
            continue
        symbol, role = insist
        interchangeable = _same_role(pipeline.table, role, vocabulary)
        log_probs = reading.log_probs.cpu()  # (float32 or wider, as read: rounded to float32 it tied a float64 reader's)
        sentences += [
            insist_on_symbol(sentence, scores, vocabulary, symbol, interchangeable)
            for sentence, scores in zip(reading.sentences, log_probs)
        ]
    return sentences


def _train_glyph(
    pipeline: HintPipeline,
    fewshot: tuple[torch.Tensor, torch.Tensor],
    replay: tuple[torch.Tensor, torch.Tensor],
    config: FewShotConfig,
    device: torch.device,
    round_index: int,
) -> None:
    """Cross-entropy on windows (``[N, 32, 32]`` and their classes ``[N]``), each batch half few-shot
    windows, half replayed ones, by :func:`~neurosym.pipelines.trainer.fit_windows` (no checkpoint: it is short).
    Each self-training round (``round_index``) draws its own windows and augmentations."""
    rng = np.random.default_rng((config.seed, round_index))
    half = config.glyph_batch // 2

    def batch(index: int) -> tuple[torch.Tensor, torch.Tensor]:
        picks = [(w[i], y[i]) for w, y in (fewshot, replay) for i in [rng.integers(len(w), size=half)]]
        step = round_index * config.glyph_steps + index
        generator = step_generator(config.seed, step)
        windows = torch.cat([w for w, _ in picks])
        windows = augment_windows(windows, config.augment_shift, config.augment_style, generator, batch_dims=1)
        return windows, torch.cat([y for _, y in picks])

    schedule = RefitConfig(steps=config.glyph_steps, learning_rate=config.learning_rate, schedule="constant")
    fit_windows(reader_module(pipeline.classifier).to(device), batch, schedule, device, description="glyph")


def _keep_last_row(grad: torch.Tensor) -> torch.Tensor:
    """``grad`` with every row but the last zeroed (the new class's output weights ``[F]`` or bias ``[]``)."""
    kept = torch.zeros_like(grad)
    kept[-1] = grad[-1]
    return kept


@contextmanager
def _only_new_class_learns(classifier: SymbolClassifier, enabled: bool) -> Iterator[None]:
    """Within the block only the output row of ``classifier``'s last class gets gradients and the batch-norm
    statistics stay; on leaving, every parameter learns as it did before (one frozen before stays frozen). Does nothing
    unless ``enabled``."""
    if not enabled:
        yield
        return
    parameters = list(classifier.parameters())
    learned = [parameter.requires_grad for parameter in parameters]
    norms = batch_norms(classifier)
    momenta = [layer.momentum for layer in norms]
    head = classifier.classifier
    for parameter in parameters:
        parameter.requires_grad_(False)
    head.weight.requires_grad_(True)
    head.bias.requires_grad_(True)
    hooks = [head.weight.register_hook(_keep_last_row), head.bias.register_hook(_keep_last_row)]
    for layer in norms:
        layer.momentum = 0.0
    try:
        yield
    finally:
        for hook in hooks:
            hook.remove()
        for parameter, learns in zip(parameters, learned, strict=True):
            parameter.requires_grad_(learns)
        for layer, momentum in zip(norms, momenta, strict=True):
            layer.momentum = momentum


def _learn_meaning(
    symbol: str, role: str, examples: list[tuple[str, int]], table: OperatorTable, agreements: Sequence[float]
) -> LearnedConcept:
    """:func:`learn_concept` at each of ``agreements``; the meaning that explains the most training
    sentences wins (the strictest agreement among ties). Misread expressions make some pushed-down
    examples wrong, and with few shots a handful of examples decide, so a strict agreement alone can
    find nothing; whole sentences, including those that use the symbol more than once, then judge."""
    if role == "number":
        return learn_concept(symbol, role, examples, table)
    found = [learned for learned in learn_operator_at(symbol, examples, table, agreements) if learned is not None]
    if not found:
        raise ConceptNotLearned(f"no program explains {min(agreements):.0%} of the examples of operator {symbol!r}")
    return max(found, key=lambda concept: concept.explained)


def learn_concept_from_images(
    pipeline: HintPipeline,
    symbol: str,
    records: Sequence[HintRecord],
    replay_records: Sequence[HintRecord],
    bank: SymbolBank,
    device: torch.device,
    config: FewShotConfig = FewShotConfig(),
) -> FewShotResult:
    """Learn the new ``symbol`` from the handwritten few-shot ``records`` (images from ``bank``'s train
    pool) and their results; ``replay_records`` are main-task expressions read against forgetting.

    ``pipeline`` is left unchanged; the result holds a grown copy, in evaluation mode (ready to read). Raises
    :class:`ConceptNotLearned` when no meaning explains the examples.
    """
    _check_fewshot(symbol, records, replay_records)
    if not isinstance(pipeline.classifier, SymbolClassifier):
        raise ValueError(
            f"a new concept grows the reader by a class (SymbolClassifier.add_symbol): the pipeline's reader must be a "
            f"SymbolClassifier, got {type(pipeline.classifier).__name__}"
        )
    with seeded(config.seed, device):  # (the new class's initial weights)
        source = WindowSource(records, bank, "train", config.seed)
        replay = WindowSource(replay_records, bank, "train", config.seed + 1)
        windows, lengths = source.batch(range(len(source)))
        classifier = copy.deepcopy(pipeline.classifier)
        classifier.to(device).eval()
        grown = HintPipeline(classifier, pipeline.table, pipeline.minimal_brackets, pipeline.abduction_changes)
        readings, role, spotted = spot_new_symbol(grown, symbol, windows.to(device), lengths, config.role)
        replay_readings = _read(grown, replay, device)
        classifier.add_symbol(symbol)
        vocabulary = classifier.vocabulary
        base_table = pipeline.table
        grown.set_table(placeholder_table(base_table, symbol, role))
        replayed = _window_labels(replay, replay_readings, vocabulary)
        with _only_new_class_learns(classifier, role in config.only_new_class):
            for round_index in range(config.rounds):  # self-training: the grown classifier re-reads its own few shots
                _train_glyph(grown, _window_labels(source, readings, vocabulary), replayed, config, device, round_index)
                readings = _read(grown, source, device, insist=(symbol, role))
            results = [record.res for record in records]
            learned = _learn_meaning(symbol, role, list(zip(readings, results)), base_table, config.agreements)
            grown.set_table(learned.table)
            if config.abduction_steps:
                learned = _refine(grown, symbol, role, source, results, replay_records, bank, base_table, device, config)
        return FewShotResult(grown, learned, role, spotted)


def _check_fewshot(symbol: str, records: Sequence[HintRecord], replay_records: Sequence[HintRecord]) -> None:
    """Raise ``ValueError`` unless there are few-shot ``records``, each using ``symbol``, and ``replay_records``."""
    if not records:
        raise ValueError(f"no few-shot training expression for {symbol!r}")
    without = next((i for i, record in enumerate(records) if symbol not in record.expr), None)
    if without is not None:
        raise ValueError(
            f"few-shot expression {without} (id {records[without].id!r}): expr {records[without].expr!r} does not use "
            f"{symbol!r}; every training expression of a new concept uses it"
        )
    if not replay_records:
        raise ValueError(f"no main-task expression to replay while {symbol!r} is learned: give at least one")


def _refine(
    grown: HintPipeline,
    symbol: str,
    role: str,
    source: WindowSource,
    results: Sequence[int],
    replay_records: Sequence[HintRecord],
    bank: SymbolBank,
    base_table: OperatorTable,
    device: torch.device,
    config: FewShotConfig,
) -> LearnedConcept:
    """``config.abduction_steps`` trainer steps on the few-shot expressions (``source``, with their ``results``)
    and the replayed ones with the learned meaning, then the meaning learned again from the refined readings (and
    set in ``grown``'s table)."""
    schedule = PipelineConfig(
        steps=config.abduction_steps,
        batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        curriculum=Curriculum(((UNBOUNDED, config.abduction_steps),)),
        seed=config.seed,
        augment_shift=config.augment_shift,
        augment_style=config.augment_style,
    )
    both = WindowSource([*source.records, *replay_records], bank, "train", config.seed)
    train_pipeline(grown, both, schedule, device, progress=False)
    refined = list(zip(_read(grown, source, device, insist=(symbol, role)), results))
    learned = _learn_meaning(symbol, role, refined, base_table, config.agreements)
    grown.set_table(learned.table)
    return learned
