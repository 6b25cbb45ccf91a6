"""Table 1 of "Measuring Arithmetic Extrapolation Performance" (see `neurosym arithmetic --help`)."""

import sys

from neurosym.cli import main

raise SystemExit(main(["arithmetic", *sys.argv[1:]]))
