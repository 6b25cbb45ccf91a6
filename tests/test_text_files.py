"""The readers of files users give, over files as other systems and editors leave them: Windows line ends, a UTF-8
byte-order mark, no final line end, trailing blank lines or spaces, Latin-1 bytes, an empty file, a Git LFS pointer
and a file cut short. Each reads the clean file's data or raises a ``ValueError`` that names the file (and the line
and column, for text)."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.hint import official
from neurosym.data.mathematics import generation, load_split, read_module_file
from neurosym.data.mathematics.loader import count_pairs
from neurosym.data.symbol_images.archive import read_bank_archive
from neurosym.data.symbol_images.folder import load_folder_bank, read_image, write_image
from neurosym.experiments.mathematics import OPTIONS as MATHEMATICS_OPTIONS
from neurosym.experiments.options import config_file_values
from neurosym.syntax import SymbolGrammar
from neurosym.training.checkpoint import load_json

LFS_POINTER = (
    b"version https://git-lfs.github.com/spec/v1\n"
    b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    b"size 12345\n"
)
LFS_PROBLEM = ":1: a Git LFS pointer, not the file it stands for"
SAME = None
"""An expectation: the variant reads as the clean file does (a regular expression: the error it raises after the file's
path; anything else: what it reads as)."""


READ_AS_CLEAN = dict.fromkeys(["crlf", "bom", "bom+crlf", "no final line end", "trailing blank lines", "trailing spaces"], SAME)
"""The variants a reader of a format where spaces at a line's end mean nothing reads as the clean file."""


def variants(clean: bytes) -> dict[str, bytes]:
    """``clean`` (a text file of ``"\\n"`` line ends, one ending it) as other systems and editors leave it."""
    return {
        "crlf": clean.replace(b"\n", b"\r\n"),
        "bom": codecs.BOM_UTF8 + clean,
        "bom+crlf": codecs.BOM_UTF8 + clean.replace(b"\n", b"\r\n"),
        "no final line end": clean.removesuffix(b"\n"),
        "trailing blank lines": clean + b"\n\n",
        "trailing spaces": clean.replace(b"\n", b"  \n"),
        "latin-1": clean.replace(b"4", "\u00e9".encode("latin-1"), 1),
        "empty": b"",
        "git lfs pointer": LFS_POINTER,
        "cut short": clean[: len(clean) * 2 // 3],
    }


def check_reader(tmp_path: Path, read: Callable[[Path], object], clean: bytes, variant: str, expected: object) -> None:
    """``read`` of the file ``clean`` in ``variant`` gives what ``read`` of ``clean`` does (``expected`` ``SAME``),
    raises a ``ValueError`` whose message opens with the file's path and then matches ``expected`` (a str), or gives
    ``expected``."""
    path = tmp_path / "clean"
    path.write_bytes(clean)
    wanted = read(path)
    path.write_bytes(variants(clean)[variant])
    if isinstance(expected, str):
        with pytest.raises(ValueError, match=f"^{re.escape(str(path))}{expected}"):
            read(path)
    else:
        assert read(path) == (wanted if expected is SAME else expected)


MATHEMATICS = b"What is 1 + 2?\n3\nWhat is 4 - 10?\n-6\n"
MATHEMATICS_EXPECTED = {
    "crlf": SAME,
    "bom": SAME,
    "bom+crlf": SAME,
    "no final line end": SAME,
    "trailing blank lines": SAME,  # (was refused as an empty question; two were counted as a pair)
    "trailing spaces": r":2:3: answer ends with a space",  # (read as "3 ", which the answer "3" does not match)
    "latin-1": r":3:9: byte 0xe9 \(not ASCII\) is outside the dataset's alphabet",
    "empty": r":1: empty file",
    "git lfs pointer": re.escape(LFS_PROBLEM),  # (was a question without an answer, counted as one pair)
    "cut short": r":3: question without an answer",
}


@pytest.mark.parametrize(("variant", "expected"), MATHEMATICS_EXPECTED.items(), ids=MATHEMATICS_EXPECTED)
def test_a_mathematics_file(tmp_path, variant, expected):
    check_reader(tmp_path, read_module_file, MATHEMATICS, variant, expected)


@pytest.mark.parametrize("variant", ["crlf", "bom+crlf", "no final line end", "trailing blank lines", "git lfs pointer"])
def test_a_mathematics_file_counts_the_pairs_it_reads(tmp_path, variant):
    path = tmp_path / "arithmetic__mul.txt"
    path.write_bytes(variants(MATHEMATICS)[variant])
    if variant == "git lfs pointer":  # (was counted as one pair: generate() took the file as holding its questions)
        with pytest.raises(ValueError, match=re.escape(f"{path}{LFS_PROBLEM}")):
            count_pairs(path)
    else:
        assert count_pairs(path) == 2


@settings(max_examples=40, deadline=None)
@given(
    line_ends=st.lists(st.sampled_from(["\n", "\r\n"]), min_size=4, max_size=4),
    final_end=st.booleans(),
    blank_lines=st.lists(st.sampled_from(["\n", "\r\n", " \n"]), max_size=3),
    bom=st.booleans(),
)
def test_a_mathematics_release_reads_the_same_pairs_whatever_the_line_ends(
    tmp_path_factory, line_ends, final_end, blank_lines, bom
):
    """Any mixture of line ends, a byte-order mark, blank lines after the last answer: the pairs of the clean file."""
    root = tmp_path_factory.mktemp("release")
    lines = MATHEMATICS.decode().splitlines()
    text = "".join(line + end for line, end in zip(lines, line_ends))
    text = (text if final_end else text.removesuffix(line_ends[-1])) + "".join(blank_lines) * final_end
    (root / "interpolate").mkdir()
    (root / "interpolate" / "arithmetic__mul.txt").write_bytes(codecs.BOM_UTF8 * bom + text.encode())
    examples = load_split(root, "interpolate")
    assert [(example.question, example.answer) for example in examples] == [(lines[0], "3"), (lines[2], "-6")]


HINT_RECORDS = json.dumps(
    [
        {"id": "0", "expr": "1+2", "head": [1, -1, 1], "res": 3, "res_all": [1, 3, 2]},
        {"id": "1", "expr": "4*2", "head": [1, -1, 1], "res": 8, "res_all": [4, 8, 2]},
    ],
    indent=1,
).encode()
HINT_EXPECTED = {
    **READ_AS_CLEAN,
    "latin-1": r":19:12: byte 0xe9 is not UTF-8 text \(invalid continuation byte\); save the JSON file as UTF-8",
    "empty": r" is not valid JSON: it holds no JSON value \(it is empty or blank\)",
    "git lfs pointer": re.escape(LFS_PROBLEM),  # (was "Expecting value: line 1 column 1")
    "cut short": r" is not valid JSON: Unterminated string .* \(the file ends before it is complete: was it cut short\?\)",
}


@pytest.mark.parametrize(("variant", "expected"), HINT_EXPECTED.items(), ids=HINT_EXPECTED)
def test_a_hint_split_file(tmp_path, variant, expected):
    check_reader(tmp_path, official.read_records, HINT_RECORDS + b"\n", variant, expected)


def test_a_hint_fewshot_file_that_is_a_git_lfs_pointer_is_named(tmp_path):
    (tmp_path / official.FEWSHOT_FILE).write_bytes(LFS_POINTER)
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / official.FEWSHOT_FILE}{LFS_PROBLEM}")):
        official.read_fewshot(tmp_path)


def test_a_json_file_in_utf16_is_still_read(tmp_path):
    """JSON may be UTF-16 (what PowerShell writes): only UTF-8 errors are placed by line and column."""
    path = tmp_path / "data.json"
    path.write_bytes(codecs.BOM_UTF16_LE + '{"a": "é"}'.encode("utf-16-le"))
    assert load_json(path) == {"a": "é"}


CONFIG = b'steps = 3\n# 4 runs\nclip = 0.5\nmodels = ["lstm_att"]\n'
CONFIG_EXPECTED = {
    **READ_AS_CLEAN,
    "latin-1": r":2:3: byte 0xe9 is not UTF-8 text \(invalid continuation byte\); save the config file as UTF-8",
    "empty": {},  # (no option set: the command line's defaults)
    "git lfs pointer": re.escape(LFS_PROBLEM),
    "cut short": r": Expected '=' after a key in a key/value pair \(at end of document\)",  # (named no file)
}


@pytest.mark.parametrize(("variant", "expected"), CONFIG_EXPECTED.items(), ids=CONFIG_EXPECTED)
def test_a_config_file(tmp_path, variant, expected):
    check_reader(tmp_path, lambda path: config_file_values(MATHEMATICS_OPTIONS, path), CONFIG, variant, expected)


def test_a_config_file_names_itself_in_an_entry_error(tmp_path):
    """The command line named the file; the library's reader did not."""
    path = tmp_path / "run.toml"
    path.write_text("epoch = 3\n")
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: unknown option 'epoch'"):
        config_file_values(MATHEMATICS_OPTIONS, path)


GRAMMAR = b'start: n "+" n\nn: "4" | "1"  // digits\n'
GRAMMAR_EXPECTED = {
    **READ_AS_CLEAN,
    "latin-1": r":2:5: byte 0xe9 is not UTF-8 text \(invalid continuation byte\); save the grammar as UTF-8",
    "empty": r": the grammar has no rule 'start' to start from",  # (named no file)
    "git lfs pointer": re.escape(LFS_PROBLEM),  # (was Lark's "Expecting rule or terminal definition")
    "cut short": r": the grammar does not load",
}


@pytest.mark.parametrize(("variant", "expected"), GRAMMAR_EXPECTED.items(), ids=GRAMMAR_EXPECTED)
def test_a_grammar_file(tmp_path, variant, expected):
    check_reader(tmp_path, lambda path: SymbolGrammar(path).symbols, GRAMMAR, variant, expected)


def test_a_symbol_image_that_is_a_git_lfs_pointer_is_named(tmp_path):
    """Pillow said only that it cannot identify the image."""
    write_image(tmp_path / "1" / "a.png", np.full((4, 4), 255, np.uint8))
    pointer = tmp_path / "1" / "b.png"
    pointer.write_bytes(LFS_POINTER)
    message = f"^{re.escape(str(pointer))}{re.escape(LFS_PROBLEM)}"
    with pytest.raises(ValueError, match=message):
        read_image(pointer)
    with pytest.raises(ValueError, match=message):
        load_folder_bank(tmp_path, symbols=["1"])


def test_a_symbol_bank_archive_that_is_a_git_lfs_pointer_is_named(tmp_path):
    path = tmp_path / "bank.npz"
    path.write_bytes(LFS_POINTER)
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}{re.escape(LFS_PROBLEM)}"):
        read_bank_archive(path)


@pytest.mark.parametrize(
    ("data", "place"),
    [
        (codecs.BOM_UTF8 + b"# \xe9\n", "1:3"),  # (was 1:6, or the mark's byte 0xbf for a grammar)
        ("#\n# \u00e9 ".encode() + b"\xe9\n", "2:5"),  # (é is two bytes, one column)
    ],
    ids=["after a byte-order mark", "after a character of two bytes"],
)
@pytest.mark.parametrize(
    "read", [load_json, lambda path: config_file_values(MATHEMATICS_OPTIONS, path), SymbolGrammar], ids=["json", "toml", "lark"]
)
def test_a_byte_that_is_no_utf8_is_placed_where_an_editor_shows_it(tmp_path, read, data, place):
    path = tmp_path / "file"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:{place}: byte 0xe9 is not UTF-8 text"):
        read(path)


def test_a_seed_record_written_on_windows_is_read_as_its_seed(tmp_path, monkeypatch):
    """The record a user is told to write by hand: a byte-order mark was a UnicodeDecodeError naming no file."""
    monkeypatch.setattr(generation, "_run_driver", lambda jobs, root, progress: None)
    (tmp_path / "interpolate").mkdir()
    (tmp_path / "interpolate" / "arithmetic__mul.txt").write_bytes(MATHEMATICS)
    (tmp_path / generation.SEED_RECORD).write_bytes(codecs.BOM_UTF8 + b"7\r\n")
    assert generation.generate([("interpolate", "arithmetic__mul")], 2, seed=7, root=tmp_path) == tmp_path
    (tmp_path / generation.SEED_RECORD).write_bytes(b"7\xa0\n")
    with pytest.raises(ValueError, match=f"^{re.escape(str(tmp_path / generation.SEED_RECORD))}:1:2: byte 0xa0"):
        generation.generate([("interpolate", "arithmetic__mul")], 2, seed=7, root=tmp_path)
