"""Arithmetic units vs nn.Linear, forward+backward time: ``python benchmarks/layer_speed.py --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["layer-speed", *sys.argv[1:]]))
