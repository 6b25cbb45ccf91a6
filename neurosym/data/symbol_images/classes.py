"""Symbol tokens and the class-folder names of the official HINT ``symbol_images`` release."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

DIGITS: tuple[str, ...] = tuple("0123456789")
"""The ten digits, as canonical ASCII tokens."""
OPERATORS: tuple[str, ...] = ("+", "-", "*", "/")
"""HINT's four operators, as canonical ASCII tokens."""
PARENTHESES: tuple[str, ...] = ("(", ")")
"""The two brackets."""
FEWSHOT_CONCEPTS: tuple[str, ...] = ("x", "y", "a", "b", "c", "d")
"""The six few-shot concepts: numbers ``x`` and ``y``, operators ``a`` to ``d``."""
HINT_SYMBOLS: tuple[str, ...] = DIGITS + OPERATORS + PARENTHESES
"""The 16 symbols of the main HINT split, as canonical ASCII tokens."""

_FOLDER_OF_TOKEN = {"*": "times", "/": "div", "*dot": "times_dot", "/slash": "div_slash"}
_TOKEN_OF_FOLDER = {folder: token for token, folder in _FOLDER_OF_TOKEN.items()}
_TOKEN_ALIASES = {"×": "*", "÷": "/"}
_UNSAFE_CHARACTERS = ("/", "\\", "\0")


def folder_of(token: str) -> str:
    """The release's folder name for a token: ``"*"`` → ``"times"``, ``"/"`` → ``"div"`` (and the archive's other
    ways of writing them, ``"*dot"`` → ``"times_dot"``, ``"/slash"`` → ``"div_slash"``), others unchanged.

    Raises ``ValueError`` for a token that would not name one folder inside the bank's folder: one holding a path
    separator (``/``, ``\\``) or a NUL, or one that is empty, ``"."`` or ``".."``.
    """
    token = _TOKEN_ALIASES.get(token, token)
    folder = _FOLDER_OF_TOKEN.get(token, token)
    if folder in ("", ".", "..") or any(character in folder for character in _UNSAFE_CHARACTERS):
        raise ValueError(f"symbol {token!r} cannot name a class folder: it is empty, '.' or '..', or holds '/', '\\' or NUL")
    return folder


def token_of(folder: str) -> str:
    """The canonical token for a release folder name (inverse of :func:`folder_of`)."""
    return _TOKEN_OF_FOLDER.get(folder, _TOKEN_ALIASES.get(folder, folder))


HANDWRITTEN_LABELS: tuple[str, ...] = DIGITS + OPERATORS + ("*dot", "/slash", "w", "x", "y", "z")
"""Labels of the shipped handwritten archive. ``*`` is × written as a cross and ``/`` is ÷ written as an
obelus (HINT's symbols); ``*dot`` (× as a dot) and ``/slash`` (÷ as a slash) are other ways of writing them."""
BANK_LABELS: tuple[str, ...] = tuple(dict.fromkeys(HINT_SYMBOLS + FEWSHOT_CONCEPTS + HANDWRITTEN_LABELS))
"""Every label a symbol bank archive may hold."""
BANK_FOLDERS: tuple[str, ...] = tuple(folder_of(label) for label in BANK_LABELS)
"""The class folder of every bank label (``times`` for ``*``, ``div`` for ``/`` …): the folders a folder bank may hold."""


def require_known(where: object, what: str, names: Iterable[str], allowed: Sequence[str]) -> None:
    """Raise ``ValueError`` ``"<where>: unknown <what> [...]; expected among [...]"`` naming (up to ten of) the
    ``names`` that are not in ``allowed``, and listing ``allowed``."""
    unknown = sorted(set(names) - set(allowed))
    if unknown:
        raise ValueError(f"{where}: unknown {what} {unknown[:10]}; expected among {list(allowed)}")
