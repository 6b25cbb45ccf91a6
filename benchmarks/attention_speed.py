"""Relative vs vanilla attention speed and cached decoding: ``python benchmarks/attention_speed.py --help``."""

from neurosym.cli import script

raise SystemExit(script("attention-speed"))
