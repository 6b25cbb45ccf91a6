"""Every public name of the library (each package's ``__all__``) is named somewhere in the README or the guides of
docs/ (not counting the API reference, docs/api.md, which names every one by construction)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest
from doc_blocks import DOCS, ROOT

import neurosym


def _public_names() -> list[tuple[str, str]]:
    pairs = []
    for info in pkgutil.walk_packages(neurosym.__path__, "neurosym."):
        if info.ispkg:
            module = importlib.import_module(info.name)
            pairs += [(info.name, name) for name in getattr(module, "__all__", ())]
    return pairs


PUBLIC_NAMES = _public_names()


def test_the_packages_users_compose_declare_their_public_names() -> None:
    packages = {package for package, _ in PUBLIC_NAMES}
    assert {"neurosym.layers", "neurosym.syntax", "neurosym.semantics", "neurosym.pipelines", "neurosym.data.hint"} <= packages
    assert len(PUBLIC_NAMES) > 300


@pytest.fixture(scope="module")
def documentation() -> str:
    guides = [path for path in sorted(DOCS.glob("*.md")) if path.name != "api.md"]
    return "\n".join(path.read_text(encoding="utf-8") for path in [ROOT / "README.md", *guides])


def test_every_public_name_is_named_in_the_docs(documentation: str) -> None:
    unnamed = [
        f"{package}.{name}" for package, name in PUBLIC_NAMES if not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", documentation)
    ]
    assert not unnamed, f"public names the README and docs/ never name: {unnamed}"
