"""The main and few-shot HINT splits, generated once per (scale, seed) and cached on disk."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable

import numpy as np

from neurosym.data.hint.examples import HintSplit
from neurosym.data.hint.generate import generate_split
from neurosym.data.hint.sampling import Vocabulary, sample_prefix
from neurosym.data.hint.splits import FEWSHOT_NUMBER_RULES, FEWSHOT_OPERATOR_RULES, MAIN_RULES, SplitRules
from neurosym.data.mnist import UNREADABLE_CACHE, cache_dir
from neurosym.data.randomness import as_generator
from neurosym.paths import user_path
from neurosym.semantics import FEWSHOT_NUMBERS, FEWSHOT_OPERATORS, HINT_FEWSHOT_SEMANTICS, HINT_SEMANTICS, OperatorTable
from neurosym.syntax import BUILTIN_NUMBERS, BUILTIN_OPERATORS, from_prefix, to_infix
from neurosym.training.checks import int_at_least

SPLIT_NAMES: tuple[str, ...] = ("train", "val", "test")
"""The splits of a HINT dataset, in order."""
FEWSHOT_CONCEPTS: tuple[str, ...] = (*FEWSHOT_NUMBERS, *FEWSHOT_OPERATORS)
"""The six few-shot concepts, the numbers first: ``x y a b c d``."""
_FORMAT_VERSION = 3  # 3: I subsets within the result share cap (2: a plain prefix of the training list)

MAIN_VOCABULARY = Vocabulary(BUILTIN_NUMBERS, tuple(BUILTIN_OPERATORS), HINT_SEMANTICS)
"""The vocabulary of the main HINT split: the ten digits and the four operators, under
:data:`~neurosym.semantics.HINT_SEMANTICS`."""


def random_sentences(n_operators: int, count: int, rng: np.random.Generator | int) -> list[str]:
    """``count`` random infix sentences with ``n_operators`` operators, sampled as the HINT generator
    does (:func:`~neurosym.data.hint.sample_prefix` over the main vocabulary)."""
    rng = as_generator(rng)
    ids = sample_prefix(n_operators, count, MAIN_VOCABULARY, rng)
    return [to_infix(from_prefix(row)) for row in MAIN_VOCABULARY.symbols[ids].tolist()]


def fewshot_vocabulary(concept: str) -> Vocabulary:
    """The main vocabulary plus one few-shot ``concept`` (a number x, y or an operator a, b, c, d)."""
    if concept in FEWSHOT_NUMBERS:
        return Vocabulary((*BUILTIN_NUMBERS, concept), tuple(BUILTIN_OPERATORS), HINT_FEWSHOT_SEMANTICS)
    if concept in FEWSHOT_OPERATORS:
        return Vocabulary(BUILTIN_NUMBERS, (*BUILTIN_OPERATORS, concept), HINT_FEWSHOT_SEMANTICS)
    raise ValueError(f"unknown few-shot concept {concept!r}; expected one of {FEWSHOT_CONCEPTS}")


def fewshot_rules(concept: str) -> SplitRules:
    """Table A1's few-shot sizes: numbers from ``n = 0``, operators from ``n = 1``."""
    fewshot_vocabulary(concept)
    return FEWSHOT_NUMBER_RULES if concept in FEWSHOT_NUMBERS else FEWSHOT_OPERATOR_RULES


def _scale_key(scale: float) -> str:
    """``scale`` as a cache name gives it: exact, so that two scales never share a cache. The short ``:g``
    form (``0.01``) where it reads back as the same float, which keeps the names of existing caches;
    ``repr`` otherwise (``0.1250001``, which ``:g`` rounds to ``0.125``)."""
    short = f"{scale:g}"
    return short if float(short) == scale else repr(float(scale))


def _cached(
    name: str,
    build: Callable[[], dict[str, HintSplit]],
    table: OperatorTable,
    cache: bool,
    root: str | os.PathLike | None,
) -> dict[str, HintSplit]:
    folder = user_path(root) if root is not None else cache_dir() / "hint"
    paths = {split: folder / f"{name}_v{_FORMAT_VERSION}_{split}.npz" for split in SPLIT_NAMES}
    if cache and all(p.is_file() for p in paths.values()):
        try:
            return {split: HintSplit.load(p, table) for split, p in paths.items()}
        except UNREADABLE_CACHE as error:
            warnings.warn(f"unreadable HINT cache in {folder} ({error}): generating it again", stacklevel=3)
    splits = build()
    if cache:
        for split, path in paths.items():
            splits[split].save(path)
    return splits


def main_split(
    scale: float = 1.0, seed: int = 0, cache: bool = True, cache_root: str | os.PathLike | None = None, progress: bool = False
) -> dict[str, HintSplit]:
    """The main HINT split ``{"train", "val", "test"}``; at ``scale=1`` Table A1's 998,000 / 4,698 / 46,620."""
    seed = int_at_least(seed, "seed", 0)  # (before it names the cache: True was cached apart from 1, as "seedTrue")
    rules = MAIN_RULES.with_scale(scale)
    return _cached(
        f"main_s{_scale_key(scale)}_seed{seed}",
        lambda: generate_split(rules, MAIN_VOCABULARY, seed, progress=progress, description="HINT main"),
        HINT_SEMANTICS,
        cache,
        cache_root,
    )


def fewshot_split(
    concept: str,
    scale: float = 1.0,
    seed: int = 0,
    cache: bool = True,
    cache_root: str | os.PathLike | None = None,
    progress: bool = False,
) -> dict[str, HintSplit]:
    """The few-shot split of one concept; every expression contains ``concept`` and no other few-shot concept (its
    vocabulary, :func:`fewshot_vocabulary`, is the main one and ``concept``)."""
    rules = fewshot_rules(concept).with_scale(scale)
    seed = int_at_least(seed, "seed", 0)  # (before it names the cache)
    vocabulary = fewshot_vocabulary(concept)
    return _cached(
        f"fewshot_{concept}_s{_scale_key(scale)}_seed{seed}",
        lambda: generate_split(rules, vocabulary, seed, concept, progress, f"HINT few-shot {concept}"),
        HINT_FEWSHOT_SEMANTICS,
        cache,
        cache_root,
    )
