"""HINT seq2seq baselines: ``python benchmarks/hint.py --help``."""

from neurosym.cli import script

raise SystemExit(script("hint"))
