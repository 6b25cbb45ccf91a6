"""Generate HINT in the official format and report its statistics: ``python benchmarks/hint_data.py --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["hint-data", *sys.argv[1:]]))
