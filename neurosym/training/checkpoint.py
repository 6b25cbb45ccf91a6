"""Atomic checkpoints and JSON files: a crash or interruption never leaves a half-written file behind; and
the one check that a checkpoint may be resumed under a given configuration. A path given to the writers and readers
here (:func:`atomic_path`, :func:`save_checkpoint`, :func:`load_checkpoint`, :func:`save_json`, :func:`load_json`) and
to the checks of paths (:func:`existing_file`, :func:`existing_folder`, :func:`writable_file`) that opens with ``~``
opens with the home folder (:func:`~neurosym.paths.user_path`)."""

from __future__ import annotations

import errno
import glob
import hashlib
import json
import math
import os
import stat
import sys
import tempfile
import threading
import zipfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeGuard

import torch
from torch import nn

from neurosym.paths import check_not_lfs_pointer, undecodable, user_path
from neurosym.training.checks import is_real
from neurosym.training.device import resolve_device

if sys.platform != "win32":
    import fcntl


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once, at import: setting it to read it is not thread-safe


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """A fresh temporary path beside ``path`` to write to, renamed over ``path`` when the block ends without an
    error and removed otherwise.

    Each call gets its own temporary name (ending in ``suffix``, for writers that add an extension), so processes
    writing the same file at once (the ranks of a ``torchrun`` job filling a cache) never rename each other's
    file away; the rename is atomic on POSIX file systems, so readers see either the old or the new file. The new
    file is flushed to disk before the rename, so that a crash soon after (a power cut) cannot leave ``path`` renamed
    but empty or cut short, and its folder after it, so that the rename itself survives a crash (where folders can be
    opened: not on Windows). The temporary files of writers that were killed while writing ``path`` (SIGKILL, a
    crash), which no writer holds any more, are removed first (:func:`_remove_abandoned`): they do not pile up beside it.
    A ``path`` that is a symbolic link is written through: its target gets the new file and the link stays. A ``path``
    that is a folder or lies under a file raises ``ValueError`` (:func:`writable_file`) before the block runs. A file
    written is added to every open :func:`recording_writes`.
    """
    given = writable_file(path)
    target = given.resolve()  # (a link's target: renaming over the link would replace it by a file)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(target, suffix)
    tmp, handle = _held_temporary(target, suffix)
    try:
        yield tmp
        _flush_to_disk(tmp)
        os.chmod(tmp, 0o666 & ~_UMASK)  # as open() would have made it (mkstemp's file is private, 0600)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        if handle is not None:
            os.close(handle)  # (and with it the lock)
    _flush_folder(target.parent)
    _record_write(given)


_records: list[set[Path]] = []
"""The open records of :func:`recording_writes`, each the files written since it opened."""
_records_lock = threading.Lock()


@contextmanager
def recording_writes() -> Iterator[set[Path]]:
    """The files :func:`atomic_path` writes (and so :func:`save_json`, :func:`save_checkpoint`, a figure's
    ``save_figure``) while the block runs, in any thread of this process, each as the absolute path it was given (a
    link as the link): what a command wrote or rewrote, told apart from the files that earlier runs left beside them
    without reading any file's modification time (which some file systems keep to the second or two). The set fills as
    the block runs; a file written within a record opened inside it goes to both."""
    written: set[Path] = set()
    with _records_lock:
        _records.append(written)
    try:
        yield written
    finally:
        with _records_lock:
            _records[:] = [record for record in _records if record is not written]  # (not remove: equal sets)


def _record_write(path: Path) -> None:
    """Add the file just written at ``path`` to every open record of :func:`recording_writes`."""
    with _records_lock:
        for written in _records:
            written.add(path.absolute())


RANDOM_NAME_LENGTH = 8
"""The characters ``tempfile.mkstemp`` draws for a name, between its prefix and suffix: how a temporary file of
:func:`atomic_path` is told from other files (:func:`_remove_abandoned`)."""


def _held_temporary(target: Path, suffix: str) -> tuple[Path, int | None]:
    """A new empty file ``.{target.name}.XXXXXXXX{suffix}`` beside ``target`` and the handle that holds it: an exclusive
    ``flock`` on it until the handle is closed, which keeps :func:`_remove_abandoned` of other writers away from it.
    ``None`` for the handle where no lock is held (Windows: its file is closed at once, as an open file cannot be
    renamed there)."""
    while True:
        handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
        if sys.platform == "win32":
            os.close(handle)
            return Path(name), None
        if _locked(handle, name):
            return Path(name), handle
        os.close(handle)  # another writer removed it before it was locked: make another


def _locked(handle: int, name: str) -> bool:
    """Lock the file open at ``handle`` (waiting while a :func:`_remove_abandoned` holds it) and say whether ``name``
    still names it (not where that removed it first); ``True`` on a file system without such locks, where no one
    removes it either."""
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
    except OSError:
        return True
    try:
        return os.path.samestat(os.stat(name), os.fstat(handle))
    except FileNotFoundError:
        return False


def _remove_abandoned(target: Path, suffix: str) -> None:
    """Remove the temporary files of :func:`atomic_path` beside ``target`` that no writer holds: those of writers
    killed while writing (each as large as ``target``), whose locks went with them. A live writer's file, locked, stays,
    and so does every one where no lock can be taken (Windows, a file system without locks) or that cannot be
    removed (another user's)."""
    if sys.platform == "win32":
        return
    pattern = glob.escape(f".{target.name}.") + "?" * RANDOM_NAME_LENGTH + glob.escape(suffix)
    for leftover in target.parent.glob(pattern):
        try:
            handle = os.open(leftover, os.O_RDONLY)
        except OSError:  # (gone since it was listed, or not ours to read)
            continue
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            leftover.unlink()
        except OSError:  # (held by its writer, or not ours to remove)
            pass
        finally:
            os.close(handle)


def _flush_to_disk(path: Path) -> None:
    """Return once the file at ``path`` is on disk (``fsync``): its data may otherwise still sit in memory when its
    rename has reached the disk."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _flush_folder(folder: Path) -> None:
    """:func:`_flush_to_disk` for ``folder``, so that a rename in it is on disk; skipped where a folder cannot be
    opened (Windows: ``PermissionError``) or synced (some file systems: ``EINVAL``)."""
    try:
        _flush_to_disk(folder)
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EINVAL):
            raise


def existing_file(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a :class:`Path` when it is a file (through a link too): ``FileNotFoundError`` ``"{what} not found:
    {path}"`` when nothing is there, ``ValueError`` when it is a folder (it was reported as not found) or no regular
    file. One ``stat``."""
    path = user_path(path)
    mode = _mode(path, what)
    if stat.S_ISDIR(mode):
        raise ValueError(f"{what} {path} is a folder: give the path of the file itself")
    if not stat.S_ISREG(mode):
        raise ValueError(f"{what} {path} is no regular file")
    return path


def existing_folder(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a :class:`Path` when it is a folder (through a link too): ``FileNotFoundError`` ``"{what} not found:
    {path}"`` when nothing is there, ``ValueError`` when it is a file (it was reported as not found), saying what to
    give instead (:func:`not_a_folder`). One ``stat``."""
    path = user_path(path)
    if not stat.S_ISDIR(_mode(path, what)):
        raise ValueError(f"{what} {path} {not_a_folder(path)}")
    return path


ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".7z", ".rar")
"""The suffixes of the archives a dataset is downloaded as (any case), which a reader of its folder cannot read."""


def not_a_folder(path: Path) -> str:
    """Why the file ``path``, given for a folder, is none, and what to give instead: an archive (by its suffix,
    :data:`ARCHIVE_SUFFIXES`) is to be extracted first (giving the folder that holds it, as other files are told, read
    that folder, not the archive); another file's folder may be the one meant."""
    suffix = next((suffix for suffix in ARCHIVE_SUFFIXES if path.name.lower().endswith(suffix)), None)
    if suffix is not None:
        return f"is a {suffix} archive, not a folder: extract it and give the folder it holds"
    return "is a file, not a folder: give the folder that holds it"


def _mode(path: Path, what: str) -> int:
    """The ``st_mode`` of what ``path`` names (a link followed); ``FileNotFoundError`` ``"{what} not found: {path}"``
    where nothing is there (a link to nothing, a path under a file)."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{what} not found: {path}") from None


def writable_file(path: str | os.PathLike, what: str = "path") -> Path:
    """``path`` as a :class:`Path` when a file may be written there: ``ValueError`` when it is a folder or lies under
    a file (no folder can be made there), so that a writer fails before its work rather than at its rename."""
    path = user_path(path)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder: give the path of a file")
    for parent in path.parents:
        if parent.is_dir():
            break
        if parent.exists():
            raise ValueError(f"{what} {str(path)!r} lies under {str(parent)!r}, which is a file, not a folder")
    return path


def save_checkpoint(state: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write ``state`` with :func:`torch.save` to a temporary file, then rename it over ``path``
    (:func:`atomic_path`; flushed to disk first). Paths in ``state`` (in dicts, lists and tuples at any depth: a
    configuration's checkpoint or data path) are written as their text, so that the file loads with
    ``torch.load(path, weights_only=True)`` (torch's default since 2.6), which refuses a pickled path object."""
    path = user_path(path)
    with atomic_path(path) as tmp:
        torch.save(_paths_as_text(state), tmp)
    return path


def _paths_as_text(value: Any) -> Any:
    """``value`` with every :class:`os.PathLike` in it (in plain dicts, lists and tuples at any depth) as its text;
    other values as they are: tensors, and subclasses such as a model's ``state_dict`` (an ``OrderedDict`` whose
    ``_metadata`` a rebuilt dict would lose) (:func:`save_checkpoint`)."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if type(value) is dict:
        return {key: _paths_as_text(item) for key, item in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_paths_as_text(item) for item in value)
    return value


def save_json(data: Any, path: str | os.PathLike, default: Callable[[Any], Any] | None = None) -> Path:
    """Write ``data`` as indented strict JSON (atomically: :func:`atomic_path`), which any JSON parser reads: NaN and
    the infinities, which JSON has no numbers for (Python's ``json`` would write ``NaN`` and ``Infinity``, which
    other parsers refuse), as ``null``; paths as strings; arrays and tensors (anything with ``tolist``) as lists. A
    value of another type is written as ``default`` gives it (e.g. ``str``), and without one raises ``TypeError`` naming
    it, before the file is touched."""
    text = json.dumps(_strict_json(data), indent=2, allow_nan=False, default=default or _unserialisable)
    path = user_path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text)
    return path


def load_json(path: str | os.PathLike) -> Any:
    """The JSON in ``path`` (UTF-8 with a byte-order mark or without, or UTF-16/32 as JSON allows: never the locale's
    encoding; any line ends); a file that is not JSON (empty, cut short, edited, a Git LFS pointer, bytes that are no
    such text: named with their line and column) raises ``ValueError`` naming it and where, as does one whose
    arrays or objects are nested deeper than the parser's recursion goes, or one with an object that holds a key
    twice (Python's ``json`` kept the last value silently: an edited record's first ``expr`` was dropped)."""

    def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping = dict(pairs)
        if len(mapping) < len(pairs):
            keys = [key for key, _ in pairs]
            repeated = next(key for index, key in enumerate(keys) if key in keys[:index])
            shown = json.dumps(mapping, default=str)
            raise ValueError(
                f"{path} is not valid JSON for this reader: an object holds the key {repeated!r} twice "
                f"({shown[:80]}{'...' if len(shown) > 80 else ''})"
            )
        return mapping

    data = user_path(path).read_bytes()
    check_not_lfs_pointer(path, data)
    if not data.strip():  # (was "Expecting value: line 1 column 1")
        raise ValueError(f"{path} is not valid JSON: it holds no JSON value (it is empty or blank)")
    try:
        return json.loads(data, object_pairs_hook=unique_keys)
    except RecursionError:  # (raised from deep inside the decoder, without the file's name)
        raise ValueError(f"{path} cannot be read as JSON: its arrays or objects are nested too deeply") from None
    except json.JSONDecodeError as error:  # (a message without the file's name)
        raise ValueError(f"{path} is not valid JSON: {error}{_cut_short(error)}") from None
    except UnicodeDecodeError as error:  # (torn out of the decoder, without the file's name or where in it)
        if error.encoding.startswith("utf-8"):
            raise undecodable(path, data, error, "JSON file") from None
        raise ValueError(f"{path} is not valid JSON: not {error.encoding} text ({error.reason} at byte {error.start})") from None


def _cut_short(error: json.JSONDecodeError) -> str:
    """What the message of ``error`` adds where the document ends before its value does: the error is at its end, or
    at a string that no quote closes."""
    unfinished = not error.doc[error.pos :].strip() or error.msg == "Unterminated string starting at"
    return " (the file ends before it is complete: was it cut short?)" if unfinished else ""


def _strict_json(value: Any) -> Any:
    """``value`` with every non-finite float made ``None``, paths made strings and arrays made lists, in mappings,
    lists and tuples at any depth (:func:`save_json`)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: _strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict_json(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "tolist"):
        return _strict_json(value.tolist())
    return value


def _unserialisable(value: Any) -> NoReturn:
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any] | None:
    """Load a checkpoint written by :func:`save_checkpoint` onto the device ``map_location`` (``cpu:0`` is the CPU, as
    ``cpu`` is; ``ValueError`` for one this machine lacks); ``None`` when ``path`` does not exist. A file torch cannot read back (truncated, foreign), one whose
    bytes changed after it was written (:func:`_check_records`) or a folder raises ``ValueError`` naming it."""
    map_location = _loaded_onto(map_location)
    path = user_path(path)
    if not path.exists():
        return None
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not a checkpoint: give the path of a checkpoint file")
    try:
        _check_records(path)
        saved = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as error:  # noqa: BLE001 — unpickling corrupt bytes raises almost anything (ImportError, ...)
        raise ValueError(f"{path} is not a readable checkpoint ({type(error).__name__}: {one_line(error)}); remove it") from None
    if not isinstance(saved, dict):
        raise ValueError(f"{path} is not a checkpoint: it holds a {type(saved).__name__}, not a dict; remove it")
    return saved


def _loaded_onto(device: str | torch.device) -> torch.device:
    """``device`` as the ``map_location`` of ``torch.load``, which knows the CPU only without an index; ``ValueError``
    (:func:`~neurosym.training.device.resolve_device`'s) for a device this machine lacks. Either way a good checkpoint
    was said to be "not a readable checkpoint ...; remove it"."""
    device = resolve_device(device)
    return torch.device("cpu") if device.type == "cpu" else device


RECORD_CHUNK = 1 << 20
"""Bytes of a checkpoint's record read at a time to check it (:func:`_check_records`)."""
MSDOS_FOLDER = 0x10
"""The MS-DOS attribute bit of a zip record that marks a folder: torch reads such a record as no bytes, and fills the
tensor it holds with whatever its memory held (:func:`_check_records`)."""


def _check_records(path: Path) -> None:
    """Read every record of the zip archive that :func:`torch.save` wrote at ``path`` and raise ``zipfile.BadZipFile``
    at the first whose bytes do not match the CRC-32 that was written beside them, or that is marked as a folder:
    ``torch.load`` checks neither, and read a file with a flipped bit (a failing disk, a damaged copy) as valid, its
    weights wrong. A record written without a CRC-32 (``torch.serialization.set_crc32_options(False)`` writes 0) is not
    checked, nor a file that is no zip archive (torch's legacy format: ``torch.load`` reads it). This reads the file a
    second time, in :data:`RECORD_CHUNK` pieces (about 0.2 s for 100 MB)."""
    if not zipfile.is_zipfile(path):
        return
    with zipfile.ZipFile(path) as archive:
        for record in archive.infolist():
            if record.is_dir() or record.external_attr & MSDOS_FOLDER:
                raise zipfile.BadZipFile(f"record {record.filename!r} is marked as a folder")
            if record.CRC:
                with archive.open(record) as stream:  # raises BadZipFile at its end where the CRC-32 differs
                    while stream.read(RECORD_CHUNK):
                        pass


def one_line(error: BaseException, width: int = 200) -> str:
    """``error``'s message on one line, cut to ``width`` characters."""
    return _clipped(" ".join(str(error).split()), width)


def _clipped(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


ABSENT_IS_DEFAULT = "absent_is_default"
"""Metadata key of a config field (``field(metadata={ABSENT_IS_DEFAULT: False})``) whose default is not
what runs did before the field existed: :func:`check_resumable` refuses checkpoints that lack it."""


def _field_defaults(config: Any) -> dict[str, Any]:
    """The defaults of the dataclass ``config``'s fields that have one, as ``asdict`` would give them
    (those marked ``ABSENT_IS_DEFAULT: False`` left out)."""
    defaults = {}
    for spec in fields(config):
        if not spec.metadata.get(ABSENT_IS_DEFAULT, True):
            continue
        if spec.default is not MISSING:
            defaults[spec.name] = spec.default
        elif spec.default_factory is not MISSING:
            value = spec.default_factory()
            # asdict recurses into dataclass instances only: a dataclass class stays as it is
            defaults[spec.name] = asdict(value) if is_dataclass(value) and not isinstance(value, type) else value
    return defaults


def require_entries(
    saved: Mapping[str, Any],
    names: Iterable[str],
    path: Any,
    what: str = "this training loop",
    file: str = "a checkpoint",
    advice: str = "remove it",
) -> None:
    """Refuse (``ValueError`` naming ``path`` and each name it lacks) a checkpoint ``saved``, or an entry of one, that
    lacks any of ``names``: written by another program or version, or a dict cut short (resuming it failed with a bare
    ``KeyError`` once it reached the name). The refusal reads ``"{path} is not {file} of {what}: ...; {advice}"``
    (``file``: e.g. ``"the results"`` for a JSON file of results read back)."""
    if missing := [name for name in names if name not in saved]:
        raise ValueError(f"{path} is not {file} of {what}: it lacks {missing} (it has {sorted(saved)}); {advice}")


@dataclass(frozen=True)
class Kind:
    """What an entry of a checkpoint must hold (:func:`require_kinds`): ``name`` says it in a refusal (``"a mapping"``),
    ``holds`` tells whether a value is one."""

    name: str
    holds: Callable[[Any], bool]


MAPPING = Kind("a mapping", lambda value: isinstance(value, Mapping))
LIST = Kind("a list", lambda value: isinstance(value, list))
NUMBER = Kind("a number", is_real)


def require_kinds(
    saved: Mapping[str, Any],
    kinds: Mapping[str, Kind],
    path: Any,
    what: str = "this training loop",
    only: bool = False,
    file: str = "a checkpoint",
    advice: str = "remove it",
) -> None:
    """Refuse (``ValueError`` naming ``path`` and each entry) a checkpoint ``saved``, or an entry of one, whose entries
    named in ``kinds`` hold another kind of value (a ``setup`` that is a list, a ``step`` that is text: written by another
    program, they failed with a bare ``AttributeError`` or ``TypeError`` naming no file once they were read) or, with
    ``only``, that has entries beyond them. An entry it lacks passes: :func:`require_entries` refuses those it needs (its
    refusal reads as that one's, ``file`` and ``advice`` as there)."""
    odd = [f"its {name} is a {type(saved[name]).__name__}, not {kind.name}"
           for name, kind in kinds.items() if name in saved and not kind.holds(saved[name])]  # fmt: skip
    if only and (beyond := [name for name in saved if name not in kinds]):
        odd.append(f"it has {beyond} beyond {list(kinds)}")
    if odd:
        raise ValueError(f"{path} is not {file} of {what}: {'; '.join(odd)}; {advice}")


class CheckpointMismatch(ValueError):
    """A checkpoint that cannot be resumed here: written under another configuration, or holding another model."""


def load_model_state(model: nn.Module, state: Mapping[str, Any], source: str, what: str = "model") -> None:
    """``model.load_state_dict(state)``; a ``state`` of other sizes or parameter names raises
    :class:`CheckpointMismatch`: ``"{source} holds another {what} (other sizes or options): ..."`` with the details on one
    line, before any of it is loaded (:func:`check_model_state`: ``model`` keeps its weights; torch copies every tensor
    that fits before it refuses)."""
    check_model_state(model, state, source, what)
    try:
        model.load_state_dict(state)
    except RuntimeError as error:  # (what names and sizes do not show, e.g. a module's own load hook)
        raise CheckpointMismatch(f"{_another(source, what)}: {one_line(error, 300)}") from None


def check_model_state(model: nn.Module, state: Mapping[str, Any], source: str, what: str = "model") -> None:
    """Refuse (:class:`CheckpointMismatch`, as :func:`load_model_state` does) a ``state`` of other sizes or parameter
    names than ``model``'s, loading nothing; also a ``state`` that is no mapping (a list failed on ``.keys()``)."""
    if not isinstance(state, Mapping):
        raise CheckpointMismatch(f"{source} holds no {what} state: its weights are a {type(state).__name__}, not a mapping")
    if differences := _state_differences(model.state_dict(), state):
        raise CheckpointMismatch(f"{_another(source, what)}: {_clipped(differences, 300)}")


def _another(source: str, what: str) -> str:
    return f"{source} holds another {what} (other sizes or options)"


def _state_differences(own: Mapping[str, torch.Tensor], state: Mapping[str, Any]) -> str:
    """What keeps ``state`` from loading into a module whose state dict is ``own``: the names it lacks, the names it
    has beyond them, and its values that are no tensor or of another shape, on one line; empty when it fits."""
    missing, unexpected = sorted(own.keys() - state.keys()), sorted(state.keys() - own.keys())
    shared = [name for name in own if name in state and isinstance(own[name], torch.Tensor)]  # (not a module's extra state)
    values = [f"{name} is a {type(state[name]).__name__}" for name in shared if not isinstance(state[name], torch.Tensor)]
    values += [
        f"{name} {list(state[name].shape)} there, {list(own[name].shape)} here"
        for name in shared
        if isinstance(state[name], torch.Tensor) and state[name].shape != own[name].shape
    ]
    parts = [("missing", missing), ("unexpected", unexpected), ("other values", values)]
    return "; ".join(f"{label}: {', '.join(names)}" for label, names in parts if names)


ELEMENTWISE_STATE = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "momentum_buffer")
"""The entries of an optimiser's state that hold one value per weight (Adam's moments, SGD's momentum): each has the
shape of its parameter (:func:`check_optimizer_state`)."""


def check_optimizer_state(optimizer: torch.optim.Optimizer, state: Mapping[str, Any], source: str) -> None:
    """Refuse (:class:`CheckpointMismatch` naming ``source`` and what differs) an optimiser state dict ``state`` that was
    written for other parameters or another optimiser than ``optimizer``'s, loading nothing: other numbers of parameter
    groups or of parameters in them (``load_state_dict`` refused it only after the model's weights were loaded), an
    :data:`ELEMENTWISE_STATE` entry of another shape than its parameter (loaded, and trained wrong), options of groups
    that ``optimizer``'s lack (another optimiser: Adam's moments read as SGD's)."""
    if differences := _optimizer_differences(optimizer, state):
        raise CheckpointMismatch(f"{source} holds the state of another optimiser or parameters: {_clipped(differences, 300)}")


def _optimizer_differences(optimizer: torch.optim.Optimizer, state: Mapping[str, Any]) -> str:
    """What keeps the optimiser state dict ``state`` from loading into ``optimizer`` (:func:`check_optimizer_state`) on
    one line; empty when it fits."""
    groups, entries = state.get("param_groups"), state.get("state")
    if not isinstance(entries, Mapping) or not _are_groups(groups):
        return "no 'state' mapping and 'param_groups' list of groups with their 'params'"
    own = optimizer.param_groups
    there, here = [len(group["params"]) for group in groups], [len(group["params"]) for group in own]
    if there != here:
        return f"parameters per group {there} there, {here} here"
    parts = [
        f"group {index} has options {sorted(set(group) - set(mine))} that this optimiser lacks"
        for index, (group, mine) in enumerate(zip(groups, own))
        if set(group) - set(mine)
    ]
    parameters = dict(zip(_chained(groups), _chained(own)))
    parts += [
        f"{name} of parameter {index} {list(value.shape)} there, {list(parameters[index].shape)} here"
        for index, values in entries.items()
        if index in parameters and isinstance(values, Mapping)
        for name, value in values.items()
        if name in ELEMENTWISE_STATE and isinstance(value, torch.Tensor) and value.shape != parameters[index].shape
    ]
    return "; ".join(parts)


def _are_groups(groups: Any) -> TypeGuard[list[Mapping[str, Any]]]:
    """Whether ``groups`` is a list of parameter groups, each a mapping with a list of ``params``."""
    return isinstance(groups, list) and all(
        isinstance(group, Mapping) and isinstance(group.get("params"), list) for group in groups
    )


def _chained(groups: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The ``params`` of ``groups``, one after the other (as ``load_state_dict`` pairs a state's with an optimiser's)."""
    return [parameter for group in groups for parameter in group["params"]]


def check_resumable(saved: dict[str, Any], config: Any, may_change: Collection[str], path: Any) -> None:
    """Refuse (:class:`CheckpointMismatch`) to resume the checkpoint at ``path`` whose ``saved`` configuration
    (``asdict`` of a dataclass config) differs from the dataclass ``config`` in a field outside ``may_change``; the
    message names each such field with both values. A field the checkpoint lacks (added to the config after it was
    written) counts as its default, which reproduces the behaviour before the field existed. Values are compared as a
    JSON file gives them back (a configuration read from one resumes a run started from the same values in code): a
    list equals the tuple of its items, a device its text, a path the text of any path to the same file (both resolved)."""
    current = asdict(config)
    saved = {**_field_defaults(config), **saved}
    keys = [key for key in current if key not in may_change]
    _refuse_differences(_flat(saved, keys), _flat(current, keys), path, "with another configuration")


RESUME_ADVICE = "remove it or choose another checkpoint path"
"""What a refused resume may do instead (:func:`check_setup`)."""


@dataclass(frozen=True)
class Setup(Mapping[str, Any]):
    """A run's setup (:func:`check_setup`): the mapping ``entries`` (what a checkpoint keeps), with ``defaults``, the
    value each of its keys stands for where a setup lacks it or holds ``None`` (an option not given: the model's or
    the task's choice), nested as ``entries`` is. A key at its default then compares equal to the key left out."""

    entries: Mapping[str, Any]
    defaults: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        return self.entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def check_setup(saved: Mapping[str, Any] | None, setup: Mapping[str, Any], path: Any, advice: str = RESUME_ADVICE) -> None:
    """Refuse (:class:`CheckpointMismatch`) to resume the checkpoint at ``path`` written for another ``setup`` (what the
    model and data were built from, e.g. a command's model and data options: the weights alone may not show it, as
    with another number of attention heads); a checkpoint without a ``saved`` setup is accepted. A key that either
    setup lacks or holds as ``None`` counts as its default where ``setup`` is a :class:`Setup` that has one: an option
    given at its default resumes a run started without it and the other way round, and a checkpoint written before a
    key existed resumes under its default (and is refused under another value). The message ends with ``advice``: what
    to do instead."""
    if saved is not None:
        keys = sorted({*saved, *setup})
        defaults = _flat(setup.defaults, setup.defaults) if isinstance(setup, Setup) else {}
        before, now = (_defaulted(_flat(values, keys), defaults) for values in (saved, setup))
        _refuse_differences(before, now, path, "for another model or data", advice)


def _defaulted(flat: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The flat setup ``flat`` (:func:`_flat`) with each key of ``defaults`` it lacks or holds as ``None`` at its default."""
    return {**flat, **{key: value for key, value in defaults.items() if flat.get(key) is None}}


def files_stamp(path: str | os.PathLike) -> str:
    """A short digest of what the file or folder ``path`` holds as the file system describes it: each file's path
    (relative to a folder), size and modification time. It changes when a file is rewritten, added or removed, not when
    one is read: a run's setup keeps it beside a data path (:func:`check_setup`), so that a resume notices data
    rewritten in place. ``"missing"`` where nothing is. ``ValueError`` naming a folder under ``path`` that cannot be
    read, or a file that vanishes while the stamp is made (the data changed while being read)."""
    root = Path(path)
    if not root.exists():
        return "missing"
    digest = hashlib.blake2b(digest_size=8)
    for file in [root] if root.is_file() else _files_under(root):
        info = _file_info(file)
        if info is not None:
            digest.update(f"{file.relative_to(root).as_posix()}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def weights_stamp(module: nn.Module) -> str:
    """A short digest of ``module``'s weights and buffers (each one's name, dtype, shape and values, wherever they lie): a
    checkpoint of a stage that went on from a trained model keeps it in its setup (:func:`check_setup`), so that a
    resume notices the model trained anew since."""
    digest = hashlib.blake2b(digest_size=8)
    for name, tensor in module.state_dict().items():
        digest.update(f"{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\n".encode())
        _digest_values(digest, tensor)
    return digest.hexdigest()


def tensor_stamp(tensor: torch.Tensor) -> dict[str, Any]:
    """What a run's setup keeps of a tensor it trains on (:func:`check_setup`), as JSON-like values: its ``shape``,
    ``dtype`` and a short digest of its values' bytes (``bytes``; read once, wherever the tensor lies: about a second
    a gigabyte), so that a resume notices other data of the same shape."""
    digest = hashlib.blake2b(digest_size=8)
    _digest_values(digest, tensor)
    return {"shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch."), "bytes": digest.hexdigest()}


def _digest_values(digest: Any, tensor: torch.Tensor) -> None:
    """Feed the bytes of ``tensor``'s values (any shape, dtype and device), in order, to the ``hashlib`` ``digest``."""
    digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy())


def _files_under(root: Path) -> list[Path]:
    """The paths of everything but folders under the folder ``root``, sorted (links to folders not followed);
    ``ValueError`` naming a folder that cannot be read."""
    return sorted(Path(folder, name) for folder, _, names in os.walk(root, onerror=_unreadable_folder) for name in names)


def _unreadable_folder(error: OSError) -> NoReturn:
    """Raise ``ValueError`` for the folder that :func:`os.walk` could not list (``error``): :func:`_vanished` where
    it is gone."""
    if isinstance(error, FileNotFoundError):
        raise _vanished(error.filename) from None
    raise ValueError(f"cannot read the folder {error.filename} ({type(error).__name__}: {error.strerror})") from error


def _vanished(path: str | os.PathLike) -> ValueError:
    """The error for ``path``, listed by :func:`files_stamp` and gone when it was read."""
    return ValueError(f"{path} vanished while it was being stamped: the data changed while being read")


def _file_info(file: Path) -> os.stat_result | None:
    """``file``'s ``stat`` when it is a regular file (or a link to one); ``None`` for anything else (a link to
    nothing, a socket); ``ValueError`` when it has vanished since it was listed."""
    try:
        info = file.stat()
    except FileNotFoundError:
        if file.is_symlink():
            return None
        raise _vanished(file) from None
    return info if stat.S_ISREG(info.st_mode) else None


def _flat(values: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """``values`` at ``keys``, nested mappings spelled out as dotted keys (``data.train_per_module``), so that a
    difference names the field that differs rather than a whole nested value."""
    flat: dict[str, Any] = {}
    for key in keys:
        value = values.get(key)
        if isinstance(value, Mapping) and value:
            flat |= {f"{key}.{inner}": item for inner, item in _flat(value, value).items()}
        else:
            flat[key] = value
    return flat


def _as_compared(value: Any) -> Any:
    """``value`` as a resume compares it, the form a JSON file of it gives back (a configuration read from one, or
    written to one and read back): tuples as lists, devices and paths as their text, at any depth; so that
    ``betas=(0.9, 0.999)`` resumes a run started with ``[0.9, 0.999]`` and ``torch.device("cpu")`` one started on
    ``"cpu"``."""
    if isinstance(value, Mapping):
        return {key: _as_compared(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_compared(item) for item in value]
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _same(saved: Any, current: Any) -> bool:
    """Whether ``saved``, a value as a checkpoint or a JSON file gives it back, is ``current`` (:func:`_as_compared`),
    in mappings, lists and tuples at any depth; where either is a path, the other is the text of a path to the same
    file or folder, both resolved (a relative one against the working folder: as the run that wrote it read it, when
    run from here), so that the same data named otherwise (absolute, from another working folder, through a link) is
    no other setup."""
    if _are_paths(saved, current):
        return Path(saved).resolve() == Path(current).resolve()
    if isinstance(current, Mapping) and isinstance(saved, Mapping):
        return saved.keys() == current.keys() and all(_same(saved[key], current[key]) for key in current)
    if isinstance(current, list | tuple) and isinstance(saved, list | tuple):
        return len(saved) == len(current) and all(map(_same, saved, current))
    return _as_compared(saved) == _as_compared(current)


def _are_paths(*values: Any) -> bool:
    """Whether ``values`` are compared as paths (:func:`_same`): one is a path, and the others paths or their text."""
    paths = [isinstance(value, os.PathLike) for value in values]
    return any(paths) and all(path or isinstance(value, str) for path, value in zip(paths, values))


def _shown(saved: Any, current: Any, width: int = 60) -> tuple[str, str]:
    """The values ``saved`` and ``current`` of a key that differ as a refused resume names them, in ``width``
    characters each: their ``repr`` cut short at its end; paths (:func:`_are_paths`) as strings cut short at their
    start, as their ends tell them apart (``'…/b/mnist.pkl.gz'``)."""
    if not _are_paths(saved, current):
        return _clipped(repr(saved), width), _clipped(repr(current), width)

    def tail(text: str) -> str:
        return text if len(text) <= width else f"'…{text[len(text) - width + 2 :]}"

    return tail(repr(os.fspath(saved))), tail(repr(os.fspath(current)))


def _refuse_differences(
    saved: Mapping[str, Any], current: Mapping[str, Any], path: Any, how: str, advice: str = RESUME_ADVICE
) -> None:
    """Raise :class:`CheckpointMismatch` naming each key whose values differ between the flat mappings ``saved`` and
    ``current`` (:func:`_flat`; a key one lacks counts as ``None``; values compared as JSON gives them back,
    :func:`_same`), with both values."""
    differing = sorted(key for key in {*saved, *current} if not _same(saved.get(key), current.get(key)))
    if differing:
        shown = [(key, *_shown(saved.get(key), current.get(key))) for key in differing]
        values = "; ".join(f"{key} {there} there, {now} now" for key, there, now in shown)
        raise CheckpointMismatch(f"checkpoint {path} was written {how} ({', '.join(differing)} differ): {values}; {advice}")
