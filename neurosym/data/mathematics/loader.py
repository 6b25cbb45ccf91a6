"""Read DeepMind Mathematics files in the released layout, validating every line.

Layout: ``<root>/<regime>/<area>__<module>.txt`` with regimes ``train-easy``, ``train-medium``,
``train-hard`` (or ``train``), ``interpolate`` and ``extrapolate``; each file alternates question and
answer lines. A file saved on Windows (``"\r\n"`` line ends, a UTF-8 byte-order mark), one without a final line end
and one with blank lines after its last answer read as the file without them; a malformed file (a Git LFS pointer
too) raises :class:`MathematicsFormatError` naming the file and line.
"""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass
from pathlib import Path

from neurosym.paths import check_not_lfs_pointer, user_path
from neurosym.training.checkpoint import existing_file, not_a_folder
from neurosym.training.checks import int_at_least

MAX_QUESTION_LENGTH = 160
"""The most characters a question may have (DeepMind's generator's limit); a longer one in a file is refused."""
MAX_ANSWER_LENGTH = 30
"""The most characters an answer may have (DeepMind's generator's limit); a longer one in a file is refused."""
_RELEASE_REGIMES = ("train-easy", "train-medium", "train-hard", "interpolate", "extrapolate")
ALPHABET: str = "".join(chr(code) for code in range(32, 127))
"""The dataset's 95 characters: printable ASCII, space included."""
_OUTSIDE_ALPHABET = re.compile(f"[^{re.escape(ALPHABET)}]")
_WIDE_BYTE_ORDER_MARKS = {  # (UTF-32-LE's mark begins with UTF-16-LE's: it is looked for first)
    "UTF-32": codecs.BOM_UTF32_LE,
    "UTF-32 (big-endian)": codecs.BOM_UTF32_BE,
    "UTF-16": codecs.BOM_UTF16_LE,
    "UTF-16 (big-endian)": codecs.BOM_UTF16_BE,
}


class MathematicsFormatError(ValueError):
    """A data file that does not follow the released format; the message names file and line."""


@dataclass(frozen=True)
class MathExample:
    """One question with its answer, and where it comes from (``module`` is the file stem)."""

    question: str
    answer: str
    module: str
    regime: str


def check_module_name(module: object) -> str:
    """``module`` if it is a module name (a file stem like ``arithmetic__mixed``), else ``ValueError``: a name with
    a path in it would read another folder's file under this module's name."""
    if not (isinstance(module, str) and re.fullmatch(r"\w+", module, re.ASCII)):
        raise ValueError(f"module {module!r} is not a module name like 'arithmetic__mixed'")
    return module


def _check_regime_name(regime: object) -> str:
    """``regime`` if it is a folder name like ``train-easy``, else ``ValueError``."""
    if not (isinstance(regime, str) and re.fullmatch(r"[\w-]+", regime, re.ASCII)):
        raise ValueError(f"regime {regime!r} is not a folder name like 'interpolate' or 'train-easy'")
    return regime


def module_path(root: str | os.PathLike, regime: str, module: str) -> Path:
    """``<root>/<regime>/<module>.txt``, the released location of one module's file (``ValueError`` for a regime
    or module name that is not a plain folder or file name)."""
    return user_path(root) / _check_regime_name(regime) / f"{check_module_name(module)}.txt"


def _lines(path: Path) -> list[str]:
    """The lines of a file without their ends, ``"\\n"`` or ``"\\r\\n"`` (a file saved on Windows). A lone ``"\\r"``
    does not end a line (reading with universal newlines split a line there and shifted every later question into
    the answers): it stays in its line, to be refused as outside the alphabet. A UTF-8 byte-order mark opening the
    file (an editor's on Windows) is no part of the first question; a UTF-16 or UTF-32 one (PowerShell's ``>``
    writes UTF-16) raises :class:`MathematicsFormatError` (its bytes split into lines at odd places, and the file
    was refused as holding a question without an answer). Blank lines that end the file (an editor's) are no
    question: they were counted as one by :func:`count_pairs` and refused as an empty one by :func:`read_module_file`.
    A Git LFS pointer in place of the file (its lines were read as a question without an answer, counted as one pair)
    raises :class:`MathematicsFormatError`. Bytes beyond ASCII stay as surrogate escapes, to be refused with their
    column."""
    data = path.read_bytes()
    check_not_lfs_pointer(path, data, MathematicsFormatError)
    data = data.removeprefix(codecs.BOM_UTF8)
    for encoding, mark in _WIDE_BYTE_ORDER_MARKS.items():
        if data.startswith(mark):
            raise MathematicsFormatError(
                f"{path}:1: {encoding} text (it opens with the byte-order mark {mark.hex(' ')}); the dataset's files "
                "are ASCII, one question or answer a line"
            )
    lines = [line.removesuffix("\r") for line in data.decode("ascii", errors="surrogateescape").split("\n")]
    while lines and not lines[-1].strip(" "):
        lines.pop()
    return lines


def count_pairs(path: str | os.PathLike) -> int:
    """How many complete question/answer pairs a file holds (without validating them)."""
    return len(_lines(user_path(path))) // 2


def read_module_file(path: str | os.PathLike, limit: int | None = None) -> list[tuple[str, str]]:
    """The ``(question, answer)`` pairs of one file (the first ``limit`` of them), validated."""
    if limit is not None:  # (a negative limit would slice pairs off the end)
        limit = int_at_least(limit, "limit", 0)
    path = existing_file(path, "DeepMind Mathematics file")
    lines = _lines(path)
    if not lines:
        raise MathematicsFormatError(f"{path}:1: empty file, expected alternating question and answer lines")
    _check_no_blank_line(path, lines)
    _check_no_lone_carriage_return(path, lines)
    if len(lines) % 2:
        _check_alphabet(path, lines)  # (UTF-16 without a byte-order mark, a last line of a tab: a character is the fault)
        raise MathematicsFormatError(f"{path}:{len(lines)}: question without an answer (odd number of lines)")
    if limit is not None:
        lines = lines[: 2 * limit]
    for index, line in enumerate(lines):
        _check_line(path, index + 1, line, is_question=index % 2 == 0)
    return list(zip(lines[0::2], lines[1::2]))


def _check_no_blank_line(path: Path, lines: list[str]) -> None:
    """Raise for the first blank line of the whole file (one shifts every later pair, so it is named where it is,
    before the count of lines is checked)."""
    for index, line in enumerate(lines):
        if not line.strip(" "):  # (a line of spaces too: it was read as a question, shifting every later pair)
            kind = "question" if index % 2 == 0 else "answer"
            raise MathematicsFormatError(f"{path}:{index + 1}: empty {kind} (a blank line{' of spaces' * bool(line)})")


def _check_no_lone_carriage_return(path: Path, lines: list[str]) -> None:
    """Raise for the first lone carriage return of the whole file, before the count of lines is checked: a file with
    old Mac line ends (``\r`` alone) holds its pairs in one line, and was told it had an odd number of lines."""
    for index, line in enumerate(lines):
        if (column := line.find("\r")) >= 0:
            raise MathematicsFormatError(
                f"{path}:{index + 1}:{column + 1}: {_describe(chr(13))} is outside the dataset's alphabet (a lone "
                "carriage return is no line end)"
            )


def _check_alphabet(path: Path, lines: list[str]) -> None:
    """Raise for the first character of the whole file outside the dataset's alphabet, with its line and column (the
    lines of a file of another encoding, or with a line of tabs, were miscounted as a question without an answer)."""
    for index, line in enumerate(lines):
        _check_characters(f"{path}:{index + 1}", line)


def _check_characters(where: str, line: str) -> None:
    """Raise for the first character of ``line`` outside the dataset's alphabet, named at ``where`` and its column."""
    if found := _OUTSIDE_ALPHABET.search(line):
        raise MathematicsFormatError(f"{where}:{found.start() + 1}: {_describe(found.group())} is outside the dataset's alphabet")


def _check_line(path: Path, number: int, line: str, is_question: bool) -> None:
    kind, limit = ("question", MAX_QUESTION_LENGTH) if is_question else ("answer", MAX_ANSWER_LENGTH)
    where = f"{path}:{number}"
    if len(line) > limit:
        raise MathematicsFormatError(f"{where}: {kind} of {len(line)} characters, over the limit of {limit}")
    _check_characters(where, line)
    if not is_question and line != line.strip(" "):  # ("12 " was read as an answer that "12" does not match)
        column, end = (1, "begins") if line.startswith(" ") else (len(line), "ends")
        raise MathematicsFormatError(f"{where}:{column}: answer {end} with a space (the dataset's answers do not)")


def _describe(char: str) -> str:
    """A character as an error shows it: a byte that is not ASCII (a surrogate escape of the decoding) by its value."""
    if "\udc80" <= char <= "\udcff":
        return f"byte 0x{ord(char) - 0xDC00:02x} (not ASCII)"
    return f"character {char!r}"


def list_modules(root: str | os.PathLike, regime: str) -> list[str]:
    """The module names (file stems) present for ``regime``, sorted: its ``*.txt`` files but hidden ones (``.…``, such
    as the ``._arithmetic__mul.txt`` metadata that a tar made on macOS holds, which failed as no module name) and
    folders; ``FileNotFoundError`` naming the folders that ``root`` holds when it has no ``regime`` folder."""
    root = user_path(root)
    folder = root / _check_regime_name(regime)
    if not folder.is_dir():
        raise FileNotFoundError(f"no {regime!r} folder under {root} ({_held(root)}); a release has {_RELEASE_REGIMES}")
    return sorted(path.stem for path in folder.glob("*.txt") if path.is_file() and not path.name.startswith("."))


def _held(root: Path) -> str:
    """What a root without a regime's folder holds, as :func:`list_modules` names it: its folders, and the release
    folder where ``root`` is one level off it (:func:`_release_nearby`), or that it is no folder (a module's file
    given as the root was said not to exist)."""
    if root.is_dir():
        return f"its folders: {sorted(child.name for child in root.iterdir() if child.is_dir())}{_release_nearby(root)}"
    return f"it {not_a_folder(root)}" if root.exists() else "it does not exist"


def _release_nearby(root: Path) -> str:
    """``"; give ..."`` naming the release folder where the folder ``root`` is a regime's (it holds module files:
    the release is above it) or the folder that holds the release (a folder of it holds regimes, as a download's
    ``mathematics_dataset-v1.0/`` does); ``""`` otherwise."""
    if any(path.suffix == ".txt" and not path.name.startswith(".") for path in root.iterdir()):
        return f"; it holds module files, as a regime's folder does: give the release folder above it, {root.parent}"
    for child in sorted(root.iterdir()):
        if any(os.path.isdir(child / regime) for regime in _RELEASE_REGIMES):  # (False where unreadable)
            return f"; give the release folder {child}, which holds the regimes' folders"
    return ""


def load_split(
    root: str | os.PathLike, regime: str, modules: list[str] | None = None, limit: int | None = None
) -> list[MathExample]:
    """All examples of ``regime`` (the given ``modules``, default every file), module by module."""
    if isinstance(modules, str):  # (a string would be read as its characters' modules)
        raise ValueError(f"modules must be a list of module names, got the string {modules!r}")
    root = user_path(root)
    present = list_modules(root, regime)
    if modules is None:
        modules = present
        if not modules:
            raise FileNotFoundError(f"no module files (*.txt) in {root / regime}")
    _check_modules(list(modules), present, root / regime)
    return [
        MathExample(question, answer, module, regime)
        for module in modules
        for question, answer in read_module_file(module_path(root, regime, module), limit)
    ]


def _check_modules(modules: list[str], present: list[str], folder: Path) -> None:
    """Raise for a name that is no module name, one listed twice (its examples would count twice), or one without a
    file in ``folder`` (naming the modules there)."""
    seen: set[str] = set()
    for module in modules:
        if check_module_name(module) in seen:
            raise ValueError(f"module {module!r} is listed twice")
        seen.add(module)
        if module not in present:
            raise FileNotFoundError(f"no module {module!r} in {folder} (no {module}.txt); its modules: {present}")
