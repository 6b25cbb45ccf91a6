"""Generate HINT in the official format and report its statistics: ``python benchmarks/hint_data.py --help``."""

from neurosym.cli import script

raise SystemExit(script("hint-data"))
