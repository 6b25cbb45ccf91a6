"""Every signature the README and docs/ quote (an inline span ``name(param, ..., keyword=value, ...)`` naming a public
callable, with at least one parameter written as a bare name) names keywords the callable has, at the defaults it has:
a renamed parameter or a changed default shows here. Spans whose arguments are all values (``NAU(100, 2,
ensemble=10)``) are calls, not signatures, and are not read; nor are values that are no Python literal
(``attention="vanilla"|"xl"``) or elided (``bank=...``)."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from doc_blocks import DOCS, ROOT

import neurosym

USAGES = {"NMU(in, out, compiled=True)", "multiplicative_product(x, W, compiled=True)"}
"""Spans that show a call with a value chosen (the option described beside them), not the signature."""
SPAN = re.compile(r"`([^`]+)`")
HEAD = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\(")
PARAMETER = re.compile(r"[A-Za-z_]\w*( \[[^\]]*\])?")
"""A parameter written as a bare name, perhaps with its shape: ``log_probs [B,T,V]``."""


def _public_objects() -> dict[str, list[Any]]:
    """Each name of a package's ``__all__`` -> the distinct objects it names."""
    objects: dict[str, list[Any]] = {}
    for info in pkgutil.walk_packages(neurosym.__path__, "neurosym."):
        if info.ispkg:
            module = importlib.import_module(info.name)
            for name in getattr(module, "__all__", ()):
                found = objects.setdefault(name, [])
                if not any(item is getattr(module, name) for item in found):
                    found.append(getattr(module, name))
    return objects


PUBLIC = _public_objects()


def _resolve(dotted: str) -> Any:
    """The object a span names: a public name, or a dotted path below ``neurosym`` (``None`` where it names none)."""
    parts = dotted.split(".")
    if len(parts) == 1:
        found = PUBLIC.get(dotted, [])
        return found[0] if len(found) == 1 else None
    parts = parts if parts[0] == "neurosym" else ["neurosym", *parts]
    for split in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            target = getattr(target, part, None)
        return target
    return None


def _call(written: str) -> tuple[str, str] | None:
    """The name and the argument text of the call a span starts with (what follows it, ``.abduce(...)`` or
    ``-> Node``, left out), or ``None``."""
    head = HEAD.match(written)
    if head is None:
        return None
    depth = 0
    for end in range(head.end() - 1, len(written)):
        depth += (written[end] in "([{") - (written[end] in ")]}")
        if depth == 0:
            return head.group(1), written[head.end() : end]
    return None


def _arguments(text: str) -> list[str]:
    """``text`` split at its top-level commas."""
    arguments, depth, current = [], 0, ""
    for character in text:
        depth += (character in "([{") - (character in ")]}")
        if character == "," and depth == 0:
            arguments, current = [*arguments, current.strip()], ""
        else:
            current += character
    return [*arguments, current.strip()] if current.strip() else arguments


def _prose(text: str) -> str:
    """A Markdown text without its fenced blocks (each replaced by its newlines, so line numbers hold)."""
    return re.sub(r"```.*?```", lambda block: "\n" * block.group(0).count("\n"), text, flags=re.DOTALL)


def quoted_signatures() -> Iterator[tuple[str, str, Callable[..., Any], list[str]]]:
    """``(where, span, callable, arguments)`` of every quoted signature of a public callable."""
    for path in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = _prose(path.read_text(encoding="utf-8"))
        for span in SPAN.finditer(text):
            written = " ".join(span.group(1).split())
            call = _call(written)
            if call is None or written in USAGES:
                continue
            arguments = _arguments(call[1])
            target = _resolve(call[0])
            if callable(target) and any(PARAMETER.fullmatch(argument) for argument in arguments):
                yield f"{path.name}:{text.count(chr(10), 0, span.start()) + 1}", written, target, arguments


def _keyword_defaults(arguments: list[str]) -> Iterator[tuple[str, Any]]:
    """The ``keyword=value`` arguments whose value is a Python literal."""
    for argument in arguments:
        name, equals, value = argument.partition("=")
        if equals and not name.startswith("*"):
            try:
                literal = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                continue
            if literal is not Ellipsis:
                yield name.strip(), literal


SIGNATURES = list(quoted_signatures())


def test_the_documents_quote_signatures_with_defaults() -> None:
    defaults = [default for *_, arguments in SIGNATURES for default in _keyword_defaults(arguments)]
    assert len(SIGNATURES) >= 40 and len(defaults) >= 60


@pytest.mark.parametrize(("where", "span", "target", "arguments"), SIGNATURES, ids=[where for where, *_ in SIGNATURES])
def test_a_quoted_signature_has_the_callables_keywords_and_defaults(
    where: str, span: str, target: Callable[..., Any], arguments: list[str]
) -> None:
    parameters = inspect.signature(target).parameters
    for name, value in _keyword_defaults(arguments):
        assert name in parameters, f"{where}: `{span}` names {name!r}, which {target.__qualname__} does not take"
        default = parameters[name].default
        assert default is not inspect.Parameter.empty, f"{where}: `{span}` gives {name} a default; it has none"
        assert default == value or (isinstance(default, tuple) and list(default) == value), (
            f"{where}: `{span}` says {name}={value!r}; the default is {default!r}"
        )
