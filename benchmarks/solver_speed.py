"""HINT solver throughput, Lark path versus batch solver: ``python benchmarks/solver_speed.py --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["solver-speed", *sys.argv[1:]]))
