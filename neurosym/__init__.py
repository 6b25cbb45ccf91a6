"""neurosym: neuro-symbolic components for PyTorch.

Sub-packages (imports flow one way, ``layers`` <- ``models`` <- ``pipelines``):

- :mod:`neurosym.layers` — ``nn.Module`` building blocks (arithmetic units, attention, transformers).
- :mod:`neurosym.syntax` / :mod:`neurosym.semantics` — grammars, parse trees and exact executors.
- :mod:`neurosym.perception` — symbol encoders and image tokenizers.
- :mod:`neurosym.models` — reference architectures assembled from layers.
- :mod:`neurosym.pipelines` — weakly-supervised perception → syntax → semantics learning.
- :mod:`neurosym.data` — benchmark adapters (generation, loaders, splits, image banks).
- :mod:`neurosym.metrics` — exact match, success criterion, confidence intervals.
- :mod:`neurosym.training` — devices, checkpoints and the shared training loop.
- :mod:`neurosym.experiments` — the benchmark runners behind the ``neurosym`` command.
"""

__version__ = "0.1.0"
