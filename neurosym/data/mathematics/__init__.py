"""DeepMind Mathematics (Saxton et al., 2019): generation, loading, character encoding, batching.

- :mod:`~neurosym.data.mathematics.environment` — the isolated environment the generator runs in.
- :mod:`~neurosym.data.mathematics.generation` — deterministic on-demand generation into a cache.
- :mod:`~neurosym.data.mathematics.loader` — the released file layout, validated line by line.
- :mod:`~neurosym.data.mathematics.encoding` — the 95-character alphabet plus PAD/BOS/EOS, padding.
"""

from neurosym.data.mathematics.encoding import (
    BOS,
    EOS,
    PAD,
    VOCAB_SIZE,
    EncodedBatch,
    decode,
    encode,
    encode_batch,
    pad_sequences,
)
from neurosym.data.mathematics.environment import ensure_generator_env, generator_env_ready
from neurosym.data.mathematics.generation import REGIMES, generate, generated_root
from neurosym.data.mathematics.loader import (
    ALPHABET,
    MAX_ANSWER_LENGTH,
    MAX_QUESTION_LENGTH,
    MathematicsFormatError,
    MathExample,
    list_modules,
    load_split,
    module_path,
    read_module_file,
)

__all__ = [
    "ALPHABET",
    "BOS",
    "EOS",
    "MAX_ANSWER_LENGTH",
    "MAX_QUESTION_LENGTH",
    "PAD",
    "REGIMES",
    "VOCAB_SIZE",
    "EncodedBatch",
    "MathExample",
    "MathematicsFormatError",
    "decode",
    "encode",
    "encode_batch",
    "ensure_generator_env",
    "generate",
    "generated_root",
    "generator_env_ready",
    "list_modules",
    "load_split",
    "module_path",
    "pad_sequences",
    "read_module_file",
]
