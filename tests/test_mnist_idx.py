"""MNIST's own idx files (as torchvision leaves them in ``MNIST/raw``): read from a folder as the pickle of the same
digits is, each bad file named with its problem."""

import gzip
import os

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pvr_fakes import idx_bytes, uint8_mnist, write_fake_mnist, write_idx_mnist, write_mnist_pickle

from neurosym.benchmarking.pvr_runs import mnist_tag
from neurosym.data.mnist import IDX_FILES, MNIST, idx_array, idx_files, load_mnist, mnist_files, mnist_path


def assert_same(loaded: MNIST, expected: MNIST) -> None:
    for name in vars(expected):
        got, want = getattr(loaded, name), getattr(expected, name)
        assert got.dtype == want.dtype and np.array_equal(got, want), name
    assert loaded.train_images.dtype == np.uint8 and loaded.train_labels.dtype == np.int64


@pytest.mark.parametrize("gzipped", [False, True])
def test_an_idx_folder_loads_as_the_pickle_of_the_same_digits(tmp_path, gzipped):
    """It was refused as "not an MNIST pickle". The pickle's train and valid parts are the idx training set in order,
    and its intensities pixel / 256 come back as the same uint8 pixels (every value 0-255)."""
    digits = uint8_mnist()
    folder = write_idx_mnist(tmp_path / "raw", digits, gzipped=gzipped)
    pickled = load_mnist(write_mnist_pickle(tmp_path / "mnist.pkl.gz", digits, valid=3))
    assert_same(load_mnist(folder), digits)
    assert_same(pickled, digits)
    assert set(np.unique(pickled.train_images[0])) == set(range(256))


def test_a_fake_mnist_pickle_and_its_idx_folder_load_equal(tmp_path, monkeypatch):
    """The fakes the other tests read, written as idx files: the same MNIST, also named by $NEUROSYM_MNIST."""
    from_pickle = load_mnist(write_fake_mnist(tmp_path / "mnist.pkl.gz"))
    folder = write_idx_mnist(tmp_path / "idx", from_pickle, gzipped=True)
    monkeypatch.setenv("NEUROSYM_MNIST", str(folder))
    assert_same(load_mnist(), from_pickle)


def test_torchvisions_mnist_folder_is_read_from_its_raw_folder_uncompressed_files_first(tmp_path):
    """torchvision keeps the downloaded .gz beside each file it extracts, in MNIST/raw (MNIST also holds processed/)."""
    digits, other = uint8_mnist(seed=0), uint8_mnist(seed=1)
    raw = write_idx_mnist(write_idx_mnist(tmp_path / "MNIST" / "raw", other, gzipped=True), digits)
    (tmp_path / "MNIST" / "processed").mkdir()
    assert mnist_path(tmp_path / "MNIST") == raw and idx_files(tmp_path / "MNIST") == [raw / name for name in IDX_FILES]
    assert_same(load_mnist(tmp_path / "MNIST"), digits)
    assert_same(load_mnist(raw), digits)
    (raw / IDX_FILES[3]).unlink()
    assert idx_files(raw)[3] == raw / f"{IDX_FILES[3]}.gz"


def test_a_folder_one_level_off_names_the_one_to_give(tmp_path):
    """torchvision's root (holding MNIST/raw), one idx file, and a folder holding the pickle: each names what to give."""
    raw = write_idx_mnist(tmp_path / "data" / "MNIST" / "raw", uint8_mnist(), gzipped=True)
    lacks = r"lacks train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte"
    with pytest.raises(ValueError, match=rf"^MNIST folder \S*data {lacks} .*; \S*data/MNIST/raw holds them: give that folder$"):
        load_mnist(tmp_path / "data")
    with pytest.raises(
        ValueError,
        match=r"^MNIST file \S*raw/train-images-idx3-ubyte.gz is one of .*: give the folder that holds them, \S*MNIST/raw$",
    ):
        load_mnist(raw / "train-images-idx3-ubyte.gz")
    (tmp_path / "pickle").mkdir()
    write_fake_mnist(tmp_path / "pickle" / "mnist.pkl.gz")
    with pytest.raises(ValueError, match=r"; give the pickle \S*pickle/mnist.pkl.gz itself$"):
        mnist_path(tmp_path / "pickle")


def test_a_folder_that_lacks_an_idx_file_names_it(tmp_path):
    raw = write_idx_mnist(tmp_path / "raw", uint8_mnist())
    (raw / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(ValueError, match=r"^MNIST folder \S*raw lacks t10k-labels-idx1-ubyte \(each may be gzipped: NAME.gz\)"):
        load_mnist(raw)
    with pytest.raises(FileNotFoundError, match=r"^MNIST file or folder not found: \S*missing$"):
        load_mnist(tmp_path / "missing")


def _labels(count: int, value: int = 0) -> bytes:
    return idx_bytes(np.full(count, value, np.uint8))


IMAGES, LABELS = idx_bytes(np.zeros((3, 28, 28), np.uint8)), _labels(3)


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("train-images-idx3-ubyte", LABELS, r"has the magic number 0x00000801, expected 0x00000803"),
        ("train-labels-idx1-ubyte", IMAGES, r"has the magic number 0x00000803, expected 0x00000801"),
        ("train-images-idx3-ubyte", b"\x00\x00\x08", r"is truncated: 3 bytes, fewer than the 4 of its magic number"),
        ("train-images-idx3-ubyte", IMAGES[:10], r"is truncated: 10 bytes, fewer than the 16 of its header"),
        (
            "train-images-idx3-ubyte",
            IMAGES[:-1],
            r"is truncated: it holds 2,351 bytes of values .* \[3, 28, 28\] \(2,352 bytes\)",
        ),
        (
            "train-labels-idx1-ubyte",
            LABELS + b"\x00",
            r"holds more than its header gives: 4 bytes of values .* \[3\] \(3 bytes\)",
        ),
        ("train-images-idx3-ubyte", idx_bytes(np.zeros((3, 27, 28), np.uint8)), r"holds images of shape \[3, 27, 28\]"),
        (
            "train-images-idx3-ubyte",
            idx_bytes(np.zeros((0, 28, 28), np.uint8)),
            r"holds images of shape \[0, 28, 28\], expected \[N, 28, 28\] with N >= 1",
        ),
        ("train-labels-idx1-ubyte", _labels(2), r"holds 2 labels for the 3 images of \S*train-images-idx3-ubyte$"),
        (
            "t10k-labels-idx1-ubyte",
            _labels(3, 10),
            r"has labels other than the digits 0 to 9, e.g. \[10, 10, 10\] at index \[0, 1, 2\]",
        ),
        ("t10k-images-idx3-ubyte", gzip.compress(IMAGES, mtime=0)[:-9], r"cannot be read: Compressed file ended"),
    ],
)
def test_a_bad_idx_file_is_named_with_its_problem(tmp_path, name, data, problem):
    raw = write_idx_mnist(tmp_path / "raw", MNIST(*(np.zeros((3, 28, 28), np.uint8), np.zeros(3, np.int64)) * 2))
    (raw / name).write_bytes(data)
    with pytest.raises(ValueError, match=rf"^MNIST idx file \S*raw/{name} {problem}"):
        load_mnist(raw)


@example(b"\x00\x00\x08\x03", bytes.fromhex("00000000 ffffffff ffffffff"), 3)  # no values, numpy's "too big"
@example(b"\x00\x00\x08\x03", bytes.fromhex("ffffffff ffffffff 00000000"), 3)  # (numpy's "cannot reshape")
@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([b"", b"\x00\x00\x08\x01", b"\x00\x00\x08\x03", b"\x00\x00\x08\x03\x00\x00\x00\x01"]),
    st.binary(max_size=40),
    st.sampled_from([1, 3]),
)
def test_idx_bytes_either_parse_to_their_shape_or_raise_value_error(prefix, data, dimensions):
    """Any bytes, also after a valid magic number and sizes: a ValueError naming the file, never another error."""
    try:
        array = idx_array(prefix + data, "some-file", dimensions)
    except ValueError as error:
        assert str(error).startswith("MNIST idx file some-file ")
    else:
        assert array.ndim == dimensions and array.dtype == np.uint8 and array.flags.writeable
        assert 4 + 4 * dimensions + array.size == len(prefix + data)


@pytest.mark.parametrize("name", IDX_FILES)
def test_the_stamp_and_digest_of_an_idx_folder_change_with_each_of_its_files(tmp_path, name):
    """What keys stored PVR runs (mnist_tag) and names a cached bank (the bytes of mnist_files) covers all four files."""
    from neurosym.data.symbol_images.default import _files_digest

    raw = write_idx_mnist(tmp_path / "raw", uint8_mnist(), gzipped=True)
    tag, digest = mnist_tag(raw), _files_digest(mnist_files(raw))
    file = raw / f"{name}.gz"
    data = bytearray(gzip.decompress(file.read_bytes()))
    data[-1] ^= 1  # one pixel or label changed, the size kept
    file.write_bytes(gzip.compress(bytes(data), mtime=0))
    os.utime(file, ns=(0, 0))
    assert mnist_tag(raw) != tag and _files_digest(mnist_files(raw)) != digest
    pickle = write_fake_mnist(tmp_path / "mnist.pkl.gz")
    assert mnist_files(pickle) == [pickle]
