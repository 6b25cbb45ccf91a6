"""The python blocks of the README and docs/, for the tests that run them as written."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def python_blocks(path: Path) -> list[str]:
    """The python blocks of the Markdown file ``path``, in order."""
    return [text for language, text in fenced_blocks(path) if language == "python"]


def fenced_blocks(path: Path) -> list[tuple[str, str]]:
    """``(language, text)`` of each fenced block of the Markdown file ``path``, in order (language ``""`` if none)."""
    blocks, language, lines = [], None, []
    for line in path.read_text(encoding="utf-8").splitlines():
        if language is None and line.startswith("```"):
            language, lines = line[3:].strip(), []
        elif language is not None and line.strip() == "```":
            blocks.append((language, "\n".join(lines) + "\n"))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks
