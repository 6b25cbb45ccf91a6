"""Every relative link and image of the README, docs/ and benchmarks/ Markdown points at a file of the repository,
and every ``#anchor`` at a heading of its target (GitHub's heading slugs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from doc_blocks import DOCS, ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "benchmarks").rglob("*.md")), *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    outside_code, anchors = True, set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            outside_code = not outside_code
        elif outside_code and (heading := re.match(r"#+ (.*)", line)):
            anchors.add(_slug(heading[1]))
    return anchors


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)  # (code is not prose)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_the_slugs_are_githubs() -> None:
    assert _slug("The device check (CUDA)") == "the-device-check-cuda"
    assert _slug("`neurosym.layers`: units & blocks") == "neurosymlayers-units--blocks"
    assert sum(len(_links(path)) for path in DOCUMENTS) >= 20


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_relative_links_reach_files_and_headings(document: Path) -> None:
    broken = []
    for target in _links(document):
        name, _, anchor = target.partition("#")
        path = (document.parent / name).resolve() if name else document
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(target)
    assert not broken, f"{document.relative_to(ROOT)} links to what is not there: {broken}"
