"""torch's factory keyword arguments ``device=`` and ``dtype=`` on every layer of :mod:`neurosym.layers`, every
encoder and reader of :mod:`neurosym.perception` and the reference models of :mod:`neurosym.models` built from them:
parameters and buffers are created where and as asked (on ``meta``: nothing allocated), a float32 build draws the very
values of a default one, and a float64 layer computes in float64."""

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from deferred_init import materialised, reset_every_module
from torch import nn

from neurosym import layers, perception
from neurosym.layers import (
    NAC,
    NALU,
    NAU,
    NMU,
    NPU,
    AdditiveAttention,
    ArithmeticUnit,
    EnsembleLinear,
    GatedNAUNMU,
    MixerBlock,
    MultiheadAttention,
    NACMul,
    RealNPU,
    RelativeMultiheadAttention,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
    UniversalTransformer,
    iNALU,
    make_attention,
)
from neurosym.models import (
    ImageWindowFrontEnd,
    RNNSeq2Seq,
    TokenFrontEnd,
    TransformerSeq2Seq,
    build_front_end,
    build_seq2seq,
)
from neurosym.models.arithmetic import TwoLayerArithmetic
from neurosym.models.pvr import (
    EmbeddingMLP,
    MixerClassifier,
    TransformerClassifier,
    build_vector_model,
    build_visual_model,
)
from neurosym.models.seq2seq.front_ends import BoundaryMarkers
from neurosym.perception import SymbolClassifier
from neurosym.perception.cnn import VGG11BN, BasicBlock, ResidualConv, ResNet18, SmallCNN
from neurosym.perception.strokes import StrokeNormaliser


def _sequence(dtype: torch.dtype, length: int = 5, dim: int = 8) -> torch.Tensor:
    return torch.randn(2, length, dim, dtype=dtype)


def _unit_input(dtype: torch.dtype) -> torch.Tensor:
    return torch.rand(4, 3, dtype=dtype) + 0.5


@dataclass(frozen=True)
class Case:
    """``build(**factory)`` with small valid sizes, and ``run(module, dtype)``: one forward on an input of ``dtype``."""

    build: Callable[..., nn.Module]
    run: Callable[[Any, torch.dtype], torch.Tensor]


def _unit(cls: type[ArithmeticUnit], **options: Any) -> Case:
    return Case(lambda **factory: cls(3, 2, **options, **factory), lambda unit, dtype: unit(_unit_input(dtype)))


def _additive(module: AdditiveAttention, dtype: torch.dtype) -> torch.Tensor:
    keys = _sequence(dtype)
    return module(torch.randn(2, 6, dtype=dtype), keys, module.project_keys(keys))[0]


def _self_attending(module: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    return module(_sequence(dtype))


def _decoding(module: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    return module(_sequence(dtype), _sequence(dtype, length=4))


CASES: dict[str, Case] = {
    "NAC": _unit(NAC),
    "NACMul": _unit(NACMul),
    "NALU": _unit(NALU),
    "NALU separate weights": _unit(NALU, shared_weights=False),
    "iNALU": _unit(iNALU),
    "NAU": _unit(NAU),
    "NMU": _unit(NMU),
    "NMU ensemble": Case(lambda **f: NMU(3, 2, ensemble=2, **f), lambda unit, dtype: unit(_unit_input(dtype).expand(2, 4, 3))),
    "GatedNAUNMU": _unit(GatedNAUNMU),
    "NPU": _unit(NPU),
    "RealNPU": _unit(RealNPU),
    "EnsembleLinear": _unit(EnsembleLinear),
    "EnsembleLinear no bias": _unit(EnsembleLinear, bias=False),
    "MultiheadAttention": Case(lambda **f: MultiheadAttention(8, 2, **f), _self_attending),
    "xl attention": Case(lambda **f: RelativeMultiheadAttention(8, 2, relative="xl", **f), _self_attending),
    "clipped xl attention": Case(
        lambda **f: RelativeMultiheadAttention(8, 2, relative="xl_clipped", max_rel_pos=3, **f), _self_attending
    ),
    "shaw attention": Case(lambda **f: RelativeMultiheadAttention(8, 2, relative="shaw", max_rel_pos=3, **f), _self_attending),
    "make_attention": Case(lambda **f: make_attention("shaw", 8, 2, max_rel_pos=3, **f), _self_attending),
    "AdditiveAttention": Case(lambda **f: AdditiveAttention(6, 8, 4, **f), _additive),
    "MixerBlock": Case(lambda **f: MixerBlock(5, 8, 4, 6, **f), _self_attending),
    "TransformerEncoderLayer": Case(lambda **f: TransformerEncoderLayer(8, 2, 16, attention="xl", **f), _self_attending),
    "TransformerDecoderLayer": Case(lambda **f: TransformerDecoderLayer(8, 2, 16, attention="shaw", **f), _decoding),
    "TransformerEncoder": Case(lambda **f: TransformerEncoder(8, 2, 2, 16, **f), _self_attending),
    "TransformerDecoder": Case(lambda **f: TransformerDecoder(8, 2, 2, 16, pre_norm=False, **f), _decoding),
    "UniversalTransformer": Case(
        lambda **f: UniversalTransformer(TransformerEncoderLayer(8, 2, 16, **f), 2, act=True, **f),
        lambda module, dtype: module(_sequence(dtype)).hidden,
    ),
}

WITHOUT_FACTORY_KWARGS = {
    "ArithmeticUnit": "abstract: every concrete unit is in CASES",
    "SinusoidalPositionalEncoding": "creates no parameter or buffer (its signal is computed in the input's dtype), "
    "as torch's parameter-free layers (nn.ReLU, nn.Dropout) it takes no factory keywords",
}


def _ids(vocab: int, *shape: int) -> torch.Tensor:
    return torch.randint(vocab, shape)


def _no_padding(length: int = 5) -> torch.Tensor:
    return torch.zeros(2, length, dtype=torch.bool)


def _front_end(module: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    return module(_ids(7, 2, 5), _no_padding())


def _seq2seq(module: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    return module(_ids(7, 2, 5), _no_padding(), _ids(6, 2, 4))


def _digits(module: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    return module(_ids(10, 2, 4))


def _windows(module: nn.Module, dtype: torch.dtype, side: int = 4) -> torch.Tensor:
    return module(torch.rand(2, 5, 1, side, side), _no_padding())


def _images(channels: int, side: int = 8) -> Callable[[nn.Module, torch.dtype], torch.Tensor]:
    """The run of an encoder of images ``[2, channels, side, side]``."""
    return lambda module, dtype: module(torch.rand(2, channels, side, side, dtype=dtype))


def _symbol_windows(module: nn.Module, dtype: torch.dtype) -> torch.Tensor:
    return module(torch.rand(2, 8, 8, dtype=dtype))


PERCEPTION_CASES: dict[str, Case] = {
    "ResidualConv": Case(lambda **f: ResidualConv(3, **f), _images(3, side=4)),
    "BasicBlock": Case(lambda **f: BasicBlock(2, 3, stride=2, **f), _images(2, side=4)),  # (with its shortcut)
    "SmallCNN": Case(lambda **f: SmallCNN(1, 6, input_size=8, width=2, stage_convs=(1, 2, 1), **f), _images(1)),
    "ResNet18": Case(lambda **f: ResNet18(1, 5, width=2, **f), _images(1)),
    "ResNet18 ImageNet stem, channels-last": Case(lambda **f: ResNet18(2, 5, small_input=False, width=8, **f), _images(2)),
    "VGG11BN": Case(lambda **f: VGG11BN(1, 5, width=2, hidden=8, **f), _images(1)),
    "StrokeNormaliser": Case(lambda **f: StrokeNormaliser(2, **f), _images(1)),
    "SymbolClassifier": Case(
        lambda **f: SymbolClassifier(["a", "b", "c"], features=6, window=8, width=2, stroke_width=2, **f), _symbol_windows
    ),
    "SymbolClassifier resnet18": Case(
        lambda **f: SymbolClassifier(["a", "b"], backbone="resnet18", features=6, window=8, width=2, **f), _symbol_windows
    ),
}

PERCEPTION_WITHOUT_FACTORY_KWARGS = {
    name: "combines readers the caller built (build them with the keywords); creates no parameter or buffer of its own"
    for name in ("ReaderEnsemble", "RoutedReader")
}


MODEL_CASES: dict[str, Case] = {
    "TwoLayerArithmetic NMU": Case(lambda **f: TwoLayerArithmetic("NMU", 100, in_features=3, **f), CASES["NAU"].run),
    "TwoLayerArithmetic NALU ensemble": Case(
        lambda **f: TwoLayerArithmetic("NALU", 100, in_features=3, ensemble=2, **f), CASES["NMU ensemble"].run
    ),
    "EmbeddingMLP": Case(lambda **f: EmbeddingMLP(4, embed_dim=4, widths=(8, 6), **f), _digits),
    "TransformerClassifier": Case(lambda **f: TransformerClassifier(4, dim=8, depth=1, heads=2, ff_dim=16, **f), _digits),
    "MixerClassifier": Case(lambda **f: MixerClassifier(4, dim=8, depth=1, token_hidden=8, channel_hidden=8, **f), _digits),
    "build_vector_model": Case(lambda **f: build_vector_model("transformer", 4, scale=0.02, **f), _digits),
    "TokenFrontEnd": Case(lambda **f: TokenFrontEnd(7, 8, **f), _front_end),
    "BoundaryMarkers": Case(lambda **f: BoundaryMarkers(TokenFrontEnd(7, 8, **f), **f), _front_end),
    "ImageWindowFrontEnd": Case(lambda **f: ImageWindowFrontEnd(nn.Flatten(), 16, 8, **f), _windows),  # (any CNN)
    "build_front_end image": Case(
        lambda **f: build_front_end("image", 8, image_size=8, boundaries=True, **f), lambda m, d: _windows(m, d, side=8)
    ),
    "build_front_end symbol": Case(lambda **f: build_front_end("symbol", 8, vocab_size=7, **f), _front_end),
    "build_visual_model resnet18": Case(lambda **f: build_visual_model("resnet18", (8, 8), scale=0.05, **f), _images(1)),
    "build_visual_model vgg11bn": Case(lambda **f: build_visual_model("vgg11bn", (8, 8), scale=0.05, **f), _images(1)),
    "build_visual_model small_cnn": Case(lambda **f: build_visual_model("small_cnn", (8, 8), scale=0.1, **f), _images(1)),
    "RNNSeq2Seq": Case(
        lambda **f: RNNSeq2Seq(TokenFrontEnd(7, 8, **f), 6, hidden=8, encoder_layers=2, attention=True, **f), _seq2seq
    ),
    "TransformerSeq2Seq": Case(
        lambda **f: TransformerSeq2Seq(
            TokenFrontEnd(7, 8, **f), 6, dim=12, heads=2, encoder_layers=2, attention="xl", universal=True, **f
        ),
        _seq2seq,
    ),
    "build_seq2seq lstm": Case(
        lambda **f: build_seq2seq("lstm", TokenFrontEnd(7, 8, **f), 6, hidden=8, encoder_layers=1, **f), _seq2seq
    ),
    "build_seq2seq transformer": Case(
        lambda **f: build_seq2seq("transformer", TokenFrontEnd(7, 8, **f), 6, heads=2, encoder_layers=1, **f), _seq2seq
    ),
}
"""The reference models that are built from the layers and encoders (an ``ImageWindowFrontEnd``'s CNN is the caller's;
``build_front_end`` builds it with the keywords)."""

ALL_CASES = {**CASES, **PERCEPTION_CASES, **MODEL_CASES}


def _tensors(module: nn.Module) -> dict[str, torch.Tensor]:
    return {**dict(module.named_parameters()), **dict(module.named_buffers())}


def test_every_layer_is_covered() -> None:
    """Every ``nn.Module`` class of ``neurosym.layers.__all__`` is built by a case (or is listed with the reason it is
    not), so a new layer cannot be left without the factory keywords unnoticed."""
    modules = {
        name
        for name in layers.__all__
        if isinstance(getattr(layers, name), type) and issubclass(getattr(layers, name), nn.Module)
    }
    covered = {type(case.build()).__name__ for case in CASES.values()}
    assert modules - covered == set(WITHOUT_FACTORY_KWARGS)
    sinusoid = layers.SinusoidalPositionalEncoding(8)
    assert not _tensors(sinusoid)
    assert sinusoid(_sequence(torch.float64)).dtype == torch.float64


def _public_module_classes(package: Any) -> set[str]:
    """The public ``nn.Module`` classes that the modules of ``package`` define (not those they import)."""
    names: set[str] = set()
    for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        names |= {
            name
            for name, value in vars(module).items()
            if isinstance(value, type)
            and issubclass(value, nn.Module)
            and value.__module__ == module.__name__
            and not name.startswith("_")
        }
    return names


def test_every_perception_module_is_covered() -> None:
    """Every public ``nn.Module`` class of :mod:`neurosym.perception` (its encoders, blocks and readers) is built by a
    case (or is listed with the reason it is not)."""
    covered = {type(case.build()).__name__ for case in PERCEPTION_CASES.values()}
    assert {"SmallCNN", "SymbolClassifier", "ReaderEnsemble"} <= _public_module_classes(perception)
    assert _public_module_classes(perception) - covered == set(PERCEPTION_WITHOUT_FACTORY_KWARGS)


@pytest.mark.parametrize("name", ALL_CASES)
def test_meta_device_and_dtype_reach_every_parameter_and_buffer(name: str) -> None:
    """Built with ``device="meta", dtype=torch.float64`` every parameter and buffer is a float64 meta tensor (nothing
    allocated; torch's default device and dtype, the CPU and float32, are not used on the way), but for the batch
    norms' ``num_batches_tracked``, an int64 counter as in ``nn.BatchNorm2d(..., dtype=torch.float64)``."""
    module = ALL_CASES[name].build(device="meta", dtype=torch.float64)
    tensors = _tensors(module)
    assert tensors
    assert {tensor.device.type for tensor in tensors.values()} == {"meta"}
    counters = {key for key in tensors if key.rpartition(".")[2] == "num_batches_tracked"}
    assert {tensors[key].dtype for key in counters} <= {torch.int64}
    assert {tensors[key].dtype for key in tensors.keys() - counters} == {torch.float64}


@pytest.mark.parametrize("name", ALL_CASES)
def test_float32_build_draws_the_default_builds_values(name: str) -> None:
    """``device="cpu", dtype=torch.float32`` from the same seed gives bit for bit the parameters of the default build
    (the one layers had before they took the keywords), and leaves the random state where the default build does."""
    torch.manual_seed(3)
    default = ALL_CASES[name].build()
    after_default = torch.rand(4)
    torch.manual_seed(3)
    explicit = ALL_CASES[name].build(device=torch.device("cpu"), dtype=torch.float32)
    torch.testing.assert_close(_tensors(explicit), _tensors(default), rtol=0.0, atol=0.0)
    assert torch.equal(torch.rand(4), after_default)


def test_torch_draws_a_float64_linear_in_float64() -> None:
    """What holds for ``nn.Linear`` itself: with ``dtype=torch.float64`` its parameters are drawn in float64, from
    other random numbers than float32's, so they are not those of ``nn.Linear(...).double()`` from the same seed (nor
    float32 values): what the layers here do too (the next test)."""
    torch.manual_seed(3)
    converted = nn.Linear(5, 4).double()
    torch.manual_seed(3)
    built = nn.Linear(5, 4, dtype=torch.float64)
    assert not torch.equal(built.weight, converted.weight)
    assert not torch.equal(built.weight.float().double(), built.weight)


@pytest.mark.parametrize("name", ALL_CASES)
def test_float64_parameters_are_drawn_in_float64(name: str) -> None:
    """With ``dtype=torch.float64`` every randomly drawn parameter holds values no float32 holds: drawn in float64
    (as ``nn.Linear`` draws them), not drawn in float32 and converted."""
    torch.manual_seed(3)
    for parameter_name, parameter in ALL_CASES[name].build(dtype=torch.float64).named_parameters():
        if parameter.unique().numel() > 1:  # (not a constant start such as a zero bias)
            assert not torch.equal(parameter.float().double(), parameter), parameter_name


def test_float64_attention_draws_what_torchs_linear_layers_draw() -> None:
    """The projections of a float64 ``MultiheadAttention`` are the ``nn.Linear(..., dtype=torch.float64)`` layers torch
    draws from the same seed, in the order they are built."""
    torch.manual_seed(3)
    attention = MultiheadAttention(8, 2, dtype=torch.float64)
    torch.manual_seed(3)
    projections = [nn.Linear(8, width, dtype=torch.float64) for width in (8, 16, 8)]
    built = [attention.query_proj, attention.key_value_proj, attention.out_proj]
    for mine, torchs in zip(built, projections, strict=True):
        torch.testing.assert_close(mine.state_dict(), torchs.state_dict(), rtol=0.0, atol=0.0)


@pytest.mark.parametrize("name", ALL_CASES)
def test_a_float64_layer_or_model_computes_in_float64(name: str) -> None:
    case = ALL_CASES[name]
    assert case.run(case.build(dtype=torch.float64), torch.float64).dtype == torch.float64


@pytest.mark.parametrize("name", ALL_CASES)
def test_a_meta_build_materialises_into_the_cpu_build(name: str) -> None:
    """``device="meta"``, then ``to_empty(device="cpu")`` and every module's ``reset_parameters`` (deferred
    initialisation), gives the parameters of a CPU build reset from the same seed, none left as the empty memory's
    NaN; in float64 too."""
    for dtype in (torch.float32, torch.float64):
        built = ALL_CASES[name].build(dtype=dtype)
        reset_every_module(built, seed=7)
        deferred = materialised(ALL_CASES[name].build(device="meta", dtype=dtype), seed=7)
        torch.testing.assert_close(_tensors(deferred), _tensors(built), rtol=0.0, atol=0.0)


@pytest.mark.parametrize("name", ALL_CASES)
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64, "float64"], ids=str)
def test_a_dtype_that_is_no_floating_point_torch_dtype_is_refused(name: str, dtype: object) -> None:
    with pytest.raises(ValueError, match=r"dtype must be a floating-point torch.dtype .*, got"):
        ALL_CASES[name].build(dtype=dtype)


UNITS = [name for name, case in CASES.items() if isinstance(case.build(device="meta"), ArithmeticUnit)]


@pytest.mark.parametrize("name", UNITS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_a_half_precision_unit_is_refused_at_construction_as_at_forward(name: str, dtype: torch.dtype) -> None:
    """An arithmetic unit built in bfloat16 or float16 raises at construction the error a unit converted to it raises
    at its first forward."""
    converted = ALL_CASES[name].build().to(dtype)
    with pytest.raises(ValueError) as at_forward:
        ALL_CASES[name].run(converted, dtype)
    with pytest.raises(ValueError) as at_construction:
        ALL_CASES[name].build(dtype=dtype)
    assert str(at_construction.value) == str(at_forward.value)
    assert "compute in float32 or float64" in str(at_construction.value)


def test_a_unit_refuses_half_precision_under_a_half_precision_default_dtype() -> None:
    """``dtype=None`` means torch's default dtype: a bfloat16 default is refused at construction too."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with pytest.raises(ValueError, match="compute in float32 or float64, its parameters are torch.bfloat16"):
            NMU(3, 2)
    finally:
        torch.set_default_dtype(default)


def test_a_grown_float64_classifier_draws_its_new_class_in_float64() -> None:
    """``SymbolClassifier.add_symbol`` builds the grown head with the old head's device and dtype (drawn there, as a
    float64 build draws every layer, not drawn in float32 and converted); on ``meta`` it allocates nothing."""
    classifier = PERCEPTION_CASES["SymbolClassifier"].build(dtype=torch.float64)
    classifier.add_symbol("d")
    new_class = classifier.classifier.weight[-1]
    assert new_class.dtype == torch.float64
    assert not torch.equal(new_class.float().double(), new_class)
    on_meta = PERCEPTION_CASES["SymbolClassifier"].build(device="meta")
    on_meta.add_symbol("d")
    assert {tensor.device.type for tensor in _tensors(on_meta).values()} == {"meta"}
