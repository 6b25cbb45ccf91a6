"""Pointer Value Retrieval benchmark; see ``neurosym pvr --help``."""

import sys

from neurosym.cli import main

raise SystemExit(main(["pvr", *sys.argv[1:]]))
