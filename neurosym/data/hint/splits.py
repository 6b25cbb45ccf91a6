"""The HINT split rules: which expressions go to train, validation and the five test subsets.

Per number of operators ``n`` (the paper's Section 3 and Table A1):

* train: ``n <= 10``, every value (numbers, intermediate and final results) ``<= 100``;
* test ``I``: 1% of that ``n``'s training list, to be shown with unseen images: its leading expressions, each result
  value within the share cap below (:meth:`SplitRules.seen_subset`);
* ``SS``: unseen expressions with ``n <= 10`` and values ``<= 100``;
* ``LS``: ``11 <= n <= 20`` and values ``<= 100``;
* ``SL``: ``n <= 10`` with the largest value in ``101..10,000``; ``LL``: ``11 <= n <= 20``, the same values.

Up to ``n = 2`` every expression is enumerated (only invalid ones dropped) and the train list repeats
them to its size; from ``n = 3`` they are sampled without duplicates, dropping invalid ones and those
whose result is 0, and no result value may exceed 5% of a list. Validation sets are drawn before the
test sets, from the same candidates and disjoint from them, with a tenth of their size.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from neurosym.data.hint.sampling import VALUE_CEILING
from neurosym.data.shares import decimal_floor
from neurosym.training.checks import int_at_least, positive_number

EVAL_SUBSETS: tuple[str, ...] = ("I", "SS", "LS", "SL", "LL")
"""HINT's test and validation subsets: ``I`` (expressions of the training lists, shown with unseen images), then
``SS``, ``LS``, ``SL`` and ``LL`` (short or long expressions, small or large values)."""


@dataclass(frozen=True)
class SplitRules:
    """Sizes and limits of one generated split; ``scale`` multiplies every size (rounded, at least 1)."""

    scale: float = 1.0
    max_train_ops: int = 10
    max_test_ops: int = 20
    small_limit: int = 100
    large_limit: int = 10_000
    train_per_op: int = 100_000
    train_per_op_small: dict[int, int] = field(default_factory=lambda: {0: 20_000, 1: 78_000})
    test_per_op: int = 1_000
    val_per_op: int = 100
    test_i_fraction: float = 0.01
    val_i_fraction: float = 0.001
    enumerate_up_to: int = 2
    result_share_cap: float = 0.05
    min_train_ops: int = 0

    def __post_init__(self) -> None:
        if positive_number(self.scale, "scale") > 1:  # (a string such as "0.01" failed in the comparison, True was 1)
            raise ValueError(f"scale must be in (0, 1], got {self.scale}")
        if not 0 <= self.min_train_ops <= self.max_train_ops < self.max_test_ops:
            raise ValueError("need 0 <= min_train_ops <= max_train_ops < max_test_ops")
        if not 0 < self.small_limit < self.large_limit < VALUE_CEILING:  # (values are clipped there: a record of a
            raise ValueError(  # clipped value joined the wrong split, with a res its res_all contradicts)
                f"need 0 < small_limit < large_limit < {VALUE_CEILING} (the sampler's value ceiling), got "
                f"{self.small_limit} and {self.large_limit}"
            )
        for name in ("max_train_ops", "max_test_ops", "small_limit", "large_limit", "enumerate_up_to", "min_train_ops"):
            int_at_least(getattr(self, name), name, 0)
        for name in ("train_per_op", "test_per_op", "val_per_op"):  # 0 or -1 gave lists of one, 2.5 a float size
            int_at_least(getattr(self, name), name, 1)
        for ops, size in self.train_per_op_small.items():  # (-100 became 1, as train_per_op's did)
            int_at_least(ops, "a train_per_op_small operator count", 0)
            int_at_least(size, f"train_per_op_small[{ops}]", 1)
        for name in ("test_i_fraction", "val_i_fraction", "result_share_cap"):  # -1 gave one item, NaN failed late
            if positive_number(getattr(self, name), name) > 1:
                raise ValueError(f"{name} must be a fraction in (0, 1], got {getattr(self, name)!r}")

    def scaled(self, size: int) -> int:
        """``size`` times ``scale``, rounded, at least 1."""
        return max(1, round(size * self.scale))

    def train_size(self, n_op: int) -> int:
        """The scaled number of training expressions with ``n_op`` operators: ``train_per_op_small``'s entry for
        ``n_op``, else ``train_per_op``."""
        return self.scaled(self.train_per_op_small.get(n_op, self.train_per_op))

    def i_sizes(self, n_op: int) -> tuple[int, int]:
        """Sizes of the validation and test ``I`` subsets for ``n_op`` (drawn from the train list: :meth:`seen_subset`)."""
        train = self.train_size(n_op)
        return max(1, round(train * self.val_i_fraction)), max(1, round(train * self.test_i_fraction))

    def seen_subset(self, n_op: int, values: np.ndarray, split: str) -> np.ndarray:
        """The indices of the ``I`` subset of ``split`` (``"val"`` or ``"test"``) in a training list of ``n_op``
        operators whose results are ``values [N]``: its leading :meth:`i_sizes` expressions, each result value taken
        at most :meth:`share_cap` times from ``n = 3`` on (as in every sampled list; a plain prefix was mostly the
        sampler's most frequent results, one of them up to 26% of the subset)."""
        if split not in ("val", "test"):
            raise ValueError(f"split must be 'val' or 'test', got {split!r}")
        size = self.i_sizes(n_op)[0 if split == "val" else 1]
        if n_op <= self.enumerate_up_to:
            return np.arange(min(size, len(values)))
        return np.flatnonzero(ranks_among_equals(values) < self.share_cap(size))[:size]

    def share_cap(self, size: int) -> int:
        """How many items of a list of ``size`` may share one result value: ``result_share_cap`` of them (rounded
        down, exactly for the decimal it is written as), at least 1."""
        return max(1, decimal_floor(self.result_share_cap, size))  # (int(100 * 0.29) is 28)

    def with_scale(self, scale: float) -> SplitRules:
        """These rules with ``scale`` replaced."""
        return replace(self, scale=scale)


MAIN_RULES = SplitRules()
"""The main split as released: Table A1's train 998,000, val 4,698, test 46,620 at scale 1."""

FEWSHOT_NUMBER_RULES = SplitRules(
    train_per_op=100, train_per_op_small={}, test_per_op=100, val_per_op=10, test_i_fraction=1.0, val_i_fraction=0.1
)
"""A few-shot number concept (x, y): 100 training expressions per ``n`` from 0 to 10, all of them shown
again with unseen images as test ``I``, and 100 test / 10 validation per ``n`` in the other subsets."""

FEWSHOT_OPERATOR_RULES = replace(FEWSHOT_NUMBER_RULES, min_train_ops=1)
"""A few-shot operator concept (a, b, c, d): as for numbers, from ``n = 1`` (it needs an operator)."""


def ranks_among_equals(values: np.ndarray) -> np.ndarray:
    """``[N]``: how many earlier entries of ``values [N]`` (integers) hold the same value as each entry."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    group_start = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ranks = np.empty(len(values), dtype=np.int64)
    ranks[order] = np.arange(len(values)) - np.repeat(group_start, np.diff(np.r_[group_start, len(values)]))
    return ranks
