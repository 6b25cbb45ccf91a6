"""Every command the README, docs/ and benchmarks/ (RESULTS.md, runs/README.md) quote (``neurosym CMD ...``, ``python
benchmarks/CMD.py ...``, ``torchrun ... benchmarks/CMD.py ...``) is one the current command line takes: its options
exist, their values parse and the options' own checks pass. The shell of those blocks is read as far as they use
it: ``NAME="..."`` assignments and ``$NAME``, ``for v in a b; do ...; done`` (its first value), ``until ...; do``,
comments and line continuations. Inline code spans that start with ``neurosym CMD`` count too. ``S``, ``N``, ``E``,
``R`` and ``TASK`` stand for values the reader picks."""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

import pytest
from doc_blocks import DOCS, ROOT, fenced_blocks

from neurosym.cli import COMMANDS, _parsed, build_parser
from neurosym.experiments.options import options_from

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "benchmarks").rglob("*.md")), *sorted(DOCS.glob("*.md"))]
PLACEHOLDERS = {"S": "0", "N": "2", "E": "1", "R": "1", "TASK": "hwf"}
"""Words the documents write for a value the reader picks."""


SEPARATORS = {";", "&&", "||", "|", "&", "do", "done", "until", "while"}


def _words(line: str) -> list[str]:
    """``line`` as shell words, its separators (``;``, ``&&``, ...) as words of their own, comments dropped."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    return list(lexer)


def _commands(text: str, placeholders: Mapping[str, str] = PLACEHOLDERS) -> list[list[str]]:
    """The argument lists (command name first) of the neurosym commands of one shell block, each word of
    ``placeholders`` (a value the reader picks) replaced by its value."""
    variables: dict[str, str] = {}
    found = []
    for line in text.replace("\\\n", "").splitlines():  # (bash drops a backslash-newline)
        words = _words(line)
        if len(words) == 1 and (assignment := re.fullmatch(r"([A-Z_]+)=(.*)", words[0])):
            variables[assignment[1]] = assignment[2]
            continue
        if loop := re.match(r"for (\w+) in (\S+)", line):
            variables[loop[1]] = loop[2]
        argv: list[str] = []
        for word in [*_words(re.sub(r"\$(\w+)", lambda match: variables.get(match[1], match[0]), line)), ";"]:
            if word not in SEPARATORS:
                argv.append(placeholders.get(word, word))
                continue
            if command := _neurosym_command(argv):
                found.append(command)
            argv = []
    return found


def _neurosym_command(argv: list[str]) -> list[str] | None:
    """``argv`` from the command name on when it runs ``neurosym NAME`` or ``benchmarks/NAME.py``, else None."""
    for start, word in enumerate(argv):
        if word == "neurosym" and start + 1 < len(argv) and argv[start + 1] in COMMANDS:
            return argv[start + 1 :]
        if (script := re.fullmatch(r"benchmarks/([a-z_]+)\.py", word)) and script[1].replace("_", "-") in COMMANDS:
            return [script[1].replace("_", "-"), *argv[start + 1 :]]
    return None


def _quoted(placeholders: Mapping[str, str] = PLACEHOLDERS) -> list[tuple[Path, list[str]]]:
    """Every quoted command, as ``(document, argument list)``, its ``placeholders`` replaced (:func:`_commands`)."""
    blocks = [
        (document, argv)
        for document in DOCUMENTS
        for language, text in fenced_blocks(document)
        if language in ("bash", "")
        for argv in _commands(text, placeholders)
    ]
    spans = [
        (document, argv)
        for document in DOCUMENTS
        for span in re.findall(r"`(neurosym [a-z-]+[^`$]*)`", document.read_text(encoding="utf-8"))
        for argv in _commands(span.replace("\n", " "), placeholders)
        if "--help" not in argv and argv[-1] != "--data"  # (names the option in prose: `neurosym hint --data`)
    ]
    return blocks + spans


QUOTED = [pytest.param(argv, id=f"{document.name}:{' '.join(argv)[:80]}") for document, argv in _quoted()]
SEEDED = [
    pytest.param(argv, id=f"{document.name}:{' '.join(argv)[:80]}")
    for document, argv in _quoted({})
    if "--seed" in argv[:-1] and argv[argv.index("--seed") + 1] == "S"
]
"""The quoted commands run once per seed (``--seed S``), their placeholders as written."""


def test_the_documents_quote_commands_of_every_kind() -> None:
    assert len(QUOTED) >= 40
    assert {param.values[0][0] for param in QUOTED} >= {"arithmetic", "hint", "pipeline", "pvr", "mathematics"}
    assert len(SEEDED) >= 8
    assert _commands('B="--x 1"\nfor m in a b; do neurosym hint --model $m $B --seed S; done  # c\n') == [
        ["hint", "--model", "a", "--x", "1", "--seed", "0"]
    ]


@pytest.mark.parametrize("argv", QUOTED)
def test_a_quoted_command_parses_passes_its_options_checks_and_spells_its_options_out(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)  # (--config paths are relative to the repository)
    argv = [str(tmp_path) if re.match(r"PATH/|/path/to/", word) else word for word in argv]  # a folder of the user's
    parser = build_parser(argv[0])
    try:
        args = _parsed(parser, argv)
        options_from(importlib.import_module(args._runner).OPTIONS, args)
    except SystemExit as stop:  # argparse's usage error, already printed
        pytest.fail(f"neurosym {shlex.join(argv)} is refused (exit {stop.code})")
    except (ValueError, argparse.ArgumentError) as error:
        pytest.fail(f"neurosym {shlex.join(argv)}: {error}")


@pytest.mark.parametrize("argv", SEEDED)
def test_a_command_quoted_for_each_seed_writes_each_seed_to_a_folder_of_its_own(argv: list[str]) -> None:
    """Run for seeds 0, 1, 2 into one ``--out``, the second seed's run is refused (a checkpoint there records
    another seed: ``neurosym pipeline``, ``neurosym hint``) or replaces the first's results (``pvr.json``)."""
    out = argv[argv.index("--out") + 1] if "--out" in argv[:-1] else "(its default)"
    assert "S" in out, f"neurosym {shlex.join(argv)}: every seed S writes to --out {out}; name S in it"


def _make_run() -> list[str]:
    """The argument list (command name first) of the Makefile's ``run`` recipe."""
    recipe = re.search(r"^run:.*\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert recipe is not None, "the Makefile has no run recipe"
    (command,) = _commands(recipe.group(1).replace("$(BIN)/neurosym", "neurosym"))
    return command


def _options(argv: list[str]) -> object:
    """The options dataclass the command ``argv`` runs with."""
    args = _parsed(build_parser(argv[0]), argv)
    return options_from(importlib.import_module(args._runner).OPTIONS, args)


def test_the_pipeline_guide_quotes_make_runs_command_as_the_makefile_runs_it() -> None:
    quick_start = next(text for language, text in fenced_blocks(DOCS / "pipeline.md") if language == "bash")
    assert "`make run`" in quick_start and _options(_commands(quick_start)[0]) == _options(_make_run())
