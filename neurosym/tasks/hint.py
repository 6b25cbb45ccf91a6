"""HINT (Li et al., ICLR 2023) as a task of the grammar pipeline: handwritten expressions over single digits,
``+ - * /`` and round brackets, learned from their integer results alone under HINT's semantics
(``a - b = max(0, a - b)``, ``a / b = ⌈a / b⌉``, division by zero invalid).

The grammar is ``grammars/hint.lark`` (precedence and brackets given), the semantics HINT's operator table,
the reader ``make run``'s (the small CNN, 64 features, width 16, on 32×32 windows) and the data the
generated splits of :func:`~neurosym.data.hint.main_split` shown with the default bank's images, each
symbol's image drawn as HINT's own pipeline draws it (:class:`~neurosym.data.hint.HintImageDataset`, same
seed: the same images). ``neurosym pipeline --task hint-grammar`` trains it (``--reader-width 16 --schedule
constant`` for ``make run``'s reader and schedule); ``neurosym hint --model neurosym`` runs HINT's own pipeline,
whose decoder and abduction know its grammar's shape, and its few-shot, learned-semantics and adaptation stages.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Iterator, Sequence

import numpy as np

from neurosym.data.hint import HintImageDataset, HintRecord, load_release, main_split
from neurosym.data.symbol_images import HINT_SYMBOLS, WINDOW, SymbolBank, default_bank
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.curriculum import UNBOUNDED, Curriculum
from neurosym.pipelines.grammar_abduction import AbductionBudget
from neurosym.pipelines.sentences import READ, ImageSentences
from neurosym.semantics import HINT_SEMANTICS, OperatorTable, Value
from neurosym.semantics.preimage import Interval, admits_negative_values, operand_preimages
from neurosym.semantics.tree_semantics import TreeSemantics
from neurosym.syntax.concepts import ALIASES
from neurosym.syntax.parser import base_grammar
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.tasks import READER_CONVS, Published, Task
from neurosym.training.checks import is_int

SUBSETS = ("I", "SS", "LS", "SL", "LL")
PUBLISHED = (Published("Transformer rel. uni. (Li et al., official images)", 53.1),)
"""The paper's best seq2seq baseline, average over the five test subsets in %."""

MAKE_RUN_STEPS, MAKE_RUN_BATCH = 800, 32
"""``make run``'s budget: steps of expressions, per batch."""

ABDUCTION = AbductionBudget(max_changes=3, max_candidates=256, alternatives=len(HINT_SYMBOLS) - 1, readings=0)
"""Every other symbol is tried at a position: with the default four, a reader sure of ``*`` ranks digits (which
bracketed sentences allow there) above ``+``, and training settles on ``+`` read as ``*`` and ``-`` as ``/``
(``make run``'s budget: validation average 9.9 %, symbols 80 %; prototype glyphs: 84 % of the symbols against 100 %).
No part is kept at other readings (``readings=0``): with 4, ``make run``'s 800 steps trained bit for bit the same
(every pseudo-label the same: validation 98.2 % both; the enumeration, exact within three changes, finds each best
correction) at 10.8 ms against 1.0 per wrong test expression."""


def hint_semantics(table: OperatorTable = HINT_SEMANTICS) -> TreeSemantics:
    """Integer values under ``table`` (its numbers' values: the few-shot ``x`` is 11 under
    :data:`~neurosym.semantics.HINT_FEWSHOT_SEMANTICS`; the typeset ``× ÷ −`` are ``* / -``); inverses give, for a wanted value, every other operator of the table
    that gives it from the operands as read, then values of either operand (the other kept) from the
    operator's preimage (:func:`~neurosym.semantics.preimage.operand_preimages`; negative values too where ``table``
    admits them, :func:`~neurosym.semantics.preimage.admits_negative_values`), nearest the operand's current value
    first, alternating sides. Its functions are the module's own, bound to ``table`` by :func:`functools.partial`, so
    that a pipeline over it pickles (into another process, or to a file) where ``table`` does."""
    negative = admits_negative_values(table)
    return TreeSemantics(
        {"binary": functools.partial(_binary, table), "bracketed": _inside_brackets, "NUMBER": functools.partial(_number, table)},
        {"binary": functools.partial(_inverse, table, negative), "bracketed": _bracketed_inverse},
    )


def _number(table: OperatorTable, symbol: str) -> Value:
    return table.numbers[symbol]


def _binary(table: OperatorTable, children: list) -> Value | None:
    left, symbol, right = children
    return table.operators[ALIASES.get(symbol, symbol)].value(left, right)  # (× ÷ −, which the grammar reads, as * / -)


def _inverse(table: OperatorTable, negative: bool, wanted: int, children: tuple) -> Iterator[tuple]:
    left, symbol, right = children
    canonical = ALIASES.get(symbol, symbol)  # (the operand ways keep the symbol as read)
    for other, operator in table.operators.items():
        if other != canonical and operator.value(left, right) == wanted:
            yield left, other, right
    if not is_int(wanted) or (wanted < 0 and not negative):  # (an np.int64 wanted value got no operand values)
        return
    wanted_values = Interval.point(wanted)
    left_values, right_values = operand_preimages(table.operators[canonical], wanted_values, left, right, negative)
    lefts = ((value, symbol, right) for value in _nearest(left_values, left))
    rights = ((left, symbol, value) for value in _nearest(right_values, right))
    for pair in itertools.zip_longest(lefts, rights):
        yield from (way for way in pair if way is not None)


def _inside_brackets(children: list) -> Value | None:
    return children[1]


def _bracketed_inverse(wanted: Value, children: tuple) -> list[tuple]:
    return [(children[0], wanted, children[2])]


def _nearest(values: Interval | None, current: int, count: int = 8) -> list[int]:
    """Up to ``count`` members of ``values`` (``None``: none), those nearest ``current`` first (below before above)."""
    if values is None:
        return []
    start = max(current, values.lo) if values.hi is None else min(max(current, values.lo), values.hi)
    top = start + count if values.hi is None else values.hi
    found, distance = [start], 1
    while len(found) < count and (start - distance >= values.lo or start + distance <= top):
        found += [value for value in (start - distance, start + distance) if values.lo <= value <= top]
        distance += 1
    return found[:count]


def hint_sentences(
    records: Sequence[HintRecord],
    bank: SymbolBank,
    pool: str,
    seed: int,
    images: np.ndarray,
    rows: Sequence[int] | None = None,
) -> ImageSentences:
    """``records`` (those at ``rows``, default all) shown with ``images`` (``bank``'s images at 32×32), each
    symbol's image drawn from ``pool`` as HINT's pipeline draws it for the whole split with ``seed``; the
    targets are the records' results."""
    dataset = HintImageDataset(records, bank, pool, seed)
    rows = range(len(records)) if rows is None else rows
    if not rows:
        raise ValueError("no records to show")
    lengths = np.array([len(records[row].expr) for row in rows])
    picks = np.full((len(lengths), int(lengths.max())), -1)
    for at, row in enumerate(rows):
        picks[at, : lengths[at]] = dataset.image_indices(row, records[row])
    given = np.full(picks.shape, READ)
    chosen = [records[row] for row in rows]
    return ImageSentences(images, picks, given, lengths, [r.res for r in chosen], [r.expr for r in chosen])


def build(
    scale: float = 0.01,
    seed: int = 0,
    reader_width: int = 16,
    features: int = 64,
    data: str | os.PathLike | None = None,
    reader_convs: Sequence[int] = READER_CONVS,
) -> Task:
    """HINT's generated splits at ``scale`` on the default bank, or an official release folder ``data`` (its
    splits subsampled at ``scale``, its own symbol images; checked first, see :func:`~neurosym.data.hint.load_release`);
    ``validation`` and ``test`` hold every subset of :data:`SUBSETS`, and ``subsets`` gives them apart. The reader: ``make
    run``'s, of ``reader_width`` channels, ``features`` features and ``reader_convs`` convolutions a stage."""
    if data is None:
        splits = {name: list(records) for name, records in main_split(scale=scale, seed=seed, progress=False).items()}
        bank = default_bank(seed=seed)
        shown = "HINT's generated splits shown with the default bank (real handwriting, drawn brackets)"
    else:
        splits, release_bank = load_release(data, dict.fromkeys(("train", "val", "test"), scale), seed)
        assert release_bank is not None  # a release is loaded with its images by default
        bank = release_bank
        shown = f"the HINT release {data} with its own images"
    images = bank.resized((WINDOW, WINDOW))
    grammar = SymbolGrammar(base_grammar(), symbols=HINT_SYMBOLS)
    parts = {name: hint_sentences(splits[name], bank, name, seed, images) for name in ("train", "val", "test")}
    subsets = {
        split: {
            subset: hint_sentences(splits[split], bank, split, seed, images, rows)
            for subset in SUBSETS
            if (rows := [i for i, record in enumerate(splits[split]) if record.eval == subset])
        }
        for split in ("val", "test")
    }

    def make_reader() -> SymbolClassifier:
        return SymbolClassifier(list(HINT_SYMBOLS), "small", features, width=reader_width, stage_convs=reader_convs)

    return Task(
        name=f"hint scale {scale}",
        white_on_black=True,  # (trained_pipeline's pipeline refuses black-on-white windows)
        grammar=grammar,
        semantics=hint_semantics(),
        make_reader=make_reader,
        train=parts["train"],
        validation=parts["val"],
        test=parts["test"],
        abduction=ABDUCTION,
        curriculum=Curriculum(((1, 150), (3, 200), (7, 200), (15, UNBOUNDED))),
        pseudo_labels="all",
        epochs=MAKE_RUN_STEPS * MAKE_RUN_BATCH / len(parts["train"]),
        published=PUBLISHED,
        data_note=f"{shown}; the table scores every test expression, as HINT's Avg. does (each subset weighs by its "
        "size); the subsets are below it",
        subsets={"validation": subsets["val"], "test": subsets["test"]},
        seed_assigns_splits=data is None,  # (a release fixes its splits and each record's images)
    )
