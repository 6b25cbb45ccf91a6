"""DeepMind Mathematics benchmark: ``python benchmarks/mathematics.py --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["mathematics", *sys.argv[1:]]))
