"""Benchmark runners behind the ``neurosym`` console command and the scripts in ``benchmarks/``.

Each runner module exposes ``OPTIONS`` (the dataclass of its options) and ``run(options) -> dict``; bad input it finds
once its work began, and names in full, it raises as :class:`CommandFailed`.
"""


class CommandFailed(Exception):
    """Bad input a runner found once its work began (a data file, a checkpoint, an option value only the data shows
    wrong), its message naming it in one line; the command (:func:`neurosym.cli.main`) ends with that line after the
    name of the program that was run (``neurosym hint``, or ``hint.py`` for ``benchmarks/hint.py``) and returns exit
    status 1, as for the ``ValueError`` of a check (``NEUROSYM_TRACEBACK=1``: Python's traceback instead)."""
