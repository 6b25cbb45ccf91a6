"""Benchmark adapters: generation, official-format loaders, splits and symbol image banks.

This package knows nothing of models; it yields numpy arrays, Python records and torch Datasets. A path its functions
are given that opens with ``~`` opens with the home folder (:func:`~neurosym.paths.user_path`).

The public modules are those :data:`__all__` names, each with its own ``__all__``: ``arithmetic`` (the simple function
task), ``hint`` (HINT generation, splits and loaders), ``mathematics`` (DeepMind Mathematics), ``mnist`` (real MNIST),
``pvr`` (Pointer Value Retrieval) and ``symbol_images`` (symbol image banks); ``neurosym.data.hint`` and the others
are imported when first named. The modules beside them (``npz``, ``randomness``, ``shares``) are their helpers.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["arithmetic", "hint", "mathematics", "mnist", "pvr", "symbol_images"]


def __getattr__(name: str) -> ModuleType:
    """The public module ``name`` (``neurosym.data.hint``, ...), imported on first use: ``import neurosym.data`` alone
    imports none of them."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
