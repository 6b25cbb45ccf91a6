"""A training run with data-loading workers, for the tests that stop it with a signal sent to its process group:
``python interrupted_training.py FOLDER WORKERS START_METHOD`` trains a linear model on :class:`SlowSquares` with a
checkpoint ``FOLDER/run.pt``, writes ``FOLDER/ready`` at step 3 and, stopped, prints the stop to stderr and exits
with its status (as ``neurosym COMMAND`` does)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import Dataset

from neurosym.training import DistributedContext, TrainConfig, TrainingInterrupted, train

MAX_STEPS = 10_000
READY_AT = 3
"""The step after which the run says it is under way (its workers are started and have read batches)."""


class SlowSquares(Dataset):
    """64 pairs ``(x [4], x.sum() ** 2)``, each taking ``seconds`` to read: the main process waits for its workers
    (where a dead worker is found)."""

    def __init__(self, seconds: float = 0.03) -> None:
        self.seconds = seconds

    def __len__(self) -> int:
        return 64

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.seconds)
        x = torch.full((4,), index / 64)
        return x, x.sum() ** 2


def main(folder: Path, workers: int) -> int:
    """Train until stopped; the stop's exit status."""
    steps: list[int] = []

    def loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        steps.append(1)
        if len(steps) == READY_AT:
            (folder / "ready").touch()
        x, y = batch
        return ((model(x).squeeze(-1) - y) ** 2).mean()

    config = TrainConfig(
        max_steps=MAX_STEPS, batch_size=4, eval_every=MAX_STEPS, checkpoint=folder / "run.pt", num_workers=workers
    )
    try:
        train(nn.Linear(4, 1), SlowSquares(), loss, config, DistributedContext(0, 1, 0, torch.device("cpu")))
    except TrainingInterrupted as stop:
        print(stop, file=sys.stderr)
        return stop.exit_status
    return 0


if __name__ == "__main__":
    torch.multiprocessing.set_start_method(sys.argv[3])
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))
