"""``torch.compile`` on first use, with the eager route as the way out when compiling is not possible."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import torch

R = TypeVar("R")


class LazilyCompiled(Generic[R]):
    """``function`` compiled by ``torch.compile`` on its first call (a C++ compiler on the CPU, Triton on
    CUDA; every new shape, dtype or device compiles once, later calls reuse the kernels).

    Calling it returns the compiled function's result, or None when compilation fails here: the first
    failure warns (naming ``what``), and every later call returns None at once, so the caller runs its
    eager route instead.
    """

    def __init__(self, function: Callable[..., R], what: str) -> None:
        self.function, self.what = function, what
        self.compiled: Callable[..., R] | None = None
        self.failed = False

    def __call__(self, *args: Any) -> R | None:
        if self.failed:
            return None
        if self.compiled is None:
            self.compiled = torch.compile(self.function)
        try:
            return self.compiled(*args)
        except Exception as error:  # noqa: BLE001 — whatever stops the compiler, the eager route computes the same
            self.failed = True
            warnings.warn(
                f"torch.compile could not build {self.what} ({type(error).__name__}: {error}); the eager route is used instead",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
