"""``python -m neurosym ...``: the ``neurosym`` command without the installed console script."""

import sys

from neurosym.cli import main

sys.exit(main())
