"""Imports flow one way: a package never imports a package of a higher level, and the package graph has
no cycle. Every ``import`` statement of every module under ``neurosym/`` counts, those inside functions
included, and every string that names a ``neurosym`` module (what ``importlib.import_module`` is given), so a
lazy import cannot hide a dependency the wrong way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parent.parent / "neurosym"

# Level of every top-level package and module of ``neurosym`` (lowest first). ``neurosym`` is the root
# package itself: it holds only ``__version__``, so every level may import it.
LEVELS: dict[str, int] = {
    "neurosym": 0,
    "paths": 0,
    "layers": 0,
    "syntax": 0,
    "training": 0,
    "semantics": 1,
    "data": 2,
    "perception": 2,
    "models": 3,
    "pipelines": 3,
    "metrics": 3,
    "tasks": 4,
    "benchmarking": 4,
    "plots": 4,
    "experiments": 5,
    "cli": 6,
    "__main__": 6,
}


DOTTED_MODULE = re.compile(r"neurosym(\.[A-Za-z_]\w*)+")
"""A string that names a ``neurosym`` module, as ``importlib.import_module`` takes it."""


def module_name(path: Path, root: Path = ROOT) -> str:
    """``neurosym/data/hint/stats.py`` -> ``neurosym.data.hint.stats``; a package's ``__init__`` is the package."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, name: str, is_package: bool) -> list[tuple[str, int]]:
    """Every module the source of module ``name`` imports, as ``(absolute dotted name, line)``; relative
    imports are resolved against ``name``, and ``from P import x`` also yields ``P.x`` (``x`` may be a
    submodule)."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.append((target, node.lineno))
            found += [(f"{target}.{alias.name}", node.lineno) for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and DOTTED_MODULE.fullmatch(node.value):
            found.append((node.value, node.lineno))  # a module named for importlib (cli's COMMANDS, tasks' TASKS)
    return found


def top_level(dotted: str) -> str | None:
    """The entry of :data:`LEVELS` a ``neurosym`` module belongs to (``None`` outside ``neurosym``)."""
    parts = dotted.split(".")
    if parts[0] != "neurosym":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in LEVELS else "neurosym"


def package_imports(root: Path = ROOT) -> list[tuple[str, str, str, int, str]]:
    """``(importer top level, imported top level, importer module, line, imported module)`` for every
    import between two different top-level entries of ``neurosym``."""
    edges = []
    for path in sorted(root.rglob("*.py")):
        name = module_name(path, root)
        source_level = top_level(name)
        for target, line in imported_modules(path.read_text(), name, path.name == "__init__.py"):
            target_level = top_level(target)
            if target_level is not None and target_level != source_level:
                edges.append((source_level, target_level, name, line, target))
    return edges


def test_the_import_scanner_resolves_relative_and_nested_imports():
    source = "import os\nfrom . import stats\n\ndef f():\n    from ..semantics import evaluate\n    import neurosym.cli\n"
    found = imported_modules(source, "neurosym.data.hint.build", is_package=False)
    assert ("neurosym.data.hint", 2) in found and ("neurosym.data.hint.stats", 2) in found
    assert ("neurosym.data.semantics", 5) in found and ("neurosym.cli", 6) in found
    assert imported_modules("from .. import syntax", "neurosym.semantics", is_package=True) == [
        ("neurosym", 1),
        ("neurosym.syntax", 1),
    ]
    assert module_name(ROOT / "data" / "hint" / "__init__.py") == "neurosym.data.hint"
    dynamic = 'import importlib\nRUNNERS = {"x": "neurosym.experiments.pvr"}\nimportlib.import_module("neurosym.cli")\n'
    found = imported_modules(dynamic, "neurosym.tasks", is_package=True)
    assert ("neurosym.experiments.pvr", 2) in found and ("neurosym.cli", 3) in found


def test_every_top_level_package_and_module_has_a_level():
    entries = {path.name for path in ROOT.iterdir() if path.is_dir() and any(path.rglob("*.py"))}
    entries |= {path.stem for path in ROOT.glob("*.py") if path.stem != "__init__"}
    assert entries - set(LEVELS) == set(), "give every new top-level package or module a level in LEVELS"
    assert set(LEVELS) - entries - {"neurosym"} == set(), "LEVELS names a package that no longer exists"


def test_the_scan_sees_the_known_imports():
    pairs = {(source, target) for source, target, *_ in package_imports()}
    assert {
        ("semantics", "syntax"),
        ("experiments", "data"),
        ("cli", "training"),
        ("__main__", "cli"),
        ("cli", "experiments"),
    } <= pairs


def test_no_package_imports_a_package_of_a_higher_level():
    upward = [
        f"{module}:{line} imports {target} ({source} is level {LEVELS[source]}, {imported} is level {LEVELS[imported]})"
        for source, imported, module, line, target in package_imports()
        if LEVELS[imported] > LEVELS[source]
    ]
    assert upward == [], "imports against the package order:\n" + "\n".join(upward)


def test_the_package_graph_has_no_cycle():
    graph = nx.DiGraph((source, target) for source, target, *_ in package_imports())
    if not nx.is_directed_acyclic_graph(graph):
        pytest.fail(f"packages import each other in a cycle: {nx.find_cycle(graph)}")
