"""Deferred initialisation as torch's FSDP and similar tools do it: a module built on the ``meta`` device (shapes only)
is materialised by ``to_empty`` and initialised by every submodule's ``reset_parameters``."""

import math

import torch
from torch import nn


def reset_every_module(module: nn.Module, seed: int) -> None:
    """Call every submodule's ``reset_parameters``, parents first, from ``seed``."""
    torch.manual_seed(seed)
    for submodule in module.modules():
        reset = getattr(submodule, "reset_parameters", None)
        if reset is not None:
            reset()


def materialised(module: nn.Module, seed: int) -> nn.Module:
    """``module`` (built on the meta device) materialised on the CPU with NaN in every floating parameter and buffer
    (what uninitialised memory may hold), then reset by every module from ``seed``."""
    module.to_empty(device="cpu")
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            if tensor.is_floating_point():
                tensor.fill_(math.nan)
    reset_every_module(module, seed)
    return module
