"""The grammar pipeline on a task (multi-digit MNIST addition, handwritten formulas); see ``neurosym pipeline --help``."""

from neurosym.cli import script

raise SystemExit(script("pipeline"))
