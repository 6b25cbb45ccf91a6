"""Reference architectures assembled from :mod:`neurosym.layers`: the HINT seq2seq baselines (GRU/LSTM with
and without attention, vanilla/relative/universal Transformers) with symbol or image front ends
(:mod:`~neurosym.models.seq2seq`), the arithmetic units' two-layer network and the PVR models. What trains and
times them for the benchmarks lives in :mod:`neurosym.benchmarking`."""

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
