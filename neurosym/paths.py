"""The paths a user gives (a function's argument, an option, an environment variable), read as a shell reads them,
and the text of the files they name, as other systems and editors leave it (:func:`read_user_text`)."""

from __future__ import annotations

import codecs
import os
from pathlib import Path

LFS_POINTER_START = b"version https://git-lfs.github.com/spec/"
"""How a Git LFS pointer file begins: what a clone without Git LFS (or a download of the repository's page) holds in
place of a large file."""


def user_path(path: str | os.PathLike) -> Path:
    """``path`` as a user gave it, with a leading ``~`` or ``~user`` the home folder, as a shell expands it (where no
    shell does: a Python call, a quoted option, a config or env file). A ``~user`` of no known user stays as written
    (``Path.expanduser`` raised). The path returned never starts with ``~``, so that it names the same file when given
    again: a folder named ``~`` (given as ``./~``, which a shell leaves as it is) comes back absolute.
    ``TypeError`` for what is no path."""
    expanded = Path(os.path.expanduser(path))
    return expanded.absolute() if expanded.parts[:1] and expanded.parts[0].startswith("~") else expanded


def check_not_lfs_pointer(path: str | os.PathLike, data: bytes | None = None, error: type[ValueError] = ValueError) -> None:
    """Raise ``error`` naming ``path`` where the file is a Git LFS pointer (:data:`LFS_POINTER_START`) rather than the
    file it stands for: read as data, its three lines were a question without an answer, JSON that is not, an image
    Pillow cannot identify, with nothing to say why. ``data`` are the file's bytes (or its first ones), read here where
    not given (a file that cannot be read is no pointer to this check: the reader's own error tells why)."""
    if data is None:
        try:
            with open(user_path(path), "rb") as file:
                data = file.read(len(LFS_POINTER_START))
        except OSError:
            return
    if data.startswith(LFS_POINTER_START):
        raise error(
            f"{path}:1: a Git LFS pointer, not the file it stands for; fetch the file itself (git lfs pull, in the "
            "repository it was cloned from, or the release's download)"
        )


def utf8_text(path: str | os.PathLike, data: bytes, kind: str) -> str:
    """``data``, the bytes of the file ``path``, as UTF-8 text without the byte-order mark a Windows editor opens it
    with; ``UnicodeError`` (a ``ValueError``) naming the file and the line and column of the first byte that is no
    UTF-8 (a ``UnicodeDecodeError`` named neither), and saying to save the ``kind`` (e.g. ``"grammar"``) as UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise undecodable(path, data, error, kind) from None


def undecodable(path: str | os.PathLike, data: bytes, error: UnicodeDecodeError, kind: str) -> UnicodeError:
    """The error :func:`utf8_text` raises for ``error``, met decoding ``data`` (the file ``path``'s bytes) as UTF-8
    after its byte-order mark, if any: its line and column as an editor shows them (the column counts characters, not
    the mark)."""
    mark = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    start = error.start + len(mark)  # (the decoder counts after the mark)
    line_start = data.rfind(b"\n", 0, start) + 1
    before = data[line_start:start].removeprefix(mark if line_start == 0 else b"")  # (UTF-8: the error is after it)
    line, column = data.count(b"\n", 0, start) + 1, len(before.decode("utf-8")) + 1
    return UnicodeError(
        f"{path}:{line}:{column}: byte 0x{data[start]:02x} is not UTF-8 text ({error.reason}); save the {kind} as UTF-8"
    )


def read_user_text(path: str | os.PathLike, kind: str) -> str:
    """The UTF-8 text of the file ``path`` (:func:`user_path`), its byte-order mark skipped and its line ends as they
    are; ``ValueError`` naming the file for a Git LFS pointer (:func:`check_not_lfs_pointer`) and, with the line and
    column, for bytes that are no UTF-8 (:func:`utf8_text`, which names the ``kind`` of file)."""
    data = user_path(path).read_bytes()
    check_not_lfs_pointer(path, data)
    return utf8_text(path, data, kind)
