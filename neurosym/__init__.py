"""neurosym: neuro-symbolic components for PyTorch.

Sub-packages, by level (a package imports only packages of its own level or lower, and the package graph
has no cycle; ``tests/test_import_order.py`` checks every import, those inside functions included):

0. :mod:`neurosym.paths` — the paths a user gives (a leading ``~`` the home folder);
   :mod:`neurosym.layers` — ``nn.Module`` building blocks (arithmetic units, attention, transformers);
   :mod:`neurosym.syntax` — grammars, parsing and parse trees;
   :mod:`neurosym.training` — devices, checkpoints and the shared training loop.
1. :mod:`neurosym.semantics` — exact executors, solvers and program induction over parse trees.
2. :mod:`neurosym.data` — benchmark adapters (generation, loaders, splits, image banks);
   :mod:`neurosym.perception` — symbol encoders and image tokenizers.
3. :mod:`neurosym.models` — reference architectures assembled from layers;
   :mod:`neurosym.pipelines` — weakly-supervised perception → syntax → semantics learning;
   :mod:`neurosym.metrics` — exact match, success criterion, confidence intervals.
4. :mod:`neurosym.experiments` — the benchmark runners (tables, JSON, plots).
5. :mod:`neurosym.cli` — the ``neurosym`` command.
"""

__version__ = "0.1.0"
