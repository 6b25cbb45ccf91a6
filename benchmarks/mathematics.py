"""DeepMind Mathematics benchmark: ``python benchmarks/mathematics.py --help``."""

from neurosym.cli import script

raise SystemExit(script("mathematics"))
