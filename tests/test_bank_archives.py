"""Checked ``.npz`` bank archives: every problem is refused at once, as one line naming the file."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neurosym.data.symbol_images import HANDWRITTEN_ARCHIVE, handwritten_symbols, load_npz_bank, read_bank_archive


def _valid() -> dict[str, np.ndarray]:
    return {
        "images": np.arange(4 * 28 * 28, dtype=np.uint8).reshape(4, 28, 28),
        "labels": np.array(["1", "times", "+", "x"]),
        "splits": np.array(["train", "test", "train", "val"]),
        "sources": np.array(["me"] * 4),
    }


def _write(path: Path, **changes) -> Path:
    arrays = {**_valid(), **changes}
    np.savez(path, **{name: array for name, array in arrays.items() if array is not None})
    return path


def test_a_valid_archive_loads_with_its_splits_sources_and_tokens(tmp_path):
    bank = load_npz_bank(_write(tmp_path / "mine.npz"))
    assert bank.labels.tolist() == ["1", "*", "+", "x"], "release folder names become tokens"
    assert bank.pools.tolist() == ["train", "test", "train", "val"]
    assert bank.sources.tolist() == ["me"] * 4
    assert np.array_equal(bank.images, _valid()["images"])
    without = load_npz_bank(_write(tmp_path / "plain.npz", splits=None, sources=None))
    assert set(without.sources.tolist()) == {"plain"}
    assert load_npz_bank(tmp_path / "plain.npz", symbols=["x", "1"]).labels.tolist() == ["1", "x"]
    with pytest.raises(ValueError, match=r"plain.npz: holds no image of the symbols \['\('\]"):
        load_npz_bank(tmp_path / "plain.npz", symbols=["1", "("])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"labels": None}, r"lacks the arrays \['labels'\]"),
        ({"images": None}, r"lacks the arrays \['images'\]"),
        ({"images": np.zeros((4, 28, 28), np.float32)}, r"images must be uint8 \[N, S, S\].*float32 \[4, 28, 28\]"),
        ({"images": np.zeros((4, 784), np.uint8)}, r"images must be uint8 \[N, S, S\].*uint8 \[4, 784\]"),
        (
            {"images": np.zeros((0, 28, 28), np.uint8), "labels": np.array([], str)},
            r"images must .* N, S >= 1, got uint8 \[0, 28, 28\]",
        ),
        ({"images": np.zeros((4, 28, 20), np.uint8)}, r"images must be uint8 \[N, S, S\] \(square\).*uint8 \[4, 28, 20\]"),
        ({"labels": np.array(["1", "2", "3"])}, r"labels must be \[4\] strings \(one per image\), got <U1 \[3\]"),
        ({"splits": np.array(["train"] * 5)}, r"splits must be \[4\] strings"),
        ({"sources": np.ones((4, 2), np.int64)}, r"sources must be \[4\] strings"),
        ({"labels": np.array([1.0, 2.0, 3.0, 4.0])}, r"labels must be \[4\] strings.*float64"),
        ({"labels": np.array(["1", "%", "+", "x"])}, r"unknown labels \['%'\]"),
        ({"splits": np.array(["train", "dev", "test", "test"])}, r"unknown splits \['dev'\]"),
        ({"labels": np.array([b"1", b"\xd7", b"+", b"x"])}, r"labels hold bytes that are no ASCII text"),
        ({"sources": np.array([b"me", b"caf\xc3\xa9", b"me", b"me"])}, r"sources hold bytes that are no ASCII text"),
    ],
)
def test_malformed_archives_are_refused_naming_the_file_and_problem(tmp_path, changes, message):
    path = _write(tmp_path / "bank.npz", **changes)
    with pytest.raises(ValueError, match=f"bank.npz: {message}") as error:
        load_npz_bank(path)
    assert "\n" not in str(error.value)


def test_integer_labels_are_digits(tmp_path):
    bank = load_npz_bank(_write(tmp_path / "digits.npz", labels=np.array([0, 1, 2, 9])))
    assert bank.labels.tolist() == ["0", "1", "2", "9"]


def test_files_that_are_no_archive_are_refused(tmp_path):
    np.save(tmp_path / "single.npy", np.zeros((2, 28, 28), np.uint8))
    (tmp_path / "single.npy").rename(tmp_path / "single.npz")
    (tmp_path / "text.npz").write_text("images, labels\n")
    for name in ("single.npz", "text.npz"):
        with pytest.raises(ValueError, match=f"{name}: not a readable .npz archive") as error:
            load_npz_bank(tmp_path / name)
        assert "\n" not in str(error.value) and "allow_pickle" not in str(error.value)  # numpy's advice to unpickle
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        load_npz_bank(tmp_path / "missing.npz")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 10_000), garbage=st.binary(max_size=64))
def test_damaged_archives_fail_at_once_in_one_line(tmp_path, cut, garbage):
    whole = _write(tmp_path / "whole.npz").read_bytes()
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(whole[: cut % len(whole)] + garbage)
    with pytest.raises(ValueError, match="damaged.npz: ") as error:
        load_npz_bank(damaged)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [(10, 9, "That compression method is not supported"), (8, 1, "File 'images.npy' is encrypted, password required")],
)
def test_an_archive_of_members_zipfile_cannot_open_is_refused_naming_it(tmp_path, field, value, problem):
    """Members compressed with Deflate64 (method 9) or encrypted (flag bit 0), as other zip tools write them:
    zipfile's NotImplementedError and RuntimeError escaped, naming no file."""
    data = bytearray(_write(tmp_path / "rezipped.npz").read_bytes())
    start = data.index(b"PK\x01\x02")  # (the central directory: each entry's flags at 8, method at 10)
    while start >= 0:
        data[start + field : start + field + 2] = value.to_bytes(2, "little")
        start = data.find(b"PK\x01\x02", start + 1)
    (tmp_path / "rezipped.npz").write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"rezipped\.npz: not a readable \.npz archive \({problem}"):
        load_npz_bank(tmp_path / "rezipped.npz")


def test_the_shipped_archive_is_checked_like_any_other(tmp_path):
    assert len(read_bank_archive(HANDWRITTEN_ARCHIVE)["labels"]) == 31_506
    _write(tmp_path / "no_sources.npz", sources=None)
    with pytest.raises(ValueError, match=r"no_sources.npz: lacks the arrays \['sources'\]"):
        handwritten_symbols(tmp_path / "no_sources.npz")
    _write(tmp_path / "strangers.npz")
    with pytest.raises(ValueError, match=r"strangers.npz: unknown sources \['me'\]"):
        handwritten_symbols(tmp_path / "strangers.npz")


def test_an_archive_without_images_or_with_members_that_are_no_arrays_is_named(tmp_path):
    """required=("labels",) over an archive without images failed on a bare KeyError: 'images', and a member that is
    no .npy data (numpy gives its bytes) on an AttributeError."""
    np.savez(tmp_path / "labels_only.npz", labels=np.array(["1"]))
    with pytest.raises(ValueError, match=r"labels_only.npz: lacks the arrays \['images'\] \(has \['labels'\]\)"):
        read_bank_archive(tmp_path / "labels_only.npz", required=("labels",))
    with zipfile.ZipFile(tmp_path / "raw.npz", "w") as archive:
        archive.writestr("images", b"not an array")
        np.save(tmp_path / "labels.npy", np.array(["1"]))
        archive.write(tmp_path / "labels.npy", "labels.npy")
    with pytest.raises(ValueError, match=r"raw.npz: \['images'\] are no arrays"):
        read_bank_archive(tmp_path / "raw.npz")
