"""Relative vs vanilla attention speed and cached decoding: ``python benchmarks/attention_speed.py --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["attention-speed", *sys.argv[1:]]))
