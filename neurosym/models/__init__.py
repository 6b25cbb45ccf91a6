"""Reference architectures assembled from :mod:`neurosym.layers`: the HINT seq2seq baselines (GRU/LSTM with
and without attention, vanilla/relative/universal Transformers) with symbol or image front ends; and the
benchmark tasks built on them: the arithmetic groups (:mod:`~neurosym.models.arithmetic_training`), the
Mathematics and HINT seq2seq tasks (:mod:`~neurosym.models.seq2seq`), the steps the speed benchmarks time."""

from neurosym.models.seq2seq import (
    ImageWindowFrontEnd,
    RNNSeq2Seq,
    Seq2Seq,
    TokenFrontEnd,
    TransformerSeq2Seq,
    build_front_end,
    build_seq2seq,
)

__all__ = [
    "ImageWindowFrontEnd",
    "RNNSeq2Seq",
    "Seq2Seq",
    "TokenFrontEnd",
    "TransformerSeq2Seq",
    "build_front_end",
    "build_seq2seq",
]
