"""Arithmetic units vs nn.Linear, forward+backward time: ``python benchmarks/layer_speed.py --help``."""

from neurosym.cli import script

raise SystemExit(script("layer-speed"))
