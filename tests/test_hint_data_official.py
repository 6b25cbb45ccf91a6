"""The official HINT release format: reading a hand-written fixture, errors, and generator round trips."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hint_banks import POOL_SHADES, pool_shaded_bank
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.cli import build_parser
from neurosym.data.hint import (
    FEWSHOT_CONCEPTS,
    FEWSHOT_FILE,
    MAIN_RULES,
    MAIN_VOCABULARY,
    HintImageDataset,
    HintRecord,
    check_release,
    fewshot_split,
    generate_split,
    load_release,
    official,
    read_fewshot,
    read_records,
    read_release,
    write_release,
)
from neurosym.data.symbol_images import HINT_SYMBOLS, load_folder_bank, write_image
from neurosym.experiments import CommandFailed
from neurosym.experiments.hint_options import HintOptions
from neurosym.experiments.hint_sources import load_hint_data
from neurosym.experiments.options import options_from


def _glyph(value: int) -> np.ndarray:
    """A 45×45 black-on-white image whose ink darkness encodes ``value``."""
    image = np.full((45, 45), 255, np.uint8)
    image[8:37, 8:37] = value
    return image


FIXTURE_RECORDS = {
    "train": [
        {
            "id": "0",
            "img_paths": ["3/3_a.jpg", "times/times_a.jpg", "4/4_a.jpg"],
            "expr": "3*4",
            "head": [1, -1, 1],
            "res": 12,
            "res_all": [3, 12, 4],
        },
    ],
    "val": [
        {
            "id": "0",
            "img_paths": ["3/3_b.jpg", "-/-_a.jpg", "4/4_b.jpg"],
            "expr": "3-4",
            "head": [1, -1, 1],
            "res": 0,
            "res_all": [3, 0, 4],
            "eval": "SS",
        },
    ],
    "test": [
        {
            "id": "7",
            "img_paths": ["3/3_a.jpg", "div/div_a.jpg", "(/(_a.jpg", "4/4_a.jpg", "-/-_a.jpg", "3/3_b.jpg", ")/)_a.jpg"],
            "expr": "3/(4-3)",
            "head": [1, -1, 4, 4, 1, 4, 4],
            "res": 3,
            "res_all": [3, 3, -1, 4, 1, 3, -1],
            "eval": "I",
        },
    ],
}
DARKNESS = {"3_a": 10, "3_b": 20, "4_a": 30, "4_b": 40, "times_a": 50, "div_a": 60, "-_a": 70, "(_a": 80, ")_a": 90}


@pytest.fixture()
def release(tmp_path: Path) -> Path:
    for name, records in FIXTURE_RECORDS.items():
        (tmp_path / f"expr_{name}.json").write_text(json.dumps(records))
    fewshot = {
        "x": {
            "train": [{"id": "0", "img_paths": ["x/x_a.jpg"], "expr": "x", "head": [-1], "res": 11, "res_all": [11]}],
            "val": [],
            "test": [],
        }
    }
    (tmp_path / "fewshot_dataset.json").write_text(json.dumps(fewshot))
    for stem, value in {**DARKNESS, "x_a": 100}.items():
        folder = stem.rsplit("_", 1)[0]
        write_image(tmp_path / "symbol_images" / folder / f"{stem}.jpg", _glyph(value))
    return tmp_path


def test_reads_the_release_fixture(release):
    splits = read_release(release)
    assert {name: len(records) for name, records in splits.items()} == {"train": 1, "val": 1, "test": 1}
    record = splits["test"][0]
    assert record == HintRecord(
        "7",
        "3/(4-3)",
        (1, -1, 4, 4, 1, 4, 4),
        3,
        (3, 3, -1, 4, 1, 3, -1),
        "I",
        ("3/3_a.jpg", "div/div_a.jpg", "(/(_a.jpg", "4/4_a.jpg", "-/-_a.jpg", "3/3_b.jpg", ")/)_a.jpg"),
    )
    assert splits["train"][0].eval is None
    fewshot = read_fewshot(release)
    assert fewshot["x"]["train"][0].res == 11 and fewshot["x"]["test"] == []


def test_image_dataset_uses_the_records_own_images(release):
    bank = load_folder_bank(release / "symbol_images")
    assert set(bank.symbols) == set("34*/-()x")
    item = HintImageDataset(read_release(release)["test"], bank, pool="test")[0]
    assert item["images"].shape == (7, 1, 32, 32)
    stems = ["3_a", "div_a", "(_a", "4_a", "-_a", "3_b", ")_a"]
    centre = item["images"][:, 0, 16, 16] * 255
    expected = np.asarray([255 - DARKNESS[s] for s in stems], dtype=np.float32)
    assert np.abs(centre.numpy() - expected).max() < 12, "white-on-black windows of the listed files, in order"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("res_all"), "record lacks the fields \\['res_all'\\]"),
        (lambda r: r.update(id=None), "id must be a string or an integer, got null"),  # (read as the id "None")
        (lambda r: r.update(id=1.5), "id must be a string or an integer, got 1.5"),
        (lambda r: r.update(id=True), "id must be a string or an integer, got true"),
        (lambda r: r.update(id=[0]), "id must be a string or an integer, got \\[0\\]"),
        (lambda r: r.update(head=[1, -1]), "expr '3-4' has 3 symbols but head 2"),
        (lambda r: r.update(eval="XX"), "eval must be one of"),
        (lambda r: r.update(img_paths=["3/3_a.jpg"]), "1 img_paths for 3 symbols"),
        (lambda r: r.update(res="many"), "head, res_all and res must be integers"),
        (lambda r: r.update(expr="3&4"), "expr '3&4' has symbols \\['&'\\] outside HINT's"),
        (lambda r: r.update(expr="", head=[], res_all=[]), "expr is empty"),
        (lambda r: r.update(head=[1, -1, 5]), "head must name one root \\(-1\\) and parents among the 3 symbols"),
        (lambda r: r.update(head=[-1, -1, 1]), "head must name one root"),
        (lambda r: r.update(res=-3), "res must be a natural number"),
        (lambda r: r.update(res=r["res"] + 1), "res \\d+ differs from res_all at the root \\(\\d+\\)"),
    ],
)
def test_malformed_records_are_named(release, change, message):
    records = json.loads((release / "expr_val.json").read_text())
    change(records[0])
    (release / "expr_val.json").write_text(json.dumps(records))
    with pytest.raises(ValueError, match=f"expr_val.json record 0: {message}"):
        read_release(release)


@pytest.mark.parametrize(
    ("expr", "head", "res", "res_all", "message"),
    [
        ("1+2", [1, -1, 1], 7, [1, 7, 2], r"res 7 is not the value of expr '1\+2' \(3\)"),
        ("1+2", [-1, 0, 0], 1, [1, 3, 2], r"res 1 is not the value of expr '1\+2' \(3\)"),
        ("1+", [-1, 0], 1, [1, 1], r"expr '1\+' is no expression of the 'hint' language \(position 2: unexpected end"),
        ("x+1", [1, -1, 1], 12, [11, 12, 1], r"expr 'x\+1' is no expression of the 'hint' language \(.*character 'x'"),
        ("1/0", [1, -1, 1], 0, [1, 0, 0], r"expr '1/0' has no value under the 'hint' semantics"),
        ("(1+2)", [2, 2, -1, 2, 2], 3, [-1, 1, 3, 2, -1], r"expr '\(1\+2\)' is not written with the release's minimal"),
        # 1*(2*3), its values right for that tree: only the bracket the right operand lacks tells it from (1*2)*3
        ("1*2*3", [1, -1, 3, 1, 3], 6, [1, 6, 2, 6, 3], r"head \[1, -1, 3, 1, 3\] is not the parse of expr '1\*2\*3'"),
        ("(1+2)*3", [5, 2, 5, 2, 5, -1, 5], 9, [-1, 1, 3, 2, -1, 9, 3], r"head \[5, 2, 5, 2, 5, -1, 5\] is not the parse"),
        ("1+2", [1, -1, 1], 3, [-5, 3, 2], r"res_all \[-5, 3, 2\] differs from the values .* \(\[1, 3, 2\]\)"),
        ("3-(4-3)", [1, -1, 4, 4, 1, 4, 4], 2, [3, 2, 0, 4, 1, 3, -1], r"res_all \[3, 2, 0, 4, 1, 3, -1\] differs"),
    ],
)
def test_records_whose_fields_disagree_are_named(release, expr, head, res, res_all, message):
    """Each field is well-formed on its own, but the head is not the parse of expr or a value is not expr's (HINT's
    semantics: a − b = max(0, a − b))."""
    records = json.loads((release / "expr_val.json").read_text())
    records[0].update(expr=expr, head=head, res=res, res_all=res_all, img_paths=None)
    (release / "expr_val.json").write_text(json.dumps(records))
    with pytest.raises(ValueError, match=f"expr_val.json record 0: {message}"):
        read_release(release)


@pytest.mark.parametrize("name", ["expr_val.json", "expr_test.json"])
def test_a_validation_or_test_record_without_its_subset_is_named(release, name):
    """A test list whose records lacked ``eval`` (or spelled it ``Eval``) was trained on and scored NaN in every
    subset; a training record needs none, nor does a few-shot one."""
    records = json.loads((release / name).read_text())
    records[0]["Eval"] = records[0].pop("eval")
    (release / name).write_text(json.dumps(records))
    problem = rf"^{name} record 0 \(id '\d+'\): record lacks eval, its test subset \(one of \('I', 'SS', 'LS', 'SL', 'LL'\)\)"
    for read in (check_release, lambda root: load_release(root, dict.fromkeys(("train", "val", "test"), 1.0))):
        with pytest.raises(ValueError, match=problem):
            read(release)
    for read in (read_release, lambda root: read_records(root / name)):
        with pytest.raises(ValueError, match=rf"^{name} record 0: record lacks eval"):
            read(release)
    assert read_records(release / "expr_train.json")[0].eval is None and read_fewshot(release)["x"]["train"][0].eval is None


def test_a_repeated_id_is_named(release):
    records = json.loads((release / "expr_test.json").read_text())
    other = {"id": records[0]["id"], "expr": "3", "head": [-1], "res": 3, "res_all": [3], "eval": "SS"}
    (release / "expr_test.json").write_text(json.dumps([*records, other]))
    with pytest.raises(ValueError, match=r"expr_test.json record 1: id '7' is also record 0's \(an id names one record\)"):
        read_release(release)


def test_fewshot_records_are_read_under_the_concepts_semantics(release):
    """x is 11 and a is max in fewshot_dataset.json; a wrong value there is named with its concept and split."""
    data = json.loads((release / "fewshot_dataset.json").read_text())
    data["x"]["val"] = [{"id": "0", "expr": "x+9", "head": [1, -1, 1], "res": 20, "res_all": [11, 20, 9]}]
    data["a"] = {"train": [{"id": "0", "expr": "3a9", "head": [1, -1, 1], "res": 9, "res_all": [3, 9, 9]}], "val": [], "test": []}
    (release / "fewshot_dataset.json").write_text(json.dumps(data))
    assert read_fewshot(release)["x"]["val"][0].res == 20 and read_fewshot(release)["a"]["train"][0].res == 9
    data["x"]["val"][0].update(res=9, res_all=[11, 9, 9])
    (release / "fewshot_dataset.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"fewshot_dataset.json x/val record 0: res 9 is not the value of expr 'x\+9' \(20\)"):
        read_fewshot(release)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        # each concept is learned from its own lists (HINT: added to the main grammar alone): an x list that used a was
        # read under the semantics of all six concepts, silently
        ({"id": "e7", "img_paths": ["x/x_a.jpg", "x/x_a.jpg", "3/3_a.jpg"], "expr": "xa3", "head": [1, -1, 1], "res": 11,
          "res_all": [11, 11, 3]}, r"expr 'xa3' uses the few-shot concepts \['a'\]; a list of 'x' holds no other new concept \(each is learned on its own\)"),
        # a record of x's lists without x taught nothing of it (or scored the main task), and was read silently
        ({"id": "e7", "img_paths": ["4/4_a.jpg", "-/-_a.jpg", "3/3_a.jpg"], "expr": "4-3", "head": [1, -1, 1], "res": 1,
          "res_all": [4, 1, 3]}, "expr '4-3' does not use the few-shot concept 'x'; every expression of its lists uses it"),
    ],
)  # fmt: skip
def test_a_concepts_record_that_does_not_use_it_alone_is_refused(release, tmp_path, record, problem):
    data = json.loads((release / FEWSHOT_FILE).read_text())
    data["x"]["val"] = [data["x"]["train"][0], record]
    (release / FEWSHOT_FILE).write_text(json.dumps(data))
    scales = dict.fromkeys(("train", "val", "test"), 1.0)
    for read in (
        read_fewshot,
        lambda root: check_release(root, fewshot=True),
        lambda root: load_release(root, scales, fewshot=True),
    ):
        with pytest.raises(ValueError, match=rf"^fewshot_dataset.json x/val record 1 \(id 'e7'\): {problem}$"):
            read(release)
    records = [official.record_from_json(item, "x/val") for item in data["x"]["val"]]
    with pytest.raises(ValueError, match=rf"^few-shot x/val record 1 \(id 'e7'\): {problem}$"):
        write_release(tmp_path / "written", read_release(release), fewshot={"x": {"train": [], "val": records, "test": []}})
    assert not (tmp_path / "written").exists()


def test_unreadable_files_are_named(release):
    (release / "expr_test.json").write_text("[{")
    with pytest.raises(ValueError, match="expr_test.json is not valid JSON"):
        read_release(release)
    (release / "expr_test.json").write_bytes(b'[{"id": "\xff"}]')  # (was a UnicodeDecodeError naming no file)
    with pytest.raises(ValueError, match=r"expr_test.json:1:10: byte 0xff is not UTF-8 text \(invalid start byte\)"):
        read_release(release)
    with pytest.raises(FileNotFoundError, match="expr_missing.json"):
        read_records(release / "expr_missing.json")
    (release / "fewshot_dataset.json").write_text(json.dumps({"x": {"train": []}}))
    with pytest.raises(ValueError, match="concept 'x' lacks the splits \\['val', 'test'\\]"):
        read_fewshot(release)


def test_a_file_nested_deeper_than_the_parser_goes_is_named(release):
    """A RecursionError was raised from inside the JSON decoder, naming no file."""
    (release / "expr_val.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match=r"expr_val.json cannot be read as JSON: its arrays or objects are nested too deeply"):
        read_release(release)


def test_a_record_that_holds_a_field_twice_is_named(release):
    """Python's json kept the last of the two values: the record read as the one its second expr describes."""
    (release / "expr_val.json").write_text(
        '[{"id": "0", "expr": "3*5", "expr": "3", "head": [-1], "res": 3, "res_all": [3], "eval": "I"}]'
    )
    with pytest.raises(
        ValueError, match=r"expr_val.json is not valid JSON for this reader: an object holds the key 'expr' twice \("
    ):
        read_release(release)


def test_a_fewshot_concept_of_another_name_is_named_before_any_work(release):
    """A concept misnamed (``X`` for ``x``) was read, and a run failed with KeyError 'x' once its few-shot stage began."""
    data = json.loads((release / "fewshot_dataset.json").read_text())
    (release / "fewshot_dataset.json").write_text(json.dumps({"X": data["x"]}))
    message = r"fewshot_dataset.json: unknown few-shot concepts \['X'\]; expected among \['x', 'y', 'a', 'b', 'c', 'd'\]"
    for read in (read_fewshot, lambda root: load_release(root, dict.fromkeys(("train", "val", "test"), 1.0), fewshot=True)):
        with pytest.raises(ValueError, match=message):
            read(release)


def _counted_reads(monkeypatch) -> Counter[str]:
    """How many times each file of a release is read (by name) from now on: ``official.load_json`` counted."""
    reads: Counter[str] = Counter()
    load = official.load_json

    def counted(path):
        reads[Path(path).name] += 1
        return load(path)

    monkeypatch.setattr(official, "load_json", counted)
    return reads


def test_a_data_run_reads_the_few_shot_file_once(release, monkeypatch):
    """A --data run read fewshot_dataset.json twice: once to check the release, once to read its concepts."""
    reads = _counted_reads(monkeypatch)
    argv = ["hint", "--data", str(release), "--model", "neurosym", "--input", "image", "--fewshot-concepts", "x"]
    options = options_from(HintOptions, build_parser().parse_args(argv))
    data = load_hint_data(options, image_input=True, fewshot=True)
    assert reads[FEWSHOT_FILE] == 1
    assert data.fewshot("x", 1.0) == read_fewshot(release)["x"]
    fewshot = json.loads((release / FEWSHOT_FILE).read_text())
    fewshot["x"]["train"][0]["img_paths"] = ["x/x_missing.jpg"]
    (release / FEWSHOT_FILE).write_text(json.dumps(fewshot))
    with pytest.raises(CommandFailed, match=r"fewshot_dataset.json x/train record 0 \(id '0'\): image 'x/x_missing.jpg' is not"):
        load_hint_data(options, image_input=True, fewshot=True)  # (its images still checked before any work)


@pytest.mark.parametrize("fewshot", [False, True])
def test_loading_a_release_reads_each_split_file_once(release, monkeypatch, fewshot):
    """load_release read every expr_*.json twice: once to check the release, once to read its splits."""
    reads = _counted_reads(monkeypatch)
    splits, _ = load_release(release, dict.fromkeys(("train", "val", "test"), 1.0), images=False, fewshot=fewshot)
    assert reads == Counter({**dict.fromkeys(official.SPLIT_FILES.values(), 1), **({FEWSHOT_FILE: 1} if fewshot else {})})
    assert splits == read_release(release)  # the records the check read, as read_release reads them


def test_a_class_folder_linked_from_elsewhere_is_read_and_a_link_to_a_folder_above_is_not_followed(release, tmp_path_factory):
    """The check skipped a linked class folder and refused each of its images as not in the release, which the
    release's bank reads."""
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "3"
    (release / "symbol_images" / "3").rename(elsewhere)
    (release / "symbol_images" / "3").symlink_to(elsewhere, target_is_directory=True)
    (release / "symbol_images" / "4" / "loop").symlink_to(release / "symbol_images", target_is_directory=True)
    splits, bank = load_release(release, dict.fromkeys(("train", "val", "test"), 1.0))
    assert bank is not None and sorted(bank.paths[bank.labels == "3"].tolist()) == ["3/3_a.jpg", "3/3_b.jpg"]
    assert [record.expr for record in splits["test"]] == ["3/(4-3)"]


def test_a_release_bank_reads_only_the_symbols_class_folders(release):
    """A folder bank read whole refuses a folder that names no symbol; a release's other folders are left unread."""
    write_image(release / "symbol_images" / "!" / "bang.jpg", _glyph(5))
    splits, bank = load_release(release, dict.fromkeys(("train", "val", "test"), 1.0), fewshot=True)
    assert bank is not None and sorted(set(bank.labels.tolist())) == sorted(["3", "4", "*", "/", "-", "(", ")", "x"])
    assert len(splits["test"]) == 1
    with pytest.raises(ValueError, match="unknown class folders"):
        load_folder_bank(release / "symbol_images")


@pytest.fixture(scope="module")
def fewshot_lists() -> dict[str, dict[str, list]]:
    """Small generated few-shot lists of x and y (each expression uses its concept)."""
    return {concept: {name: list(split) for name, split in fewshot_split(concept, scale=0.005, seed=2, cache=False).items()}
            for concept in ("x", "y")}  # fmt: skip


def fewshot_bank(per_symbol: int = 20):
    """:func:`pool_shaded_bank` with images of x and y too."""
    return pool_shaded_bank(per_symbol, symbols=[*HINT_SYMBOLS, "x", "y"])


def test_generated_release_reads_back_identically(tmp_path, fewshot_lists):
    splits = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    bank = fewshot_bank()
    write_release(tmp_path, splits, bank=bank, fewshot={"x": fewshot_lists["x"]}, seed=1)
    loaded = read_release(tmp_path)
    for name, split in splits.items():
        assert len(loaded[name]) == len(split)
        for index in range(0, len(split), 3):
            mine, theirs = split[index], loaded[name][index]
            assert (theirs.expr, theirs.head, theirs.res, theirs.res_all, theirs.eval) == (
                mine.expr,
                mine.head,
                mine.res,
                mine.res_all,
                mine.eval,
            )
            assert [bank.labels[bank.index_of(p)] for p in theirs.img_paths] == list(mine.expr)
            assert all(bank.pools[bank.index_of(p)] == name for p in theirs.img_paths), "images from the split's own pool"
            assert all((tmp_path / "symbol_images" / p).is_file() for p in theirs.img_paths)
    assert len(read_fewshot(tmp_path)["x"]["train"]) == len(fewshot_lists["x"]["train"])
    written = load_folder_bank(tmp_path / "symbol_images", size=28)
    test_image = written.images[written.paths == loaded["test"][0].img_paths[0]][0]
    assert abs(int(test_image[14, 14]) - POOL_SHADES["test"]) < 10, "written black on white, read back white on black"


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16), concept=st.sampled_from(FEWSHOT_CONCEPTS), scale=st.sampled_from([0.01, 0.05]))
def test_generated_few_shot_lists_use_their_own_concept_alone_and_read_back(tmp_path_factory, seed, concept, scale):
    lists = {name: list(split) for name, split in fewshot_split(concept, scale=scale, seed=seed, cache=False).items()}
    others = set(FEWSHOT_CONCEPTS) - {concept}
    assert all(concept in record.expr and not others & set(record.expr) for split in lists.values() for record in split)
    root = write_release(tmp_path_factory.mktemp("release"), {}, fewshot={concept: lists})
    assert read_fewshot(root)[concept] == lists


def test_a_list_gets_the_same_images_whatever_lists_are_written_with_it(tmp_path, fewshot_lists):
    """A seed draws a list's images by its name: the test list written alone (or after the others), and a few-shot
    concept's list written without the concepts before it, got the images of another list's draw."""
    splits = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    bank = fewshot_bank()
    x, y = ({name: records[:4] for name, records in fewshot_lists[concept].items()} for concept in ("x", "y"))

    def images(name: str, lists: dict, fewshot: dict | None = None) -> list:
        root = write_release(tmp_path / name, lists, bank=bank, fewshot=fewshot, seed=5)
        return [record.img_paths for record in read_records(root / "expr_test.json")] + [
            record.img_paths for record in (read_fewshot(root)["y"]["test"] if fewshot else [])
        ]

    every = images("every", dict(splits), {"x": x, "y": y})
    assert images("reversed", {name: splits[name] for name in ("test", "val", "train")}, {"y": y, "x": x}) == every
    assert images("alone", {"test": splits["test"]}, {"y": y}) == every


def test_a_release_written_over_another_leaves_nothing_of_it(tmp_path, fewshot_lists):
    """A second release into the same folder without few-shot splits or images removes the first one's
    few-shot file and images, and keeps files that are not part of a release."""
    splits = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    write_release(tmp_path, splits, bank=fewshot_bank(), fewshot={"x": fewshot_lists["x"]})
    (tmp_path / "notes.txt").write_text("mine")
    assert (tmp_path / "fewshot_dataset.json").is_file() and any((tmp_path / "symbol_images").rglob("*.jpg"))
    write_release(tmp_path, splits)
    assert not (tmp_path / "fewshot_dataset.json").exists() and not (tmp_path / "symbol_images").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert all(record.img_paths is None for record in read_release(tmp_path)["test"])
    first = tmp_path / "first"
    write_release(first, splits, bank=pool_shaded_bank(20))
    write_release(first, read_release(first))  # its records, images listed, rewritten without a bank
    check_release(first, images=False)
    # (their img_paths named the images removed with symbol_images/)
    assert all(record.img_paths is None for split in read_release(first).values() for record in split)


def test_a_write_interrupted_among_the_images_leaves_no_list_naming_a_missing_image(tmp_path, monkeypatch):
    """The lists were written before the images: a Ctrl-C among the images left lists naming images never written
    (and an earlier release's lists naming images removed), which the CLI called a whole release."""
    splits = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    write_release(tmp_path, splits, bank=pool_shaded_bank(20))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(official, "write_folder_bank", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_release(tmp_path, splits, bank=pool_shaded_bank(20), seed=1)
    assert not list(tmp_path.glob("*.json"))  # (no list of either release: reading names the missing split)
    with pytest.raises(FileNotFoundError, match="HINT file not found: .*expr_train.json"):
        read_release(tmp_path)


def _contents(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_a_release_of_fewer_splits_removes_the_other_splits_files(tmp_path):
    """A release holds the splits it was given: the val and test files of an earlier release are removed, so
    reading the folder names the missing split instead of mixing two releases."""
    splits = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    write_release(tmp_path, splits)
    write_release(tmp_path, {"train": [splits["train"][i] for i in range(5)]})
    assert sorted(path.name for path in tmp_path.iterdir()) == ["expr_train.json"]
    assert len(read_records(tmp_path / "expr_train.json")) == 5
    with pytest.raises(FileNotFoundError, match="expr_val.json"):
        read_release(tmp_path)


@pytest.mark.parametrize(
    ("splits", "fewshot", "message"),
    [
        ({"train": 4, "dev": 2}, None, r"unknown splits? .*'dev'.*; expected \('train', 'val', 'test'\)"),
        ({"train": 4}, {"x": {"train": 2, "val": 1}}, r"few-shot concept 'x' has the splits \['train', 'val'\]"),
        ({"train": 4}, {"e": {"train": 2, "val": 1, "test": 1}}, r"unknown few-shot concepts \['e'\]; expected among"),
    ],
)
def test_bad_input_leaves_the_earlier_release_untouched(tmp_path, splits, fewshot, message):
    generated = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    bank = pool_shaded_bank(20)
    write_release(tmp_path, generated, bank=bank)
    before = _contents(tmp_path)

    def records(count: int) -> list[HintRecord]:
        return [generated["val"][i] for i in range(count)]

    parts = {concept: {split: records(n) for split, n in sizes.items()} for concept, sizes in (fewshot or {}).items()}
    with pytest.raises(ValueError, match=message):
        write_release(tmp_path, {split: records(n) for split, n in splits.items()}, bank=bank, fewshot=parts or None)
    assert _contents(tmp_path) == before


@pytest.mark.parametrize("kind", ["link", "file"])
def test_an_image_folder_that_is_a_link_or_a_file_is_refused_before_writing(tmp_path, kind):
    """A release's symbol_images/ that is a link had the new images written into its target, a folder elsewhere,
    beside what it held (and was left in place by a release without images); a file failed once the split files
    were written. Either is refused, naming it, with the folder elsewhere and the earlier release untouched."""
    splits = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.txt").write_text("mine")
    root = tmp_path / "release"
    write_release(root, splits)
    if kind == "link":
        (root / "symbol_images").symlink_to(elsewhere, target_is_directory=True)
    else:
        (root / "symbol_images").write_text("x")
    before = _contents(root)
    for bank in (pool_shaded_bank(20), None):
        with pytest.raises(ValueError, match=rf"symbol_images is a {kind}.*not a folder of the release's own"):
            write_release(root, splits, bank=bank)
        assert _contents(root) == before and sorted(path.name for path in elsewhere.iterdir()) == ["mine.txt"]


def test_records_the_readers_would_refuse_are_not_written(tmp_path, fewshot_lists):
    generated = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    write_release(tmp_path, generated)
    before = _contents(tmp_path)
    train = list(generated["train"])
    with pytest.raises(ValueError, match=r"expr_train.json record 3: id .* is also record 0's"):  # was written, then refused
        write_release(tmp_path, {**generated, "train": [*train[:3], train[0]]})
    with pytest.raises(ValueError, match=r"few-shot x/val record 1: res \d+ differs from res_all at the root"):
        x = fewshot_lists["x"]["train"]
        wrong = dataclasses.replace(x[1], res=x[1].res + 1)
        write_release(tmp_path, generated, fewshot={"x": {"train": x[:1], "val": [x[0], wrong], "test": []}})
    test = [dataclasses.replace(record, eval=None) for record in generated["test"]]  # (written; read_release refused it)
    with pytest.raises(ValueError, match=r"expr_test.json record 0: record lacks eval, its test subset"):
        write_release(tmp_path, {**generated, "test": test})
    with pytest.raises(ValueError, match=r"expr_val.json holds no expression: every split of a release needs some"):
        write_release(tmp_path, {**generated, "val": []})
    assert _contents(tmp_path) == before


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("3/{}.tif", r"'3/\d+.tif' is no image file of a class folder"),  # written, then refused by check_release
        ("3/{}", r"'3/\d+' is no image file of a class folder"),  # Pillow's "unknown file extension", the images gone
        ("3/.{}.png", r"'3/.\d+.png' is no image file of a class folder"),  # a hidden file, which the folder bank skips
        ("4/three_{}.png", r"'4/three_\d+.png' is an image of '4' \(its class folder\), not of '3' \(3/\)"),  # read as 4s
    ],
)
def test_a_bank_image_the_release_would_not_read_back_is_refused_before_writing(tmp_path, template, problem):
    generated = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    bank = pool_shaded_bank(20)
    write_release(tmp_path, generated, bank=bank)
    before = _contents(tmp_path)
    threes = bank.labels == "3"
    paths = bank.paths.astype(object)  # (room for longer paths)
    paths[threes] = [template.format(index) for index in np.flatnonzero(threes)]
    with pytest.raises(ValueError, match=f"^bank image {problem}.*: a release written with it would not read back$"):
        write_release(tmp_path, generated, bank=dataclasses.replace(bank, paths=paths))
    assert _contents(tmp_path) == before


def test_a_seed_that_is_no_int_of_at_least_0_is_named_before_writing(tmp_path):
    generated = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    bank = pool_shaded_bank(20)
    # -1 was named as the images' seed -1000, 1.5 as a float seed of numpy's, "1" failed adding a str to an int,
    # True drew seed 1's images
    for seed in (-1, 1.5, "1", True):
        with pytest.raises(ValueError, match=f"^seed must be an int of at least 0, got {seed!r}$"):
            write_release(tmp_path, generated, bank=bank, seed=seed)
    assert not any(tmp_path.iterdir())


def test_a_scales_mapping_without_a_list_is_named():
    """load_release(root, {"train": 0.5}) failed with a bare KeyError: 'val'."""
    from neurosym.data.hint.official import subsample_split

    generated = generate_split(MAIN_RULES.with_scale(0.0005), MAIN_VOCABULARY, seed=2, progress=False)
    with pytest.raises(ValueError, match=r"scales lacks \['val', 'test'\]"):
        subsample_split(generated, {"train": 0.5})
    with pytest.raises(ValueError, match=r"split lacks \['test'\]"):
        subsample_split({"train": generated["train"], "val": generated["val"]}, {"train": 1, "val": 1, "test": 1})
