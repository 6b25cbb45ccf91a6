"""Sequence-to-sequence models (RNNs with/without attention, Transformers) with greedy decoding."""

from neurosym.models.seq2seq.base import Seq2Seq
from neurosym.models.seq2seq.factory import CNN_NAMES, MODEL_NAMES, build_front_end, build_seq2seq
from neurosym.models.seq2seq.front_ends import BoundaryMarkers, ImageWindowFrontEnd, TokenFrontEnd
from neurosym.models.seq2seq.rnn import RNNSeq2Seq
from neurosym.models.seq2seq.transformer import TransformerSeq2Seq

__all__ = [
    "Seq2Seq",
    "RNNSeq2Seq",
    "TransformerSeq2Seq",
    "TokenFrontEnd",
    "ImageWindowFrontEnd",
    "BoundaryMarkers",
    "build_seq2seq",
    "build_front_end",
    "MODEL_NAMES",
    "CNN_NAMES",
]
