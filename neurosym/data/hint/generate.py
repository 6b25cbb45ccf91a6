"""Generating HINT splits by the released procedure (rules in :mod:`neurosym.data.hint.splits`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from neurosym.data.hint.examples import HintSplit
from neurosym.data.hint.sampling import Vocabulary, enumerate_prefix, evaluate_prefix, sample_prefix
from neurosym.data.hint.splits import SplitRules, ranks_among_equals
from neurosym.training.checks import int_at_least

_STALL_BATCHES = 30  # stop sampling a list after this many batches in a row add nothing to it
_MAX_BATCH = 200_000


@dataclass
class _Bucket:
    """One list being filled: ``size`` items at most, each result value at most ``cap`` times."""

    name: str
    size: int
    cap: int | None
    limit: int
    rows: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    filled: int = 0

    def __post_init__(self) -> None:
        self.counts = np.zeros(self.limit + 1, dtype=np.int64)

    @property
    def remaining(self) -> int:
        return self.size - self.filled

    def offer(self, rows: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, int]:
        """Take candidates in order while there is room and the cap allows.

        Returns the indices taken and how many candidates were consumed (the rest may go elsewhere)."""
        allowed = np.ones(len(values), dtype=bool)
        if self.cap is not None:
            allowed = self.counts[values] + ranks_among_equals(values) < self.cap
        chosen = np.flatnonzero(allowed)[: self.remaining]
        consumed = len(values) if len(chosen) < self.remaining else int(chosen[-1]) + 1
        np.add.at(self.counts, values[chosen], 1)
        self.rows.append(rows[chosen])
        self.values.append(values[chosen])
        self.filled += len(chosen)
        return chosen, consumed

    def result(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        rows = np.concatenate(self.rows) if self.rows else np.zeros((0, width), np.uint8)
        values = np.concatenate(self.values) if self.values else np.zeros(0, np.int64)
        return rows, values


def _route(buckets: list[_Bucket], rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Fill ``buckets`` in order from the candidates; returns the mask of the candidates taken."""
    taken = np.zeros(len(values), dtype=bool)
    start = 0
    for bucket in buckets:
        if bucket.remaining <= 0 or start >= len(values):
            continue
        chosen, consumed = bucket.offer(rows[start:], values[start:])
        taken[start + chosen] = True
        start += consumed
    return taken


def _keys(rows: np.ndarray) -> np.ndarray:
    """One hashable key per row of a uint8 ``[count, length]`` array."""
    return np.ascontiguousarray(rows).view(np.dtype((np.void, rows.shape[1]))).ravel()


class _ListsOfOneSize:
    """All lists of one number of operators, and the candidates they draw from."""

    def __init__(self, n_op: int, rules: SplitRules, vocabulary: Vocabulary, concept: str | None, seed: int):
        self.n_op, self.rules, self.vocabulary = n_op, rules, vocabulary
        self.concept_id = None if concept is None else vocabulary.id_of(concept)
        self.rng = np.random.default_rng([seed, n_op, 0 if concept is None else ord(concept)])
        sampled = n_op > rules.enumerate_up_to
        short = n_op <= rules.max_train_ops

        def bucket(name: str, size: int, limit: int) -> _Bucket:
            return _Bucket(name, size, rules.share_cap(size) if sampled else None, limit)

        small, large = ("SS", "SL") if short else ("LS", "LL")
        self.small = [
            bucket(f"{pool}:{small}", rules.scaled(size), rules.small_limit)
            for pool, size in (("val", rules.val_per_op), ("test", rules.test_per_op))
        ]
        self.large = [
            bucket(f"{pool}:{large}", rules.scaled(size), rules.large_limit)
            for pool, size in (("val", rules.val_per_op), ("test", rules.test_per_op))
        ]
        self.train = None
        if short and n_op >= rules.min_train_ops:
            self.train = bucket("train", rules.train_size(n_op), rules.small_limit)
            if sampled:
                self.small.insert(0, self.train)

    def _qualifying(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Valid candidates that contain the concept: their rows, values and whether they are small."""
        evaluation = evaluate_prefix(rows, self.vocabulary)
        keep = evaluation.valid & (evaluation.peak <= self.rules.large_limit)
        if self.n_op > self.rules.enumerate_up_to:
            keep &= evaluation.value != 0
        if self.concept_id is not None:
            keep &= (rows == self.concept_id).any(axis=1)
        return rows[keep], evaluation.value[keep], evaluation.peak[keep] <= self.rules.small_limit

    def fill(self) -> None:
        if self.n_op <= self.rules.enumerate_up_to:
            self._fill_enumerated()
        else:
            self._fill_sampled()

    def _fill_enumerated(self) -> None:
        rows, values, small = self._qualifying(enumerate_prefix(self.n_op, self.vocabulary))
        order = self.rng.permutation(len(rows))
        rows, values, small = rows[order], values[order], small[order]
        unused = small.copy()
        if self.train is not None and small.any():
            distinct = np.flatnonzero(small)
            chosen = np.resize(distinct, self.train.size)
            chosen = chosen[self.rng.permutation(len(chosen))]
            self.train.offer(rows[chosen], values[chosen])
            unused[distinct[: self.train.size]] = False
        _route(self.small, rows[unused], values[unused])
        _route(self.large, rows[~small], values[~small])

    def _fill_sampled(self) -> None:
        seen: set[bytes] = set()
        stalled = 0
        while stalled < _STALL_BATCHES and any(b.remaining > 0 for b in self.small + self.large):
            wanted = sum(b.remaining for b in self.small + self.large)
            rows = sample_prefix(self.n_op, int(min(_MAX_BATCH, max(1_000, 8 * wanted))), self.vocabulary, self.rng)
            keys = _keys(rows)
            _, first = np.unique(keys, return_index=True)
            first.sort()
            fresh = first[np.fromiter((k not in seen for k in keys[first].tolist()), dtype=bool, count=len(first))]
            rows, values, small = self._qualifying(rows[fresh])
            before = sum(b.filled for b in self.small + self.large)
            for buckets, mask in ((self.small, small), (self.large, ~small)):
                taken = _route(buckets, rows[mask], values[mask])
                seen.update(_keys(rows[mask][taken]).tolist())
            stalled = 0 if sum(b.filled for b in self.small + self.large) > before else stalled + 1

    def lists(self) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """``(name, rows, values)`` of every list: ``train``, then ``val:I``/``test:I`` and the others."""
        width = 2 * self.n_op + 1
        if self.train is not None:
            rows, values = self.train.result(width)
            yield "train", rows, values
            for split in ("val", "test"):
                seen = self.rules.seen_subset(self.n_op, values, split)
                yield f"{split}:I", rows[seen], values[seen]
        for bucket in self.small + self.large:
            if bucket is not self.train:
                yield (bucket.name, *bucket.result(width))


def generate_split(
    rules: SplitRules,
    vocabulary: Vocabulary,
    seed: int = 0,
    concept: str | None = None,
    progress: bool = False,
    description: str = "HINT",
) -> dict[str, HintSplit]:
    """Generate ``{"train", "val", "test"}`` by ``rules``; with ``concept``, every expression contains it. ``seed`` is an
    int of at least 0 (else ``ValueError``)."""
    seed = int_at_least(seed, "seed", 0)  # (True was seed 1, "3" seed 3; -1 failed in numpy's seeding)
    collected: dict[str, list[tuple[str, np.ndarray, np.ndarray, int]]] = {"train": [], "val": [], "test": []}
    sizes = range(rules.max_test_ops + 1)
    for n_op in tqdm(sizes, desc=description, unit="n_op", disable=not progress):
        lists = _ListsOfOneSize(n_op, rules, vocabulary, concept, seed)
        lists.fill()
        for name, rows, values in lists.lists():
            pool, _, subset = name.partition(":")
            collected[pool].append((subset, rows, values, n_op))
    return {
        pool: HintSplit.from_prefix_rows(parts, vocabulary, f"{description} {pool} infix" if progress else None)
        for pool, parts in collected.items()
    }
