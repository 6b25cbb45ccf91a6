"""The symbol image bank: labelled images of single symbols, split into disjoint train/val/test pools."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from neurosym.data.randomness import as_generator
from neurosym.data.shares import decimal_floor
from neurosym.data.symbol_images.classes import HINT_SYMBOLS
from neurosym.data.symbol_images.render import resize_images
from neurosym.training.checks import is_fraction

POOLS: tuple[str, ...] = ("train", "val", "test")
"""The pools a bank's images are split into, one per split."""
POOL_FRACTIONS: tuple[float, float, float] = (0.75, 0.05, 0.20)
"""The paper's random split of all handwritten images (Section 3): 75% train, 5% val, 20% test."""


def assign_pools(labels: np.ndarray, seed: int = 0, fractions: Sequence[float] = POOL_FRACTIONS) -> np.ndarray:
    """Split the images of every label at random into pools of the given ``fractions``.

    ``labels`` is ``[N]``; returns ``[N]`` strings from :data:`POOLS`. Each label is split on its own,
    so every symbol appears in every pool in the same proportions (rounded down for val and test, exactly for the
    decimals the fractions are written as: :func:`~neurosym.data.shares.decimal_floor`).
    """
    labels = np.asarray(labels)
    _check_fractions(fractions)
    rng = as_generator(seed)
    pools = np.empty(len(labels), dtype="<U5")
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        n_val = decimal_floor(fractions[1], len(members))  # (int(100 * 0.29) is 28)
        n_test = decimal_floor(fractions[2], len(members))
        pools[members] = "train"
        pools[members[len(members) - n_val - n_test : len(members) - n_test]] = "val"
        pools[members[len(members) - n_test :]] = "test"
    return pools


def _check_fractions(fractions: Sequence[float]) -> None:
    """Raise ``ValueError`` unless ``fractions`` are one fraction in ``[0, 1]`` (a real number, not NaN) per pool of
    :data:`POOLS`, summing to 1: a NaN passed both comparisons (a training share of NaN was ignored, another share
    failed in :class:`~fractions.Fraction`), and a string failed in ``sum``."""
    parts = tuple(fractions) if isinstance(fractions, Iterable) else ()
    if len(parts) != len(POOLS) or not all(map(is_fraction, parts)) or abs(sum(parts) - 1.0) > 1e-9:
        raise ValueError(f"pool fractions must be {len(POOLS)} numbers in [0, 1] summing to 1, got {fractions!r}")


@dataclass
class SymbolBank:
    """Images of single symbols, white ink on black.

    ``images`` uint8 ``[N, S, S]`` (square); ``labels`` ``[N]`` symbol tokens (``"0"``…``"9"``, ``"+"``, ``"-"``,
    ``"*"``, ``"/"``, ``"("``, ``")"``, few-shot letters, …); ``pools`` ``[N]`` from :data:`POOLS`;
    ``paths`` ``[N]`` names relative to a ``symbol_images`` folder (``"<class>/<file>.jpg"``);
    ``sources`` ``[N]`` the data set each image comes from (``"mnist"``, ``"bhmsds"``, ``"drawn"`` …;
    ``""`` when not given).
    """

    images: np.ndarray
    labels: np.ndarray
    pools: np.ndarray
    paths: np.ndarray
    sources: np.ndarray = None  # type: ignore[assignment]  # None: filled with "" in __post_init__
    _index: dict[tuple[str, str], np.ndarray] = field(init=False, repr=False)
    _by_path: dict[str, int] = field(init=False, repr=False)
    _symbols: list[str] = field(init=False, repr=False)
    _resized: dict[tuple[int, int], np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.images = np.asarray(self.images)
        self.labels = np.asarray(self.labels).astype(str)
        self.pools = np.asarray(self.pools).astype(str)
        self.paths = np.asarray(self.paths).astype(str)
        self.sources = np.full(len(self.labels), "") if self.sources is None else np.asarray(self.sources).astype(str)
        if self.images.ndim != 3 or self.images.dtype != np.uint8:
            raise ValueError(f"images must be uint8 [N, H, W], got {self.images.dtype} {self.images.shape}")
        if self.images.shape[1] != self.images.shape[2]:  # a strip of them is cut into square windows, one per symbol
            raise ValueError(f"images must be square [N, S, S] (one symbol, one square window), got {self.images.shape}")
        n = len(self.images)
        for name in ("labels", "pools", "paths", "sources"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape [{n}], got {getattr(self, name).shape}")
        unknown = sorted(set(self.pools.tolist()) - set(POOLS))
        if unknown:
            raise ValueError(f"unknown pool names {unknown}; expected {POOLS}")
        self._index, self._resized = {}, {}
        self._symbols = np.unique(self.labels).tolist()
        for label in self._symbols:
            for pool in POOLS:
                self._index[(label, pool)] = np.flatnonzero((self.labels == label) & (self.pools == pool))
        self._by_path = {path: i for i, path in enumerate(self.paths.tolist())}
        if len(self._by_path) < n:  # a path names one image: index_of and a release's img_paths read it
            repeated = next(str(path) for path, count in zip(*np.unique(self.paths, return_counts=True)) if count > 1)
            raise ValueError(f"paths must name one image each, but {repeated!r} names {(self.paths == repeated).sum()}")

    @property
    def symbols(self) -> list[str]:
        """The distinct labels, sorted."""
        return list(self._symbols)

    def resized(self, size: tuple[int, int]) -> np.ndarray:
        """The images resized to ``size`` (uint8 ``[N, *size]``), computed once per size and kept: a bank's
        images are not changed after it is built."""
        if size not in self._resized:
            self._resized[size] = self.images if self.images.shape[1:] == size else resize_images(self.images, size)
        return self._resized[size]

    def pool_indices(self, symbol: str, pool: str) -> np.ndarray:
        """Indices ``[M]`` of the images of ``symbol`` in ``pool``."""
        if pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; expected one of {POOLS}")
        if (symbol, pool) not in self._index:
            raise KeyError(f"symbol {symbol!r} is not in this bank (it has {self.symbols})")
        return self._index[(symbol, pool)]

    def sample(self, symbols: Sequence[str], pool: str, rng: np.random.Generator | int) -> np.ndarray:
        """Draw one image index per symbol of ``symbols`` (a str is its characters) from ``pool``; returns
        ``[len(symbols)]``."""
        rng = as_generator(rng)
        wanted = np.asarray(list(symbols), dtype=str)  # (a str failed in len() of a 0-d array)
        picks = np.empty(len(wanted), dtype=np.int64)
        for symbol in np.unique(wanted).tolist():
            where = wanted == symbol
            candidates = self.pool_indices(symbol, pool)
            if len(candidates) == 0:
                raise ValueError(f"the {pool!r} pool has no image of symbol {symbol!r}")
            picks[where] = candidates[rng.integers(len(candidates), size=int(where.sum()))]
        return picks

    def index_of(self, path: str) -> int:
        """The index of the image stored under ``path`` (``"<class>/<file>"``)."""
        try:
            return self._by_path[path]
        except KeyError:
            raise KeyError(f"no image {path!r} in this bank") from None

    def counts(self) -> dict[str, dict[str, int]]:
        """``{symbol: {pool: number of images}}``."""
        return {s: {p: len(self._index[(s, p)]) for p in POOLS} for s in self.symbols}

    def take(self, keep: np.ndarray | Sequence[int]) -> SymbolBank:
        """The bank of the images selected by ``keep`` (indices or a boolean mask ``[N]``), pools kept."""
        return SymbolBank(self.images[keep], self.labels[keep], self.pools[keep], self.paths[keep], self.sources[keep])

    def subset(self, symbols: Sequence[str]) -> SymbolBank:
        """The bank restricted to ``symbols`` (pools kept)."""
        return self.take(np.isin(self.labels, list(symbols)))


def merge_banks(*banks: SymbolBank) -> SymbolBank:
    """One bank holding the images of all ``banks`` (resized to the first bank's size when they differ)."""
    if not banks:
        raise ValueError("merge_banks needs at least one bank")
    size = banks[0].images.shape[1:]
    images = [b.resized(size) for b in banks]
    return SymbolBank(
        np.concatenate(images),
        np.concatenate([b.labels for b in banks]),
        np.concatenate([b.pools for b in banks]),
        np.concatenate([b.paths for b in banks]),
        np.concatenate([b.sources for b in banks]),
    )


def with_brackets(bank: SymbolBank, brackets_from: SymbolBank) -> SymbolBank:
    """``bank`` itself when it has both brackets; else its HINT symbols with the ``(`` and ``)`` images of
    ``brackets_from`` (real handwritten brackets under a permissive licence exist nowhere: banks of real
    handwriting borrow drawn ones). ``ValueError`` where ``brackets_from`` lacks either bracket (the bank came back
    without brackets, silently)."""
    if {"(", ")"} <= set(bank.symbols):
        return bank
    if missing := [bracket for bracket in "()" if bracket not in brackets_from.symbols]:
        raise ValueError(f"brackets_from has no {' or '.join(map(repr, missing))} images to lend the bank")
    own = [s for s in HINT_SYMBOLS if s in bank.symbols and s not in "()"]
    return merge_banks(bank.subset(own), brackets_from.subset(["(", ")"]))
