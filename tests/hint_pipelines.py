"""The tiny weakly supervised HINT problem shared by the pipeline tests: short training expressions, a
small reader and a short curriculum that learns perception from results in a few seconds."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from hint_banks import prototype_bank
from torch import nn

from neurosym.data.hint import HintRecord, main_split
from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.curriculum import Curriculum
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.trainer import PipelineConfig
from neurosym.pipelines.windows import WindowSource

TINY_TRAINING = PipelineConfig(steps=70, batch_size=12, curriculum=Curriculum(((1, 20), (3, 30), (10**9, 10**9))))
"""70 steps: single digits, then up to 3 symbols, then everything."""


def short_training_records() -> list[HintRecord]:
    """The training expressions of at most 7 symbols of the HINT split at scale 0.002 (seed 0)."""
    return [r for r in main_split(scale=0.002, seed=0, cache=False, progress=False)["train"] if len(r.expr) <= 7]


def tiny_problem() -> tuple[WindowSource, WindowSource]:
    """The short training expressions shown with the prototype bank's training images, and the first 80
    of them with its test images."""
    short = short_training_records()
    bank = prototype_bank()
    return WindowSource(short, bank, "train"), WindowSource(short[:80], bank, "test")


def tiny_pipeline(seed: int = 0) -> HintPipeline:
    """A pipeline with a small reader of the 16 HINT symbols, initialised from ``seed``."""
    torch.manual_seed(seed)
    return HintPipeline(SymbolClassifier(list(HINT_SYMBOLS), features=32, width=8))


def check_reads_in_evaluation_mode_and_keeps_training_mode(reader: nn.Module, read: Callable[[], Any]) -> None:
    """Assert that ``read()`` reads with ``reader`` in evaluation mode (its batch-norm statistics left alone, the result
    it gives with ``reader`` in evaluation mode) and leaves every module of ``reader`` in training mode, as set before."""
    reader.train()
    state = copy.deepcopy(reader.state_dict())
    result = read()
    assert all(module.training for module in reader.modules())  # (it was left in evaluation mode)
    assert all(torch.equal(value, reader.state_dict()[key]) for key, value in state.items())
    reader.eval()
    assert read() == result
