"""Symbol image banks (official folder, labelled folders, ``.npz``, the embedded MNIST + drawn default),
their disjoint train/val/test pools, and rendering of expressions as the HINT paper does (appendix B.1)."""

from neurosym.data.symbol_images.bank import POOL_FRACTIONS, POOLS, SymbolBank, assign_pools, merge_banks
from neurosym.data.symbol_images.classes import (
    DIGITS,
    FEWSHOT_CONCEPTS,
    HINT_SYMBOLS,
    OPERATORS,
    PARENTHESES,
    folder_of,
    token_of,
)
from neurosym.data.symbol_images.default import DRAWN_SYMBOLS, default_bank
from neurosym.data.symbol_images.folder import load_folder_bank, load_npz_bank, read_image, write_folder_bank, write_image
from neurosym.data.symbol_images.render import WINDOW, render_strip, render_windows, resize_images, sliding_windows
from neurosym.data.symbol_images.strokes import GLYPHS, draw_symbols

__all__ = [
    "DIGITS",
    "DRAWN_SYMBOLS",
    "FEWSHOT_CONCEPTS",
    "GLYPHS",
    "HINT_SYMBOLS",
    "OPERATORS",
    "PARENTHESES",
    "POOLS",
    "POOL_FRACTIONS",
    "SymbolBank",
    "WINDOW",
    "assign_pools",
    "default_bank",
    "draw_symbols",
    "folder_of",
    "load_folder_bank",
    "load_npz_bank",
    "merge_banks",
    "read_image",
    "render_strip",
    "render_windows",
    "resize_images",
    "sliding_windows",
    "token_of",
    "write_folder_bank",
    "write_image",
]
