"""Pointer Value Retrieval benchmark; see ``neurosym pvr --help``."""

from neurosym.cli import script

raise SystemExit(script("pvr"))
