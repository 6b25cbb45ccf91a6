"""The command-line options of every ``neurosym`` command, generated from dataclasses, and their types.

A command's options are one frozen dataclass whose fields are made with :func:`option` (default, help, how the
text is read); :func:`add_options` makes the command line from it, :func:`options_from` the dataclass from
the parsed arguments (its ``__post_init__`` checks the rules between options before any work), and
:func:`config_file_values` reads a ``--config`` TOML file of the same names. The options shared by commands
are the fields of :class:`OutputOptions`, :class:`ThreadOptions`, :class:`RunOptions` and
:class:`TrainingOptions`; ``--preset`` comes from :func:`preset_option` (the one vocabulary :data:`PRESETS`).

Each option type turns the option's text into its value or raises :class:`argparse.ArgumentTypeError`, so a
bad value ends the command with a one-line usage error that names the option, instead of a traceback from
deep inside a run that has already started. Lists are given comma-separated and parsed by :func:`comma_list`;
numbers are ASCII decimal (:data:`DECIMAL`).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, get_args, get_origin, get_type_hints

import torch

from neurosym.paths import read_user_text, user_path
from neurosym.pipelines.curriculum import UNBOUNDED, Curriculum, parse_stages
from neurosym.training.checkpoint import files_stamp, not_a_folder
from neurosym.training.device import resolve_device

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
Number = TypeVar("Number", int, float)
Options = TypeVar("Options", bound="DataclassInstance")


DECIMAL = re.compile(
    r"\s*[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)\s*", re.ASCII | re.IGNORECASE
)
"""A number as the options read it: ASCII decimal digits, with a sign, a fraction and an exponent where wanted, or
``inf`` or ``nan``; spaces around it. Not what ``float`` reads beside: digits of other scripts (``٣``, ``３``) and
``_`` between digits (``1_000``)."""


def _number(text: str, kind: type[Number]) -> Number:
    """``text`` as a float, or as an int (also written like ``5e6``, but not ``1.5``), written as :data:`DECIMAL` says."""
    value = float(text) if DECIMAL.fullmatch(text) else math.nan
    if kind is float and not math.isnan(value):
        return kind(value)
    if kind is float and text.strip().lower() in ("nan", "+nan", "-nan"):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if kind is int and math.isfinite(value) and value.is_integer():
        return int(text) if text.strip().lstrip("+-").isdigit() else int(value)
    ascii_only = "" if text.isascii() and "_" not in text else " (numbers are written in ASCII: the digits 0-9, no '_')"
    raise argparse.ArgumentTypeError(f"expected {'an integer' if kind is int else 'a number'}, got {text!r}{ascii_only}")


def _in_range(kind: type[Number], accepts: Callable[[Number], bool], expected: str, meaning: str) -> Callable[[str], Number]:
    """The option type of a number of ``kind`` (``int`` or ``float``) that ``accepts`` (else an error saying
    ``expected ...``); ``meaning`` is its docstring."""

    def parse(text: str) -> Number:
        value: Number = _number(text, kind)
        if not accepts(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__doc__ = meaning
    return parse


def integer_in(low: int, high: int | None = None) -> Callable[[str], int]:
    """The option type of an integer from ``low`` to ``high`` (no bound above when ``None``)."""
    expected = f"an integer of at least {low}" if high is None else f"an integer in {low}..{high}"
    return _in_range(int, lambda v: v >= low and (high is None or v <= high), expected, f"{expected[0].upper()}{expected[1:]}.")


positive_int = _in_range(int, lambda v: v >= 1, "a positive integer", "An integer of at least 1.")
non_negative_int = _in_range(int, lambda v: v >= 0, "an integer of at least 0", "An integer of at least 0.")
MAX_COMMAND_SEED = 2**32 - 1
"""The largest ``--seed``: every seed a run derives from it (``seed + epoch``, ``seed * 1_000_003 + step``, ...) then
fits torch's and numpy's generators."""
seed_int = _in_range(
    int, lambda v: 0 <= v <= MAX_COMMAND_SEED, f"a seed in 0..{MAX_COMMAND_SEED}", f"A seed: an integer in 0..{MAX_COMMAND_SEED}."
)
positive_float = _in_range(float, lambda v: v > 0 and math.isfinite(v), "a finite positive number", "A finite number above 0.")
non_negative_float = _in_range(float, lambda v: v >= 0 and math.isfinite(v), "a finite number >= 0", "A finite number >= 0.")
probability_below_one = _in_range(float, lambda v: 0 <= v < 1, "a number in [0, 1)", "A number in ``[0, 1)``: a dropout rate.")
unit_interval = _in_range(float, lambda v: 0 <= v <= 1, "a number in [0, 1]", "A number in ``[0, 1]``: a ratio.")
fraction_up_to_one = _in_range(float, lambda v: 0 < v <= 1, "a number in (0, 1]", "A number in ``(0, 1]``: a dataset scale.")


def curriculum_stages(text: str) -> tuple[tuple[int, int], ...]:
    """``--curriculum``: stages ``max_length:steps,...,all`` as :func:`~neurosym.pipelines.curriculum.parse_stages` reads them."""
    try:
        return Curriculum(parse_stages(text)).stages  # checked as a curriculum: lengths growing, 'all' last
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def curriculum_text(stages: Sequence[tuple[int, int]]) -> str:
    """Stages as ``--curriculum`` writes them (the inverse of :func:`curriculum_stages`): ``1:150,...,all``."""
    return ",".join("all" if stage == (UNBOUNDED, UNBOUNDED) else f"{stage[0]}:{stage[1]}" for stage in stages)


_config_folder: ContextVar[Path | None] = ContextVar("config file folder", default=None)
"""The folder of the ``--config`` file whose values :func:`config_file_values` is reading (``None``: none is)."""


def option_path(text: str) -> Path:
    """The path an option's text names: written on the command line, relative to the working folder; written in a
    ``--config`` file, relative to that file's folder (:func:`config_file_values`); an absolute path as it is. A
    leading ``~`` or ``~user`` is the home folder, as a shell expands it (a shell leaves ``--data=~/x`` and a config
    file's ``"~/x"`` as written: they named a folder ``~`` in the working or config file's folder)."""
    path = user_path(text)
    folder = _config_folder.get()
    return path if folder is None else folder / path


def file_at(path: Path) -> Path:
    """``path``, a file that exists; :class:`argparse.ArgumentTypeError` naming it otherwise (a folder as a folder)."""
    if not path.is_file():
        raise argparse.ArgumentTypeError(
            f"{str(path)!r} is a folder, not a file" if path.is_dir() else f"no such file: {str(path)!r}"
        )
    return path


def existing_file(text: str) -> Path:
    """The path of a file that exists (:func:`option_path`)."""
    return file_at(option_path(text))


def existing_folder(text: str) -> Path:
    """The path of a folder that exists (:func:`option_path`); a file there is named as a file."""
    path = option_path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{str(path)!r} {not_a_folder(path)}" if path.exists() else f"no such folder: {str(path)!r}"
        )
    return path


def existing_path(text: str) -> Path:
    """The path of a file or folder that exists (:func:`option_path`): an option that reads either (``--mnist``)."""
    path = option_path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"no such file or folder: {str(path)!r}")
    return path


def output_folder(text: str) -> Path:
    """The path of a folder to write into (:func:`option_path`): one that exists, or one that can be made (no file in its
    place or above), in a folder this process may write."""
    path = option_path(text)
    for place in (path, *path.parents):
        if place.exists():
            if not place.is_dir():
                raise argparse.ArgumentTypeError(f"{str(path)!r} cannot be an output folder: {str(place)!r} is a file")
            if not os.access(place, os.W_OK | os.X_OK):
                raise argparse.ArgumentTypeError(f"{str(path)!r} cannot be an output folder: {str(place)!r} is not writable")
            break
    return path


def nearest(word: str, names: Iterable[str], *, any_case: bool = False) -> str:
    """`` (did you mean NAME?)`` for the one of ``names`` closest to ``word`` (a mistyped option), or ``""`` where
    none is close; ``any_case``: compared with case folded (``nmx`` is close to ``NMU``)."""
    fold = str.casefold if any_case else str
    spelled = {fold(name): name for name in names}
    close = difflib.get_close_matches(fold(word), list(spelled), n=1)
    return f" (did you mean {spelled[close[0]]}?)" if close else ""


def any_case(names: Sequence[str], what: str) -> Callable[[str], str]:
    """The option type of one of ``names`` written in any case (``nmu`` for ``NMU``), read as ``names`` spell it; an
    unknown one is refused, listing ``names`` (``what`` they are) with the nearest."""
    spelled = {name.casefold(): name for name in names}
    if len(spelled) < len(names):
        raise ValueError(f"{what} names {list(names)} differ in case alone")

    def parse(text: str) -> str:
        if text.casefold() not in spelled:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {text!r}: choose from {', '.join(names)}{nearest(text, names, any_case=True)}"
            )
        return spelled[text.casefold()]

    parse.__name__ = what  # argparse names the type in its error message
    return parse


def option_as_json(value: Any) -> Any:
    """An option's value as JSON holds it: paths as text, also inside lists."""
    return (
        str(value) if isinstance(value, Path) else [option_as_json(item) for item in value] if isinstance(value, list) else value
    )


def setup_value(value: Any, out: Path) -> Any:
    """An option's value as a run's setup keeps it (:func:`~neurosym.training.checkpoint.check_setup`): as
    :func:`option_as_json` gives it, but a path as ``{"path": resolved, "files": stamp}``
    (:func:`~neurosym.training.checkpoint.files_stamp`), so that a resume notices the data under it rewritten; the
    path resolved (absolute, links followed), so that the same files named otherwise (from another working folder,
    through a link, by a ``--config`` file read from elsewhere) resume: the path as typed was compared as text.
    ``ValueError`` where the run's output folder ``out`` lies inside such a folder: each checkpoint written there
    would change its stamp, and the run could never be resumed."""
    if isinstance(value, Path):
        if (resolved := value.resolve()) in (out.resolve(), *out.resolve().parents):
            raise ValueError(f"--out {out} lies inside {value}, whose files a resume checks: give an --out outside it")
        return {"path": resolved, "files": files_stamp(value)}
    return [setup_value(item, out) for item in value] if isinstance(value, list) else value


def options_as_json(options: Any) -> dict[str, Any]:
    """A dataclass of options as JSON holds it: numbers, switches and None as they are; paths and anything else JSON
    lacks as text."""
    return json.loads(json.dumps(asdict(options), default=str))


time_limit_minutes = _in_range(
    float, lambda v: 0 <= v < math.inf, "a finite number of minutes, at least 0",
    "The value of a ``--time-limit MINUTES`` option: a finite number of minutes, at least 0.",
)  # fmt: skip


COMPILE_HELP = (
    "run the model's training forward and backward through torch.compile (one graph for every batch shape): fewer, "
    "fused kernels, for GPU training (slower on a CPU); the first step waits for the compiler"
)
"""``--compile``: train through ``torch.compile`` (:func:`neurosym.training.compile.compile_for_training`)."""


def comma_list(
    item: Callable[[str], T],
    *,
    what: str = "value",
    choices: Sequence[str] | None = None,
    distinct: bool = False,
    plural: str | None = None,
) -> Callable[[str], list[T]]:
    """A parser of a non-empty comma-separated list, each part converted by ``item`` (an option type, or
    ``str``) and, with ``choices``, one of them; ``distinct``: no value twice (a module or model named twice was run
    twice). The error names the part that is wrong; ``plural``: ``what``'s, where it is not ``what`` + ``s``."""
    whats = plural or f"{what}s"

    def parse(text: str) -> list[T]:
        parts = [part.strip() for part in text.split(",") if part.strip()]
        if not parts:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of {whats}, got {text!r}")
        values = []
        for part in parts:
            if choices is not None and part not in choices:
                raise argparse.ArgumentTypeError(f"unknown {what} {part!r}: choose from {', '.join(choices)}")
            try:
                values.append(item(part))
            except ValueError as error:  # a type's own ArgumentTypeError names the part already
                raise argparse.ArgumentTypeError(f"{what} {part!r}: {error}") from None
        if distinct and (repeated := [value for i, value in enumerate(values) if value in values[:i]]):  # (0, "" too)
            raise argparse.ArgumentTypeError(f"{what} {repeated[0]!r} given twice: each is run once")
        return values

    parse.__name__ = f"comma-separated {whats}"  # argparse names the type in its error message
    return parse


def device_name(text: str) -> str:
    """``auto`` or a torch device string (``cpu``, ``cuda``, ``cuda:1``, ``mps``), checked but not opened
    (:func:`~neurosym.training.device.resolve_device`): a CUDA or MPS device must be on this machine."""
    try:
        resolve_device(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


PRESETS: dict[str, str] = {
    "smoke": "seconds to minutes: checks that every part runs, numbers not meaningful",
    "cpu": "sized for a laptop CPU (2 cores): the budget benchmarks/RESULTS.md reports",
    "paper": "the published budget (meant for a GPU)",
}
"""The one vocabulary of budgets; each command offers the presets it has, with what they mean for it."""


def preset_option(meanings: Mapping[str, str], default: str | None, chosen: str | None = None) -> Any:
    """The ``preset`` field of a command's options: its budget, one of ``meanings`` (names from :data:`PRESETS`,
    each with what it means for this command); options given explicitly override the preset's values. A
    ``None`` default leaves the choice to the command: ``chosen`` says which it takes, for the help's
    ``(default: ...)`` (``ValueError`` without it)."""
    unknown = set(meanings) - set(PRESETS)
    if unknown:
        raise ValueError(f"presets {sorted(unknown)} are not in the vocabulary {list(PRESETS)}")
    if (default is None) != (chosen is not None):
        raise ValueError(
            f"a preset's default is a name or, left to the command, the words chosen: got {default!r} and {chosen!r}"
        )
    lines = "; ".join(f"{name}: {meaning}" for name, meaning in meanings.items())
    stated = f" (default: {chosen})" if chosen is not None else ""
    return option(default, f"budget ({lines}){stated}", choices=list(meanings))


def apply_threads(threads: int) -> None:
    """Set torch's CPU threads as ``--threads`` says (0 leaves torch's default)."""
    if threads > 0:
        torch.set_num_threads(threads)


# --- Options generated from dataclasses ------------------------------------------------------------------

CONFIG_OPTION = "--config"


def option(
    default: Any,
    help: str,
    *,
    parse: Callable[[str], Any] | None = None,
    choices: Sequence[str] | None = None,
    metavar: str | None = None,
    aliases: Sequence[str] = (),
    factory: Callable[[], Any] | None = None,
    nargs: str | None = None,
    listed: bool = True,
    shown: Callable[[Any], str] | None = None,
) -> Any:
    """A field of a command's options dataclass: its default, help text and, for the command line, how its
    text is read (``parse``: an option type of this module, else the field's annotated type), its ``choices``,
    ``metavar``, ``nargs`` and hidden ``aliases`` (old spellings still accepted). A bool field becomes
    ``--x/--no-x``. ``factory`` builds a mutable default (lists). ``listed=False`` keeps a study knob out of
    ``--help``: it is set in a ``--config`` file (its flag still works, unlisted). The help shows the default as the
    text that gives it (:func:`default_text`, or ``shown`` of the default where a list's items are no plain values)."""
    metadata = {"help": help, "parse": parse, "choices": choices, "metavar": metavar, "aliases": tuple(aliases),
                "nargs": nargs, "listed": listed, "shown": shown}  # fmt: skip
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def flag(name: str) -> str:
    """The command-line spelling of a field: ``time_limit`` -> ``--time-limit``."""
    return "--" + name.replace("_", "-")


def _is_switch(annotation: Any) -> bool:
    """Whether a field is a ``--x/--no-x`` switch: ``bool``, or ``bool | None`` (None: the command decides)."""
    return annotation is bool or set(get_args(annotation)) == {bool, type(None)}


def _field_parser(config_field: Field, annotation: Any) -> Callable[[str], Any] | None:
    parse = config_field.metadata.get("parse")
    if parse is not None:
        return parse
    kinds = [kind for kind in get_args(annotation) if kind is not type(None)] or [annotation]
    kind = kinds[0]
    if kind is int:
        return lambda text: _number(text, int)
    if kind is float:
        return lambda text: _number(text, float)
    return option_path if kind is Path else str if kind is str else None


SHARED_TITLE = "options shared with other commands"


def _group_title(owner: type, named: str | None, program: str) -> str:
    """The help's title of the options ``owner`` declares: its docstring's first line, where the command's name in
    it (``named``, e.g. ``neurosym hint``) is the program actually run (``program``, e.g. ``hint.py``)."""
    if owner.__module__ == __name__:
        return SHARED_TITLE
    title = (owner.__doc__ or owner.__name__).strip().splitlines()[0].replace("``", "").rstrip(".")
    return title if named is None else re.sub(rf"{re.escape(named)}(?![\w-])", lambda _: program, title)


def add_options(parser: argparse.ArgumentParser, options: type, named: str | None = None) -> None:
    """Every field of the dataclass ``options`` (made with :func:`option`) as a command-line option: name, type,
    default and help written once, in the dataclass. One group per class of its hierarchy that declares
    fields, titled by the class docstring's first line (the most derived first), the command's name there
    (``named``: ``neurosym hint``) written as ``parser.prog`` (``hint.py`` for ``benchmarks/hint.py``); the classes
    of this module make one last group, the options shared with other commands."""
    hints, by_name = get_type_hints(options), {item.name: item for item in fields(options)}
    groups: dict[str, list[str]] = {}
    for owner in options.__mro__:
        own = [name for name in vars(owner).get("__annotations__", {}) if name in by_name]
        if not own:
            continue
        title = _group_title(owner, named, parser.prog)
        groups.setdefault(title, []).extend(name for name in own if not any(name in names for names in groups.values()))
    for title, names in groups.items():
        group = parser.add_argument_group(title)
        for name in names:
            _add_field(group, by_name[name], hints[name])
    unlisted = [item.name for item in fields(options) if not item.metadata.get("listed", True)]
    if unlisted:
        parser.epilog = (f"Study knobs, set in a {CONFIG_OPTION} file (each a key; its flag works too, e.g. "
                         f"{flag(unlisted[0])}): {', '.join(unlisted)}.")  # fmt: skip


def default_of(config_field: Field) -> Any:
    """The value an option field has when it is not given."""
    if config_field.default is not MISSING:
        return config_field.default
    if config_field.default_factory is not MISSING:
        return config_field.default_factory()
    raise ValueError(f"option {config_field.name!r} has no default")


GIVEN_OPTIONS = "_given"
"""The attribute of a parsed namespace that holds the names of the options its command line (or ``--config``
file) gave, at any value."""
_given: ContextVar[frozenset[str] | None] = ContextVar("given options", default=None)
"""The options given to the command whose options :func:`options_from` is building (``None``: not built from a
command line)."""


def options_set(options: Any, names: Iterable[str]) -> list[str]:
    """The options of ``names`` that ``options`` sets: built from a command line (:func:`options_from`), those it
    gave, at their defaults too; otherwise those away from their defaults."""
    given = _given.get()
    if given is not None:
        return [name for name in names if name in given]
    defaults = {item.name: default_of(item) for item in fields(options)}
    return [name for name in names if getattr(options, name) != defaults[name]]


def reject_unused(options: Any, names: Iterable[str], used_by: str) -> None:
    """Raise ``ValueError`` naming the first option of ``names`` that ``options`` sets (:func:`options_set`): these
    options are ``used_by`` other runs only, and this run would ignore it."""
    if unused := options_set(options, names):
        raise ValueError(f"{flag(unused[0])} is used by {used_by} only; this run would ignore it (drop it)")


def note_given(namespace: argparse.Namespace, names: Iterable[str]) -> None:
    """Record in ``namespace`` that the options ``names`` were given (:data:`GIVEN_OPTIONS`)."""
    setattr(namespace, GIVEN_OPTIONS, {*getattr(namespace, GIVEN_OPTIONS, ()), *names})


def default_text(value: Any) -> str:
    """An option's value as the command line writes it, for its help: a list comma-separated (``[0.01, 0.1]`` ->
    ``0.01,0.1``, not Python's ``['a', 'b']``), a whole float as an integer (``0.0`` -> ``0``) and an exponent without
    its sign's padding (``1e-05`` -> ``1e-5``)."""
    if isinstance(value, list | tuple):
        return ",".join(map(default_text, value))
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    if isinstance(value, float):
        return re.sub(r"e(-?)\+?0*(\d)", r"e\1\2", repr(value))
    return str(value)


class _Store(argparse.Action):
    """Stores an option's value, as argparse's ``store`` does, and notes it given (:func:`note_given`); ``show``: the
    text the help gives its default (the default now, as ``set_defaults`` and a ``--config`` file leave it)."""

    def __init__(self, *args: Any, show: Callable[[Any], str] = default_text, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.show = show

    def shown(self) -> str:
        """The text of the option's default in its help: :func:`default_text`, or the ``shown`` of its field."""
        return self.show(self.default)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        setattr(namespace, self.dest, values)
        note_given(namespace, [self.dest])


class _Switch(argparse.BooleanOptionalAction):
    """``--name`` / ``--no-name``, noted given (:func:`note_given`)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        super().__call__(parser, namespace, values, option)
        note_given(namespace, [self.dest])


def _add_field(group: argparse._ArgumentGroup, config_field: Field, annotation: Any) -> None:
    meta = config_field.metadata
    default = default_of(config_field)
    shown = meta["help"] if meta["listed"] else argparse.SUPPRESS
    if _is_switch(annotation):
        group.add_argument(flag(config_field.name), action=_Switch, default=default, help=shown)
        return
    kwargs = {"action": _Store, "type": _field_parser(config_field, annotation), "default": default, "help": shown}
    if meta["shown"] is not None:
        kwargs["show"] = meta["shown"]
    kwargs |= {key: meta[key] for key in ("choices", "metavar", "nargs") if meta.get(key) is not None}
    group.add_argument(flag(config_field.name), dest=config_field.name, **kwargs)
    for alias in meta["aliases"]:
        group.add_argument(alias, dest=config_field.name, **(kwargs | {"help": argparse.SUPPRESS, "default": argparse.SUPPRESS}))


def options_from(options: type[Options], namespace: argparse.Namespace) -> Options:
    """The dataclass ``options`` from parsed arguments; its own checks (``__post_init__``) raise ``ValueError``, and
    refuse an option the run would not use wherever the arguments gave it (:func:`reject_unused`, :data:`GIVEN_OPTIONS`)."""
    given = getattr(namespace, GIVEN_OPTIONS, None)
    token = _given.set(None if given is None else frozenset(given))
    try:
        return options(**{item.name: getattr(namespace, item.name) for item in fields(options) if hasattr(namespace, item.name)})
    finally:
        _given.reset(token)


def config_file_values(options: type, path: Path) -> dict[str, Any]:
    """The values of the TOML config file ``path`` for the fields of ``options`` (keys: field names, with ``-``
    or ``_``), each read as the command line reads it, but a relative path as one relative to the file's folder
    (:func:`option_path`), so that the file names the same files from any working folder. Every problem raises a
    ``ValueError`` that opens with the file's path: a bad or unknown entry, or one option under two spellings
    (``augment-shift`` and ``augment_shift``), naming it; text that is no TOML, or no UTF-8 (a Windows editor's
    Latin-1), with its line and column; a Git LFS pointer. The file is UTF-8, with a byte-order mark or without, its
    lines ending in ``"\n"`` or ``"\r\n"``."""
    try:
        table = tomllib.loads(read_user_text(path, "config file"))
    except OSError as error:
        raise ValueError(f"{path}: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:  # (its message has the line and column, not the file)
        raise ValueError(f"{path}: {error}") from None
    token = _config_folder.set(path.parent)
    try:
        return _table_values(options, table)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    finally:
        _config_folder.reset(token)


def _table_values(options: type, table: Mapping[str, Any]) -> dict[str, Any]:
    """The values of a config file's ``table`` for the fields of ``options`` (:func:`config_file_values`)."""
    hints, by_name = get_type_hints(options), {item.name: item for item in fields(options) if "help" in item.metadata}
    values: dict[str, Any] = {}
    keys: dict[str, str] = {}  # option name -> the key that set it
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in by_name:
            spelled = [known.replace("_", "-") if "-" in key else known for known in by_name]  # (as the key is written)
            hint = f" ({CONFIG_OPTION} is given on the command line only)" if name == "config" else nearest(key, spelled)
            raise ValueError(f"unknown option {key!r}{hint}")
        if name in keys:
            raise ValueError(f"{keys[name]!r} and {key!r} are one option ({flag(name)}): keep one of them")
        keys[name], values[name] = key, _config_value(key, value, by_name[name], hints[name])
    return values


def _takes_a_list(annotation: Any) -> bool:
    """Whether a field's value is a list or tuple (``list[int]``, ``tuple[str, ...] | None``): a comma-separated option."""
    return any(get_origin(kind) in (list, tuple) for kind in (annotation, *get_args(annotation)))


def _config_value(key: str, value: Any, config_field: Field, annotation: Any) -> Any:
    """One config-file entry read as its option's text would be; a list only for an option of several values."""
    if _is_switch(annotation):
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if isinstance(value, list) and not _takes_a_list(annotation):
        raise ValueError(f"{key} takes one value, got the list {value!r}")
    meta, parse = config_field.metadata, _field_parser(config_field, annotation) or str
    items = value if meta.get("nargs") else [value]
    parsed = []
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, dict) or (isinstance(item, list) and any(isinstance(part, list | dict) for part in item)):
            raise ValueError(f"{key}: {value!r} is not an option value; write its command-line text (a string) or a flat list")
        text = ",".join(map(str, item)) if isinstance(item, list) else str(item)
        if meta.get("choices") is not None and text not in meta["choices"]:
            raise ValueError(f"{key}: invalid choice {text!r} (choose from {', '.join(map(str, meta['choices']))})")
        try:
            parsed.append(parse(text))
        except (argparse.ArgumentTypeError, ValueError) as error:
            raise ValueError(f"{key}: {error}") from None
    if meta.get("nargs") == "+" and not parsed:  # (as the command line refuses the option without a value)
        raise ValueError(f"{key}: expected at least one value, got {value!r}")
    return parsed if meta.get("nargs") else parsed[0]


@dataclass(frozen=True)
class OutputOptions:
    """The options every command has."""

    out: Path = option(
        Path("results"), "output folder (JSON, plot, checkpoints); on the command line results/COMMAND", parse=output_folder
    )
    seed: int = option(0, "seed of data generation, initialisation and batch order", parse=seed_int)
    progress: bool = option(True, "show progress bars")

    def writes_as_it_goes(self) -> bool:
        """Whether this run writes its work as it goes (checkpoints, finished runs, cached splits), so that the same
        command continues after a Ctrl-C; ``False`` for a run that writes its results at its end only (a timing)."""
        return True


@dataclass(frozen=True)
class ThreadOptions(OutputOptions):
    """The options of every command that computes on the CPU."""

    threads: int = option(0, "torch CPU threads (0: torch's default, all cores); 1 on a shared CPU", parse=non_negative_int)


@dataclass(frozen=True)
class RunOptions(ThreadOptions):
    """The options of every command that computes with torch on a device."""

    device: str = option("auto", "'auto' (CUDA when present), 'cpu' or 'cuda[:N]'", parse=device_name)


@dataclass(frozen=True)
class TimingOptions(RunOptions):
    """The options of every command that times code on a device (one CPU thread by default: steadier timings)."""

    threads: int = option(1, "torch CPU threads (0: torch's default, all cores)", parse=non_negative_int)

    def writes_as_it_goes(self) -> bool:
        """``False``: a timing writes its results at its end only."""
        return False


@dataclass(frozen=True)
class TrainingOptions(RunOptions):
    """The options of every command that trains with checkpoints."""

    resume: bool = option(
        True,
        "continue from the checkpoints in --out where there are (else it says so and starts from step 0; --no-resume "
        "starts afresh and overwrites them)",
    )
    time_limit: float | None = option(
        None,
        "minutes of training in this call: then the step under way ends, the checkpoint is written and the command "
        "exits with status 75; the same command continues it (Ctrl-C and SIGTERM stop the same way, with status 130 and 143)",
        parse=time_limit_minutes,
        metavar="MINUTES",
    )

    def checkpoints(self) -> Path | None:
        """Where ``--resume`` looks for what this run continues: a checkpoint file, or a folder of them (the ``.pt`` and
        ``.json`` files under it); ``None``: the run keeps none."""
        return self.out

    def writes_as_it_goes(self) -> bool:
        """Whether this run keeps checkpoints (``--speed`` of ``neurosym arithmetic`` keeps none)."""
        return self.checkpoints() is not None


def fresh_start(options: TrainingOptions) -> str | None:
    """The line that says ``--resume`` found nothing to continue where ``options.checkpoints()`` says, so that the run
    starts from step 0 (as it does: resuming where a checkpoint is present suits a job that may be interrupted); ``None``
    where the run does not resume, keeps no checkpoint or finds one, and on every process but the first of a
    ``torchrun`` job (``RANK`` other than 0), which would repeat it."""
    place = options.checkpoints()
    if not options.resume or place is None or place.is_file() or os.environ.get("RANK", "0") != "0":
        return None
    if place.is_dir() and any(path.suffix in (".pt", ".json") for path in place.rglob("*") if path.is_file()):
        return None
    return f"no checkpoint to resume at {place}: training starts from step 0"
