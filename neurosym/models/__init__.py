from neurosym.models.seq2seq import (
    ImageWindowFrontEnd,
    RNNSeq2Seq,
    Seq2Seq,
    TokenFrontEnd,
    TransformerSeq2Seq,
    build_front_end,
    build_seq2seq,
)
