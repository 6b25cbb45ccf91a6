"""The paths a user gives (a function's argument, an option, an environment variable), read as a shell reads them."""

from __future__ import annotations

import os
from pathlib import Path


def user_path(path: str | os.PathLike) -> Path:
    """``path`` as a user gave it, with a leading ``~`` or ``~user`` the home folder, as a shell expands it (where no
    shell does: a Python call, a quoted option, a config or env file). A ``~user`` of no known user stays as written
    (``Path.expanduser`` raised). The path returned never starts with ``~``, so that it names the same file when given
    again: a folder named ``~`` (given as ``./~``, which a shell leaves as it is) comes back absolute.
    ``TypeError`` for what is no path."""
    expanded = Path(os.path.expanduser(path))
    return expanded.absolute() if expanded.parts[:1] and expanded.parts[0].startswith("~") else expanded
