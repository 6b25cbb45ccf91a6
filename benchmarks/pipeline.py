"""The grammar pipeline on a task (multi-digit MNIST addition, handwritten formulas); see ``neurosym pipeline --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["pipeline", *sys.argv[1:]]))
