"""Benchmark runners behind the ``neurosym`` console command and the scripts in ``benchmarks/``.

Each runner module exposes ``add_arguments(parser)`` and ``run(args) -> dict``.
"""
