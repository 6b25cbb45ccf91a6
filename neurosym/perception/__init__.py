"""Symbol readers and image encoders: every reader follows :class:`Reader` (windows -> log-probabilities)."""

from neurosym.perception.reader import Reader
from neurosym.perception.symbol_classifier import SymbolClassifier

__all__ = ["Reader", "SymbolClassifier"]
