"""Supervised classification on in-memory tensors, trained by the shared loop :func:`neurosym.training.train`.

:func:`fit_classifier` is a thin adapter: the training set is a dataset of row indices whose collate
function gathers a whole batch from the stored tensors at once, and the loss is cross-entropy of the model
on ``prepare(inputs)``. Optimiser, warm-up and cosine schedule, mixed precision, checkpoints and resume
(at the same step and data order) are the loop's, configured by its :class:`~neurosym.training.TrainConfig`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn
from torch.utils.data import Dataset

from neurosym.training.checkpoint import tensor_stamp
from neurosym.training.checks import ignored_option
from neurosym.training.device import at_least_float32, mixed_precision, moved_to
from neurosym.training.distributed import DistributedContext
from neurosym.training.loop import RUN_TIME_FIELDS, TrainConfig, TrainResult, train
from neurosym.training.modes import evaluation_mode

Prepare = Callable[[torch.Tensor], torch.Tensor]
"""Turns a batch of stored inputs (already on the device) into model inputs, e.g. uint8 -> float."""

RUN_INDEPENDENT_FIELDS = RUN_TIME_FIELDS
"""Configuration fields that may change between an interrupted run and its resumption."""


def identity(batch: torch.Tensor) -> torch.Tensor:
    """The default :data:`Prepare`: use stored inputs as they are."""
    return batch


class RowIndices(Dataset):
    """The row numbers ``0 .. size-1`` of in-memory tensors; item ``i`` is ``i``."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> int:
        return index


class GatherRows:
    """The collate function of :func:`fit_classifier`: rows ``[B]`` (a list of row numbers) -> ``(inputs[rows],
    labels[rows])``, ``[B, ...]`` and ``[B]``. A class, not a closure, so that it pickles into data-loading workers
    started by ``spawn`` or ``forkserver`` (macOS's and Windows' default), which a local function failed to."""

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor) -> None:
        self.inputs, self.labels = inputs, labels

    def __call__(self, rows: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.tensor(rows)
        return self.inputs[index], self.labels[index]


def fit_classifier(
    model: nn.Module,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    config: TrainConfig,
    device: torch.device,
    prepare: Prepare = identity,
) -> TrainResult:
    """Train ``model`` with cross-entropy on ``inputs [N, ...]`` and class indices ``labels [N]`` (any integer
    dtype; kept on the CPU; each
    batch moves to ``device`` and goes through ``prepare`` there) for ``config.max_steps`` updates.

    With ``config.checkpoint`` set, the loop writes a checkpoint every ``config.eval_every`` steps and at
    the end, and resumes an existing one; a checkpoint written with another configuration (other than
    :data:`RUN_INDEPENDENT_FIELDS`) or on other ``inputs`` or ``labels`` (the checkpoint keeps each one's shape,
    dtype and a digest of its values: :func:`~neurosym.training.checkpoint.tensor_stamp`) is refused with
    :class:`~neurosym.training.checkpoint.CheckpointMismatch`. Returns the loop's :class:`TrainResult` (its
    ``history`` holds the training loss every ``config.eval_every`` steps and at the last, with or without a
    checkpoint). Nothing is evaluated, so ``config.patience`` must be
    None (``ValueError``).
    """
    if config.patience is not None:  # (no score to stop on: every step was trained)
        raise ignored_option("patience", config.patience, "training with an evaluate function", "fit_classifier")
    if len(inputs) != len(labels) or len(inputs) == 0:
        raise ValueError(f"need as many labels as inputs (and at least one): {len(inputs)} vs {len(labels)}")
    if labels.dim() != 1 or labels.dtype.is_floating_point or labels.dtype.is_complex or labels.dtype == torch.bool:
        raise ValueError(f"labels must be class indices: an integer tensor [N], got {labels.dtype} {list(labels.shape)}")

    def loss_fn(network: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        batch_inputs, targets = batch
        return nn.functional.cross_entropy(at_least_float32(network(prepare(batch_inputs))), targets.long())

    context = DistributedContext(rank=0, world_size=1, local_rank=0, device=device)
    rows = RowIndices(len(inputs))
    setup = {"inputs": tensor_stamp(inputs), "labels": tensor_stamp(labels)} if config.checkpoint else None
    return train(
        model,
        rows,
        loss_fn,
        config,
        context,
        collate_fn=GatherRows(inputs, labels),
        resume_may_change=RUN_INDEPENDENT_FIELDS,
        setup=setup,
    )


@torch.no_grad()
def predict(
    model: nn.Module, inputs: torch.Tensor, device: torch.device, prepare: Prepare = identity, batch_size: int = 1024
) -> torch.Tensor:
    """Arg-max class of every input: ``inputs [N, ...]`` -> ``[N]`` long on the CPU, read on ``device`` in evaluation
    mode (no dropout: the same classes at every call); ``model`` gets its device back after (:func:`moved_to`: a model
    spread over several devices is refused) and each of its modules its own train/eval mode."""
    outputs = []
    with moved_to(model, device), evaluation_mode(model):
        for chunk in torch.split(inputs, batch_size):
            with mixed_precision(device):
                outputs.append(model(prepare(chunk.to(device))).argmax(-1).cpu())
    return torch.cat(outputs) if outputs else torch.zeros(0, dtype=torch.long)


def accuracy(
    model: nn.Module,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    device: torch.device,
    prepare: Prepare = identity,
    batch_size: int = 1024,
) -> float:
    """Fraction of ``inputs [N, ...]`` whose predicted class equals ``labels [N]``; ``ValueError`` for labels of another
    shape (``[N, 1]`` was compared with every prediction, ``[N, N]`` pairs, and one label with all of them)."""
    if len(inputs) == 0:
        raise ValueError("accuracy of an empty set is undefined")
    if labels.shape != (len(inputs),):
        raise ValueError(f"labels must be one class per input, [{len(inputs)}], got {list(labels.shape)}")
    return (predict(model, inputs, device, prepare, batch_size) == labels).double().mean().item()
