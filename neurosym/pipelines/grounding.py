"""A grounding: what each anonymous class of a language means, learned from results alone.

A :class:`Grounding` gives each of ``K`` anonymous classes (``0 .. K-1``) a grammatical role (a
number, a binary operator, the open or the close bracket, or unused) and, by role, a value or an
induced program and a precedence level. It turns into an :class:`~neurosym.semantics.OperatorTable`
over display symbols (:meth:`Grounding.symbols`) so that the batch solver, the parser and
:class:`~neurosym.pipelines.HintPipeline` run on it; prints as a table; and round-trips through JSON.
:func:`compare_grounding` checks it against a reference table through the true symbol of each class
(for reports only: nothing that learns a grounding may call it).
"""

from __future__ import annotations

import functools
import json
import os
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from neurosym.paths import user_path
from neurosym.semantics import FEWSHOT_NUMBERS, FEWSHOT_OPERATORS, BatchSolver, Operator, OperatorTable, Value
from neurosym.semantics.induction import Program
from neurosym.syntax import ADDITIVE, BUILTIN_NUMBERS, BUILTIN_OPERATORS, MULTIPLICATIVE
from neurosym.training.checkpoint import atomic_path, load_json
from neurosym.training.checks import is_int

ROLES = ("number", "operator", "open", "close", "unused")
"""The grammatical roles of a class: the grammar's shape (numbers, binary operators, round brackets)."""
_LETTERS = "".join(c for c in string.ascii_letters if c not in {*FEWSHOT_NUMBERS, *FEWSHOT_OPERATORS})
"""Display symbols of operators, numbers that show no digit and unused classes: not HINT's few-shot concepts
(x, y, a, b, c, d), which a learned grounding meets later as new symbols."""


@dataclass(frozen=True)
class Grounding:
    """The meaning of ``len(roles)`` anonymous classes.

    ``roles[c]`` is one of :data:`ROLES`; ``values`` maps each number class to its value, ``programs``
    and ``levels`` each operator class to its program and precedence level (1 binds like ``+ -``, 2 like
    ``* /``). Exactly one class opens and one closes brackets.
    """

    roles: tuple[str, ...]
    values: Mapping[int, int] = field(default_factory=dict)
    programs: Mapping[int, Program] = field(default_factory=dict)
    levels: Mapping[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "roles", tuple(self.roles))
        unknown = sorted({r for r in self.roles if r not in ROLES})
        if unknown:
            raise ValueError(f"unknown roles {unknown}: choose from {ROLES}")
        for bracket in ("open", "close"):
            if self.roles.count(bracket) != 1:
                raise ValueError(f"a grounding needs exactly one {bracket} bracket class, got {self.roles.count(bracket)}")
        numbers, operators = set(self.classes("number")), set(self.classes("operator"))
        if not numbers or not operators:
            raise ValueError("a grounding needs at least one number class and one operator class")
        for name, mapping, wanted in (
            ("values", self.values, numbers),
            ("programs", self.programs, operators),
            ("levels", self.levels, operators),
        ):
            if set(mapping) != wanted:
                raise ValueError(f"{name} must cover exactly the classes {sorted(wanted)}, got {sorted(mapping)}")
        bad = {c: v for c, v in self.levels.items() if v not in (ADDITIVE, MULTIPLICATIVE)}
        if bad:
            raise ValueError(f"operator levels must be {ADDITIVE} or {MULTIPLICATIVE}, got {bad}")
        if any(type(v) is not int for v in self.values.values()):
            raise ValueError(f"number values must be integers, got {dict(self.values)}")

    @property
    def size(self) -> int:
        """The number of classes ``K``."""
        return len(self.roles)

    def classes(self, role: str) -> list[int]:
        """The classes in ``role``, in class order."""
        return [c for c, r in enumerate(self.roles) if r == role]

    @functools.cached_property
    def symbols(self) -> tuple[str, ...]:
        """One display symbol per class, chosen from the learned meaning only: ``(`` and ``)`` for the
        brackets, the digit of a number's value when it is a distinct digit, else a letter (operators,
        other numbers and unused classes, in class order)."""
        digit_counts = {v: list(self.values.values()).count(v) for v in self.values.values()}
        letters = iter(_LETTERS)
        shown: list[str] = []
        for c, role in enumerate(self.roles):
            if role == "open":
                shown.append("(")
            elif role == "close":
                shown.append(")")
            elif role == "number" and 0 <= self.values[c] <= 9 and digit_counts[self.values[c]] == 1:
                shown.append(str(self.values[c]))
            else:
                try:
                    shown.append(next(letters))
                except StopIteration:
                    raise ValueError(f"too many classes ({self.size}) to give each a display symbol") from None
        return tuple(shown)

    @functools.cached_property
    def table(self) -> OperatorTable:
        """The learned semantics over :attr:`symbols`. The built-in digits and ``+ - * /`` that no class
        shows stay in the table (it requires them) but are never read: no class's symbol is one of them."""
        symbols = self.symbols
        numbers = {symbols[c]: v for c, v in self.values.items()}
        operators = {symbols[c]: Operator(self.levels[c], _MemoisedProgram(p), None, str(p)) for c, p in self.programs.items()}
        unread = {s: int(s) for s in BUILTIN_NUMBERS if s not in numbers}
        placeholders = {s: Operator(level, _never, None, "not shown by any class") for s, level in BUILTIN_OPERATORS.items()}
        return OperatorTable({**unread, **numbers}, {**placeholders, **operators}, "learned")

    @functools.cached_property
    def solver(self) -> BatchSolver:
        return BatchSolver(self.table)

    def sentence(self, classes: Sequence[int]) -> str:
        """The display string of a sentence of class ids ``0 .. size - 1``; ``ValueError`` naming the first other one (a
        ``-1``, the padding of :attr:`~neurosym.pipelines.decoding.Decoded.tokens`, was read as the last class)."""
        size = self.size  # (type(c) is int first: is_int alone made solving a corpus 4x slower)
        bad = next((p for p, c in enumerate(classes) if not ((type(c) is int or is_int(c)) and 0 <= c < size)), None)
        if bad is not None:
            raise ValueError(
                f"class ids must be in 0..{self.size - 1}, got {classes[bad]!r} at position {bad} of {list(classes)}"
            )
        return "".join(self.symbols[c] for c in classes)

    def solve(self, sentences: Sequence[Sequence[int]]) -> list[Value | None]:
        """Values of sentences of class ids under the learned semantics (``None``: ungrammatical or invalid)."""
        return self.solver.solve([self.sentence(s) for s in sentences])

    def rows(self) -> list[dict]:
        """One row per class: ``class``, ``role``, ``symbol``, ``value``, ``program``, ``level``."""
        return [
            {
                "class": c,
                "role": role,
                "symbol": self.symbols[c],
                "value": self.values.get(c),
                "program": str(self.programs[c]) if c in self.programs else None,
                "level": self.levels.get(c),
            }
            for c, role in enumerate(self.roles)
        ]

    def format(self, names: Sequence[str] | None = None) -> str:
        """The grounding as a text table; ``names`` labels the classes (default ``c0, c1, ...``)."""
        names = list(names) if names is not None else [f"c{c}" for c in range(self.size)]
        if len(names) != self.size:
            raise ValueError(f"need {self.size} class names, got {len(names)}")
        header = ("class", "role", "symbol", "meaning", "level")
        lines = [header]
        for row, name in zip(self.rows(), names):
            meaning = row["program"] if row["program"] is not None else ("" if row["value"] is None else str(row["value"]))
            lines.append((name, row["role"], row["symbol"], meaning, "" if row["level"] is None else str(row["level"])))
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)

    def to_json(self) -> dict:
        """A JSON-ready dict (programs as nested lists); :meth:`from_json` reads it back."""
        return {
            "roles": list(self.roles),
            "values": {str(c): v for c, v in self.values.items()},
            "programs": {str(c): _expr_to_json(p.expr) for c, p in self.programs.items()},
            "levels": {str(c): v for c, v in self.levels.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping) -> Grounding:
        missing = [key for key in ("roles", "values", "programs", "levels") if key not in data]
        if missing:
            raise ValueError(f"a grounding's JSON lacks {missing}")
        return cls(
            tuple(data["roles"]),
            {int(c): int(v) for c, v in data["values"].items()},
            {int(c): Program(_expr_from_json(e)) for c, e in data["programs"].items()},
            {int(c): int(v) for c, v in data["levels"].items()},
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_json` to ``path`` (atomically: :func:`~neurosym.training.atomic_path`); returns the path."""
        with atomic_path(path) as partial:
            partial.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return user_path(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> Grounding:
        return cls.from_json(load_json(path))


def _never(a: Value, b: Value) -> None:
    return None


class _MemoisedProgram:
    """``program`` as a memoised scalar rule (the same operand pairs recur across a corpus). It pickles and copies as
    its program, with an empty memory: a learned table reaches worker processes (an ``lru_cache`` of the program
    itself did not pickle)."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self._memo = functools.lru_cache(maxsize=1 << 16)(program)

    def __call__(self, a: Value, b: Value) -> int | None:
        return self._memo(a, b)

    def __reduce__(self) -> tuple[type[_MemoisedProgram], tuple[Program]]:
        return type(self), (self.program,)


def _expr_to_json(expr: tuple) -> list:
    return [item if not isinstance(item, tuple) else _expr_to_json(item) for item in expr]


def _expr_from_json(data: Sequence) -> tuple:
    if not isinstance(data, list | tuple) or not data or not isinstance(data[0], str):
        raise ValueError(f"a program must be a nested list headed by its operation, got {data!r}")
    return tuple(item if not isinstance(item, list | tuple) else _expr_from_json(item) for item in data)


@dataclass(frozen=True)
class Comparison:
    """How a grounding agrees with a reference table, class by class through the classes' true symbols:
    ``mismatches`` lists every disagreement (empty: the grounding is the reference)."""

    mismatches: tuple[str, ...]

    @property
    def equal(self) -> bool:
        return not self.mismatches


def compare_grounding(
    grounding: Grounding, reference: OperatorTable, class_symbols: Sequence[str], operand_range: int = 30
) -> Comparison:
    """Compare ``grounding`` with ``reference``, where ``class_symbols[c]`` is the true symbol of class
    ``c`` (``(`` and ``)`` for brackets; ``""`` for a class no symbol uses). Roles, values and levels
    must be equal; programs must give the reference operator's value (or both ``None``) for every
    operand pair in ``0 .. operand_range - 1``. For reports only."""
    if len(class_symbols) != grounding.size:
        raise ValueError(f"need {grounding.size} class symbols, got {len(class_symbols)}")
    mismatches: list[str] = []
    for c, symbol in enumerate(class_symbols):
        role = grounding.roles[c]
        expected_role: str | None
        if symbol in reference.numbers:
            expected_role = "number"
        elif symbol in reference.operators:
            expected_role = "operator"
        else:
            expected_role = {"(": "open", ")": "close", "": "unused"}.get(symbol)
        if expected_role is None:
            raise ValueError(f"symbol {symbol!r} of class {c} is not in the reference table")
        if role != expected_role:
            mismatches.append(f"class {c} ({symbol}): role {role}, expected {expected_role}")
        elif role == "number" and grounding.values[c] != reference.numbers[symbol]:
            mismatches.append(f"class {c} ({symbol}): value {grounding.values[c]}, expected {reference.numbers[symbol]}")
        elif role == "operator":
            operator = reference.operators[symbol]
            if grounding.levels[c] != operator.level:
                mismatches.append(f"class {c} ({symbol}): level {grounding.levels[c]}, expected {operator.level}")
            program = grounding.programs[c]
            wrong = [(i, j) for i in range(operand_range) for j in range(operand_range) if program(i, j) != operator.value(i, j)]
            if wrong:
                mismatches.append(f"class {c} ({symbol}): {program} differs from {operator.description} at {wrong[0]}")
    return Comparison(tuple(mismatches))
