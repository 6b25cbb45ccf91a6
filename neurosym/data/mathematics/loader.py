"""Read DeepMind Mathematics files in the released layout, validating every line.

Layout: ``<root>/<regime>/<area>__<module>.txt`` with regimes ``train-easy``, ``train-medium``,
``train-hard`` (or ``train``), ``interpolate`` and ``extrapolate``; each file alternates question and
answer lines. A malformed file raises :class:`MathematicsFormatError` naming the file and line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from neurosym.training.checks import int_at_least

MAX_QUESTION_LENGTH = 160
MAX_ANSWER_LENGTH = 30
ALPHABET: str = "".join(chr(code) for code in range(32, 127))
"""The dataset's 95 characters: printable ASCII, space included."""
_ALPHABET_SET = frozenset(ALPHABET)


class MathematicsFormatError(ValueError):
    """A data file that does not follow the released format; the message names file and line."""


@dataclass(frozen=True)
class MathExample:
    """One question with its answer, and where it comes from (``module`` is the file stem)."""

    question: str
    answer: str
    module: str
    regime: str


def module_path(root: str | os.PathLike, regime: str, module: str) -> Path:
    """``<root>/<regime>/<module>.txt``, the released location of one module's file."""
    return Path(root) / regime / f"{module}.txt"


def _lines(path: Path) -> list[str]:
    text = path.read_text(encoding="ascii", errors="surrogateescape")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def count_pairs(path: str | os.PathLike) -> int:
    """How many complete question/answer pairs a file holds (without validating them)."""
    return len(_lines(Path(path))) // 2


def read_module_file(path: str | os.PathLike, limit: int | None = None) -> list[tuple[str, str]]:
    """The ``(question, answer)`` pairs of one file (the first ``limit`` of them), validated."""
    path = Path(path)
    if limit is not None:  # (a negative limit would slice pairs off the end)
        limit = int_at_least(limit, "limit", 0)
    if not path.is_file():
        raise FileNotFoundError(f"DeepMind Mathematics file not found: {path}")
    lines = _lines(path)
    if not lines:
        raise MathematicsFormatError(f"{path}:1: empty file, expected alternating question and answer lines")
    if len(lines) % 2:
        raise MathematicsFormatError(f"{path}:{len(lines)}: question without an answer (odd number of lines)")
    if limit is not None:
        lines = lines[: 2 * limit]
    for index, line in enumerate(lines):
        _check_line(path, index + 1, line, is_question=index % 2 == 0)
    return list(zip(lines[0::2], lines[1::2]))


def _check_line(path: Path, number: int, line: str, is_question: bool) -> None:
    kind, limit = ("question", MAX_QUESTION_LENGTH) if is_question else ("answer", MAX_ANSWER_LENGTH)
    where = f"{path}:{number}"
    if not line:
        raise MathematicsFormatError(f"{where}: empty {kind}")
    if len(line) > limit:
        raise MathematicsFormatError(f"{where}: {kind} of {len(line)} characters, over the limit of {limit}")
    for column, char in enumerate(line, start=1):
        if char not in _ALPHABET_SET:
            raise MathematicsFormatError(f"{where}:{column}: character {char!r} is outside the dataset's alphabet")


def list_modules(root: str | os.PathLike, regime: str) -> list[str]:
    """The module names (file stems) present for ``regime``, sorted."""
    folder = Path(root) / regime
    if not folder.is_dir():
        raise FileNotFoundError(f"no {regime!r} folder under {root}")
    return sorted(path.stem for path in folder.glob("*.txt"))


def load_split(
    root: str | os.PathLike, regime: str, modules: list[str] | None = None, limit: int | None = None
) -> list[MathExample]:
    """All examples of ``regime`` (the given ``modules``, default every file), module by module."""
    if isinstance(modules, str):  # (a string would be read as its characters' modules)
        raise ValueError(f"modules must be a list of module names, got the string {modules!r}")
    if modules is None:
        modules = list_modules(root, regime)
        if not modules:
            raise FileNotFoundError(f"no module files (*.txt) in {Path(root) / regime}")
    return [
        MathExample(question, answer, module, regime)
        for module in modules
        for question, answer in read_module_file(module_path(root, regime, module), limit)
    ]
