"""Symbol image banks (official folder, labelled folders, checked ``.npz`` archives, the embedded banks of
real handwriting: MNIST, the shipped ``bhmsds`` and ``handwritten-calculator`` sets and drawn parentheses),
their disjoint train/val/test pools, and rendering of expressions as the HINT paper does (appendix B.1)."""

from neurosym.data.symbol_images.archive import ARCHIVE_ARRAYS, read_bank_archive
from neurosym.data.symbol_images.bank import POOL_FRACTIONS, POOLS, SymbolBank, assign_pools, merge_banks, with_brackets
from neurosym.data.symbol_images.classes import (
    BANK_FOLDERS,
    BANK_LABELS,
    DIGITS,
    FEWSHOT_CONCEPTS,
    HANDWRITTEN_LABELS,
    HINT_SYMBOLS,
    OPERATORS,
    PARENTHESES,
    folder_of,
    token_of,
)
from neurosym.data.symbol_images.default import (
    BANK_SYMBOLS,
    DRAWN_SYMBOLS,
    HANDWRITTEN_SYMBOLS,
    MIN_DRAWN_PER_SYMBOL,
    OTHER_WRITERS,
    default_bank,
    mnist_note,
    other_writers_bank,
    with_drawn_digits,
    writers_bank,
)
from neurosym.data.symbol_images.folder import load_folder_bank, load_npz_bank, read_image, write_folder_bank, write_image
from neurosym.data.symbol_images.handwriting import (
    HANDWRITTEN_ARCHIVE,
    HANDWRITTEN_LICENSES,
    HANDWRITTEN_SOURCES,
    HandwrittenSymbols,
    disjoint_splits,
    handwritten_symbols,
)
from neurosym.data.symbol_images.normalise import glyph_window
from neurosym.data.symbol_images.render import WINDOW, render_strip, render_windows, resize_images, sliding_windows
from neurosym.data.symbol_images.strokes import ALLOGRAPHS, DIGIT_ALLOGRAPHS, GLYPHS, draw_symbols

__all__ = [
    "ARCHIVE_ARRAYS",
    "BANK_FOLDERS",
    "BANK_LABELS",
    "BANK_SYMBOLS",
    "DIGITS",
    "DRAWN_SYMBOLS",
    "FEWSHOT_CONCEPTS",
    "ALLOGRAPHS",
    "DIGIT_ALLOGRAPHS",
    "GLYPHS",
    "HANDWRITTEN_ARCHIVE",
    "HANDWRITTEN_LABELS",
    "HANDWRITTEN_LICENSES",
    "HANDWRITTEN_SOURCES",
    "HANDWRITTEN_SYMBOLS",
    "HINT_SYMBOLS",
    "HandwrittenSymbols",
    "MIN_DRAWN_PER_SYMBOL",
    "OPERATORS",
    "OTHER_WRITERS",
    "PARENTHESES",
    "POOLS",
    "POOL_FRACTIONS",
    "SymbolBank",
    "WINDOW",
    "assign_pools",
    "default_bank",
    "draw_symbols",
    "folder_of",
    "glyph_window",
    "disjoint_splits",
    "handwritten_symbols",
    "load_folder_bank",
    "load_npz_bank",
    "merge_banks",
    "mnist_note",
    "with_brackets",
    "other_writers_bank",
    "with_drawn_digits",
    "writers_bank",
    "read_bank_archive",
    "read_image",
    "render_strip",
    "render_windows",
    "resize_images",
    "sliding_windows",
    "token_of",
    "write_folder_bank",
    "write_image",
]
