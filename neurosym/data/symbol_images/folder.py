"""Symbol banks read from disk: the official ``symbol_images/<class>/<file>.jpg`` folder, any labelled
folder of images, and ``.npz`` archives (checked by :func:`~neurosym.data.symbol_images.archive.read_bank_archive`)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from neurosym.data.symbol_images.archive import read_bank_archive
from neurosym.data.symbol_images.bank import SymbolBank, assign_pools
from neurosym.data.symbol_images.classes import BANK_FOLDERS, folder_of, require_known, token_of
from neurosym.data.symbol_images.handwriting import disjoint_splits
from neurosym.data.symbol_images.render import resize_images
from neurosym.paths import check_not_lfs_pointer, user_path
from neurosym.training.checkpoint import existing_folder

if TYPE_CHECKING:  # Pillow is imported when an image is read or written
    from PIL.Image import Image as PillowImage

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
OFFICIAL_IMAGE_SIZE = 45
"""The official release stores 45×45 JPEGs, black ink on white."""
TOOL_FOLDERS: tuple[str, ...] = ("__MACOSX",)
"""Folders that tools leave beside the class folders (macOS's zip metadata); skipped, like hidden (``.…``) folders."""
SIXTEEN_BIT_MODES: tuple[str, ...] = ("I;16", "I;16L", "I;16B", "I;16N", "I")
"""Pillow's modes of 16-bit grey images (``I``: how Pillow may open a 16-bit PNG), read as levels 0..65535."""
SIXTEEN_BIT_MAX = 65535
"""The highest 16-bit grey level (white)."""
FLOAT_MODE = "F"
"""Pillow's mode of 32-bit floating-point grey images (a float TIFF): intensities in 0..1, or grey levels 0..255."""


def _pillow() -> ModuleType:
    try:
        from PIL import Image
    except ImportError as error:  # pragma: no cover - Pillow is a dependency
        raise RuntimeError("reading or writing symbol images needs Pillow: pip install pillow") from error
    return Image


def read_image(path: str | os.PathLike, size: int | None = None) -> np.ndarray:
    """One image file as grey uint8 ``[H, W]`` (resized to ``size × size`` when given), turned as its EXIF orientation
    says (a phone's photo of a symbol, stored sideways with the tag to turn it, was read sideways).

    A Git LFS pointer in place of the image (a release cloned without Git LFS), an unreadable file (Pillow's ``OSError``, or ``SyntaxError`` for a PNG whose chunks are broken), one whose size Pillow refuses as a possible decompression bomb (over twice its
    ``MAX_IMAGE_PIXELS``), or one with transparent pixels (their grey level would be the colour they hide, often
    black: black ink on a transparent background read as a black square), raises ``ValueError`` naming it.
    """
    Image = _pillow()
    from PIL import ImageOps

    path = user_path(path)
    try:
        with Image.open(path) as stored:
            image = ImageOps.exif_transpose(stored)
            if _has_transparent_pixels(image):
                raise ValueError(
                    f"{path}: has transparent pixels, which a grey image cannot show: flatten it onto its background first"
                )
            grey = _grey_levels(image, path)
    except (OSError, SyntaxError, Image.DecompressionBombError) as error:  # (Pillow's SyntaxError: a broken PNG chunk)
        check_not_lfs_pointer(path)  # (Pillow said only that it cannot identify the image)
        raise ValueError(f"cannot read image {path}: {error}") from error
    return grey if size is None else resize_images(grey[None], (size, size))[0]


def _grey_levels(image: PillowImage, path: str | os.PathLike) -> np.ndarray:
    """``image`` as grey uint8 ``[H, W]``: 16-bit grey (:data:`SIXTEEN_BIT_MODES`) scaled from 0..65535 to 0..255
    (a grey conversion clips it at 255), float grey (:data:`FLOAT_MODE`) by :func:`_float_grey_levels`, anything else
    converted by Pillow; ``ValueError`` naming ``path`` for integer pixels outside 0..65535. The array is one's own to
    write (``np.asarray`` of a Pillow image is read-only: writing a pixel failed, and ``glyph_window`` of it warned that
    torch cannot hold a read-only array)."""
    if image.mode == FLOAT_MODE:
        return _float_grey_levels(np.asarray(image, dtype=np.float64), image.mode, path)
    if image.mode not in SIXTEEN_BIT_MODES:
        return np.array(image.convert("L"), dtype=np.uint8)
    levels = np.asarray(image).astype(np.int64)
    if levels.size and not 0 <= levels.min() <= levels.max() <= SIXTEEN_BIT_MAX:
        raise ValueError(
            f"{path}: mode {image.mode} pixels span {levels.min()}..{levels.max()}, outside the 16-bit grey levels "
            f"0..{SIXTEEN_BIT_MAX}"
        )
    return ((levels * 255 + SIXTEEN_BIT_MAX // 2) // SIXTEEN_BIT_MAX).astype(np.uint8)  # rounded to nearest


def _float_grey_levels(levels: np.ndarray, mode: str, path: str | os.PathLike) -> np.ndarray:
    """Float grey ``levels [H, W]`` as uint8, rounded to nearest: intensities in 0..1 (every pixel at most 1) times 255,
    else grey levels 0..255 as they are; ``ValueError`` naming ``path`` for a pixel that is not finite or outside
    0..255. Pillow's grey conversion truncated them: an image of intensities read black, NaN as 0, 300 as 255."""
    if not levels.size:
        return levels.astype(np.uint8)
    if not np.isfinite(levels).all():
        index = [int(i) for i in np.argwhere(~np.isfinite(levels))[0]]
        raise ValueError(f"{path}: mode {mode} pixels must be finite, got {levels[tuple(index)]} at (row, column) {index}")
    low, high = float(levels.min()), float(levels.max())
    if low < 0 or high > 255:
        raise ValueError(f"{path}: mode {mode} pixels span {low:g}..{high:g}, outside intensities 0..1 and grey levels 0..255")
    return np.rint(levels * (255 if high <= 1 else 1)).astype(np.uint8)


def _has_transparent_pixels(image: PillowImage) -> bool:
    """Whether any pixel of ``image`` (an alpha channel or a transparent palette entry) is less than opaque."""
    if "A" not in image.getbands() and "transparency" not in image.info:
        return False
    return bool(np.asarray(image.convert("RGBA"))[..., 3].min() < 255)


def write_image(path: str | os.PathLike, image: np.ndarray) -> None:
    """Write grey uint8 ``[H, W]`` (``H, W >= 1``) to ``path`` (format from the suffix), creating its folder; integer
    pixels in 0..255 are taken too, anything else (floats, which a cast would turn into a black image; an image of no
    pixels, which Pillow refused in its own words only once the folder was made) raises, as does a suffix of no format
    Pillow writes (before the folder is made)."""
    image = np.asarray(image)
    if (
        image.ndim != 2
        or not np.issubdtype(image.dtype, np.integer)
        or (image.size and not 0 <= image.min() <= image.max() <= 255)
    ):
        raise ValueError(
            f"write_image takes grey pixels [H, W] of integers in 0..255, got {image.dtype} {image.shape} (images in "
            "0..1: (image * 255).round().astype(np.uint8))"
        )
    if not image.size:
        raise ValueError(f"write_image takes an image of at least one pixel, got shape {image.shape} for {path}")
    Image = _pillow()
    path = user_path(path)
    suffix = path.suffix.lower()
    if Image.registered_extensions().get(suffix) not in Image.SAVE:  # (Pillow's "unknown file extension: " named no file)
        raise ValueError(f"cannot write image {path}: Pillow writes no image format of the suffix {suffix!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image.astype(np.uint8)).save(path)


def load_folder_bank(
    root: str | os.PathLike,
    size: int = OFFICIAL_IMAGE_SIZE,
    black_on_white: bool = True,
    symbols: list[str] | None = None,
    seed: int = 0,
) -> SymbolBank:
    """Read ``root/<class>/<file>`` images into a bank (classes named as in the release: ``times``, ``div`` …).

    Images are resized to ``size × size`` and inverted to white-on-black when ``black_on_white`` (the
    official release's convention). ``symbols`` (tokens) restricts the classes read. Pools are a seeded
    75/5/20 split per class, but for copies of one image, which go to the first pool any of them is in
    (:func:`~neurosym.data.symbol_images.handwriting.disjoint_splits`: no validation or test image is a training
    one). Hidden files and folders (``.…``) and :data:`TOOL_FOLDERS` are skipped. ``ValueError`` names a folder read
    whose name is no symbol's (:data:`~neurosym.data.symbol_images.classes.BANK_FOLDERS`; where none is, and one of them
    holds class folders, that one, to give instead), a requested symbol without a folder, and a class folder read that
    holds no image file.
    """
    root = existing_folder(root, "symbol image folder")
    images, labels, paths = [], [], []
    for class_dir in _class_folders(root, symbols):
        for file in _image_files(class_dir):
            images.append(read_image(file, size))
            labels.append(token_of(class_dir.name))
            paths.append(f"{class_dir.name}/{file.name}")
    if not images:
        raise ValueError(f"no images found under {root}/<class>/ (looked for {', '.join(IMAGE_SUFFIXES)})")
    stack = np.stack(images)
    if black_on_white:
        stack = 255 - stack
    labels_array = np.asarray(labels)
    return SymbolBank(stack, labels_array, disjoint_splits(stack, assign_pools(labels_array, seed)), np.asarray(paths))


def _class_folders(root: Path, symbols: list[str] | None) -> list[Path]:
    """The class folders of ``root`` to read, sorted by name: those of ``symbols`` (tokens), or all of them, each
    named for a symbol; hidden folders and :data:`TOOL_FOLDERS` are left out. ``ValueError`` naming ``root`` and the
    folder for a requested symbol without a folder, or for a folder read that names no symbol."""
    folders = {
        folder.name: folder
        for folder in root.iterdir()
        if folder.is_dir() and not folder.name.startswith(".") and folder.name not in TOOL_FOLDERS
    }
    if symbols is None:
        _check_not_above_a_bank(root, folders)
        require_known(root, "class folders", folders, BANK_FOLDERS)
        return [folders[name] for name in sorted(folders)]
    missing = [symbol for symbol in symbols if folder_of(symbol) not in folders]
    if missing:
        raise ValueError(
            f"{root}: no class folder for the symbols {missing} (looked for {[folder_of(s) for s in missing]}; "
            f"found {sorted(folders)})"
        )
    return [folders[name] for name in sorted({folder_of(symbol) for symbol in symbols})]


def _check_not_above_a_bank(root: Path, folders: dict[str, Path]) -> None:
    """Raise ``ValueError`` naming the folder to give where ``root``'s ``folders`` name no symbol but one of them holds
    class folders (a release's folder given for its ``symbol_images/``: its folders were named as unknown classes)."""
    if any(name in BANK_FOLDERS for name in folders):
        return
    for name in sorted(folders):
        if any(os.path.isdir(folders[name] / class_folder) for class_folder in BANK_FOLDERS):  # (False where unreadable)
            raise ValueError(
                f"{root}: holds no class folder but {sorted(folders)}; give the folder {folders[name]}, which holds them"
            )


def _image_files(class_dir: Path) -> list[Path]:
    """The image files of one class folder, sorted, hidden ones (``.…``, such as macOS's ``._x.jpg`` metadata) left
    out; ``ValueError`` naming the folder when it holds none (its symbol would be left out of the bank)."""
    files = sorted(f for f in class_dir.iterdir() if f.is_file() and _is_image_name(f.name))
    if not files:
        raise ValueError(f"{class_dir}: class folder holds no images (looked for {', '.join(IMAGE_SUFFIXES)})")
    return files


def _is_image_name(name: str) -> bool:
    """Whether a folder bank reads a file of this name: one of :data:`IMAGE_SUFFIXES` (any case), not hidden (``.…``)."""
    return PurePosixPath(name).suffix.lower() in IMAGE_SUFFIXES and not name.startswith(".")


def folder_image_problem(path: str, symbol: str) -> str | None:
    """What keeps :func:`load_folder_bank` from reading the file ``path`` (relative to its folder) as an image of
    ``symbol``: a path that is not ``<class>/<file>`` written plainly, a file it skips (hidden, or without an image
    suffix), or a class folder of another symbol than ``symbol`` (``times/`` holds ``*``); ``None`` when it reads it so.
    A ``symbol`` that names no class folder raises :func:`~neurosym.data.symbol_images.classes.folder_of`'s
    ``ValueError`` whatever the path: no path is an image of it."""
    folder, _, name = path.partition("/")
    if folder == folder_of(symbol) and "/" not in name and _is_image_name(name):
        return None  # (a release asks this of each of its images: the path is split only to name a problem)
    parts = PurePosixPath(path).parts
    if len(parts) != 2 or PurePosixPath(path).as_posix() != path or not _is_image_name(parts[1]):
        return (
            f"{path!r} is no image file of a class folder that a bank reads (<class>/<file>, the file not hidden and "
            f"ending in one of {', '.join(IMAGE_SUFFIXES)})"
        )
    return f"{path!r} is an image of {token_of(parts[0])!r} (its class folder), not of {symbol!r} ({folder_of(symbol)}/)"


def load_npz_bank(path: str | os.PathLike, seed: int = 0, symbols: list[str] | None = None) -> SymbolBank:
    """Read a bank from an ``.npz`` with ``images`` uint8 ``[N, S, S]`` (white on black) and ``labels`` ``[N]``.

    Its own ``splits`` array (``train``/``val``/``test``) is used when present, otherwise a seeded
    75/5/20 split; either way copies of one image go to the first pool any of them is in
    (:func:`~neurosym.data.symbol_images.handwriting.disjoint_splits`: the shipped archive read so held 23 validation
    and test images that are training images too). Its ``sources`` when present, otherwise the file's name.
    ``symbols`` (tokens) restricts the labels kept (``ValueError`` naming those it holds no image of). The archive is
    checked first: a corrupt file, a missing array, a wrong shape or dtype, an unknown label or arrays of different
    lengths raise a one-line ``ValueError`` naming the file.
    """
    path = user_path(path)
    arrays = read_bank_archive(path)
    labels = arrays["labels"]
    pools = disjoint_splits(arrays["images"], arrays["splits"] if "splits" in arrays else assign_pools(labels, seed))
    sources = arrays.get("sources", np.full(len(labels), path.stem))
    paths = np.asarray([f"{folder_of(label)}/{path.stem}_{i}.png" for i, label in enumerate(labels.tolist())])
    bank = SymbolBank(arrays["images"], labels, pools, paths, sources)
    if symbols is None:
        return bank
    tokens = [token_of(folder_of(symbol)) for symbol in symbols]  # ("×" is "*", as a folder bank reads it)
    missing = [symbol for symbol, token in zip(symbols, tokens) if token not in bank.symbols]
    if missing:
        raise ValueError(f"{path}: holds no image of the symbols {missing} (it has {bank.symbols})")
    return bank.subset(tokens)


def write_folder_bank(bank: SymbolBank, root: str | os.PathLike, size: int = OFFICIAL_IMAGE_SIZE) -> None:
    """Write every image of ``bank`` to ``root/<path>`` in the release's format: ``size × size`` black on white.

    Raises ``ValueError``, before writing anything, when a path of ``bank`` would name a file outside ``root``."""
    root = user_path(root)
    targets = [_inside(root, relative) for relative in bank.paths.tolist()]
    images = 255 - resize_images(bank.images, (size, size))
    for image, target in zip(images, targets):
        write_image(target, image)


def _inside(root: Path, relative: str) -> Path:
    """``root / relative`` when ``relative`` names a file inside ``root`` (relative, no ``..``, no ``\\``), else ``ValueError``."""
    parts = PurePosixPath(relative).parts
    if not parts or relative.startswith("/") or ".." in parts or "\\" in relative:
        raise ValueError(f"bank path {relative!r} does not name a file inside {root} (empty, absolute, or holding '..' or '\\')")
    return root / relative
