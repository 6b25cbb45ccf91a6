"""What reading a numpy ``.npz`` archive that is damaged or was written by another tool raises."""

from __future__ import annotations

import zipfile
import zlib

UNREADABLE_NPZ = (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError)
"""What numpy's reading of a damaged or foreign ``.npz`` raises: ``zlib.error`` for compressed bytes changed on disk,
``zipfile``'s ``NotImplementedError`` for a compression method or feature it lacks (an archive zipped again with
Deflate64) and ``RuntimeError`` for an encrypted member."""
