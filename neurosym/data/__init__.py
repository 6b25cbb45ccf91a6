"""Benchmark adapters: generation, official-format loaders, splits and symbol image banks.

This package knows nothing of models; it yields numpy arrays, Python records and torch Datasets. A path its functions
are given that opens with ``~`` opens with the home folder (:func:`~neurosym.paths.user_path`).
"""
