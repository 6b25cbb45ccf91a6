"""Benchmark runners behind the ``neurosym`` console command and the scripts in ``benchmarks/``.

Each runner module exposes ``OPTIONS`` (the dataclass of its options) and ``run(options) -> dict``.
"""
