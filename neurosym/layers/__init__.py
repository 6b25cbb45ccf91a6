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
from neurosym.layers.additive_attention import AdditiveAttention
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
