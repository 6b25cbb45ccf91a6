"""HINT seq2seq baselines: ``python benchmarks/hint.py --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["hint", *sys.argv[1:]]))
