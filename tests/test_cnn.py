import copy
import re

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from torch import nn

from neurosym.perception.batch_statistics import batch_statistics_of
from neurosym.perception.cnn import VGG11BN, ResidualConv, ResNet18, SmallCNN, _channels_last_images, hangs_channels_last
from neurosym.perception.symbol_classifier import SymbolClassifier


def _all_parameters_get_gradients(model: torch.nn.Module, images: torch.Tensor) -> None:
    model(images).square().sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None, name
        assert torch.isfinite(parameter.grad).all(), name
        assert parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize(
    ("model", "images", "out"),
    [
        (SmallCNN(in_channels=1, out_features=7, input_size=28, width=4), torch.randn(3, 1, 28, 28), 7),
        (ResNet18(in_channels=1, out_features=5, small_input=True, width=4), torch.randn(2, 1, 20, 20), 5),
        (ResNet18(in_channels=3, out_features=4, small_input=False, width=4), torch.randn(2, 3, 40, 40), 4),
        (VGG11BN(in_channels=2, out_features=6, width=4, hidden=8, dropout=0.0), torch.randn(2, 2, 28, 28), 6),
    ],
)
def test_shapes_and_gradients(model, images, out):
    assert model(images).shape == (images.shape[0], out)
    _all_parameters_get_gradients(model, images)


def test_resnet18_has_eighteen_weight_layers_and_standard_size():
    model = ResNet18(in_channels=3, out_features=1000, small_input=False)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d) and m.kernel_size != (1, 1)]
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(convs) + len(linears) == 18
    # torchvision's resnet18 has 11,689,512 parameters; ours has the same architecture.
    assert sum(p.numel() for p in model.parameters()) == 11_689_512


def test_vgg11_has_eight_convolutions():
    model = VGG11BN(in_channels=3, out_features=10)
    assert sum(isinstance(m, torch.nn.Conv2d) for m in model.modules()) == 8
    assert sum(isinstance(m, torch.nn.Linear) for m in model.modules()) == 3


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="SmallCNN expects images"):
        SmallCNN(in_channels=1, out_features=2, input_size=16)(torch.randn(2, 3, 16, 16))
    with pytest.raises(ValueError, match="built for 16x16"):
        SmallCNN(in_channels=1, out_features=2, input_size=16)(torch.randn(2, 1, 24, 24))
    with pytest.raises(ValueError, match="input_size >= 8"):
        SmallCNN(input_size=4)
    with pytest.raises(ValueError, match="ResNet18 expects"):
        ResNet18(in_channels=1, out_features=2)(torch.randn(1, 28, 28))


@pytest.mark.parametrize("encoder", [SmallCNN(1, 2, input_size=16), ResNet18(1, 2), VGG11BN(1, 2)], ids=type)
def test_images_of_another_dtype_are_named_with_what_to_do(encoder):
    images = torch.rand(2, 1, 16, 16)
    with pytest.raises(
        ValueError, match=r"expects floating-point images, got torch.uint8 \(pixels 0..255: images.float\(\) / 255\)"
    ):
        encoder((images * 255).to(torch.uint8))
    with pytest.raises(ValueError, match=rf"images has dtype torch.float64 but the {type(encoder).__name__}'s parameters are"):
        encoder(images.double())


def test_the_symbol_classifier_reads_uint8_and_any_float_windows_alike_and_names_other_dtypes():
    classifier = SymbolClassifier(list("0123"), window=16).eval()
    windows = torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8)
    expected = classifier(windows.float() / 255)
    torch.testing.assert_close(classifier(windows), expected)
    torch.testing.assert_close(classifier(windows.double() / 255), expected)
    with pytest.raises(ValueError, match="expects uint8 \\(0..255\\) or floating-point \\(0..1\\) windows, got torch.int64"):
        classifier(windows.long())
    with pytest.raises(ValueError, match=r"the vocabulary must be non-empty symbols \(str\) without repeats, got \[0, 1\]"):
        SymbolClassifier([0, 1])
    with pytest.raises(ValueError, match="symbol 2 is not a non-empty str or is already in the vocabulary"):
        classifier.add_symbol(2)
    with pytest.raises(ValueError, match="symbol '' is not a non-empty str"):  # (an empty symbol was taken)
        classifier.add_symbol("")
    with pytest.raises(ValueError, match=r"the vocabulary must be non-empty symbols \(str\) without repeats, got \['a', ''\]"):
        SymbolClassifier(["a", ""])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=5).filter(lambda shape: shape[-2:] != [8, 8]))
@example([2, 8, 9])
@example([3, 7, 8])
def test_the_symbol_classifier_names_the_shape_of_the_windows_as_given(shape):
    """A shape of three sides was named with the channel the classifier added: [2, 8, 9] as (2, 1, 8, 9)."""
    classifier = SymbolClassifier(list("01"), window=8, width=2, features=4).eval()
    with pytest.raises(ValueError, match=re.escape(f"expects windows [N, 8, 8], got {tuple(shape)}")):
        classifier(torch.zeros(shape))


@pytest.mark.parametrize(
    "vocabulary", [None, (symbol for symbol in "01"), [["0"], ["1"]], 5], ids=["none", "generator", "lists", "int"]
)
def test_the_symbol_classifier_names_a_vocabulary_that_is_no_collection_of_symbols(vocabulary):
    """None and a generator failed on len(), a list of lists as "unhashable type"."""
    with pytest.raises(ValueError, match=r"the vocabulary must be non-empty symbols \(str\) without repeats, got"):
        SymbolClassifier(vocabulary)


def test_the_symbol_classifier_takes_a_numpy_array_of_symbols_as_its_vocabulary():
    classifier = SymbolClassifier(np.array(["0", "1"]), window=8, width=2, features=4)
    assert classifier.vocabulary == ["0", "1"] and all(type(symbol) is str for symbol in classifier.vocabulary)


@pytest.mark.parametrize("backbone", ["small", "resnet18"])
@pytest.mark.parametrize("stage_convs", [2, None])
def test_stage_convs_that_are_no_sequence_are_named(backbone, stage_convs):
    """An int failed on len() or tuple()."""
    with pytest.raises(ValueError, match="stage_convs gives each of the three stages|stage_convs is an option of the 'small'"):
        SymbolClassifier(list("01"), backbone=backbone, stage_convs=stage_convs)
    assert len(SymbolClassifier(list("01"), backbone=backbone, stage_convs=np.array([1, 1, 1])).vocabulary) == 2


@pytest.mark.parametrize(
    "windows", [np.zeros((2, 8, 8), dtype=np.float32), np.zeros((2, 8, 8)).tolist(), None], ids=["numpy", "list", "none"]
)
def test_the_symbol_classifier_names_windows_that_are_no_tensor(windows):
    """They failed on a missing ``.dim()`` (AttributeError)."""
    classifier = SymbolClassifier(list("01"), window=8, width=2, features=4).eval()
    with pytest.raises(TypeError, match=f"SymbolClassifier's windows must be a torch.Tensor, got {type(windows).__name__}"):
        classifier(windows)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_uint8_windows_read_exactly_as_their_intensities_in_the_classifiers_dtype(dtype):
    # (a float64 classifier read uint8 windows divided by 255 in float32, rounded there)
    classifier = SymbolClassifier(list("01"), window=8, width=2, features=4).to(dtype).eval()
    windows = torch.arange(256, dtype=torch.uint8).reshape(4, 8, 8)
    read = classifier(windows)
    assert read.dtype == dtype and torch.equal(read, classifier(windows.to(dtype) / 255))


def test_small_cnn_stages_take_their_convolution_counts():
    default = SmallCNN(in_channels=1, out_features=3, input_size=16, width=4)
    deeper = SmallCNN(in_channels=1, out_features=3, input_size=16, width=4, stage_convs=(1, 2, 3))
    widths = [m.out_channels for m in deeper.modules() if isinstance(m, torch.nn.Conv2d)]
    assert widths == [4, 8, 8, 16, 16, 16]
    assert [m.out_channels for m in default.modules() if isinstance(m, torch.nn.Conv2d)] == [4, 8, 16]
    # the default keeps the layer names of the three-convolution CNN, so its checkpoints still load
    assert [name for name in default.state_dict() if name.endswith("weight")] == [
        "features.0.weight", "features.1.weight", "features.4.weight", "features.5.weight",
        "features.8.weight", "features.9.weight", "head.weight",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="stage_convs gives each of the three stages at least one convolution"):
        SmallCNN(stage_convs=(1, 0, 1))
    with pytest.raises(ValueError, match="stage_convs gives each"):
        SmallCNN(stage_convs=(1, 2))
    with pytest.raises(ValueError, match="an option of the 'small' backbone"):
        SymbolClassifier(list("01"), backbone="resnet18", stage_convs=(1, 2, 2))
    with pytest.raises(ValueError, match="stage_convs gives each"):
        SmallCNN(stage_convs=(1, 1.5, 1))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: SymbolClassifier(list("01"), window=28, width=0), "width must be an int of at least 1, got 0"),  # empty layers
        (lambda: SymbolClassifier(list("01"), window=28, width=2.5), "width must be an int of at least 1, got 2.5"),
        (lambda: SymbolClassifier(list("01"), features=0), "features must be an int of at least 1, got 0"),
        # the resnet18 backbone built with these, and then refused every input
        (lambda: SymbolClassifier(list("01"), backbone="resnet18", window=0), "window must be an int of at least 1, got 0"),
        (lambda: SymbolClassifier(list("01"), backbone="resnet18", window=-4), "window must be an int of at least 1, got -4"),
        (lambda: SymbolClassifier(list("01"), backbone="resnet18", window=2.5), "window must be an int of at least 1, got 2.5"),
        (lambda: ResNet18(1, 10, width=0), "width must be an int of at least 1"),
        (lambda: VGG11BN(1, 10, hidden=-1), "hidden must be an int of at least 1"),
        (lambda: SmallCNN(input_size=28.0), "SmallCNN needs input_size >= 8"),
    ],
)
def test_encoders_name_channel_and_feature_counts_that_are_not_positive_ints(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_deeper_small_cnn_starts_as_the_shallow_one_and_then_learns_every_layer():
    torch.manual_seed(0)
    shallow = SmallCNN(in_channels=1, out_features=3, input_size=16, width=4)
    deeper = SmallCNN(in_channels=1, out_features=3, input_size=16, width=4, stage_convs=(1, 2, 3))
    shared = [layer for layer in deeper.features if not isinstance(layer, ResidualConv)]
    for mine, theirs in zip([*shared, deeper.head], [*shallow.features, shallow.head], strict=True):
        mine.load_state_dict(theirs.state_dict())
    images = torch.randn(5, 1, 16, 16)
    assert torch.allclose(deeper(images), shallow(images), atol=1e-6)
    assert not torch.allclose(deeper(images), SmallCNN(1, 3, 16, width=4, stage_convs=(1, 2, 3))(images), atol=1e-3)
    # a residual block's convolution gets gradients once its normalisation's scale has left zero
    with torch.no_grad():
        for block in deeper.modules():
            if isinstance(block, ResidualConv):
                block.norm.weight.fill_(0.1)
    _all_parameters_get_gradients(deeper, images)


def test_small_cnn_overfits_a_tiny_batch():
    torch.manual_seed(0)
    images = torch.randn(16, 1, 16, 16)
    labels = torch.arange(16) % 4
    model = SmallCNN(in_channels=1, out_features=4, input_size=16, width=4)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(40):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    model.eval()
    assert (model(images).argmax(-1) == labels).all()


CONTIGUOUS_FORWARD = {  # each encoder's modules applied to images as given, no layout conversion
    SmallCNN: lambda model, images: model.head(model.features(images).flatten(1)),
    ResNet18: lambda model, images: model.head(model.body(images).flatten(1)),
    VGG11BN: lambda model, images: model.classifier(model.features(images).flatten(1)),
}


@pytest.mark.parametrize(
    ("build", "size"),
    [
        (lambda: SmallCNN(1, 10, 32, width=4, stage_convs=(1, 2, 1)), 32),
        (lambda: ResNet18(1, 10, small_input=False, width=8), 40),
        (lambda: VGG11BN(1, 10, width=4, hidden=8), 40),
    ],
)
def test_encoders_compute_channels_last_what_the_contiguous_network_computes(build, size):
    torch.manual_seed(0)
    model = build().to("cpu").eval()
    assert all(m.weight.is_contiguous(memory_format=torch.channels_last) for m in model.modules() if isinstance(m, nn.Conv2d))
    reference = copy.deepcopy(model).to(memory_format=torch.contiguous_format)
    images = torch.rand(3, 1, size, size)
    with torch.no_grad():
        expected = CONTIGUOUS_FORWARD[type(model)](reference, images)  # (SmallCNN's map must flatten as c h w)
        assert torch.allclose(model(images), expected, atol=1e-5) and not torch.equal(expected[0], expected[1])


BATCH_NORM_ENCODERS = {
    "resnet18 small input": lambda: ResNet18(1, 3, small_input=True, width=2),
    "resnet18 imagenet stem": lambda: ResNet18(1, 3, small_input=False, width=2),
    "vgg11bn": lambda: VGG11BN(1, 3, width=1, hidden=4),
}


@pytest.mark.parametrize("build", BATCH_NORM_ENCODERS.values(), ids=BATCH_NORM_ENCODERS.keys())
@settings(max_examples=25, deadline=None)
@given(height=st.integers(1, 40), width=st.integers(1, 40))
@example(height=8, width=8).via("the largest 1x1 for the small-input stem")
@example(height=9, width=1)
@example(height=16, width=16).via("the largest 1x1 for VGG-11")
@example(height=3, width=17)
@example(height=32, width=32).via("the largest 1x1 for the ImageNet stem")
@example(height=33, width=1)
def test_training_on_one_image_is_refused_up_front_exactly_where_batch_norm_cannot(build, height, width):
    """One image small enough to reach the deepest batch norm as 1x1 raised torch's "Expected more than 1 value per
    channel when training" from inside the network; it is now named up front, and only there."""
    encoder, image = build().train(), torch.randn(1, 1, height, width)
    try:
        encoder(image)  # torch's own error here (another message) fails the test as well
    except ValueError as error:
        assert str(error).startswith(
            f"{type(encoder).__name__} in train mode: batch-norm training needs at least 2 images per batch"
        )
        with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):  # torch's verdict
            encoder.body(image) if isinstance(encoder, ResNet18) else encoder.features(image)
        assert encoder.eval()(image).shape == (1, 3)  # reading one image in eval mode still works
        assert encoder.train()(image.expand(2, -1, -1, -1)).shape == (2, 3)


def test_one_image_is_refused_up_front_while_batch_statistics_are_estimated():
    encoder, image = VGG11BN(1, 3, width=1, hidden=4), torch.randn(1, 1, 16, 9)
    refused = r"^VGG11BN in train mode: batch-norm training needs at least 2 images"
    with pytest.raises(ValueError, match=refused), batch_statistics_of(encoder, [image]):  # (torch's error, from inside)
        pass


def test_the_batch_norm_check_names_the_encoder_and_what_to_do():
    with pytest.raises(ValueError, match=r"^VGG11BN in train mode: .* got 1 image of 16x9 pixels, .* call \.eval\(\)"):
        VGG11BN(1, 3, width=1, hidden=4)(torch.randn(1, 1, 16, 9))
    with pytest.raises(ValueError, match=r"^ResNet18 in train mode: .* got 1 image of 8x8 pixels"):
        ResNet18(1, 3, width=2)(torch.randn(1, 1, 8, 8))


@pytest.mark.parametrize("width", [2, 4, 7])
def test_an_encoder_with_a_narrow_strided_shortcut_stays_contiguous_and_trains(width):
    """oneDNN's channels-last weight gradient of a 1x1 stride-2 convolution over 2-7 channels hung or corrupted the
    heap on AVX2 CPUs (ResNet-18's shortcut at width 4): such encoders keep the contiguous layout, weights and images."""
    torch.manual_seed(0)
    model = ResNet18(1, 10, small_input=True, width=width)
    convolutions = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    assert any(hangs_channels_last(conv) for conv in convolutions) and not model.channels_last
    assert all(conv.weight.is_contiguous() for conv in convolutions)
    images = torch.rand(4, 1, 32, 32)
    assert _channels_last_images(images, 1, model).is_contiguous()
    model(images).sum().backward()  # (hung here)
    assert all(torch.isfinite(conv.weight.grad).all() for conv in convolutions)
    wide = ResNet18(1, 10, small_input=True, width=8)
    assert wide.channels_last and not any(hangs_channels_last(m) for m in wide.modules() if isinstance(m, nn.Conv2d))
