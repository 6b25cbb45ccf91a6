"""Table 1 of "Measuring Arithmetic Extrapolation Performance" (see `neurosym arithmetic --help`)."""

from neurosym.cli import script

raise SystemExit(script("arithmetic"))
