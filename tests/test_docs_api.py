"""docs/api.md, the API reference, is what ``docs/api.py`` writes from the code as it is now, and it describes every
name each documented package declares in ``__all__``."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from types import ModuleType

import pytest
from doc_blocks import DOCS, ROOT

import neurosym.data


def _generator() -> ModuleType:
    """``docs/api.py`` as a module (it lives beside the documents, outside the package)."""
    spec = importlib.util.spec_from_file_location("neurosym_api_docs", DOCS / "api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


API = _generator()


@pytest.fixture(scope="module")
def committed() -> str:
    return (DOCS / "api.md").read_text(encoding="utf-8")


def test_the_committed_reference_is_the_one_the_code_gives(committed: str) -> None:
    written = API.reference()
    if written != committed:
        diff = "\n".join(
            list(difflib.unified_diff(committed.splitlines(), written.splitlines(), "docs/api.md", "code", lineterm=""))[:40]
        )
        pytest.fail(f"docs/api.md is out of date: run `make api-docs` and commit it\n{diff}")


def _documented_modules() -> list[ModuleType]:
    """The packages the reference covers, every package below them that declares an ``__all__``, and each module a
    package's ``__all__`` names (``neurosym.data``'s)."""
    found = []
    for package in API.PACKAGES:
        module = importlib.import_module(package)
        found.append(module)
        for info in pkgutil.walk_packages(module.__path__, f"{package}."):
            if info.ispkg and hasattr(below := importlib.import_module(info.name), "__all__"):
                found.append(below)
        found += [getattr(module, name) for name in module.__all__ if inspect.ismodule(getattr(module, name))]
    return found


def _sections(text: str) -> dict[str, str]:
    """Module name -> the text under its heading, down to the next module's heading."""
    pieces = re.split(r"^#+ `(neurosym(?:\.\w+)+)`$", text, flags=re.MULTILINE)
    return dict(zip(pieces[1::2], pieces[2::2], strict=True))


def _described(section: str, name: str, module: ModuleType) -> bool:
    """Whether ``section`` (of ``module``) has a heading for ``name`` or lists it as described elsewhere."""
    if inspect.ismodule(getattr(module, name)):
        return True  # (its own section, checked as a documented module)
    also = next((line for line in section.splitlines() if line.startswith(API.ALSO)), "")
    return bool(re.search(rf"^#+ `{re.escape(name)}`$", section, re.MULTILINE)) or f"`{name}`" in also


def test_every_name_of_every_documented_all_has_its_entry(committed: str) -> None:
    sections = _sections(committed)
    modules = _documented_modules()
    names = {module.__name__ for module in modules}
    assert {"neurosym.layers.arithmetic", "neurosym.models.seq2seq", "neurosym.data.hint", "neurosym.data.mnist"} <= names
    assert names <= set(sections), f"docs/api.md has no section for {sorted(names - set(sections))}: run `make api-docs`"
    missing = [
        f"{module.__name__}.{name}"
        for module in modules
        for name in module.__all__
        if not _described(sections[module.__name__], name, module)
    ]
    assert not missing, f"docs/api.md has no entry for {missing}: run `make api-docs`"


def test_every_package_links_the_guides_the_readme_names_for_it(committed: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for package in API.PACKAGES:
        row = next(line for line in readme.splitlines() if line.startswith("| ") and f"`{package}`" in line.split("|")[1])
        guides = re.findall(r"\]\(docs/([^)]+)\)", row.split("|")[-2])
        assert guides and all(f"]({guide})" in _sections(committed)[package].strip().split("\n\n")[0] for guide in guides), (
            package
        )
    assert API.guides()["neurosym.layers"] == "[arithmetic units](layers_arithmetic.md), [transformers](transformers.md)"


def test_docstrings_read_as_markdown() -> None:
    assert API.markdown(":func:`~neurosym.syntax.parse` of ``3+4``\n   and :class:`Node`") == "`parse` of `3+4` and `Node`"
    assert API.markdown(":mod:`the layers <neurosym.layers>`, ``a`b``") == "`the layers`, `` a`b ``"
    assert API.markdown("2**25 of ``x*y`` <a>") == "2\\*\\*25 of `x*y` &lt;a>"
    assert API.first_sentence("Draw e.g. 0.5 of `x. y`. Then more.") == "Draw e.g. 0.5 of `x. y`."


def test_a_public_name_without_a_docstring_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"neurosym\.x\.f has no docstring"):
        API.first_paragraph("   \n", "neurosym.x.f")


def test_an_undocumented_override_takes_the_docstring_past_bases_that_do_not_define_the_method() -> None:
    """(Under Python 3.13, where ``None.__doc__`` is a sentence, a base without the method lent the NAU's and the
    NPU's ``compute`` the docstring of ``NoneType``.)"""

    class Unit:
        def compute(self) -> None:
            """The unit's formula."""

    class Family(Unit):
        def weight(self) -> None:
            """The family's weight."""

    class Member(Family):
        def compute(self) -> None:
            return None

    for cls in (Unit, Family, Member):
        cls.__module__ = "neurosym.layers.example"
    assert API._method_doc(Member, "compute", Member.compute) == "The unit's formula."
    assert API._method_doc(Member, "reset", lambda: None) is None


def test_signatures_show_annotations_and_defaults_as_the_source_writes_them() -> None:
    from neurosym.semantics import evaluate
    from neurosym.syntax import SymbolGrammar

    assert API.signature(evaluate, "evaluate").startswith("evaluate(text: str, table: OperatorTable = HINT_SEMANTICS")
    assert API.signature(SymbolGrammar, "SymbolGrammar") == (
        'SymbolGrammar(grammar: str | os.PathLike, symbols: Sequence[str] | None = None, start: str = "start")'
    )


def test_the_data_package_names_its_public_modules_and_imports_them_when_asked() -> None:
    assert neurosym.data.__all__ == ["arithmetic", "hint", "mathematics", "mnist", "pvr", "symbol_images"]
    assert all(inspect.ismodule(getattr(neurosym.data, name)) for name in neurosym.data.__all__)
    with pytest.raises(AttributeError, match="no attribute 'npzz'"):
        _ = neurosym.data.npzz
