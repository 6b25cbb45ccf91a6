"""Data loaders given a folder where they read a file, or a file where they read a folder: each names what it was
given (it was reported as not found, though something was there), and still reports a path with nothing there as
not found."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from neurosym.data.hint import check_release, read_fewshot, read_records
from neurosym.data.mathematics import list_modules, load_split, read_module_file
from neurosym.data.symbol_images import load_folder_bank, load_npz_bank

FILE_READERS: list[tuple[str, Callable[[Path], object], str]] = [
    ("arithmetic__mul.txt", read_module_file, "DeepMind Mathematics file"),
    ("expr_train.json", read_records, "HINT file"),
    ("fewshot_dataset.json", lambda path: read_fewshot(path.parent), "HINT few-shot file"),
    ("bank.npz", load_npz_bank, "symbol bank archive"),
]
FOLDER_READERS: list[tuple[Callable[[Path], object], str]] = [
    (check_release, "HINT release folder"),
    (load_folder_bank, "symbol image folder"),
]


@pytest.mark.parametrize(("name", "read", "what"), FILE_READERS)
def test_a_folder_given_for_a_file_is_named_as_a_folder(tmp_path, name, read, what):
    (tmp_path / name).mkdir()
    with pytest.raises(ValueError, match=rf"^{what} .*{name} is a folder: give the path of the file itself$"):
        read(tmp_path / name)
    (tmp_path / name).rmdir()
    with pytest.raises(FileNotFoundError, match=rf"^{what} not found: .*{name}$"):
        read(tmp_path / name)


@pytest.mark.parametrize(("read", "what"), FOLDER_READERS)
def test_a_file_given_for_a_folder_is_named_as_a_file(tmp_path, read, what):
    (tmp_path / "notes.txt").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"^{what} .*notes\.txt is a file, not a folder: give the folder that holds it$"):
        read(tmp_path / "notes.txt")
    with pytest.raises(FileNotFoundError, match=rf"^{what} not found: .*missing$"):
        read(tmp_path / "missing")


def test_a_release_whose_split_file_is_a_folder_names_it(tmp_path):
    """It was named as lacking the file."""
    (tmp_path / "expr_train.json").mkdir()
    for name in ("expr_val.json", "expr_test.json"):
        (tmp_path / name).write_text("[]")
    with pytest.raises(ValueError, match=r"^HINT file .*expr_train\.json is a folder"):
        check_release(tmp_path, images=False)


def test_a_mathematics_root_that_is_a_module_file_is_named_as_a_file(tmp_path):
    """The root was said not to exist; a folder named like a module file is no module."""
    (tmp_path / "interpolate").mkdir()
    (tmp_path / "interpolate" / "arithmetic__mul.txt").write_text("1 * 2\n2\n")
    (tmp_path / "interpolate" / "notes.txt").mkdir()
    assert list_modules(tmp_path, "interpolate") == ["arithmetic__mul"]
    assert [example.answer for example in load_split(tmp_path, "interpolate")] == ["2"]
    with pytest.raises(FileNotFoundError, match=r"no 'interpolate' folder under .*arithmetic__mul\.txt \(it is a file, not a"):
        list_modules(tmp_path / "interpolate" / "arithmetic__mul.txt", "interpolate")


def test_a_mathematics_root_one_level_off_the_release_names_the_release_folder(tmp_path):
    """A regime's folder, or the download folder that holds the release, was named with its folders only ([] for a
    regime's folder), not with the folder to give."""
    release = tmp_path / "download" / "mathematics_dataset-v1.0"
    (release / "interpolate").mkdir(parents=True)
    (release / "interpolate" / "arithmetic__mul.txt").write_text("1 * 2\n2\n")
    (release / "extrapolate").mkdir()
    assert list_modules(release, "interpolate") == ["arithmetic__mul"]
    with pytest.raises(
        FileNotFoundError,
        match=rf"its folders: \[\]; it holds module files, as a regime's folder does: give the release folder above it, {release}\)",
    ):
        load_split(release / "interpolate", "interpolate")
    with pytest.raises(
        FileNotFoundError, match=rf"its folders: \['mathematics_dataset-v1.0'\]; give the release folder {release}, which holds"
    ):
        load_split(tmp_path / "download", "train-easy")
    with pytest.raises(FileNotFoundError, match=r"its folders: \['download'\]\); a release has"):
        load_split(tmp_path, "interpolate")


def test_a_hint_root_one_level_off_the_release_names_the_release_folder(tmp_path):
    """The folder that holds the release, its image folder or a class folder was named as lacking the split files
    only, not with the folder to give."""
    release = tmp_path / "HINT" / "data"
    (release / "symbol_images" / "3").mkdir(parents=True)
    for name in ("expr_train.json", "expr_val.json", "expr_test.json"):
        (release / name).write_text("[]")
    for given in (release / "symbol_images", release / "symbol_images" / "3"):
        with pytest.raises(
            FileNotFoundError,
            match=rf"lacks .*; it is the release's image folder or under it: give the release folder {release}$",
        ):
            check_release(given)
    with pytest.raises(FileNotFoundError, match=rf"lacks .*; give the release folder {release}, which holds them$"):
        check_release(tmp_path / "HINT")
    with pytest.raises(FileNotFoundError, match=r"the release lacks \['expr_train.json', 'expr_val.json', 'expr_test.json'\]$"):
        check_release(tmp_path)
    (release / "expr_val.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"the release lacks \['expr_val.json'\]$"):
        check_release(release)


@pytest.mark.parametrize("name", ["release.zip", "HINT.ZIP", "mathematics_dataset-v1.0.tar.gz", "bank.tgz"])
def test_an_archive_given_for_a_folder_is_named_as_one_to_extract(tmp_path, name):
    """It was told to give the folder that holds it: the folder the archive lies in, not the one it holds."""
    from neurosym.experiments.options import existing_folder

    archive = tmp_path / name
    archive.write_bytes(b"PK")
    suffix = re.escape(next(s for s in (".zip", ".tar.gz", ".tgz") if name.lower().endswith(s)))
    problem = rf"is a {suffix} archive, not a folder: extract it and give the folder it holds"
    for read, what in FOLDER_READERS:
        with pytest.raises(ValueError, match=rf"^{what} {re.escape(str(archive))} {problem}$"):
            read(archive)
    with pytest.raises(argparse.ArgumentTypeError, match=rf"^'{re.escape(str(archive))}' {problem}$"):
        existing_folder(str(archive))
    with pytest.raises(FileNotFoundError, match=rf"\(it {problem}\)"):
        list_modules(archive, "interpolate")


def test_a_symbol_image_folder_given_one_level_too_high_names_the_folder_to_give(tmp_path):
    """A release's folder given for its symbol_images/ was named as holding an unknown class, 'symbol_images'."""
    images = tmp_path / "release" / "symbol_images"
    for symbol in ("3", "times"):
        (images / symbol).mkdir(parents=True)
        (images / symbol / "a.png").write_bytes(b"")
    (tmp_path / "release" / "notes").mkdir()
    given = tmp_path / "release"
    with pytest.raises(
        ValueError, match=rf"^{given}: holds no class folder but \['notes', 'symbol_images'\]; give the folder {images}, which"
    ):
        load_folder_bank(given)
    with pytest.raises(ValueError, match=r": unknown class folders \['release'\]; expected among"):
        load_folder_bank(tmp_path)
