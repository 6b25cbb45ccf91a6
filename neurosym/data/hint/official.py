"""Reading and writing the official HINT release format.

A release folder holds ``expr_train.json``, ``expr_val.json`` and ``expr_test.json`` (lists of records
with ``id``, ``img_paths``, ``expr``, ``head``, ``res``, ``res_all`` and, in val/test, ``eval``), optionally
``fewshot_dataset.json`` (``{concept: {"train": [...], "val": [...], "test": [...]}}``, concepts among ``x y a b c
d``) and
``symbol_images/<class>/<file>.jpg``. :func:`write_release` produces the same layout from generated splits
(its images keep the suffix of their path in the bank: ``.png`` from an ``.npz`` bank);
:func:`check_release` checks a folder (files, records, images) before any work is done on it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import chain
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from neurosym.data.hint.examples import HintRecord, symbol_count_problem
from neurosym.data.hint.held_out import held_out_for
from neurosym.data.hint.splits import EVAL_SUBSETS
from neurosym.data.hint.stats import operator_count, parents_first
from neurosym.data.randomness import as_generator
from neurosym.data.symbol_images import (
    FEWSHOT_CONCEPTS,
    HINT_SYMBOLS,
    SymbolBank,
    folder_of,
    load_folder_bank,
    write_folder_bank,
)
from neurosym.data.symbol_images.folder import folder_image_problem
from neurosym.paths import user_path
from neurosym.semantics import BRACKET_VALUE, HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, OperatorTable, execute, solve_batch
from neurosym.syntax import ParseError, canonical_sentence, infix_layout, parse
from neurosym.training.checkpoint import atomic_path, existing_file, existing_folder, load_json
from neurosym.training.checks import int_at_least, is_real

SPLIT_FILES: dict[str, str] = {"train": "expr_train.json", "val": "expr_val.json", "test": "expr_test.json"}
"""The official release's JSON file of each split."""
FEWSHOT_FILE = "fewshot_dataset.json"
"""The official release's JSON file of the few-shot examples."""
IMAGE_FOLDER = "symbol_images"
"""The official release's folder of symbol images."""
_REQUIRED = ("id", "expr", "head", "res", "res_all")
_CHUNK_RECORDS = 1 << 16
"""Records whose meaning is checked together (this bounds the memory the check of a million records takes)."""
_OPEN, _CLOSE, _UNKNOWN = -1, -2, -3
"""The kinds of a symbol (see :func:`_kinds`) besides a number (0) and an operator (its precedence level)."""


RELEASE_SYMBOLS = frozenset((*HINT_SYMBOLS, *FEWSHOT_CONCEPTS))
"""The symbols a release's expressions are written in (after :func:`~neurosym.syntax.canonical_sentence`)."""


def record_from_json(item: Mapping, where: str) -> HintRecord:
    """One release record → :class:`HintRecord`; ``where`` names it in error messages.

    Each field is checked on its own (``id`` a string or an integer, read as its digits) and ``res`` against the
    root's ``res_all``; whether ``head`` is the parse of
    ``expr`` and ``res_all`` its values is checked by the readers, for a whole file at once
    (:func:`read_records`, :func:`read_fewshot`, :func:`check_release`).
    """
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: a record must be a JSON object, got {type(item).__name__}")
    missing = [key for key in _REQUIRED if key not in item]
    if missing:
        raise ValueError(f"{where}: record lacks the fields {missing}")
    if not isinstance(item["id"], str | int) or isinstance(item["id"], bool):  # (null was read as the id "None")
        raise ValueError(f"{where}: id must be a string or an integer, got {json.dumps(item['id'])}")
    if not isinstance(item["expr"], str):
        raise ValueError(f"{where}: expr must be a string, got {type(item['expr']).__name__}")
    expr = canonical_sentence(item["expr"])
    if unknown := sorted(set(expr) - RELEASE_SYMBOLS):
        raise ValueError(f"{where}: expr {expr!r} has symbols {unknown} outside HINT's {''.join(sorted(RELEASE_SYMBOLS))}")
    numbers = [item["res"]]
    for key in ("head", "res_all"):
        if not isinstance(item[key], list):
            raise ValueError(f"{where}: head, res_all and res must be integers ({key} is {type(item[key]).__name__}, not a list)")
        numbers += item[key]
    wrong = [v for v in numbers if not isinstance(v, int) or isinstance(v, bool)]
    if wrong:
        raise ValueError(f"{where}: head, res_all and res must be integers (got {wrong[0]!r})")
    head, res_all, result = tuple(item["head"]), tuple(item["res_all"]), item["res"]
    if not expr:
        raise ValueError(f"{where}: expr is empty")
    if problem := symbol_count_problem(expr, head, res_all):
        raise ValueError(f"{where}: {problem}")
    if head.count(-1) != 1 or not all(-1 <= parent < len(expr) for parent in head):
        raise ValueError(f"{where}: head must name one root (-1) and parents among the {len(expr)} symbols, got {list(head)}")
    try:  # (a symbol its own parent passed, and failed in the statistics)
        parents_first(head)
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    if result < 0:
        raise ValueError(f"{where}: res must be a natural number (HINT's results are), got {result}")
    if (at_root := res_all[head.index(-1)]) != result:
        raise ValueError(f"{where}: res {result} differs from res_all at the root ({at_root})")
    subset = item.get("eval")
    if subset is not None and subset not in EVAL_SUBSETS:
        raise ValueError(f"{where}: eval must be one of {EVAL_SUBSETS}, got {subset!r}")
    paths = item.get("img_paths")
    if paths is not None and (not isinstance(paths, list) or not all(isinstance(path, str) for path in paths)):
        raise ValueError(f"{where}: img_paths must be a list of strings")
    if paths is not None and len(paths) != len(expr):
        raise ValueError(f"{where}: {len(paths)} img_paths for {len(expr)} symbols")
    return HintRecord(str(item["id"]), expr, head, result, res_all, subset, None if paths is None else tuple(paths))


def record_to_json(record: HintRecord) -> dict:
    """A record in the release's JSON fields (``eval`` only when set, ``img_paths`` only when assigned)."""
    item: dict = {"id": record.id}
    if record.img_paths is not None:
        item["img_paths"] = list(record.img_paths)
    item.update(expr=record.expr, head=list(record.head), res=record.res, res_all=list(record.res_all))
    if record.eval is not None:
        item["eval"] = record.eval
    return item


def _record_items(path: Path) -> list:
    """The JSON list of records in one ``expr_*.json`` file."""
    items = load_json(existing_file(path, "HINT file"))
    if not isinstance(items, list):
        raise ValueError(f"{path}: expected a JSON list of records, got {type(items).__name__}")
    return items


def _fewshot_items(root: str | os.PathLike) -> dict[str, dict[str, list]]:
    """``fewshot_dataset.json`` as ``{concept: {"train", "val", "test"}}`` → JSON lists of records."""
    path = existing_file(user_path(root) / FEWSHOT_FILE, "HINT few-shot file")
    data = load_json(path)
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected an object keyed by concept")
    _check_concepts(data, path)
    for concept, splits in data.items():
        missing = [s for s in SPLIT_FILES if not isinstance(splits, Mapping) or s not in splits]
        if missing:
            raise ValueError(f"{path}: concept {concept!r} lacks the splits {missing}")
        wrong = [s for s in SPLIT_FILES if not isinstance(splits[s], list)]
        if wrong:
            raise ValueError(f"{path}: concept {concept!r} splits {wrong} must be JSON lists of records")
    return {concept: {split: splits[split] for split in SPLIT_FILES} for concept, splits in data.items()}


def _check_concepts(concepts: Collection[str], where: object) -> None:
    """Raise ``ValueError`` naming ``where`` for a few-shot concept not of :data:`FEWSHOT_CONCEPTS` (``"X"`` for
    ``"x"`` was read, and the run failed on ``"x"`` only when its few-shot stage began, after the main training)."""
    unknown = [concept for concept in concepts if concept not in FEWSHOT_CONCEPTS]
    if unknown:
        raise ValueError(f"{where}: unknown few-shot concepts {unknown}; expected among {list(FEWSHOT_CONCEPTS)}")


def read_records(path: str | os.PathLike) -> list[HintRecord]:
    """Read one ``expr_*.json`` file: every record well-formed and its fields in agreement, as :func:`check_release`
    checks them (its images aside)."""
    path = user_path(path)
    return _read_list(_record_items(path), path.name, HINT_SEMANTICS)


def read_release(root: str | os.PathLike) -> dict[str, list[HintRecord]]:
    """Read the main split of a release folder: ``{"train", "val", "test"}`` → records (each split holds some)."""
    root = user_path(root)
    splits = {split: read_records(root / name) for split, name in SPLIT_FILES.items()}
    for split, records in splits.items():
        _check_some(records, root / SPLIT_FILES[split])
    return splits


def _check_some(records: Sequence, path: Path) -> None:
    """Raise ``ValueError`` when the split file ``path`` holds no record (an empty split was trained on, or scored as NaN)."""
    if not records:
        raise ValueError(f"{path} holds no expression: every split of a release needs some")


def subsample(
    records: Sequence[HintRecord], scale: float, seed: int = 0, trained: Collection[str] | None = None
) -> list[HintRecord]:
    """A fixed-seed sample of ``scale`` of ``records``, drawn per test subset (``eval``) and number of operators so
    that each keeps its share (at least one record of each present). The order is kept.

    With ``trained`` (the expressions a run trained on), ``records`` are a validation or test list and each share is
    drawn from the records whose subset holds for the run (:func:`~neurosym.data.hint.held_out_for`: ``I`` seen,
    the rest unseen), all of them where fewer: a training list repeats its short expressions (the released one its
    10 without an operator 2,000 times each), so a sample of it holds nearly all of ``I``'s short expressions and few
    of its long ones, and ``I`` drawn as one share would be mostly its shortest expressions."""
    scale = _checked_scale(scale)
    shares = {stratum: max(1, round(scale * count)) for stratum, count in Counter(map(_stratum, records)).items()}
    kept = records if trained is None else held_out_for(records, trained)
    by_stratum: dict[tuple[str | None, int], list[int]] = {}
    for index, record in enumerate(kept):
        by_stratum.setdefault(_stratum(record), []).append(index)
    rng = as_generator(seed)
    chosen = [index for stratum, indices in by_stratum.items() for index in _sample(indices, shares[stratum], rng)]
    return [kept[index] for index in sorted(chosen)]


def _stratum(record: HintRecord) -> tuple[str | None, int]:
    """What :func:`subsample` keeps the share of: a record's test subset and number of operators."""
    return record.eval, operator_count(record.expr)


def _checked_scale(scale: float) -> float:
    if not (is_real(scale) and 0 < scale <= 1):  # "0.5" failed on the comparison, naming neither
        raise ValueError(f"scale must be a number in (0, 1], got {scale!r}")
    return scale


def _sample(indices: list[int], size: int, rng: np.random.Generator) -> list[int]:
    """``size`` of ``indices``, drawn without replacement; all of them where they are no more."""
    if size >= len(indices):
        return indices
    return rng.choice(indices, size=size, replace=False).tolist()


def subsample_split(
    split: Mapping[str, Sequence[HintRecord]], scales: Mapping[str, float], seed: int = 0
) -> dict[str, list[HintRecord]]:
    """A release's ``train``, ``val`` and ``test`` lists, each ``name`` sampled at ``scales[name]``
    (:func:`subsample`); below training scale 1 the validation and test lists keep their subsets' meaning for the
    sampled training list (``I`` its expressions, the other subsets others). ``ValueError`` naming a list that
    ``split`` or ``scales`` lacks."""
    for named, what in ((split, "split"), (scales, "scales")):
        if missing := [name for name in SPLIT_FILES if name not in named]:  # (a raw KeyError: 'val')
            raise ValueError(f"{what} lacks {missing}: give the train, val and test lists' {what}")
    train = subsample(split["train"], scales["train"], seed)
    trained = None if scales["train"] == 1 else {record.expr for record in train}
    return {"train": train, **{name: subsample(split[name], scales[name], seed, trained) for name in ("val", "test")}}


def load_release(
    root: str | os.PathLike, scales: Mapping[str, float], seed: int = 0, images: bool = True, fewshot: bool = False
) -> tuple[dict[str, list[HintRecord]], SymbolBank | None]:
    """A release folder, checked first (:func:`check_release`: its few-shot file too when ``fewshot``): its
    main split with each split ``name`` subsampled at ``scales[name]`` (:func:`subsample`), and, when ``images``,
    the bank of its ``symbol_images/`` (which the records' ``img_paths`` index), else ``None``.

    A training list subsampled at ``scales["train"] < 1`` keeps the validation and test subsets' meaning
    (:func:`subsample_split`): ``I`` ("seen expressions") holds only records whose expression the sample holds,
    as many of each number of operators as ``scales[name]`` of the list's where so many are left;
    ``ValueError`` when none is."""
    splits, bank, _ = _load_checked(root, scales, seed, images, fewshot)
    return splits, bank


def load_release_with_fewshot(
    root: str | os.PathLike, scales: Mapping[str, float], seed: int = 0, images: bool = True
) -> tuple[dict[str, list[HintRecord]], SymbolBank | None, dict[str, dict[str, list[HintRecord]]]]:
    """:func:`load_release` with ``fewshot=True``, and the records of ``fewshot_dataset.json`` its check read
    (``{concept: {"train", "val", "test"}}``, as :func:`read_fewshot` reads them): the file is read once."""
    return _load_checked(root, scales, seed, images, True)


def _load_checked(
    root: str | os.PathLike, scales: Mapping[str, float], seed: int, images: bool, fewshot: bool
) -> tuple[dict[str, list[HintRecord]], SymbolBank | None, dict[str, dict[str, list[HintRecord]]]]:
    """:func:`load_release`'s splits and bank, and the few-shot records its check read (empty without ``fewshot``): each
    file is read once, by the check."""
    root = user_path(root)
    release, concepts = _checked(root, fewshot, images)
    splits = subsample_split(release, scales, seed)
    for name in ("val", "test"):
        if any(r.eval == "I" for r in release[name]) and not any(r.eval == "I" for r in splits[name]):
            raise ValueError(
                f"{root / SPLIT_FILES[name]}: no I record (seen expressions) holds an expression of the "
                f"{len(splits['train'])} training records sampled at scale {scales['train']:g}; use a larger scale"
            )
    return splits, _release_bank(root / IMAGE_FOLDER, seed) if images else None, concepts


def _release_bank(folder: Path, seed: int = 0) -> SymbolBank:
    """The bank of a release's ``symbol_images/`` ``folder``: the class folders of :data:`RELEASE_SYMBOLS` it holds,
    pools drawn with ``seed``. Other folders are not read: no record's expression can name their images (a folder
    bank read whole refuses a folder that names no symbol)."""
    present = [symbol for symbol in RELEASE_SYMBOLS if (folder / folder_of(symbol)).is_dir()]
    return load_folder_bank(folder, seed=seed, symbols=present)


def read_fewshot(root: str | os.PathLike) -> dict[str, dict[str, list[HintRecord]]]:
    """Read ``fewshot_dataset.json``: ``{concept: {"train", "val", "test"}}`` → records, checked as
    :func:`check_release` checks them (its images aside), under the few-shot concepts' semantics, each expression of a
    concept's lists using it and no other few-shot concept (:func:`_check_own_concept`)."""
    return {
        concept: {
            split: _read_list(items, f"{FEWSHOT_FILE} {concept}/{split}", HINT_FEWSHOT_SEMANTICS, concept)
            for split, items in splits.items()
        }
        for concept, splits in _fewshot_items(root).items()
    }


def _read_list(items: list, name: str, table: OperatorTable, concept: str | None = None) -> list[HintRecord]:
    """The JSON records ``items`` of the list ``name`` (``expr_val.json``, ``fewshot_dataset.json x/train``), read
    and checked under ``table``; each expression of a list of the few-shot ``concept`` using it and no other one
    (:func:`_check_own_concept`)."""
    records = [record_from_json(item, f"{name} record {i}") for i, item in enumerate(items)]
    _check_subsets(records, name, lambda index: f"{name} record {index}")
    _check_own_concept(records, concept, name)
    _check_together(records, lambda index: f"{name} record {index}", table)
    return records


def check_release(root: str | os.PathLike, fewshot: bool = False, images: bool = True) -> None:
    """Check a release folder before any work is done on it.

    Every ``expr_*.json`` split that :func:`read_release` reads (and ``fewshot_dataset.json`` when
    ``fewshot``) must be present and hold records, every record well-formed as :func:`record_from_json` reads it
    (with its ``eval`` in ``expr_val.json`` and ``expr_test.json``), its id used once in its list, its ``head`` the parse of its ``expr`` (written with the release's minimal
    brackets) and its ``res_all`` the values of the sub-expressions, under HINT's semantics (the few-shot
    concepts' in ``fewshot_dataset.json``, where each expression of a concept's lists uses it and no other few-shot
    concept:
    :func:`_check_own_concept`); and, when ``images``, every record must list ``img_paths`` whose
    files exist under ``symbol_images/``, each an image that the release's bank reads as its symbol's
    (:func:`~neurosym.data.symbol_images.folder.folder_image_problem`). A missing file raises ``FileNotFoundError``, anything else a
    ``ValueError``; both are one line naming the file and, for a record, its index and id.
    """
    _checked(root, fewshot, images)


def _checked(
    root: str | os.PathLike, fewshot: bool, images: bool
) -> tuple[dict[str, list[HintRecord]], dict[str, dict[str, list[HintRecord]]]]:
    """:func:`check_release`, returning the records it checked: the main split's (as :func:`read_release` reads them)
    and the few-shot concepts' (empty without ``fewshot``)."""
    root = existing_folder(root, "HINT release folder")
    wanted = [*SPLIT_FILES.values(), *([FEWSHOT_FILE] if fewshot else [])]
    missing = [name for name in wanted if not (root / name).exists()]  # (a folder of that name is named as one)
    if missing:
        raise FileNotFoundError(f"{root}: the release lacks {missing}{_release_nearby(root) if missing == wanted else ''}")
    available = _image_files(root / IMAGE_FOLDER) if images else None
    main = {split: _checked_split(root / name, available) for split, name in SPLIT_FILES.items()}
    return main, {
        concept: {
            split: _check_records(items, f"{FEWSHOT_FILE} {concept}/{split}", available, root, HINT_FEWSHOT_SEMANTICS, concept)
            for split, items in splits.items()
        }
        for concept, splits in (_fewshot_items(root) if fewshot else {}).items()
    }


def _release_nearby(root: Path) -> str:
    """``"; give ..."`` naming the release folder where the folder ``root``, which holds none of its files, is one
    level off it: the release's image folder or one of its class folders (the release is above it), or the folder that
    holds the release (a download's, one of whose folders holds the split files); ``""`` otherwise."""
    for above in (root.parent, root.parent.parent):
        if os.path.isfile(above / SPLIT_FILES["train"]) and root.resolve().is_relative_to((above / IMAGE_FOLDER).resolve()):
            return f"; it is the release's image folder or under it: give the release folder {above}"
    for child in sorted(root.iterdir()):
        if os.path.isfile(child / SPLIT_FILES["train"]):  # (False where unreadable)
            return f"; give the release folder {child}, which holds them"
    return ""


def _checked_split(path: Path, available: set[str] | None) -> list[HintRecord]:
    """The records of the split file ``path``, read and checked as :func:`check_release` checks them (their images too
    where ``available`` lists the files under the release's image folder)."""
    items = _record_items(path)
    _check_some(items, path)
    return _check_records(items, path.name, available, path.parent, HINT_SEMANTICS)


def _image_files(folder: Path) -> set[str]:
    """The files under ``folder``, as paths relative to it written with ``/`` (through links to files and folders,
    as the release's bank reads them: a class folder linked from elsewhere was skipped, and each of its images
    refused as not in the release), read from the directory entries without a ``stat`` and a ``Path`` per file or
    folder (a release holds tens of thousands of images; these took most of a check of a small release). A link to
    a folder that holds it is not followed (it would be, forever)."""
    if not folder.is_dir():
        raise FileNotFoundError(f"the release has no image folder {folder}")
    files: set[str] = set()
    real = os.path.realpath(folder)
    pending = [(str(folder), "", real, frozenset({real}))]
    while pending:
        directory, prefix, real, above = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir():
                    inner = os.path.realpath(entry.path) if entry.is_symlink() else os.path.join(real, entry.name)
                    if inner not in above:
                        pending.append((entry.path, f"{prefix}{entry.name}/", inner, above | {inner}))
                elif entry.is_file():
                    files.add(prefix + entry.name)
    return files


def _check_records(
    items: list, name: str, available: set[str] | None, root: Path, table: OperatorTable, concept: str | None = None
) -> list[HintRecord]:
    """The JSON records ``items`` of the list ``name``, read and checked under ``table`` as :func:`check_release` checks
    them (their images too where ``available`` lists the files under ``root``'s image folder; each expression of a list
    of the few-shot ``concept`` using it and no other one: :func:`_check_own_concept`)."""

    def where(index: int) -> str:
        item = items[index]
        return f"{name} record {index}" + (f" (id {item['id']!r})" if isinstance(item, Mapping) and "id" in item else "")

    records = [record_from_json(item, where(index)) for index, item in enumerate(items)]
    _check_subsets(records, name, where)
    _check_own_concept(records, concept, name)
    if available is not None:
        _check_images(records, where, available, root)
    _check_together(records, where, table)
    return records


def _check_subsets(records: Sequence[HintRecord], name: str, where: Callable[[int], str]) -> None:
    """Raise ``ValueError`` at the first record (named by ``where(index)``) of the validation or test file ``name``
    (:data:`SPLIT_FILES`) without ``eval``, its test subset: a run scores each subset, and a test list read without
    them (a key misspelled, ``"Eval"``) was trained on and scored as NaN in every subset."""
    if name not in (SPLIT_FILES["val"], SPLIT_FILES["test"]):
        return
    index = next((index for index, record in enumerate(records) if record.eval is None), None)
    if index is not None:
        raise ValueError(
            f"{where(index)}: record lacks eval, its test subset (one of {EVAL_SUBSETS}): each record of {name} names one"
        )


def _check_own_concept(records: Sequence[HintRecord], concept: str | None, name: str) -> None:
    """Raise ``ValueError`` at the first record of the list ``name`` of the few-shot ``concept`` (none: a main list,
    unchecked) whose expression does not use ``concept``, or uses another few-shot concept, naming the list, the
    record's index and id and the concepts. Each concept is learned from its own lists, after the main task alone
    (HINT, Li et al.: the concept is added to the main grammar, and each one's training set fine-tuned on
    individually), and every expression of them holds it: an ``x`` list that held ``y`` asked for a concept not
    learned, and the few-shot semantics (all six concepts) read it silently; one without ``x`` taught nothing of it
    (or scored the main task), and was read silently too."""
    if concept is None:
        return
    others = set(FEWSHOT_CONCEPTS) - {concept}
    for index, record in enumerate(records):
        if concept not in record.expr:
            raise ValueError(
                f"{name} record {index} (id {record.id!r}): expr {record.expr!r} does not use the few-shot concept "
                f"{concept!r}; every expression of its lists uses it"
            )
        if used := sorted(others.intersection(record.expr), key=FEWSHOT_CONCEPTS.index):
            raise ValueError(
                f"{name} record {index} (id {record.id!r}): expr {record.expr!r} uses the few-shot concepts {used}; "
                f"a list of {concept!r} holds no other new concept (each is learned on its own)"
            )


def _check_images(records: list[HintRecord], where: Callable[[int], str], available: set[str], root: Path) -> None:
    """Raise unless every record lists ``img_paths``, each of them one of the ``available`` files under ``root`` that
    the release's bank reads as an image of its symbol (:func:`~neurosym.data.symbol_images.folder.folder_image_problem`:
    a path it does not read failed only when the record's images were drawn, in training). Each pair of a path and
    a symbol is checked once (a release uses each of its images many times)."""
    problems: dict[tuple[str, str], str | None] = {}
    for index, record in enumerate(records):
        if record.img_paths is None:
            raise ValueError(f"{where(index)}: record lacks img_paths")
        absent = next((path for path in record.img_paths if path not in available), None)
        if absent is not None:
            raise FileNotFoundError(f"{where(index)}: image {absent!r} is not in {root / IMAGE_FOLDER}")
        for position, use in enumerate(zip(record.img_paths, record.expr)):
            if use not in problems:
                problems[use] = folder_image_problem(*use)
            if problems[use]:
                raise ValueError(f"{where(index)}: img_paths[{position}] {problems[use]}")


def _check_together(records: Sequence[HintRecord], where: Callable[[int], str], table: OperatorTable) -> None:
    """Raise ``ValueError`` at the first record (named by ``where(index)``) whose id an earlier one has, or whose
    ``head`` and ``res_all`` are not the parse and the values of its ``expr`` under ``table``.

    The library's parser and executor decide (:func:`_meaning_problem`), asked only about the records that a
    vectorised pass (:func:`_suspects`) cannot show right: a Lark parse of each of a million records would take
    minutes.
    """
    ids = [record.id for record in records]
    if len(set(ids)) < len(ids):
        first_of: dict[str, int] = {}
        index = next(index for index, id_ in enumerate(ids) if first_of.setdefault(id_, index) != index)
        raise ValueError(f"{where(index)}: id {ids[index]!r} is also record {first_of[ids[index]]}'s (an id names one record)")
    for start in range(0, len(records), _CHUNK_RECORDS):
        chunk = records[start : start + _CHUNK_RECORDS]
        for index in _suspects(chunk, table).tolist():
            problem = _meaning_problem(chunk[index], table)
            if problem is not None:
                raise ValueError(f"{where(start + index)}: {problem}")


def _meaning_problem(record: HintRecord, table: OperatorTable) -> str | None:
    """What makes ``record``'s ``expr``, ``res``, ``head`` and ``res_all`` disagree under ``table``, by the
    library's parser, printer and executor; ``None`` when they agree."""
    try:
        node = parse(record.expr, table.concepts)
    except ParseError as error:
        return f"expr {record.expr!r} is no expression of the {table.name!r} language ({error})"
    layout = infix_layout(node, table.concepts)
    if (written := "".join(layout.tokens)) != record.expr:
        return f"expr {record.expr!r} is not written with the release's minimal brackets ({written!r})"
    execution = execute(node, table)
    if execution.res_all is None:
        return f"expr {record.expr!r} has no value under the {table.name!r} semantics (it divides by zero)"
    if execution.value != record.res:
        return f"res {record.res} is not the value of expr {record.expr!r} ({execution.value})"
    if tuple(layout.heads) != record.head:
        return f"head {list(record.head)} is not the parse of expr {record.expr!r} ({layout.heads})"
    if tuple(execution.res_all) != record.res_all:
        return f"res_all {list(record.res_all)} differs from the values the symbols of expr {record.expr!r} head ({execution.res_all})"
    return None


def _suspects(records: Sequence[HintRecord], table: OperatorTable) -> np.ndarray:
    """Indices of the records whose ``head`` or ``res_all`` may disagree with their ``expr`` under ``table``: every
    record that does is among them (a vectorised pass over the records laid end to end)."""
    lengths = np.fromiter((len(record.expr) for record in records), np.int64, len(records))
    owner = np.repeat(np.arange(len(records)), lengths)
    head = np.fromiter(chain.from_iterable(record.head for record in records), np.int64, len(owner))
    parent = np.where(head >= 0, head + (np.cumsum(lengths) - lengths)[owner], -1)
    joined = "".join(record.expr for record in records)
    kinds = _kinds(joined, table)
    flagged, first, last = _misplaced(kinds, parent)
    laid_out = np.bincount(owner, weights=flagged, minlength=len(records)) == 0
    res_all = list(chain.from_iterable(record.res_all for record in records))
    tokens = np.flatnonzero(laid_out[owner])
    flagged[_wrong_values(joined, kinds, first, last, res_all, tokens, table)] = True
    return np.flatnonzero(np.bincount(owner, weights=flagged, minlength=len(records)))


def _kinds(joined: str, table: OperatorTable) -> np.ndarray:
    """Per symbol of ``joined``: 0 for a number of ``table``, an operator's precedence level, or
    :data:`_OPEN`, :data:`_CLOSE`, :data:`_UNKNOWN` (int8 ``[T]``)."""
    meaning = {"(": _OPEN, ")": _CLOSE} | dict.fromkeys(table.numbers, 0) | {s: op.level for s, op in table.operators.items()}
    codes = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    lookup = np.full(max(int(codes.max(initial=0)), *map(ord, meaning)) + 1, _UNKNOWN, dtype=np.int8)
    lookup[[ord(symbol) for symbol in meaning]] = list(meaning.values())
    return lookup[codes]


def _misplaced(kinds: np.ndarray, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which tokens break the layout :func:`~neurosym.syntax.infix_layout` gives the tree that ``parent`` describes.

    ``kinds`` [T] are the tokens' kinds (:func:`_kinds`) and ``parent`` [T] the index of each one's head (-1 at a
    root), records laid end to end, each ``head`` one tree. A record none of whose tokens is flagged is that layout:
    nothing heads a number or a bracket; every operator has one operand on either side, whose sub-expressions end
    and begin next to it; and a bracket pair encloses an operator exactly where it binds less tightly than the
    operator it is the left operand of, or less tightly or equally than the one it is the right operand of (the
    printer's minimal brackets). So ``head`` is the parse of the record's sentence. Returns ``(flagged, first,
    last)``, each ``[T]``: ``first`` and ``last`` are the first and last token of the sub-expression each heads.
    """
    token = np.arange(len(kinds))
    root = parent < 0
    above = np.where(root, token, parent)
    operator, bracket = kinds > 0, (kinds == _OPEN) | (kinds == _CLOSE)
    operand = ~root & ~bracket
    before, after = token < parent, ~root & (token > parent)
    opens, closes = (kinds == _OPEN) & before, (kinds == _CLOSE) & after
    sides = [operand & before, operand & after, opens, closes]
    n_left, n_right, n_open, n_close = (np.bincount(parent[side], minlength=len(kinds)) for side in sides)
    left, right, opening, closing = (_child(token, parent, side) for side in sides)
    bracketed = n_open == 1
    first = _chain_end(np.where(operator, np.where(bracketed, opening, left), token))
    last = _chain_end(np.where(operator, np.where(bracketed, closing, right), token))
    flagged = (kinds == _UNKNOWN) | (~root & ~operator[above]) | (bracket & ~opens & ~closes)
    flagged |= operator & ((n_left != 1) | (n_right != 1) | (n_open > 1) | (n_open != n_close))
    flagged |= operator & ((last[left] != token - 1) | (first[right] != token + 1))
    flagged |= bracketed & ((opening != first[left] - 1) | (closing != last[right] + 1))
    level = kinds.astype(np.int64)
    binds_less = ~root & np.where(token < parent, level < level[above], level <= level[above])
    flagged |= operator & (bracketed != binds_less)
    return flagged, first, last


def _child(token: np.ndarray, parent: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Per token, the index of its child on ``side`` (a mask of children), itself where it has none."""
    child = token.copy()
    child[parent[side]] = token[side]
    return child


def _chain_end(step: np.ndarray) -> np.ndarray:
    """Where following ``step`` from each index ends (each step goes one way, or stays: a fixed point ends a chain)."""
    while not np.array_equal(jumped := step[step], step):
        step = jumped
    return step


def _wrong_values(
    joined: str,
    kinds: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
    res_all: list,
    tokens: np.ndarray,
    table: OperatorTable,
) -> list[int]:
    """Those of ``tokens`` whose ``res_all`` entry is not what they head: for an operator the value of its
    sub-expression ``joined[first:last + 1]`` (:func:`~neurosym.semantics.solve_batch` under ``table``), for a number
    its value, for a bracket ``BRACKET_VALUE``."""
    operators = tokens[kinds[tokens] > 0].tolist()
    sentences = [joined[a : b + 1] for a, b in zip(first[operators].tolist(), last[operators].tolist())]
    wrong = [t for t, value in zip(operators, solve_batch(sentences, table)) if res_all[t] != value]
    numbers = tokens[kinds[tokens] == 0].tolist()
    wrong += [t for t in numbers if res_all[t] != table.numbers[joined[t]]]
    return wrong + [t for t in tokens[kinds[tokens] < 0].tolist() if res_all[t] != BRACKET_VALUE]


def assign_images(records: Sequence[HintRecord], bank: SymbolBank, pool: str, seed: int = 0) -> list[HintRecord]:
    """Give every symbol of every record an image path drawn from ``bank``'s ``pool``."""
    materialised = list(records)
    symbols = [c for record in materialised for c in record.expr]
    picks = bank.paths[bank.sample(symbols, pool, as_generator(seed))] if symbols else np.zeros(0, str)
    bounds = np.cumsum([0] + [len(record.expr) for record in materialised])
    return [
        HintRecord(r.id, r.expr, r.head, r.res, r.res_all, r.eval, tuple(picks[a:b].tolist()))
        for r, a, b in zip(materialised, bounds[:-1], bounds[1:])
    ]


def _dump(path: Path, data: object) -> None:
    with atomic_path(path) as partial:
        partial.write_text(json.dumps(data))


def write_release(
    root: str | os.PathLike,
    splits: Mapping[str, Sequence[HintRecord]],
    bank: SymbolBank | None = None,
    fewshot: Mapping[str, Mapping[str, Sequence[HintRecord]]] | None = None,
    seed: int = 0,
    progress: bool = False,
) -> Path:
    """Write ``splits`` (and ``fewshot``) in the release's format under ``root``.

    With a ``bank``, each split's symbols get images from the pool of the same name (train/val/test), drawn with
    ``seed`` (an int of at least 0, else ``ValueError``) and the list's name (:func:`_image_salt`: the same images
    whatever other lists are written with it), and every image used is written 45×45, black on white, to
    ``symbol_images/<its path in the bank>`` in the format of the path's suffix: JPEG for the built-in banks, the
    files' own format for a bank read from a folder, PNG for a bank read from an ``.npz``
    (:func:`~neurosym.data.symbol_images.load_npz_bank` names its images ``.png``). The records' ``img_paths`` name
    these files; without a bank the records are written without ``img_paths``. The folder holds
    one release: what an earlier release in ``root`` left and this one does not write (the ``expr_*.json``
    of a split not in ``splits``, ``fewshot_dataset.json`` without ``fewshot``, ``symbol_images/`` without a
    ``bank``, images no longer used) is removed; other files in ``root`` are left alone. Every split is
    prepared (names checked, images drawn) before ``root`` is touched, so bad input (an unknown split, a
    few-shot concept not of :data:`FEWSHOT_CONCEPTS` or without its three splits, records the readers would refuse: an id used twice in a list, a
    ``head`` or ``res_all`` that is not its ``expr``'s, a few-shot concept's record that does not use it, or uses another one; a bank image whose path the release's bank would not read back
    as an image of its symbol: a suffix that is no image's, a hidden file, another symbol's class folder; a
    ``symbol_images`` in ``root`` that is a link or a file, :func:`_check_image_folder`) raises a ``ValueError`` and
    leaves ``root`` as it was. The lists are written last, once every image is: a write interrupted before leaves no
    list (of this release or the earlier one) that names an image missing.
    """
    _check_split_names(splits, fewshot)
    seed = int_at_least(seed, "seed", 0)  # (-1 was named as the seed -1000 of a list's images, "1" failed in a sum)
    root = user_path(root)
    used: set[str] = set()

    def prepare(records: Sequence[HintRecord], split: str, concept: str | None, table: OperatorTable, name: str) -> list[dict]:
        listed = [records[i] for i in tqdm(range(len(records)), desc=f"records {split}", disable=not progress)]
        if bank is not None:
            listed = assign_images(listed, bank, split, seed=seed * 1_000 + _image_salt(split, concept))
            used.update(p for record in listed for p in record.img_paths or ())
        else:  # (no image is written: paths a record held would name files removed with symbol_images/)
            listed = [dataclasses.replace(record, img_paths=None) for record in listed]
        items = [record_to_json(record) for record in listed]
        _read_list(items, name, table, concept)  # (raises where the readers would refuse to read it back)
        return items

    for split, records in splits.items():  # (an empty list, or val/test records without eval, were written: a release
        _check_some(records, root / SPLIT_FILES[split])  # its readers refuse, over a good one)
    files: dict[str, object] = {
        SPLIT_FILES[split]: prepare(records, split, None, HINT_SEMANTICS, SPLIT_FILES[split]) for split, records in splits.items()
    }
    if fewshot is not None:
        files[FEWSHOT_FILE] = {
            concept: {
                split: prepare(records, split, concept, HINT_FEWSHOT_SEMANTICS, f"few-shot {concept}/{split}")
                for split, records in parts.items()
            }
            for concept, parts in fewshot.items()
        }
    if bank is not None:
        _check_bank_paths(bank, used)
    _check_image_folder(root / IMAGE_FOLDER)
    root.mkdir(parents=True, exist_ok=True)
    for name in (*SPLIT_FILES.values(), FEWSHOT_FILE):  # (first: an interrupted write leaves no list naming an image
        (root / name).unlink(missing_ok=True)  # it removed or has not yet written)
    shutil.rmtree(root / IMAGE_FOLDER, ignore_errors=True)
    if bank is not None and used:
        indices = sorted(bank.index_of(p) for p in used)
        write_folder_bank(bank.take(indices), root / IMAGE_FOLDER)
    for name, data in files.items():
        _dump(root / name, data)
    return root


def _check_image_folder(folder: Path) -> None:
    """Raise ``ValueError`` naming ``folder``, where a release's images go, when it is a link or a file: no earlier
    release's images could be removed from it; a link's target, a folder elsewhere, had the new images written into
    it beside what it held (two releases' images mixed), and a file failed the writing of the images once the new
    split files were written."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        what = f"a link to {os.readlink(folder)}" if folder.is_symlink() else "a file"
        raise ValueError(
            f"{folder} is {what}, not a folder of the release's own: a release replaces its {IMAGE_FOLDER} folder "
            "(a folder elsewhere is not written into); remove it"
        )


def _check_bank_paths(bank: SymbolBank, used: Collection[str]) -> None:
    """Raise ``ValueError`` for an image of ``bank`` among the paths ``used`` that the release's bank would not read
    back as an image of its label (:func:`~neurosym.data.symbol_images.folder.folder_image_problem`: a suffix that is
    no image's, a hidden file, another symbol's class folder): written, it left a release that its readers refuse, or
    failed in Pillow, naming no file, once the earlier release was gone."""
    for path in sorted(used):
        if problem := folder_image_problem(path, str(bank.labels[bank.index_of(path)])):
            raise ValueError(f"bank image {problem}: a release written with it would not read back")


def _image_salt(split: str, concept: str | None) -> int:
    """What :func:`write_release` adds to ``seed * 1000`` to draw the images of the list ``split`` (of the few-shot
    ``concept``): fixed by the names, so that a list gets the same images whatever lists are written with it, in
    whatever order (it was the list's position among them: the test list written alone got the training list's)."""
    index = list(SPLIT_FILES).index(split)
    return index if concept is None else 100 + 10 * FEWSHOT_CONCEPTS.index(concept) + index


def _check_split_names(
    splits: Mapping[str, Sequence[HintRecord]], fewshot: Mapping[str, Mapping[str, Sequence[HintRecord]]] | None
) -> None:
    """Raise ``ValueError`` unless every split is one of :data:`SPLIT_FILES` and every few-shot concept is one of
    :data:`FEWSHOT_CONCEPTS` with all three."""
    unknown = [split for split in splits if split not in SPLIT_FILES]
    if unknown:
        raise ValueError(f"unknown splits {unknown}; expected {tuple(SPLIT_FILES)}")
    _check_concepts(fewshot or {}, "few-shot splits")
    for concept, parts in (fewshot or {}).items():
        if sorted(parts) != sorted(SPLIT_FILES):
            raise ValueError(f"few-shot concept {concept!r} has the splits {list(parts)}; expected {tuple(SPLIT_FILES)}")
