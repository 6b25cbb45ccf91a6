"""Where ``neurosym hint`` takes its expressions and images from: generated splits rendered with a symbol
bank (the embedded real-handwriting bank, its other-writers protocol, or a user's ``.npz``), or an official
HINT release folder (``--data PATH``: its splits, its few-shot file and its ``symbol_images/``).

Every source is checked before any work: a release folder by
:func:`~neurosym.data.hint.check_release`, a bank archive when its option is parsed
(:func:`bank_archive`), each with a one-line error naming the file and the record or array.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from neurosym.data.hint import (
    HintRecord,
    fewshot_split,
    held_out_for,
    load_release,
    main_split,
    read_fewshot,
    subsample_split,
)
from neurosym.data.symbol_images import (
    SymbolBank,
    default_bank,
    load_npz_bank,
    other_writers_bank,
    read_bank_archive,
    with_drawn_digits,
    writers_bank,
)

BANKS: dict[str, str] = {
    "default": "real handwriting (MNIST + bhmsds digits; + - from bhmsds and handwritten-calculator; x / from "
    "handwritten-calculator), drawn brackets",
    "other-writers": "the default bank's symbols, tested on other writers than trained on (digits MNIST -> bhmsds, "
    "+ - handwritten-calculator -> bhmsds; x / keep handwritten-calculator's own split; drawn brackets)",
    "train-writers": "the other-writers protocol's training writers in every pool (MNIST digits, handwritten-calculator + -)",
    "test-writers": "the other-writers protocol's test writers in every pool (bhmsds digits and + -), e.g. for --adapt",
}
"""Named banks of ``--bank``; any other value is the path of an ``.npz`` archive."""

if TYPE_CHECKING:  # hint_options reads bank names from here
    from neurosym.experiments.hint_options import HintOptions


def bank_archive(text: str) -> Path:
    """An ``.npz`` symbol bank option: the archive is read and checked when the option is parsed."""
    try:
        read_bank_archive(text)
    except (FileNotFoundError, ValueError) as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return Path(text)


def bank_choice(text: str) -> str | Path:
    """``--bank``: a name of :data:`BANKS`, or a checked ``.npz`` archive."""
    if text in BANKS:
        return text
    if not Path(text).is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is neither a bank ({', '.join(BANKS)}) nor an .npz archive")
    return bank_archive(text)


@dataclass
class HintData:
    """The records of a run (``splits``: train/val/test), the bank their images come from (``None`` for
    symbol input), what the images are (``images``, for report rows), and the few-shot split of a concept
    at a scale (``fewshot(concept, scale)``)."""

    splits: dict[str, list[HintRecord]]
    bank: SymbolBank | None
    images: str
    scale: float
    fewshot: Callable[[str, float], dict[str, list[HintRecord]]]

    @property
    def label(self) -> str:
        """``images, scale`` for a table row."""
        return f"{self.images}, scale {self.scale:g}"

    def image_bank(self) -> SymbolBank:
        """The bank of image input; ``ValueError`` for data loaded as symbols."""
        if self.bank is None:
            raise ValueError(f"{self.label}: the data were loaded for symbol input, without images")
        return self.bank


def tested_at_other_scale(splits: dict[str, list[HintRecord]], other: list[HintRecord], name: str) -> list[HintRecord]:
    """The ``name`` split (``val``/``test``) of a run that trained on ``splits["train"]`` and is tested on the
    list ``other`` generated at another scale, whose ``I`` subset was drawn from that scale's training list: the
    ``I`` records of the run's own scale, then the records of ``other`` that keep their subset's meaning for the
    run (:func:`~neurosym.data.hint.held_out_for`) less the ``I`` expressions shown already."""
    own = [record for record in splits[name] if record.eval == "I"]
    shown = {record.expr for record in own}
    held_out = held_out_for(other, {record.expr for record in splits["train"]})
    return [*own, *(record for record in held_out if record.expr not in shown)]


def load_hint_data(
    args: HintOptions, image_input: bool, fewshot: bool = False, test_scale: float | None = None, progress: bool = False
) -> HintData:
    """The data that ``args`` (``--data``, ``--bank``, ``--scale``, ``--seed``) name, with the validation and test
        splits at ``test_scale`` when given (larger than training needs; their ``I`` subset holds expressions the run
        trained on: :func:`tested_at_other_scale`, :func:`~neurosym.data.hint.load_release`); a release folder is checked first (its
        few-shot file too when ``fewshot``): a broken one ends the command with a one-line message (exit status 1)
    before any training."""
    scales = {"train": args.scale, "val": test_scale or args.scale, "test": test_scale or args.scale}
    if (release := args.data) is not None:
        try:
            splits, bank = load_release(release, scales, args.seed, images=image_input, fewshot=fewshot)
        except (FileNotFoundError, ValueError) as error:  # one line naming the file and record, before any work
            raise SystemExit(f"neurosym hint: {error}") from None

        def release_fewshot(concept: str, scale: float) -> dict[str, list[HintRecord]]:
            return subsample_split(read_fewshot(release)[concept], dict.fromkeys(("train", "val", "test"), scale), args.seed)

        return HintData(splits, bank, f"official HINT release {release}", args.scale, release_fewshot)
    splits = {name: list(split) for name, split in main_split(scale=args.scale, seed=args.seed, progress=progress).items()}
    if scales["test"] != args.scale:
        other = main_split(scale=scales["test"], seed=args.seed, progress=progress)
        splits.update({name: tested_at_other_scale(splits, list(other[name]), name) for name in ("val", "test")})

    def generated_fewshot(concept: str, scale: float) -> dict[str, list[HintRecord]]:
        return {name: list(split) for name, split in fewshot_split(concept, scale=scale, seed=args.seed).items()}

    if not image_input:
        return HintData(splits, None, "symbols", args.scale, generated_fewshot)
    bank, images = bank_from_option(args.bank, args.seed)
    if args.drawn_digits:
        bank, images = with_drawn_digits(bank, args.drawn_digits, args.seed), f"{images} + {args.drawn_digits} drawn digits each"
    return HintData(splits, bank, images, args.scale, generated_fewshot)


def bank_from_option(bank: str | Path, seed: int) -> tuple[SymbolBank, str]:
    """The bank that ``--bank`` names, and a description of its images."""
    if bank == "default":
        return default_bank(seed=seed), "default bank (real handwriting, drawn brackets)"
    if bank == "other-writers":
        return other_writers_bank(seed=seed), "other writers (trained on MNIST/calculator, tested on bhmsds)"
    if bank in ("train-writers", "test-writers"):
        side = bank.removesuffix("-writers")
        return writers_bank(side, seed=seed), f"{side} writers only ({'MNIST/calculator' if side == 'train' else 'bhmsds'})"
    return load_npz_bank(bank, seed=seed), f"bank {Path(bank).name}"
