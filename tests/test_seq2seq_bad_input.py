"""Bad input to the Transformer layers and the seq2seq models is named at the entry point:
a decoder cache reused with another memory, numpy ints for greedy decoding, fractional layer counts, integer
inputs to attention, and build_seq2seq's sizes and the options a model would ignore."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from neurosym.layers.attention import AttentionCache, MultiheadAttention
from neurosym.layers.relative_attention import RelativeMultiheadAttention
from neurosym.layers.transformer import TransformerDecoder, TransformerEncoder
from neurosym.models import ImageWindowFrontEnd, RNNSeq2Seq, TokenFrontEnd, TransformerSeq2Seq, build_front_end, build_seq2seq
from neurosym.models.seq2seq.factory import MODEL_NAMES, MODEL_OPTIONS
from neurosym.models.seq2seq.hint_baseline import build_baseline
from neurosym.models.seq2seq.mathematics_task import CONFIGS, build_model
from neurosym.models.seq2seq.targets import teacher_forcing_pair

DIM, HEADS, FF = 16, 4, 32


def _decoder() -> TransformerDecoder:
    torch.manual_seed(0)
    return TransformerDecoder(DIM, 2, HEADS, FF, dropout=0.0).eval()


def test_a_decoder_cache_reused_with_a_memory_of_another_length_is_refused() -> None:
    decoder = _decoder()
    cache = decoder.new_cache()
    x = torch.randn(2, 1, DIM)
    decoder(x, torch.randn(2, 5, DIM), cache=cache)
    # the cached keys of the first memory were used, the 7 new positions silently ignored
    with pytest.raises(ValueError, match="holds the keys of a memory of 5 positions, the memory .key_value. has 7"):
        decoder(x, torch.randn(2, 7, DIM), cache=cache)


def test_a_decoder_cache_reused_with_a_memory_of_the_same_shape_still_decodes() -> None:
    """Values are never compared: the same shape passes (another tensor object too), and the result equals the
    uncached decoding of the whole prefix."""
    decoder = _decoder()
    memory, target = torch.randn(2, 5, DIM), torch.randn(2, 3, DIM)
    cache = decoder.new_cache()
    steps = [decoder(target[:, t : t + 1], memory.clone(), cache=cache) for t in range(3)]
    torch.testing.assert_close(torch.cat(steps, dim=1), decoder(target, memory))


@pytest.mark.parametrize("attention", ["vanilla", "shaw"])
def test_a_decoder_step_that_raises_leaves_every_cache_as_it_was(attention: str) -> None:
    """The cross-attention's mask is checked before the self-attention's cache takes the step: a retried step then
    decodes as the full call does (the self-attention cache had advanced one position too far)."""
    torch.manual_seed(0)
    decoder = TransformerDecoder(DIM, 2, HEADS, FF, dropout=0.0, attention=attention).eval()
    memory, target = torch.randn(1, 4, DIM), torch.randn(1, 3, DIM)
    cache = decoder.new_cache()
    steps = [decoder(target[:, :1], memory, cache=cache)]
    with pytest.raises(ValueError, match="memory_padding_mask covers 5 keys, but there are 4"):
        decoder(target[:, 1:2], memory, cache=cache, memory_padding_mask=torch.zeros(1, 5, dtype=torch.bool))
    assert [layer.self_attention.position for layer in cache] == [1, 1]
    steps += [decoder(target[:, t : t + 1], memory, cache=cache) for t in (1, 2)]
    torch.testing.assert_close(torch.cat(steps, dim=1), decoder(target, memory), atol=1e-6, rtol=1e-5)
    with pytest.raises(TypeError, match="cache must be one layer's DecoderLayerCache .TransformerDecoder takes the list"):
        decoder.layers[0](target[:, :1], memory, cache=decoder.new_cache())


def test_attention_caches_are_checked_by_batch_length_and_kind() -> None:
    module = MultiheadAttention(DIM, HEADS).eval()
    query, memory = torch.randn(2, 1, DIM), torch.randn(2, 4, DIM)
    cross = AttentionCache()
    module(query, memory, cache=cross)
    with pytest.raises(ValueError, match="a batch of 2, the query has 3: a new batch needs a new AttentionCache"):
        module(torch.randn(3, 1, DIM), torch.randn(3, 4, DIM), cache=cross)
    with pytest.raises(ValueError, match="a memory of 4 positions, the memory .key_value. has 3"):
        module(query, memory[:, :3], cache=cross)
    with pytest.raises(ValueError, match="belongs to a cross-attention module"):
        module(torch.randn(2, 4, DIM), cache=cross)
    own = AttentionCache()
    module(query, causal=True, cache=own)
    module(query, causal=True, cache=own)
    with pytest.raises(ValueError, match="belongs to a self-attention module, not to a cross-attention one"):
        module(query, torch.randn(2, 2, DIM), cache=own)


def test_a_cache_on_another_device_is_named() -> None:
    module = MultiheadAttention(DIM, HEADS).eval()
    cache = AttentionCache()
    module(torch.randn(2, 1, DIM), torch.randn(2, 4, DIM), cache=cache)
    assert cache.keys is not None
    cache.keys = cache.keys.to("meta")  # a cache built on another device (meta: shapes only)
    with pytest.raises(ValueError, match="holds keys on meta, the query is on cpu"):
        module(torch.randn(2, 1, DIM), torch.randn(2, 4, DIM), cache=cache)


@pytest.mark.parametrize("model", ["gru_att", "transformer_rel"])
def test_greedy_decode_takes_numpy_ints_for_max_len(model: str) -> None:
    torch.manual_seed(0)
    front = build_front_end("symbol", 16, vocab_size=10)
    built = build_seq2seq(model, front, 13, hidden=32, encoder_layers=1, dropout=0.0).eval()
    src, src_mask = torch.randint(0, 10, (2, 4)), torch.zeros(2, 4, dtype=torch.bool)
    decoded = built.greedy_decode(src, src_mask, max_len=np.int64(3), bos=np.int64(11), eos=-1)
    assert torch.equal(decoded, built.greedy_decode(src, src_mask, max_len=3, bos=11, eos=-1))
    assert decoded.shape == (2, 3)
    for bad in (3.0, np.float64(3.0), True, np.int64(0)):
        with pytest.raises(ValueError, match="max_len must be an int of at least 1, got"):
            built.greedy_decode(src, src_mask, max_len=bad, bos=11, eos=-1)


@pytest.mark.parametrize("stack", [TransformerEncoder, TransformerDecoder])
@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ((DIM, 2.0, HEADS, FF), "depth must be an int of at least 1, got 2.0"),
        ((DIM, 0, HEADS, FF), "depth must be an int of at least 1, got 0"),
        ((DIM, 2, 4.0, FF), "heads must be an int of at least 1, got 4.0"),
        ((DIM, 2, HEADS, 32.0), "ff_dim must be an int of at least 1, got 32.0"),
        ((16.0, 2, HEADS, FF), "dim must be an int of at least 1, got 16.0"),
    ],
)
def test_transformer_stacks_name_a_count_that_is_no_int(stack: type, arguments: tuple, named: str) -> None:
    # TransformerEncoder(16, 2.0, 4, 32) raised "'float' object cannot be interpreted as an integer"
    with pytest.raises(ValueError, match=named):
        stack(*arguments)


def test_transformer_stacks_take_numpy_ints() -> None:
    encoder = TransformerEncoder(np.int64(DIM), np.int64(2), np.int64(HEADS), np.int64(FF))
    assert len(encoder.layers) == 2
    assert encoder(torch.randn(2, 3, DIM)).shape == (2, 3, DIM)


@pytest.mark.parametrize(
    "module",
    [MultiheadAttention(DIM, HEADS), RelativeMultiheadAttention(DIM, HEADS), TransformerEncoder(DIM, 1, HEADS, FF)],
    ids=["vanilla", "relative", "encoder"],
)
def test_an_integer_input_is_told_to_be_embedded_not_the_module_converted(module: torch.nn.Module) -> None:
    ids = torch.zeros(2, 3, DIM, dtype=torch.long)
    with pytest.raises(ValueError, match=r"must be floating point .* got torch.int64; embed token ids first") as raised:
        module(ids)
    assert "module.to" not in str(raised.value)
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(ValueError, match="must be floating point"):
        module(ids)  # autocast does not cast integer inputs either
    with pytest.raises(ValueError, match=r"has dtype torch.float64 but .* convert the input"):
        module(ids.double())  # a floating input of another dtype keeps its advice


@pytest.mark.parametrize(
    ("option", "value"),
    [("target_vocab", 2.5), ("target_vocab", "12"), ("hidden", 64.0), ("dim", 16.0), ("encoder_layers", 1.5)],
)
def test_build_seq2seq_names_a_size_that_is_no_int(option: str, value: object) -> None:
    front = build_front_end("symbol", 16, vocab_size=10)
    arguments: dict = {"target_vocab": 12, option: value}
    with pytest.raises(ValueError, match=f"{option} must be an int of at least 1, got {value!r}"):
        build_seq2seq("transformer", front, **arguments)


def test_build_seq2seq_takes_a_numpy_target_vocab() -> None:
    front = build_front_end("symbol", 16, vocab_size=10)
    model = build_seq2seq("gru", front, np.int64(12), hidden=16)
    assert model.target_vocab == 12 and type(model.target_vocab) is int


@pytest.mark.parametrize(
    ("build", "named", "value"),
    [
        (lambda: TokenFrontEnd(10, 2.5), "dim", 2.5),
        (lambda: TokenFrontEnd(True, 4), "vocab_size", True),
        (lambda: build_front_end("symbol", 0, vocab_size=10), "dim", 0),
        (lambda: build_front_end("image", -1), "dim", -1),
        (lambda: ImageWindowFrontEnd(torch.nn.Flatten(), 4, 0), "dim", 0),
        (lambda: ImageWindowFrontEnd(torch.nn.Flatten(), 4.0, 8), "features", 4.0),
    ],
)
def test_the_front_ends_name_a_size_that_is_no_positive_int(build, named: str, value: object) -> None:
    """2.5 and True failed in torch.empty(), -1 in torch, and dim=0 built a front end giving vectors of width 0."""
    with pytest.raises(ValueError, match=re.escape(f"{named} must be an int of at least 1, got {value!r}")):
        build()


def test_the_front_ends_take_numpy_sizes_as_python_ints() -> None:
    front = TokenFrontEnd(np.int64(10), np.int32(4))
    assert (front.vocab_size, front.dim) == (10, 4) and all(type(size) is int for size in (front.vocab_size, front.dim))
    assert type(ImageWindowFrontEnd(torch.nn.Flatten(), np.int64(4), np.int64(8)).dim) is int


def test_an_rnn_embeds_at_the_front_ends_dim_and_refuses_another() -> None:
    """embed_dim defaulted to 128 whatever the front end gave: the model built, and its first forward failed in nn.GRU."""
    model = RNNSeq2Seq(TokenFrontEnd(10, 16), 12, hidden=32, encoder_layers=1)
    assert model.encoder.input_size == 16 and model.target_embedding.embedding_dim == 16
    src = torch.randint(0, 10, (2, 4))
    assert model(src, torch.zeros(2, 4, dtype=torch.bool), torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3, 12)
    with pytest.raises(ValueError, match=r"embed_dim \(128\) must be the front end's dim \(16\)"):
        RNNSeq2Seq(TokenFrontEnd(10, 16), 12, embed_dim=128)


@pytest.mark.parametrize("model", [RNNSeq2Seq, TransformerSeq2Seq])
@pytest.mark.parametrize("target_vocab", [0, -1, 2.5, True])
def test_the_seq2seq_models_name_a_target_vocab_that_is_no_positive_int(model: type, target_vocab: object) -> None:
    """0 built a model whose every target was refused, -1 and 2.5 failed in torch.empty()."""
    with pytest.raises(ValueError, match=f"target_vocab must be an int of at least 1, got {target_vocab!r}"):
        model(TokenFrontEnd(10, 16), target_vocab, encoder_layers=1)


@pytest.mark.parametrize("name", ["gru", "lstm_att", "transformer"])
@pytest.mark.parametrize("dropout", [math.nan, -0.1, 1.0, True])
def test_every_seq2seq_model_refuses_a_dropout_outside_0_to_1(name: str, dropout: object) -> None:
    """The recurrent models took NaN, and then every forward failed inside torch (eval mode too)."""
    front = build_front_end("symbol", 16, vocab_size=10)
    with pytest.raises(ValueError, match=re.escape(f"dropout must be a number in [0, 1), got {dropout!r}")):
        build_seq2seq(name, front, 12, hidden=32, encoder_layers=1, dropout=dropout)


@pytest.mark.parametrize(
    ("name", "option", "value", "users"),
    [
        ("transformer", "relative", "rope", "transformer_rel, transformer_rel_uni"),
        ("transformer", "relative", "shaw", "transformer_rel, transformer_rel_uni"),
        ("gru", "init", "xavier", "transformer, transformer_rel, transformer_rel_uni"),
        ("gru_att", "heads", 8, "transformer, transformer_rel, transformer_rel_uni"),
        ("lstm", "dim", 32, "transformer, transformer_rel, transformer_rel_uni"),
        ("lstm_att", "pre_norm", False, "transformer, transformer_rel, transformer_rel_uni"),
        ("transformer_rel", "step_embedding", True, "transformer_rel_uni"),
        ("transformer_rel_uni", "bidirectional", True, "gru, lstm, gru_att, lstm_att"),
    ],
)
def test_build_seq2seq_refuses_an_option_the_model_would_ignore(name: str, option: str, value: object, users: str) -> None:
    front = build_front_end("symbol", 16, vocab_size=10)
    with pytest.raises(ValueError, match=f"{option}={value!r} applies to {users}, not to {name!r}, which would ignore it"):
        build_seq2seq(name, front, 12, **{option: value})


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_options_at_their_defaults_and_the_models_own_options_build(name: str) -> None:
    front = build_front_end("symbol", 16, vocab_size=10)
    defaults = dict(
        dim=None, heads=4, relative="xl", pre_norm=True, step_embedding=False, bidirectional=False,
        attention_bias=True, embedding_dropout=True, init="torch",
    )  # fmt: skip
    assert build_seq2seq(name, front, 12, hidden=16, encoder_layers=1, **defaults).target_vocab == 12
    own = {"bidirectional": True, "heads": 2, "relative": "shaw", "step_embedding": True, "init": "release"}
    chosen = {key: value for key, value in own.items() if key in MODEL_OPTIONS[name]}
    assert build_seq2seq(name, front, 12, hidden=16, encoder_layers=1, **chosen).target_vocab == 12


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_the_hint_baselines_and_the_mathematics_models_pass_only_the_options_each_reads(name: str) -> None:
    """build_baseline's release defaults (8 heads, width 512, relative xl_clipped, its init) are the Transformers'
    only; the Mathematics LSTMs get no heads (the smoke configuration has 2, not the default 4)."""
    model = build_baseline(name, "symbol", 10, embedding=8, dim=16, hidden=16, heads=2, encoder_layers=1)
    assert model.target_vocab > 0
    for mathematics in ("transformer", "lstm_att", "lstm_att_bi"):
        assert build_model(mathematics, CONFIGS["smoke"]).target_vocab > 0


@pytest.mark.parametrize("name", ["gru_att", "transformer_rel"])
def test_the_seq2seq_models_name_an_argument_that_is_no_tensor(name: str) -> None:
    """A list or None failed as "AttributeError: 'NoneType' object has no attribute 'shape'"."""
    model = build_seq2seq(name, build_front_end("symbol", 16, vocab_size=10), 12, hidden=16, encoder_layers=1).eval()
    src, src_mask, tgt_in = torch.randint(0, 10, (2, 4)), torch.zeros(2, 4, dtype=torch.bool), torch.zeros(2, 3).long()
    for arguments, named in (
        ((src.tolist(), src_mask, tgt_in), "src must be a torch.Tensor, got list"),
        ((src, None, tgt_in), "src_mask must be a torch.Tensor, got NoneType"),
        ((src, src_mask, None), "tgt_in must be a torch.Tensor, got NoneType"),
    ):
        with pytest.raises(TypeError, match=f"^{named}$"):
            model(*arguments)
    with pytest.raises(TypeError, match="^src_mask must be a torch.Tensor, got list$"):
        model.greedy_decode(src, src_mask.tolist(), max_len=3, bos=1, eos=2)
    with pytest.raises(TypeError, match="^tokens must be a torch.Tensor, got list$"):
        model.decode_step(model.start_decoding(src, src_mask), [1, 1])
    assert model.greedy_decode(src, src_mask, max_len=3, bos=1, eos=2).shape[0] == 2


def test_greedy_decode_shows_a_bos_or_eos_that_is_no_int_as_it_is() -> None:
    """A 0-d tensor bos of 1 read "bos (1) must be a target id in [0, 12)": 1 is one."""
    model = build_seq2seq("gru", build_front_end("symbol", 16, vocab_size=10), 12, hidden=16, encoder_layers=1)
    src, src_mask = torch.randint(0, 10, (2, 4)), torch.zeros(2, 4, dtype=torch.bool)
    with pytest.raises(ValueError, match=re.escape("bos (tensor(1)) must be a target id in [0, 12)")):
        model.greedy_decode(src, src_mask, max_len=3, bos=torch.tensor(1), eos=2)
    with pytest.raises(ValueError, match=re.escape("eos ('2') must be a target id in [0, 12)")):
        model.greedy_decode(src, src_mask, max_len=3, bos=1, eos="2")


def test_an_rnn_takes_numpy_sizes_as_python_ints() -> None:
    """np.int64 hidden units failed in nn.GRU ("hidden_size should be of type int, got: int64")."""
    sizes = {"hidden": np.int64(8), "encoder_layers": np.int64(2), "decoder_layers": np.int32(2)}
    model = RNNSeq2Seq(TokenFrontEnd(10, 16), 12, attention=True, **sizes)
    assert (model.encoder.hidden_size, model.encoder.num_layers, model.decoder_layers) == (8, 2, 2)
    assert type(model.decoder_layers) is int
    src = torch.randint(0, 10, (2, 4))
    assert model(src, torch.zeros(2, 4, dtype=torch.bool), torch.zeros(2, 3, dtype=torch.long)).shape == (2, 3, 12)
    assert build_seq2seq("lstm", build_front_end("symbol", 16, vocab_size=10), 12, hidden=np.int64(8)).target_vocab == 12


@pytest.mark.parametrize("dim", [2.5, 0, True])
def test_a_transformer_names_a_width_that_is_no_positive_int(dim: object) -> None:
    """2.5 failed in torch.empty(), 0 was named as a "sinusoid dimension"."""
    with pytest.raises(ValueError, match=re.escape(f"dim must be an int of at least 1, got {dim!r}")):
        TransformerSeq2Seq(TokenFrontEnd(10, 16), 12, dim=dim, encoder_layers=1)
    assert TransformerSeq2Seq(TokenFrontEnd(10, 16), 12, dim=np.int64(8), heads=2, encoder_layers=1).dim == 8
    with pytest.raises(ValueError, match="the vanilla Transformer's sinusoidal positions need an even width dim, got 15"):
        TransformerSeq2Seq(TokenFrontEnd(10, 15), 12, heads=3, encoder_layers=1)  # (named as a "sinusoid dimension")


@pytest.mark.parametrize("relative", ["xl", "xl_clipped"])
@pytest.mark.parametrize(("dim", "heads"), [(12, 4), (16, 16), (20, 4)])
def test_an_xl_transformer_of_an_odd_head_width_names_dim_and_heads(relative: str, dim: int, heads: int) -> None:
    """The message named position_dim, which a seq2seq model has no option for."""
    message = f"head_dim = dim / heads = {dim} / {heads} = {dim // heads} sinusoid features, which must be an even number"
    with pytest.raises(ValueError, match=re.escape(message)):
        build_seq2seq("transformer_rel", TokenFrontEnd(10, dim), 12, heads=heads, encoder_layers=1, relative=relative)
    with pytest.raises(ValueError, match="position_dim must be a positive even number, got 3"):  # (one given: named)
        RelativeMultiheadAttention(dim, heads, relative="xl", position_dim=3)


@pytest.mark.parametrize("name", ["transformer", "gru"])
@pytest.mark.parametrize("norm", ["Pre", "prenorm", "", None])
def test_build_baseline_names_a_norm_that_is_neither_post_nor_pre(name: str, norm: object) -> None:
    """Any norm but "pre" built a post-norm Transformer without a word."""
    with pytest.raises(ValueError, match=re.escape(f"norm must be 'post' or 'pre', got {norm!r}")):
        build_baseline(name, "symbol", 10, embedding=8, dim=16, hidden=16, heads=2, encoder_layers=1, norm=norm)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["transformer_rel", "transformer_rel_uni"])
@pytest.mark.parametrize("relative", ["vanilla", "XL", None])
def test_a_relative_transformer_names_a_relative_kind_it_does_not_have(name: str, relative: object) -> None:
    """relative="vanilla" built a Transformer without relative positions; None was told to use 'vanilla'."""
    expected = re.escape(f"relative must be one of 'xl', 'xl_clipped', 'shaw', got {relative!r}")
    with pytest.raises(ValueError, match=expected):
        build_seq2seq(name, build_front_end("symbol", 16, vocab_size=10), 12, relative=relative)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=expected):
        build_baseline(name, "symbol", 10, embedding=8, dim=16, hidden=16, heads=2, relative=relative)  # type: ignore[arg-type]


def test_a_step_embedding_without_a_universal_encoder_is_refused() -> None:
    """The stacked encoder has no step to embed: step_embedding=True built the same model as without it."""
    with pytest.raises(ValueError, match="step_embedding=True applies to universal=True, not to universal=False"):
        TransformerSeq2Seq(TokenFrontEnd(10, 16), 12, attention="xl", step_embedding=True, encoder_layers=1)
    universal = TransformerSeq2Seq(TokenFrontEnd(10, 16), 12, attention="xl", universal=True, step_embedding=True)
    assert universal.encoder.step_embedding


@pytest.mark.parametrize("model", [RNNSeq2Seq, TransformerSeq2Seq])
def test_a_front_end_without_a_dim_is_named(model: type) -> None:
    """A bare nn.Embedding failed as "AttributeError: 'Embedding' object has no attribute 'dim'"."""
    with pytest.raises(ValueError, match=re.escape("the front end's vector size (its attribute `dim`) must be an int")):
        model(torch.nn.Embedding(10, 16), 12)


def test_front_end_options_its_kind_does_not_read_are_refused():
    """They were ignored: a CNN for symbols, a vocabulary for images, an image size for the ResNet-18."""
    refused = [
        (dict(kind="symbol", vocab_size=10, cnn="foo"), "cnn='foo' applies to 'image' inputs, not to 'symbol'"),
        (dict(kind="symbol", vocab_size=10, image_channels=3), "image_channels=3 applies to 'image' inputs, not to 'symbol'"),
        (dict(kind="image", vocab_size=10), "vocab_size=10 applies to 'symbol' inputs, not to 'image' with cnn='small'"),
        (dict(kind="image", cnn="resnet18", image_size=7), "image_size=7 applies to 'image' inputs of the small CNN, not to 'image' with cnn='resnet18'"),
        (dict(kind="symbol", vocab_size=10, boundaries=1), "boundaries must be True or False, got 1"),
    ]  # fmt: skip
    for options, message in refused:
        with pytest.raises(ValueError, match=re.escape(message)):
            build_front_end(dim=8, **options)
    assert isinstance(build_front_end("image", 8, image_size=28), ImageWindowFrontEnd)
    assert isinstance(build_baseline("gru", "symbol", 10, cnn="resnet18", hidden=8).front_end.front_end, TokenFrontEnd)


@pytest.mark.parametrize("name", ["lstm", "transformer"])
def test_a_model_over_a_front_end_of_another_dtype_is_refused_when_built(name):
    """The first forward failed inside torch ("mat1 and mat2 must have the same dtype")."""
    front = build_front_end("symbol", 16, vocab_size=10, dtype=torch.float64)
    with pytest.raises(
        ValueError, match=r"front end's parameters are torch.float64 but the model would be built in torch.float32"
    ):
        build_seq2seq(name, front, 12, hidden=8, encoder_layers=1)
    model = build_seq2seq(name, front, 12, hidden=8, encoder_layers=1, dtype=torch.float64)
    logits = model(torch.randint(0, 10, (2, 5)), torch.zeros(2, 5, dtype=torch.bool), torch.randint(0, 12, (2, 3)))
    assert logits.dtype == torch.float64 and logits.shape == (2, 3, 12)


def test_teacher_forcing_pair_refuses_what_it_cannot_read():
    sequences = torch.tensor([[1, 2]])
    refused = [
        ((sequences, 10.5, 11), "bos must be an int of at least 0, got 10.5"),  # (read as 10)
        ((sequences, -3, 11), "bos must be an int of at least 0, got -3"),
        ((sequences, 1, None), "eos must be an int of at least 0, got None"),
        ((sequences.to(torch.uint8), 1, 2), "an int64 or int32 tensor of shape [batch, length], got torch.uint8 (1, 2)"),
        (([[1, 2]], 1, 2), "an int64 or int32 tensor of shape [batch, length], got list"),
    ]
    for arguments, message in refused:
        with pytest.raises(ValueError, match=re.escape(message)):
            teacher_forcing_pair(*arguments)
    with pytest.raises(ValueError, match="ignore_index must be an int, got -1.5"):
        teacher_forcing_pair(sequences, 1, 2, ignore_index=-1.5)
    tgt_in, tgt_out = teacher_forcing_pair(sequences.int(), 1, 2)
    assert tgt_in.tolist() == [[1, 1, 2]] and tgt_out.tolist() == [[1, 2, 2]]
