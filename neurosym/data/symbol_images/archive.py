"""Checked reading of symbol bank archives (``.npz``): every problem is one ``ValueError`` naming the file."""

from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from neurosym.data.npz import UNREADABLE_NPZ
from neurosym.data.symbol_images.bank import POOLS
from neurosym.data.symbol_images.classes import BANK_LABELS, require_known, token_of
from neurosym.paths import check_not_lfs_pointer
from neurosym.training.checkpoint import existing_file

ARCHIVE_ARRAYS: tuple[str, ...] = ("images", "labels", "splits", "sources")
"""The arrays a bank archive may hold: ``images`` and ``labels`` always, ``splits`` and ``sources`` optionally."""


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def read_bank_archive(path: str | os.PathLike, required: Sequence[str] = ("images", "labels")) -> dict[str, np.ndarray]:
    """Read and check a bank archive; returns the arrays of :data:`ARCHIVE_ARRAYS` it holds.

    ``images`` uint8 ``[N, S, S]`` (square, white ink on black, ``N ≥ 1``); ``labels`` ``[N]`` from
    :data:`~neurosym.data.symbol_images.classes.BANK_LABELS` (release folder names such as ``times`` are
    mapped to their tokens); ``splits`` ``[N]`` from ``train``/``val``/``test``; ``sources`` ``[N]``
    strings. ``required`` names the arrays that must be present. A missing file raises
    ``FileNotFoundError``; a Git LFS pointer in place of the archive, an unreadable file, a missing array, a wrong
    shape or dtype, an unknown label or split, or arrays of different lengths raise a one-line ``ValueError`` naming
    the file.
    """
    path = existing_file(path, "symbol bank archive")
    if not zipfile.is_zipfile(path):  # numpy would try it as a pickle and advise loading it unsafely
        check_not_lfs_pointer(path)
        raise ValueError(f"{path}: not a readable .npz archive (not a zip of named arrays, as numpy.savez writes)")
    try:
        archive = np.load(path, allow_pickle=False)
        with archive:
            arrays = {name: archive[name] for name in ARCHIVE_ARRAYS if name in archive.files}
            present = sorted(archive.files)
    except UNREADABLE_NPZ as error:
        raise ValueError(f"{path}: not a readable .npz archive ({_one_line(error)})") from None
    missing = [name for name in dict.fromkeys(("images", "labels", *required)) if name not in arrays]  # (every bank
    if missing:  # holds its images and labels: a `required` without them failed on a bare KeyError)
        raise ValueError(f"{path}: lacks the arrays {missing} (has {present})")
    if odd := [name for name, array in arrays.items() if not isinstance(array, np.ndarray)]:  # (numpy gives bytes)
        raise ValueError(f"{path}: {odd} are no arrays (members not written as .npy data, as numpy.savez writes them)")
    return _checked(path, arrays)


def _checked(path: Path, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    images = arrays["images"]
    if images.ndim != 3 or images.dtype != np.uint8 or min(images.shape) < 1 or images.shape[1] != images.shape[2]:
        raise ValueError(
            f"{path}: images must be uint8 [N, S, S] (square) with N, S >= 1, got {images.dtype} {list(images.shape)}"
        )
    for name in ARCHIVE_ARRAYS[1:]:
        if name not in arrays:
            continue
        array = arrays[name]
        if array.dtype.kind not in "USiu" or array.shape != (len(images),):
            raise ValueError(
                f"{path}: {name} must be [{len(images)}] strings (one per image), got {array.dtype} {list(array.shape)}"
            )
        try:
            arrays[name] = array.astype(str)
        except UnicodeDecodeError:  # (numpy decodes bytes as ASCII)
            raise ValueError(f"{path}: {name} hold bytes that are no ASCII text; store them as str") from None
    arrays["labels"] = np.asarray([token_of(label) for label in arrays["labels"].tolist()], dtype=str)
    for name, allowed in (("labels", BANK_LABELS), ("splits", POOLS)):
        if name in arrays:
            require_known(path, name, arrays[name].tolist(), allowed)
    return arrays
