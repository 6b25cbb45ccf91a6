"""Adapting a trained pipeline to a new writer from results alone.

:func:`adapt_to_writer` goes on training the pipeline's reader on expressions rendered with the new writer's
training images, beside expressions replayed with the first bank's (against forgetting; with ``distill`` the
trained reader's reading of the replayed ones is kept too, :class:`~neurosym.pipelines.trainer.Anchor`), for a
fresh run of the same curriculum and learning-rate schedule. Optionally it then refits the reader to the
windows the adapted pipeline labels by abduction (:func:`~neurosym.pipelines.refit.refit_reader`), and routes
each expression to the trained or the adapted reader by a router that tells the two writers' windows apart
(:func:`~neurosym.pipelines.routing.route_readers`). Every stage checkpoints (resumable); a resume must agree
with what the stage fits.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from neurosym.data.hint import HintRecord
from neurosym.data.symbol_images import SymbolBank
from neurosym.paths import user_path
from neurosym.perception.reader import reader_module
from neurosym.perception.symbol_classifier import BACKBONES
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.refit import RefitConfig, abduced_windows, refit_reader
from neurosym.pipelines.routing import route_readers
from neurosym.pipelines.trainer import Anchor, PipelineConfig, train_pipeline
from neurosym.pipelines.windows import ConcatWindows, WindowSource
from neurosym.training.checkpoint import MAPPING, check_setup, load_checkpoint, require_kinds, weights_stamp
from neurosym.training.checks import int_at_least, positive_number
from neurosym.training.stopping import time_left

STAGE_CHECKPOINTS = {"adapt": "adapt_checkpoint.pt", "refit": "refit_checkpoint.pt", "route": "routing_checkpoint.pt"}
"""The checkpoint file of each stage, in the folder :func:`adapt_to_writer` is given."""


@dataclass(frozen=True)
class AdaptConfig:
    """What adaptation learns from and for how long. The defaults are the configuration chosen on validation
    (``benchmarks/RESULTS.md``, other writers): of plain, distilled and distilled-then-refit adaptation, the best
    new-writer validation among those that keep the first writers within 2 points; routing (``route_steps``) is
    opt-in, since it assumes one writer per expression.

    Args:
        examples: the new writer's training expressions (their results are all that is learned from).
        replay: first-bank expressions replayed beside them (default: as many as ``examples``).
        steps: training steps of the adaptation (the main run's curriculum and schedule, anew).
        learning_rate: peak learning rate (default: the main run's).
        distill: weight of keeping the trained reader's reading of the replayed expressions (0: off).
        refit_steps: steps refitting the reader to the abduced labels of its windows afterwards (0: off);
            routed, only the new writer's windows (the trained reader keeps the first bank's).
        route_steps: steps training a router between the trained and the adapted reader (0: off).
        router_backbone: the router's backbone (``"small"`` or ``"resnet18"``).
        augment_shift: pixels each refit or router window is shifted by, at most.
        seed: which expressions are drawn and how refit and router batches are drawn.
    """

    examples: int = 1000
    replay: int | None = None
    steps: int = 2400
    learning_rate: float | None = None
    distill: float = 1.0
    refit_steps: int = 1600
    route_steps: int = 0
    router_backbone: str = "small"
    augment_shift: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("examples", "steps"):
            int_at_least(getattr(self, name), name, 1)
        if self.replay is not None:
            int_at_least(self.replay, "replay", 1)
        for name in ("refit_steps", "route_steps", "augment_shift", "seed"):
            int_at_least(getattr(self, name), name, 0)
        if self.router_backbone not in BACKBONES:
            raise ValueError(f"unknown router_backbone {self.router_backbone!r}: choose one of {BACKBONES}")
        positive_number(self.distill, "distill", zero=True)
        if self.learning_rate is not None:  # infinity made every weight NaN at the first step
            positive_number(self.learning_rate, "learning_rate")


@dataclass
class Adaptation:
    """What :func:`adapt_to_writer` did: the expressions each writer's images showed (``sources``:
    ``"new_writer"`` and ``"first_bank"``, e.g. for their own batch-norm statistics) and the peak learning
    rate it used. The pipeline it was given now reads with the adapted (or routed) reader."""

    sources: dict[str, WindowSource]
    learning_rate: float

    @property
    def examples(self) -> int:
        """How many expressions the new writer's images showed."""
        return len(self.sources["new_writer"])

    @property
    def replayed(self) -> int:
        """How many expressions of the first bank's images were replayed beside them."""
        return len(self.sources["first_bank"])


def adapt_to_writer(
    pipeline: HintPipeline,
    expressions: list[HintRecord],
    new_bank: SymbolBank,
    first_bank: SymbolBank,
    training: PipelineConfig,
    adapt: AdaptConfig,
    device: torch.device,
    folder: str | os.PathLike,
    resume: bool = True,
    progress: bool = False,
    setup: Mapping[str, Any] | None = None,
    time_limit: float | None = None,
) -> Adaptation:
    """Adapt ``pipeline`` (trained on ``first_bank``'s images under ``training``) to ``new_bank``'s writer.

    ``adapt.examples`` of ``expressions`` (drawn with ``adapt.seed``; fewer where fewer are given: see
    :attr:`Adaptation.examples`) are shown with the new writer's training images, the next ``adapt.replay`` with
    the first bank's; each stage writes its checkpoint into ``folder``
    (:data:`STAGE_CHECKPOINTS`) and, with ``resume``, continues from it (else they are removed first). The adaptation's
    checkpoint keeps ``adapt``'s examples, replay and seed, the number of ``expressions``, ``setup`` (what
    ``new_bank`` was made from, e.g. the runner's bank option) and a digest of the trained reader's weights
    (:func:`~neurosym.training.checkpoint.weights_stamp`, as ``"trained_reader"``): resuming it under others, or for a
    reader trained anew since (:func:`check_adapted_reader`, before any stage runs), raises
    :class:`~neurosym.training.checkpoint.CheckpointMismatch`. SIGINT, SIGTERM or ``time_limit`` seconds (for all the
    stages together) end the stage under way with its checkpoint written and raise
    :class:`~neurosym.training.stopping.TrainingInterrupted`; the same call then continues.

    Raises:
        ValueError: no expressions; none left to replay where distillation, refitting or routing needs them; a resumed
            refit whose checkpoint fitted other windows.
    """
    started = time.perf_counter()
    replay = adapt.replay or adapt.examples
    check_adaptation_data(len(expressions), adapt)
    order = np.random.default_rng([adapt.seed, 7]).permutation(len(expressions))
    chosen = [expressions[i] for i in order[: adapt.examples]]
    replayed = [expressions[i] for i in order[adapt.examples : adapt.examples + replay]]
    sources = {
        "new_writer": WindowSource(chosen, new_bank, "train", adapt.seed + 1),
        "first_bank": WindowSource(replayed, first_bank, "train", adapt.seed),
    }
    folder = user_path(folder)
    checkpoints = {stage: folder / name for stage, name in STAGE_CHECKPOINTS.items()}
    if not resume:
        for path in checkpoints.values():
            path.unlink(missing_ok=True)
    trained_reader = weights_stamp(reader_module(pipeline.classifier))
    if resume:
        check_adapted_reader(folder, trained_reader)
    both = ConcatWindows(*sources.values())
    trained = copy.deepcopy(pipeline.classifier)  # frozen: the replay's anchor and labeller, a routed reader's first
    reader_module(trained).to(device)  # (unmoved without distillation, a routed reader read CUDA windows on the CPU)
    anchor = Anchor(reader_module(trained), np.arange(len(both)) >= len(chosen)) if adapt.distill > 0 else None
    config = replace(
        training, steps=adapt.steps, learning_rate=adapt.learning_rate or training.learning_rate, distill=adapt.distill
    )
    # what picks the windows (steps, rate and distillation are the config's; the later stages check their own)
    adaptation = {
        **(setup or {}),
        "examples": adapt.examples,
        "replay": replay,
        "seed": adapt.seed,
        "expressions": len(expressions),
        "trained_reader": trained_reader,
    }

    def left() -> float | None:
        """The seconds of ``time_limit`` left as a stage starts."""
        return time_left(time_limit, time.perf_counter() - started)

    train_pipeline(
        pipeline, both, config, device, checkpoints["adapt"], progress, time_limit=left(), anchor=anchor, setup=adaptation
    )
    if adapt.refit_steps:  # the new writer's windows as the adapted reader reads them, the replayed as the trained one
        first = HintPipeline(trained, pipeline.table, pipeline.minimal_brackets, pipeline.abduction_changes)
        labellers = [(pipeline, "new_writer")] + ([] if adapt.route_steps else [(first, "first_bank")])
        labelled = [abduced_windows(labeller, sources[writer], device) for labeller, writer in labellers]
        refit = RefitConfig(
            adapt.refit_steps, learning_rate=config.learning_rate, augment_shift=adapt.augment_shift, seed=adapt.seed
        )
        refit_reader(pipeline.classifier, labelled, refit, device, checkpoints["refit"], progress, left())
    if adapt.route_steps:
        routing = RefitConfig(adapt.route_steps, augment_shift=adapt.augment_shift, seed=adapt.seed)
        pipeline.classifier = route_readers(
            [reader_module(trained), reader_module(pipeline.classifier)], [sources["first_bank"], sources["new_writer"]], routing, device,
            checkpoints["route"], progress, adapt.router_backbone, left(),
        )  # fmt: skip
    return Adaptation(sources, config.learning_rate)


def check_adapted_reader(folder: str | os.PathLike, trained_reader: str) -> None:
    """Refuse (:class:`~neurosym.training.checkpoint.CheckpointMismatch`) the adaptation checkpoint in ``folder``
    (:data:`STAGE_CHECKPOINTS`) where it adapted another trained reader than the one whose
    :func:`~neurosym.training.checkpoint.weights_stamp` is ``trained_reader`` (e.g. the main reader trained anew since):
    its refit is stale too. Nothing to check where there is none. ``ValueError`` naming it where its ``setup`` is no
    mapping."""
    path = user_path(folder) / STAGE_CHECKPOINTS["adapt"]
    saved = load_checkpoint(path)
    if saved is None:
        return
    require_kinds(saved, {"setup": MAPPING}, path, "adapt_to_writer's adaptation")
    kept = saved.get("setup", {}).get("trained_reader")
    adapted = "another trained reader (e.g. the main one before it was trained anew)"
    if kept is None:
        adapted = "a reader it kept no digest of (written before digests were kept)"
    advice = (f"it adapted {adapted}: remove it and {STAGE_CHECKPOINTS['refit']} beside it to adapt this one, or "
              "resume with the reader it adapted")  # fmt: skip
    check_setup({"trained_reader": kept}, {"trained_reader": trained_reader}, path, advice)


def check_adaptation_data(count: int, adapt: AdaptConfig) -> None:
    """Raise ``ValueError`` unless :func:`adapt_to_writer` given ``count`` expressions shows the new writer some and,
    where a stage uses the replayed ones (distillation, the refit of the first bank's windows, routing), leaves some
    to replay (a runner checks it before training, not after)."""
    if count == 0:
        raise ValueError("adapt_to_writer needs at least one expression")
    uses_replay = adapt.distill > 0 or adapt.refit_steps > 0 or adapt.route_steps > 0
    if uses_replay and count <= adapt.examples:
        raise ValueError(
            f"{count} expressions leave none to replay after the {adapt.examples} of the new writer, and distill, "
            "refit_steps or route_steps learn from the replayed ones: give more expressions or fewer examples"
        )
