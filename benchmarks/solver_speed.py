"""HINT solver throughput, Lark path versus batch solver: ``python benchmarks/solver_speed.py --help``."""

from neurosym.cli import script

raise SystemExit(script("solver-speed"))
