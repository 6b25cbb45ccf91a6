"""Layers: ``nn.Module`` building blocks — neural arithmetic units, attention (vanilla, relative, additive),
Transformer blocks, universal (weight-shared) Transformers and the MLP-Mixer block. No I/O, no data."""

from neurosym.layers.additive_attention import AdditiveAttention
from neurosym.layers.arithmetic import (
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    ArithmeticUnit,
    EnsembleLinear,
    GatedNAUNMU,
    NACMul,
    RealNPU,
    RegularizerWarmup,
    iNALU,
)
from neurosym.layers.attention import AttentionCache, MultiheadAttention
from neurosym.layers.mixer import MixerBlock
from neurosym.layers.positional import SinusoidalPositionalEncoding, sinusoid_table
from neurosym.layers.relative_attention import RelativeMultiheadAttention
from neurosym.layers.transformer import (
    DecoderLayerCache,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    make_attention,
)
from neurosym.layers.universal import UniversalOutput, UniversalTransformer

__all__ = [
    "NAC",
    "NALU",
    "NAU",
    "NMU",
    "NPU",
    "AdditiveAttention",
    "ArithmeticUnit",
    "AttentionCache",
    "DecoderLayerCache",
    "EnsembleLinear",
    "GatedNAUNMU",
    "MixerBlock",
    "MultiheadAttention",
    "NACMul",
    "RealNPU",
    "RegularizerWarmup",
    "RelativeMultiheadAttention",
    "SinusoidalPositionalEncoding",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "UniversalOutput",
    "UniversalTransformer",
    "iNALU",
    "make_attention",
    "sinusoid_table",
]
