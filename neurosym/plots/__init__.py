"""Figures of benchmark results: one module per benchmark, drawn with the helpers of :mod:`neurosym.plots.figure`.

Every function takes the numbers a runner has computed (plain dicts and lists, as they are saved in its
JSON) and writes one PNG; matplotlib is imported only when a figure is drawn (``pip install 'neurosym[plots]'``).
"""
