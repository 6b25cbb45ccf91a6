"""Writes ``docs/api.md``, the API reference, from the code: every name each public package declares in ``__all__``
(in that order; then the same for each module its ``__all__`` names and each sub-package with an ``__all__`` of its
own) with its kind, its signature as written (annotations and defaults as the source spells them) and the first
paragraph of its docstring; a class also lists the public methods and properties it defines itself, one line each.
Each package's guide is the one the README's "What is inside" table names for it.

Run ``make api-docs`` (or ``.venv/bin/python docs/api.py``) after changing a public name, a signature or a
docstring's first paragraph; ``tests/test_docs_api.py`` fails while ``docs/api.md`` differs from what this writes."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUTPUT = ROOT / "docs" / "api.md"
README = ROOT / "README.md"
PACKAGES = (
    "neurosym.layers",
    "neurosym.syntax",
    "neurosym.training",
    "neurosym.semantics",
    "neurosym.data",
    "neurosym.perception",
    "neurosym.models",
    "neurosym.pipelines",
    "neurosym.metrics",
    "neurosym.tasks",
)
"""The packages users compose, lowest import level first (docs/contributing.md, "The map of packages")."""

ROLE = re.compile(r":(?:func|class|meth|attr|data|mod|exc|obj|const):`(~?)([^`<]*?)(?: <([^`>]+)>)?`")
"""A Sphinx cross-reference: ``:func:`~a.b.c``` (shown as ``c``), ``:class:`X```, ``:mod:`title <target>```."""
LITERAL = re.compile(r"``(.+?)``(?!`)")
CODE_SPAN = re.compile(r"(`` .+? ``|`[^`]*`)")
ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|et al|etc|cf|vs|approx)|\d)$")
"""Text before a full stop that does not end a sentence (``e.g.``, ``0.5``)."""


@dataclass(frozen=True)
class _Written:
    """Text shown as it is by :func:`inspect.formatannotation` and :class:`inspect.Parameter` (its ``repr``)."""

    text: str

    def __repr__(self) -> str:
        return self.text


# --- docstrings -----------------------------------------------------------------------------------------------------


def markdown(text: str) -> str:
    """Docstring text as Markdown: Sphinx roles as code (``:func:`~a.b.c``` -> ```c```), ````code```` as ```code```,
    lines joined."""

    def role(match: re.Match[str]) -> str:
        shown = match[2] or match[3]
        return f"``{shown.rsplit('.', 1)[-1] if match[1] else shown}``"

    text = LITERAL.sub(lambda match: _code(match[1]), ROLE.sub(role, " ".join(text.split())))
    parts = CODE_SPAN.split(text)  # prose at even indices: a ``*`` there (``2**25``) is no emphasis, ``<a`` no tag
    parts[::2] = [re.sub(r"<(?=[A-Za-z/])", "&lt;", part.replace("*", "\\*")) for part in parts[::2]]
    return "".join(parts)


def _code(text: str) -> str:
    """``text`` as a Markdown code span (fenced by two backticks where it holds one)."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def first_paragraph(doc: str | None, where: str) -> str:
    """The first paragraph of the docstring ``doc`` as Markdown; ``ValueError`` naming ``where`` if it has none."""
    paragraph = inspect.cleandoc(doc or "").split("\n\n")[0].strip()
    if not paragraph:
        raise ValueError(f"{where} has no docstring: give it one (its first paragraph goes into docs/api.md)")
    return markdown(paragraph)


def first_sentence(paragraph: str) -> str:
    """The first sentence of a Markdown ``paragraph``: up to the first full stop (``?``, ``!``) outside code that is
    followed by a space and ends no abbreviation or number."""
    in_code = False
    for index, character in enumerate(paragraph):
        in_code ^= character == "`"
        follows = paragraph[index + 1 : index + 2]
        if not in_code and character in ".?!" and follows in ("", " ") and not ABBREVIATION.search(paragraph[:index]):
            return paragraph[: index + 1]
    return paragraph


def _own_doc(obj: Any) -> str | None:
    """The docstring ``obj`` itself has: not a base class's, nor the one a dataclass or named tuple makes up from
    its fields."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    made_up = inspect.isclass(obj) and isinstance(doc, str) and doc.startswith(f"{obj.__name__}(")
    return None if made_up else doc


# --- the source as written -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Source:
    """One module's source: its definitions by qualified name, its assignments' values and docstrings, and where
    each name it imports comes from."""

    lines: list[str]
    definitions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]
    assignments: dict[str, ast.Assign | ast.AnnAssign]
    attribute_docs: dict[str, str]
    imported: dict[str, tuple[str, str]]

    def segment(self, node: ast.expr) -> str:
        """The source text of ``node``, its whitespace runs as single spaces (``ast.get_source_segment``, without
        splitting the whole text again for every node; offsets count UTF-8 bytes)."""
        lines = [line.encode() for line in self.lines[node.lineno - 1 : node.end_lineno]]
        assert node.end_col_offset is not None
        lines[-1] = lines[-1][: node.end_col_offset]
        lines[0] = lines[0][node.col_offset :]
        return " ".join(b"\n".join(lines).decode().split())


@functools.cache
def source(module_name: str) -> _Source:
    """The :class:`_Source` of the module ``module_name``."""
    module = importlib.import_module(module_name)
    text = inspect.getsource(module)
    tree = ast.parse(text)
    definitions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                definitions.setdefault(prefix + node.name, node)
                if isinstance(node, ast.ClassDef):
                    collect(node.body, f"{prefix}{node.name}.")

    collect(tree.body, "")
    assignments: dict[str, ast.Assign | ast.AnnAssign] = {}
    attribute_docs: dict[str, str] = {}
    imported: dict[str, tuple[str, str]] = {}
    lines = text.splitlines()
    package = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]  # what ``.`` names
    for node, following in zip(tree.body, [*tree.body[1:], None], strict=True):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for name in (target.id for target in targets if isinstance(target, ast.Name)):
                assignments[name] = node
                if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                    attribute_docs[name] = str(following.value.value)
                elif comment := _doc_comment(lines, node.lineno - 1):
                    attribute_docs[name] = comment
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            origin = ".".join([*base, node.module])
            imported.update({alias.asname or alias.name: (origin, alias.name) for alias in node.names})
    return _Source(lines, definitions, assignments, attribute_docs, imported)


def _doc_comment(lines: list[str], index: int) -> str:
    """The ``#:`` comment lines right above line ``index`` (0-based), Sphinx's other way to document a name."""
    start = index
    while start > 0 and lines[start - 1].startswith("#:"):
        start -= 1
    return "\n".join(line[2:].strip() for line in lines[start:index])


def defining_module(module_name: str, name: str) -> str:
    """The module whose source assigns ``name`` (followed through ``from ... import`` re-exports)."""
    found = source(module_name)
    if name in found.assignments or name not in found.imported:
        return module_name
    origin, original = found.imported[name]
    if original != name:
        raise ValueError(f"{module_name} imports {original} as {name}: docs/api.py follows only names kept as they are")
    return defining_module(origin, name)


def _definition(obj: Any) -> tuple[_Source, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] | None:
    """The source and the ``def``/``class`` node of a function or class (``None`` where it has no Python source)."""
    obj = inspect.unwrap(obj)
    module_name, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", "")
    if not module_name or not module_name.startswith("neurosym") or "<locals>" in qualname:
        return None
    found = source(module_name)
    node = found.definitions.get(qualname)
    return (found, node) if node is not None else None


def _written_parameters(obj: Any) -> dict[str, tuple[str | None, str | None]]:
    """Each parameter's ``(annotation, default)`` as the source writes them, for a function (its ``def``) or a class
    (its ``__init__``, else its fields: a dataclass's or named tuple's annotated assignments, bases' first)."""
    if inspect.isclass(obj):
        written: dict[str, tuple[str | None, str | None]] = {}
        for cls in reversed(obj.__mro__):
            if "__init__" in cls.__dict__ and (found := _definition(cls.__dict__["__init__"])):
                written = _arguments(*found)
            elif found := _definition(cls):
                here, node = found
                for field in node.body:
                    if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name):
                        value = here.segment(field.value) if field.value else None
                        written[field.target.id] = (here.segment(field.annotation), value)
        return written
    found = _definition(obj)
    return _arguments(*found) if found and not isinstance(found[1], ast.ClassDef) else {}


def _arguments(found: _Source, node: ast.AST) -> dict[str, tuple[str | None, str | None]]:
    """``(annotation, default)`` as written of each parameter of the ``def`` ``node``."""
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    pairs = [*zip(positional, defaults, strict=True), *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
    pairs += [(argument, None) for argument in (arguments.vararg, arguments.kwarg) if argument is not None]
    written = {
        argument.arg: (
            found.segment(argument.annotation) if argument.annotation else None,
            found.segment(default) if default else None,
        )
        for argument, default in pairs
    }
    written["return"] = (found.segment(node.returns) if node.returns else None, None)
    return written


# --- signatures ------------------------------------------------------------------------------------------------------


def _as_written(text: str | None, what: str) -> _Written:
    """The annotation or default ``text`` the source writes (``ValueError`` naming ``what`` where none was found: a
    value's ``repr`` may hold a memory address or a version's wording)."""
    if text is None:
        raise ValueError(f"{what}: docs/api.py finds no source that writes it")
    return _Written(text)


def signature(obj: Any, name: str, drop_first: bool = False) -> str | None:
    """``name(parameters) -> return`` of the callable ``obj`` with annotations and defaults as written (the first
    parameter dropped for an unbound method); ``None`` where Python knows no signature or only ``(*args, **kwargs)``."""
    try:
        found = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parameters = list(found.parameters.values())[int(drop_first) :]
    if [parameter.kind for parameter in parameters] == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return None
    written = _written_parameters(obj)
    shown = []
    for parameter in parameters:
        annotation, default = written.get(parameter.name, (None, None))
        changes: dict[str, Any] = {}
        if parameter.annotation is not inspect.Parameter.empty:
            changes["annotation"] = _as_written(annotation, f"the annotation of {name}'s {parameter.name}")
        if parameter.default is not inspect.Parameter.empty:
            changes["default"] = _as_written(default, f"the default of {name}'s {parameter.name}")
        shown.append(parameter.replace(**changes))
    returns: Any = inspect.Signature.empty
    if found.return_annotation is not inspect.Signature.empty and not inspect.isclass(obj):
        returns = _as_written(written.get("return", (None, None))[0], f"the return annotation of {name}")
    return name + str(found.replace(parameters=shown, return_annotation=returns))


# --- one reference entry ---------------------------------------------------------------------------------------------


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "constant"


def _bases(cls: type) -> str:
    """`` · bases: ...`` naming the classes ``cls`` derives from (a private base by its public ancestors)."""
    bases: list[str] = []
    pending = list(cls.__bases__)
    while pending:
        base = pending.pop(0)
        if base.__name__.startswith("_"):
            pending[:0] = base.__bases__
        elif base is not object and _public_name(base) not in bases:
            bases.append(_public_name(base))
    return f" · bases: {', '.join(_code(base) for base in bases)}" if bases else ""


def _public_name(cls: type) -> str:
    """A class by its name (``neurosym``'s and built-in ones) or by the shortest module path that exports it
    (``torch.nn.Module``, ``typing.Protocol``)."""
    if cls.__module__.startswith("neurosym") or cls.__module__ == "builtins":
        return cls.__qualname__
    parts = cls.__module__.split(".")
    for end in range(1, len(parts) + 1):
        if getattr(sys.modules.get(".".join(parts[:end])), cls.__qualname__, None) is cls:
            return f"{'.'.join(parts[:end])}.{cls.__qualname__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _constant(module_name: str, name: str) -> tuple[str, str]:
    """The line that shows a constant, ``NAME: annotation = value`` as written (a long value shortened to its outer
    form, ``OperatorTable(…)``), and the first paragraph of its docstring (or ``#:`` comment)."""
    defined_in = defining_module(module_name, name)
    found = source(defined_in)
    assignment = found.assignments.get(name)
    if assignment is None or assignment.value is None:
        raise ValueError(f"{module_name}.{name}: {defined_in} assigns it no value docs/api.py can read (one name per line)")
    value = found.segment(assignment.value)
    if len(value) > 120:
        value = (
            f"{found.segment(assignment.value.func)}(…)" if isinstance(assignment.value, ast.Call) else _OUTER.get(value[0], "…")
        )
    annotation = f": {found.segment(assignment.annotation)}" if isinstance(assignment, ast.AnnAssign) else ""
    return f"{name}{annotation} = {value}", first_paragraph(found.attribute_docs.get(name), f"{defined_in}.{name}")


_OUTER = {"(": "(…)", "[": "[…]", "{": "{…}"}
"""How a long tuple, list, dict or set value is shortened."""


def _method_doc(cls: type, name: str, function: Any) -> str | None:
    """The docstring of a method: its own, else that of the method it overrides in a ``neurosym`` base class (not
    a dependency's, whose words change with its version)."""
    for base in cls.__mro__:
        found = base.__dict__.get(name) if base is not cls else function
        if found is None:  # (a base that does not define it: Python 3.13's None has a docstring of its own)
            continue
        found = getattr(found, "__func__", getattr(found, "fget", found))
        if base.__module__.startswith("neurosym") and (doc := _own_doc(found)):
            return doc
    return None


def _members(cls: type) -> Iterator[str]:
    """One line for each public method and property ``cls`` defines itself: its signature and first sentence."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        where = f"{cls.__module__}.{cls.__qualname__}.{name}"
        shown = f"{cls.__name__}.{name}"
        if isinstance(member, property | functools.cached_property):
            getter = member.fget if isinstance(member, property) else member.func
            returns = _written_parameters(getter).get("return", (None, None))[0]
            line, label, doc = f"{shown}: {returns}" if returns else shown, "property", _method_doc(cls, name, getter)
        elif isinstance(member, staticmethod | classmethod):
            line = signature(member.__func__, shown, drop_first=isinstance(member, classmethod)) or f"{shown}(...)"
            label, doc = type(member).__name__, _method_doc(cls, name, member.__func__)
        elif inspect.isfunction(member):
            line, label, doc = signature(member, shown, drop_first=True) or f"{shown}(...)", "", _method_doc(cls, name, member)
        else:
            continue
        kind = f" ({label})" if label else ""
        yield f"- {_code(line)}{kind}: {first_sentence(first_paragraph(doc, where))}"


def entry(module_name: str, name: str, obj: Any, depth: int) -> list[str]:
    """The lines of one public name: heading, kind and signature, first paragraph, a class's members."""
    lines = ["#" * depth + f" {_code(name)}", ""]
    kind = _kind(obj)
    if kind == "constant":
        shown, paragraph = _constant(module_name, name)
        return [*lines, f"*constant* {_code(shown)}", "", paragraph, ""]
    where = f"{module_name}.{name}"
    written = signature(obj, name)
    head = f"*{kind}* {_code(written)}" if written else f"*{kind}* {_code(name)}"
    lines += [head + (_bases(obj) if kind == "class" else ""), "", first_paragraph(_own_doc(obj), where), ""]
    if kind == "class":
        members = list(_members(obj))
        lines += [*members, ""] if members else []
    return lines


# --- the document ----------------------------------------------------------------------------------------------------


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def guides(readme: Path = README) -> dict[str, str]:
    """Package -> the Markdown links to its guides, from the README's "What is inside" table (relative to docs/)."""
    section = readme.read_text(encoding="utf-8").split("## What is inside", 1)[-1].split("\n## ", 1)[0]
    found: dict[str, str] = {}
    for row in (line for line in section.splitlines() if line.startswith("| `")):
        cells = row.split("|")
        links = re.sub(r"\]\(docs/", "](", cells[-2].strip())
        found.update({package: links for package in re.findall(r"`(neurosym\.\w+)`", cells[1])})
    return found


def _public(module: ModuleType) -> list[tuple[str, Any]]:
    """``(name, object)`` for each name of ``module.__all__`` but the modules it names."""
    names = getattr(module, "__all__", None)
    if not names:
        raise ValueError(f"{module.__name__} declares no __all__: docs/api.py documents what __all__ names")
    return [(name, getattr(module, name)) for name in names if not inspect.ismodule(getattr(module, name))]


def parts(module: ModuleType) -> list[ModuleType]:
    """The modules described inside ``module``'s section: those its ``__all__`` names (``neurosym.data``'s), then its
    sub-packages that declare an ``__all__`` of their own (``neurosym.layers.arithmetic``), by name."""
    named = [getattr(module, name) for name in getattr(module, "__all__", ()) if inspect.ismodule(getattr(module, name))]
    found = [
        importlib.import_module(f"{module.__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(getattr(module, "__path__", [])), key=lambda info: info.name)
        if info.ispkg
    ]
    return named + [part for part in found if hasattr(part, "__all__") and part not in named]


def _key(module_name: str, name: str, obj: Any) -> tuple[str, str]:
    """What a name stands for, the same for every package that re-exports it."""
    if inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj)):
        return inspect.unwrap(obj).__module__, obj.__qualname__
    return defining_module(module_name, name), name


def _section(module: ModuleType, depth: int, seen: dict[tuple[str, str], str]) -> list[str]:
    """The section of one package or module: its summary, an entry for each public name (those described in an
    earlier section listed with a link there), then the sections of its :func:`parts`."""
    lines = [first_paragraph(module.__doc__, module.__name__), ""]
    elsewhere: dict[str, list[str]] = {}
    for name, obj in _public(module):
        key = _key(module.__name__, name, obj)
        if key in seen:
            elsewhere.setdefault(seen[key], []).append(_code(name))
            continue
        seen[key] = module.__name__
        lines += entry(module.__name__, name, obj, depth + 1)
    if elsewhere:
        where = "; ".join(f"{', '.join(names)} under [{_code(home)}](#{anchor(home)})" for home, names in elsewhere.items())
        lines += [f"{ALSO} {where}.", ""]
    for part in parts(module):
        lines += ["#" * (depth + 1) + f" {_code(part.__name__)}", "", *_section(part, depth + 1, seen)]
    return lines


ALSO = "Also exports, described elsewhere:"
"""How a section's line of the names it re-exports from sections before it begins."""


def _contents(modules: list[ModuleType], links: dict[str, str]) -> list[str]:
    lines = ["## Contents", ""]
    for module in modules:
        lines.append(f"- [{_code(module.__name__)}](#{anchor(module.__name__)}) — guide: {links[module.__name__]}")
        lines += [f"  - [{_code(part.__name__)}](#{anchor(part.__name__)})" for part in parts(module)]
    return [*lines, ""]


def reference(packages: tuple[str, ...] = PACKAGES) -> str:
    """The text of ``docs/api.md``."""
    modules = [importlib.import_module(package) for package in packages]
    links = guides()
    missing = [package for package in packages if package not in links]
    if missing:
        raise ValueError(f"README.md's 'What is inside' table names no guide for {missing}")
    lines = [
        "# API reference",
        "",
        "Every public name of the packages below (what each declares in `__all__`, in that order; then the modules and",
        "sub-packages that declare their own): its kind, its signature as the source writes it and the first paragraph",
        "of its docstring; a class also lists the public methods and properties it defines itself, each with its first",
        "sentence. A name a section re-exports from an earlier one is listed at its end, with a link there. The guides",
        "linked from each package show how the parts fit together.",
        "",
        "Written from the code by `docs/api.py`: run `make api-docs` after changing a public name, a signature or a",
        "docstring (`tests/test_docs_api.py` fails until this file is written again). Do not edit it by hand.",
        "",
        *_contents(modules, links),
    ]
    seen: dict[tuple[str, str], str] = {}
    for module in modules:
        lines += [f"## {_code(module.__name__)}", "", f"Guide: {links[module.__name__]}", ""]
        lines += _section(module, 2, seen)
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # the checkout's own code, whatever the environment has installed
    OUTPUT.write_text(reference(), encoding="utf-8")
