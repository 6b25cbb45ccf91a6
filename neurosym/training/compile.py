"""Compiling a model for training with ``torch.compile``."""

from __future__ import annotations

import numpy as np
import torch
from einops import rearrange
from torch import nn


def compile_for_training(model: nn.Module) -> nn.Module:
    """Compile ``model``'s call in place (``nn.Module.compile``: its ``state_dict``, and so checkpoints,
    keep their keys) with dynamic shapes, so that batches of other sequence lengths reuse one graph.

    einops keeps a registry of the array types it has met, and a compiled graph that calls einops is
    guarded on that registry's size; it is filled here with the types a training run meets (tensors,
    parameters, numpy arrays of the data pipeline), so the first call's graph is not compiled again
    when another type shows up later.

    The model's float attributes (dropout rates, the ``eps`` of its norms) are compiled in as constants:
    with dynamic shapes ``torch.compile`` would first trace them as symbolic floats, find that the
    functions they go to take no tensor in their place, and trace the whole forward a second time with
    them fixed, which doubled the compile time of a Transformer. Returns ``model``.
    """
    for value in (torch.zeros(1), nn.Parameter(torch.zeros(1)), np.zeros(1)):
        rearrange(value, "a -> a")
    model.compile(dynamic=True)
    model._compiled_call_impl = torch._dynamo.config.patch(specialize_float=True)(model._compiled_call_impl)
    return model
