"""``check_release``: a HINT release folder is checked before any work, each problem named in one line."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neurosym.data.hint import (
    EVAL_SUBSETS,
    FEWSHOT_FILE,
    IMAGE_FOLDER,
    MAIN_RULES,
    MAIN_VOCABULARY,
    SPLIT_FILES,
    check_release,
    fewshot_split,
    generate_split,
    read_release,
    write_release,
)
from neurosym.data.symbol_images import (
    HANDWRITTEN_ARCHIVE,
    HINT_SYMBOLS,
    PARENTHESES,
    SymbolBank,
    assign_pools,
    draw_symbols,
    load_npz_bank,
    merge_banks,
)


def _real_bank() -> SymbolBank:
    """The shipped handwritten symbols of the main split, with 40 drawn images of each parenthesis and of x."""
    real = load_npz_bank(HANDWRITTEN_ARCHIVE, symbols=[s for s in HINT_SYMBOLS if s not in PARENTHESES])
    drawn = [*PARENTHESES, "x"]
    images = np.concatenate([draw_symbols(s, 40) for s in drawn])
    labels = np.repeat(drawn, 40)
    paths = np.asarray([f"{s}/drawn_{i}.jpg" for i, s in enumerate(labels)])
    return merge_banks(real, SymbolBank(images, labels, assign_pools(labels), paths))


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    splits = generate_split(MAIN_RULES.with_scale(0.0002), MAIN_VOCABULARY, seed=3, progress=False)
    fewshot = {"x": {"train": fewshot_split("x", scale=0.005, seed=3, cache=False)["train"][:5], "val": [], "test": []}}
    return write_release(tmp_path_factory.mktemp("release"), splits, bank=_real_bank(), fewshot=fewshot, seed=1)


def _linked_or_copied(source: str, target: str) -> str:
    """An image as a hard link to ``source`` (a test removes or adds images, never writes into one), any other file
    (the JSON that tests rewrite) as a copy."""
    if Path(source).suffix == ".json":
        return shutil.copy2(source, target)
    os.link(source, target)
    return target


@pytest.fixture()
def release(written, tmp_path) -> Path:
    """The written release to change: a copy of its folders and JSON files, its images linked (copying 3,800 images
    took a second a test)."""
    return Path(shutil.copytree(written, tmp_path / "release", copy_function=_linked_or_copied))


def _records(release: Path, name: str) -> list[dict]:
    return json.loads((release / name).read_text())


def test_a_release_of_real_images_passes(release):
    check_release(release, fewshot=True)
    assert sum(len(records) for records in read_release(release).values()) > 100


def test_the_images_of_a_release_are_listed_from_its_folders_without_a_stat_per_file(written, monkeypatch):
    """The check found a release's files with a ``stat`` (and a ``Path``) per image: most of its time on a small one."""
    images = sum(1 for path in (written / IMAGE_FOLDER).rglob("*") if path.is_file())
    stats = []
    stat = os.stat
    monkeypatch.setattr(os, "stat", lambda *args, **kwargs: stats.append(args[0]) or stat(*args, **kwargs))
    check_release(written)
    assert images > 1000 and len(stats) < 10, (images, stats[:10])


def test_the_images_of_a_release_are_the_files_under_its_folder_through_links(tmp_path):
    """Nested folders, a link to a file and a link to a folder are listed, as the release's bank reads them (a
    linked class folder was not descended into, as ``rglob`` does not); a link to a folder that holds it is not
    followed, nor are links that lead into each other."""
    from neurosym.data.hint.official import _image_files

    images = tmp_path / IMAGE_FOLDER
    for relative in ("1/a.jpg", "1/.hidden.jpg", "times/b.png", "1/nested/deeper/c.jpg", "notes.txt"):
        (images / relative).parent.mkdir(parents=True, exist_ok=True)
        (images / relative).write_bytes(b"")
    (images / "1" / "linked.jpg").symlink_to(images / "times" / "b.png")
    (images / "linked_folder").symlink_to(images / "times", target_is_directory=True)
    (images / "1" / "nested" / "up").symlink_to(images, target_is_directory=True)
    (images / "times" / "to_1").symlink_to(images / "1" / "nested", target_is_directory=True)
    (images / "1" / "nested" / "deeper" / "to_times").symlink_to(images / "times", target_is_directory=True)
    (images / "1" / "empty").mkdir()
    own = {"1/a.jpg", "1/.hidden.jpg", "times/b.png", "1/nested/deeper/c.jpg", "notes.txt", "1/linked.jpg"}
    # (each path stops at a link to a folder it already passed through: times/to_1/deeper/to_times is times again)
    through_links = {"linked_folder/b.png", "times/to_1/deeper/c.jpg", "1/nested/deeper/to_times/b.png"}
    through_links |= {"linked_folder/to_1/deeper/c.jpg"}
    assert _image_files(images) == own | through_links


def test_a_missing_split_is_named(release):
    (release / SPLIT_FILES["val"]).unlink()
    with pytest.raises(FileNotFoundError, match=r"the release lacks \['expr_val.json'\]"):
        check_release(release)
    (release / FEWSHOT_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=r"lacks \['expr_val.json', 'fewshot_dataset.json'\]"):
        check_release(release, fewshot=True)


def test_an_empty_split_is_named(release):
    (release / SPLIT_FILES["test"]).write_text("[]")
    for read in (check_release, read_release):  # (read_release returned an empty split)
        with pytest.raises(ValueError, match=r"expr_test.json holds no expression: every split of a release needs some"):
            read(release)


def test_a_head_list_that_is_no_tree_is_named(release):
    records = _records(release, SPLIT_FILES["train"])
    index, record = next((i, r) for i, r in enumerate(records) if len(r["head"]) >= 3)
    child = next(i for i, parent in enumerate(record["head"]) if parent != -1)
    record["head"][child] = child  # its own parent: one root still, but no tree (it failed only in the statistics)
    (release / SPLIT_FILES["train"]).write_text(json.dumps(records))
    with pytest.raises(ValueError, match=rf"expr_train.json record {index} .*is not one tree rooted at -1"):
        check_release(release)


def test_a_missing_image_is_named_with_its_record(release):
    first = _records(release, SPLIT_FILES["test"])[0]
    (release / IMAGE_FOLDER / first["img_paths"][0]).unlink()
    expected = f"expr_test.json record 0 (id {first['id']!r}): image {first['img_paths'][0]!r} is not in"
    with pytest.raises(FileNotFoundError, match=re.escape(expected)):
        check_release(release)
    check_release(release, images=False)


@pytest.mark.parametrize("kind", ["another symbol's", "no image", "hidden", "nested"])
def test_an_image_the_bank_does_not_read_as_its_symbol_is_named_with_its_record(release, kind):
    """The file exists, but the release's bank does not read it as the symbol's image: training failed on the record
    (a KeyError or a ValueError from HintImageDataset) once its images were drawn."""
    records = _records(release, SPLIT_FILES["test"])
    path = records[0]["img_paths"][0]
    folder, name = path.split("/")
    images = release / IMAGE_FOLDER
    other = next(p for record in records for p in record["img_paths"] if not p.startswith(f"{folder}/"))
    shown = {"another symbol's": other, "no image": f"{folder}/notes.txt", "hidden": f"{folder}/.{name}"}
    shown["nested"] = f"{folder}/copies/{name}"
    if kind != "another symbol's":
        (images / shown[kind]).parent.mkdir(exist_ok=True)
        shutil.copy(images / path, images / shown[kind])
    records[0]["img_paths"][0] = shown[kind]
    (release / SPLIT_FILES["test"]).write_text(json.dumps(records))
    expected = f"expr_test.json record 0 (id {records[0]['id']!r}): img_paths[0] {shown[kind]!r} is "
    with pytest.raises(ValueError, match=re.escape(expected)):
        check_release(release)
    check_release(release, images=False)


def test_a_release_without_images_passes_only_when_asked_not_to_check_them(tmp_path):
    splits = generate_split(MAIN_RULES.with_scale(0.0002), MAIN_VOCABULARY, seed=3, progress=False)
    write_release(tmp_path, splits)
    check_release(tmp_path, images=False)
    with pytest.raises(FileNotFoundError, match="has no image folder"):
        check_release(tmp_path)
    (tmp_path / IMAGE_FOLDER).mkdir()
    with pytest.raises(ValueError, match=r"expr_train.json record 0 \(id '.*'\): record lacks img_paths"):
        check_release(tmp_path)


def _corruptions(record: dict) -> st.SearchStrategy:
    """Changes that each make ``record`` malformed."""
    not_integer = st.one_of(
        st.text(max_size=3), st.floats(allow_nan=False), st.none(), st.booleans(), st.lists(st.integers(), max_size=2)
    )
    return st.one_of(
        st.sampled_from(["id", "expr", "head", "res", "res_all"]).map(lambda key: {k: v for k, v in record.items() if k != key}),
        st.sampled_from(["head", "res_all"]).map(lambda key: {**record, key: [*record[key], 0]}),
        not_integer.map(lambda value: {**record, "res": value}),
        st.sampled_from(["head", "res_all"]).flatmap(
            lambda key: not_integer.map(lambda value: {**record, key: [value, *record[key][1:]]})
        ),
        st.text(max_size=4).filter(lambda text: text not in EVAL_SUBSETS).map(lambda value: {**record, "eval": value}),
        st.one_of(st.integers(), st.lists(st.text(max_size=3), max_size=2)).map(lambda value: {**record, "expr": value}),
        st.one_of(st.just(record["img_paths"][:-1]), st.just("0/a.jpg"), st.just([1] * len(record["img_paths"]))).map(
            lambda value: {**record, "img_paths": value}
        ),
        st.one_of(st.integers(), st.text(max_size=3), st.just([record])),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_malformed_record_is_named_by_file_index_and_id(written, data):
    name = data.draw(st.sampled_from(list(SPLIT_FILES.values())), label="file")
    original = (written / name).read_text()
    records = json.loads(original)
    index = data.draw(st.integers(0, len(records) - 1), label="record")
    records[index] = data.draw(_corruptions(records[index]), label="corrupted")
    item = records[index]
    named = f"{name} record {index}" + (f" (id {item['id']!r})" if isinstance(item, dict) and "id" in item else "")
    (written / name).write_text(json.dumps(records))
    try:
        with pytest.raises(ValueError, match=re.escape(named) + ": ") as error:
            check_release(written)
    finally:
        (written / name).write_text(original)
    assert "\n" not in str(error.value)


def test_a_malformed_fewshot_record_is_named(release):
    data = json.loads((release / FEWSHOT_FILE).read_text())
    data["x"]["train"][2]["res"] = "eleven"
    (release / FEWSHOT_FILE).write_text(json.dumps(data))
    check_release(release)
    with pytest.raises(
        ValueError, match=r"fewshot_dataset.json x/train record 2 \(id '.*'\): head, res_all and res must be integers"
    ):
        check_release(release, fewshot=True)


def _disagreements(record: dict) -> st.SearchStrategy:
    """Changes that keep every field well-formed but give ``record`` a head other than its expression's parse, or
    a value other than its sub-expression's (the root's in ``res`` too, as ``res`` must repeat it)."""
    size, root = len(record["head"]), record["head"].index(-1)

    def moved(change: tuple[int, int]) -> dict:
        index, parent = change
        return {**record, "head": [parent if i == index else h for i, h in enumerate(record["head"])]}

    def shifted(change: tuple[int, int]) -> dict:
        index, delta = change
        res_all = [v + delta if i == index else v for i, v in enumerate(record["res_all"])]
        return {**record, "res_all": res_all, "res": res_all[root]}

    positions = st.integers(0, size - 1)
    return st.one_of(
        st.tuples(positions, st.integers(-1, size - 1)).filter(lambda c: record["head"][c[0]] != c[1]).map(moved),
        st.tuples(positions, st.sampled_from([-100, -2, -1, 1, 2, 100])).map(shifted),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_record_whose_head_or_values_disagree_with_its_expression_is_named(written, data):
    """A head is right only as the parse of its expression and a value only as its sub-expression's: any other is
    refused, named by file, index and id."""
    name = data.draw(st.sampled_from(list(SPLIT_FILES.values())), label="file")
    original = (written / name).read_text()
    records = json.loads(original)
    index = data.draw(st.integers(0, len(records) - 1), label="record")
    records[index] = data.draw(_disagreements(records[index]), label="changed")
    (written / name).write_text(json.dumps(records))
    try:
        with pytest.raises(ValueError, match=re.escape(f"{name} record {index} (id {records[index]['id']!r}): ")):
            check_release(written, images=False)
    finally:
        (written / name).write_text(original)
