"""Seq2Seq models: every variant overfits a 64-example batch; greedy decoding is consistent and cached;
bidirectional RNN encoders see the whole source."""

from __future__ import annotations

import math
import re

import hypothesis
import pytest
import torch
from hypothesis import strategies as st

from neurosym.data.hint import IGNORE_INDEX
from neurosym.models import build_front_end, build_seq2seq
from neurosym.models.seq2seq import (
    MODEL_NAMES,
    BoundaryMarkers,
    ImageWindowFrontEnd,
    RNNSeq2Seq,
    TokenFrontEnd,
    TransformerSeq2Seq,
)
from neurosym.models.seq2seq.hint_task import hint_batch, sequence_loss
from neurosym.models.seq2seq.mathematics_task import answer_loss
from neurosym.perception.cnn import SmallCNN

PAD, BOS, EOS = 0, 1, 2  # target specials; digits are 3..12
SOURCE_VOCAB = 10
VARIANTS = (*MODEL_NAMES, "lstm_att_bi", "gru_bi")
"""The HINT models and, with a ``_bi`` suffix, RNNs with a bidirectional encoder."""


def reversal_batch(size: int = 64, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sources of 2-5 random tokens; the target is the source reversed (the shape of HINT's reversed digits)."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 6, (size,), generator=generator)
    src = torch.randint(0, SOURCE_VOCAB, (size, 5), generator=generator)
    src_mask = torch.arange(5) >= lengths[:, None]
    src = src.masked_fill(src_mask, 0)
    tgt = torch.full((size, 7), PAD)
    for row, length in enumerate(lengths.tolist()):
        tgt[row, 0] = BOS
        tgt[row, 1 : length + 1] = src[row, :length].flip(0) + 3
        tgt[row, length + 1] = EOS
    return src, src_mask, tgt[:, :-1], tgt[:, 1:]


def front_options(kind: str, vocab_size: int) -> dict:
    """What :func:`build_front_end` reads for ``kind``: a vocabulary for symbols, 16-pixel windows for images."""
    return {"vocab_size": vocab_size} if kind == "symbol" else {"image_size": 16}


def tiny_model(
    name: str, kind: str = "symbol", encoder_layers: int | None = None, decoder_layers: int = 1, boundaries: bool = False
) -> torch.nn.Module:
    """One of :data:`VARIANTS`, 64 hidden units, 32-dimensional embeddings (framed by start and end vectors
    with ``boundaries=True``)."""
    torch.manual_seed(0)
    front = build_front_end(kind, 32, boundaries=boundaries, **front_options(kind, SOURCE_VOCAB))
    layers = encoder_layers or (2 if name.startswith("transformer") else 1)
    return build_seq2seq(
        name.removesuffix("_bi"),
        front,
        13,
        hidden=64,
        heads=4,
        encoder_layers=layers,
        decoder_layers=decoder_layers,
        dropout=0.0,
        bidirectional=name.endswith("_bi"),
    )


def exact_match(model, src, src_mask, tgt_out) -> float:
    model.eval()
    decoded = model.greedy_decode(src, src_mask, max_len=tgt_out.shape[1], bos=BOS, eos=EOS)
    width = decoded.shape[1]
    expected = tgt_out[:, :width].masked_fill(tgt_out[:, :width] == PAD, EOS)
    return float((decoded == expected).all(dim=1).float().mean())


def overfit(model, src, src_mask, tgt_in, tgt_out, steps: int, check_every: int = 10) -> float:
    """The batch's exact-match accuracy after training on it for up to ``steps`` steps: 1.0 as soon as a check (every
    ``check_every`` steps) decodes every example exactly (the variants get there in 30 to 140 steps), else the
    accuracy after the last step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(1, steps + 1):
        model.train()
        logits = model(src, src_mask, tgt_in)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        if step % check_every == 0 and step < steps and exact_match(model, src, src_mask, tgt_out) == 1.0:
            return 1.0
    return exact_match(model, src, src_mask, tgt_out)


@pytest.mark.parametrize("name", VARIANTS)
def test_every_model_overfits_a_batch_of_64(name: str) -> None:
    src, src_mask, tgt_in, tgt_out = reversal_batch()
    model = tiny_model(name)
    assert exact_match(model, src, src_mask, tgt_out) < 0.1
    assert overfit(model, src, src_mask, tgt_in, tgt_out, steps=200) == 1.0


def test_image_input_model_overfits_a_batch_of_64() -> None:
    src, src_mask, tgt_in, tgt_out = reversal_batch()
    torch.manual_seed(0)
    glyphs = torch.rand(SOURCE_VOCAB, 1, 16, 16)  # one fixed random "image" per source token
    images = glyphs[src]
    front = ImageWindowFrontEnd(SmallCNN(1, 32, input_size=16, width=4), 32, 32)
    model = build_seq2seq("transformer_rel_uni", front, 13, hidden=64, encoder_layers=2, dropout=0.0)
    assert overfit(model, images, src_mask, tgt_in, tgt_out, steps=300) == 1.0


@pytest.mark.parametrize("name", VARIANTS)
def test_greedy_decoding_agrees_with_teacher_forcing(name: str) -> None:
    """Feeding the decoded tokens back with teacher forcing must give the same argmax at every step."""
    src, src_mask, _, _ = reversal_batch(8, seed=1)
    model = tiny_model(name).eval()
    decoded = model.greedy_decode(src, src_mask, max_len=6, bos=BOS, eos=EOS)
    tgt_in = torch.cat([torch.full((8, 1), BOS), decoded[:, :-1]], dim=1)
    forced = model(src, src_mask, tgt_in).argmax(-1)
    first_eos = (decoded == EOS).long().cumsum(1).cumsum(1) <= 1  # up to and including the first eos
    assert torch.equal(forced[first_eos], decoded[first_eos])


@pytest.mark.parametrize("name", ["transformer", "transformer_rel", "transformer_rel_uni", "lstm_att_bi"])
def test_cached_greedy_decoding_equals_uncached(name: str) -> None:
    src, src_mask, _, _ = reversal_batch(16, seed=2)
    model = tiny_model(name).eval()
    cached = model.greedy_decode(src, src_mask, max_len=10, bos=BOS, eos=EOS, use_cache=True)
    uncached = model.greedy_decode(src, src_mask, max_len=10, bos=BOS, eos=EOS, use_cache=False)
    assert torch.equal(cached, uncached)
    with_cache = model.start_decoding(src, src_mask, use_cache=True)
    without = model.start_decoding(src, src_mask, use_cache=False)
    for token in cached.T:
        torch.testing.assert_close(model.decode_step(with_cache, token), model.decode_step(without, token))


@pytest.mark.parametrize("name", VARIANTS)
def test_every_decoding_step_gives_the_teacher_forced_logits_in_float64(name: str) -> None:
    """Sources of 2 to 5 tokens decoded step by step, with and without a cache, through two decoder layers: every
    step's logits are those of teacher forcing the decoded prefix, and every row's those of the row alone, to float64
    rounding."""
    src, src_mask, _, _ = reversal_batch(6, seed=4)
    model = tiny_model(name, decoder_layers=2).double().eval()
    decoded = model.greedy_decode(src, src_mask, max_len=6, bos=BOS, eos=-1)  # (no eos: six steps for every row)
    tgt_in = torch.cat([torch.full((6, 1), BOS), decoded[:, :-1]], dim=1)
    with torch.no_grad():
        forced = model(src, src_mask, tgt_in)
        assert torch.equal(forced.argmax(-1), decoded)
        for use_cache in (True, False):
            state = model.start_decoding(src, src_mask, use_cache=use_cache)
            steps = torch.stack([model.decode_step(state, tokens) for tokens in tgt_in.T], dim=1)
            torch.testing.assert_close(steps, forced, atol=1e-12, rtol=1e-12)
        for row, length in enumerate((~src_mask).sum(1).tolist()):
            alone = model(src[row : row + 1, :length], src_mask[row : row + 1, :length], tgt_in[row : row + 1])
            torch.testing.assert_close(alone[0], forced[row], atol=1e-12, rtol=1e-12)


def test_image_padding_windows_are_ignored() -> None:
    model = tiny_model("transformer_rel", kind="image").eval()
    images = torch.rand(2, 4, 1, 16, 16)
    src_mask = torch.tensor([[False] * 4, [False, False, True, True]])
    changed = images.clone()
    changed[1, 2:] = torch.rand(2, 1, 16, 16)
    tgt_in = torch.full((2, 3), BOS)
    torch.testing.assert_close(model(images, src_mask, tgt_in), model(changed, src_mask, tgt_in))


def test_model_sizes_that_are_not_positive_ints_are_named() -> None:
    front_end = build_front_end("symbol", 16, vocab_size=SOURCE_VOCAB)
    # True was accepted: a model one unit wide, one head or one layer deep
    for name, option in (("gru", "hidden"), ("gru", "encoder_layers"), ("transformer", "heads"),
                         ("transformer", "encoder_layers"), ("transformer", "decoder_layers")):  # fmt: skip
        with pytest.raises(ValueError, match=f"{option} must be an int of at least 1, got True"):
            build_seq2seq(name, front_end, 13, **{option: True})
    for bad in (True, 2.5):
        with pytest.raises(ValueError, match=f"decoder_layers must be an int of at least 1, got {bad}"):
            RNNSeq2Seq(front_end, 13, decoder_layers=bad)


def test_bad_sources_raise_clear_errors() -> None:
    model = tiny_model("gru_att")
    src, src_mask, tgt_in, _ = reversal_batch(4)
    with pytest.raises(ValueError, match="all padding"):
        model(src, torch.ones_like(src_mask), tgt_in)
    with pytest.raises(ValueError, match="disagree"):
        model(src, src_mask[:, :3], tgt_in)
    with pytest.raises(ValueError, match=r"ids must lie in \[0, 10\)"):
        model(src + 20, src_mask, tgt_in)
    with pytest.raises(ValueError, match="unknown model"):
        build_seq2seq("bert", model.front_end, 13)
    with pytest.raises(ValueError, match="max_len"):
        model.greedy_decode(src, src_mask, max_len=0, bos=BOS, eos=EOS)
    with pytest.raises(ValueError, match=r"max_len must be an int of at least 1, got 5.0"):
        model.greedy_decode(src, src_mask, max_len=5.0, bos=BOS, eos=EOS)
    with pytest.raises(ValueError, match="target_vocab and dim must be positive, got 0 and None"):
        build_seq2seq("gru", model.front_end, 0)
    with pytest.raises(ValueError, match="vocab_size must be an int of at least 1, got 0"):
        build_front_end("symbol", 8, vocab_size=0)
    for name in ("gru_att", "transformer"):
        with pytest.raises(ValueError, match=r"target token ids must lie in \[0, 13\), got 0\.\.13"):
            tiny_model(name)(src, src_mask, torch.cat([tgt_in, torch.full_like(tgt_in[:, :1], 13)], dim=1))
    with pytest.raises(ValueError, match=r"bos \(99\) must be a target id in \[0, 13\)"):
        model.greedy_decode(src, src_mask, max_len=3, bos=99, eos=EOS)
    with pytest.raises(ValueError, match=r"bos \(0.5\) must be a target id"):  # was read as token 0
        model.greedy_decode(src, src_mask, max_len=3, bos=0.5, eos=EOS)
    assert isinstance(tiny_model("transformer_rel_uni"), TransformerSeq2Seq)


@pytest.mark.parametrize("name", ["gru", "lstm_att", "transformer_rel"])
def test_bad_targets_are_named_for_every_model(name: str) -> None:
    model = tiny_model(name)
    src, src_mask, tgt_in, _ = reversal_batch(4)
    with pytest.raises(ValueError, match=r"tgt_in must be int64 or int32 target ids \[batch, length >= 1\], got torch.float32"):
        model(src, src_mask, tgt_in.float())
    with pytest.raises(ValueError, match=r"got torch.int64 \(4,\)"):
        model(src, src_mask, tgt_in[:, 0])
    with pytest.raises(ValueError, match=r"got torch.int64 \(4, 0\)"):
        model(src, src_mask, tgt_in[:, :0])
    with pytest.raises(ValueError, match="tgt_in has 3 targets for 4 sources"):
        model(src, src_mask, tgt_in[:3])
    with pytest.raises(ValueError, match=r"src_mask must be a bool .*, got torch.bool with shape \(5,\)"):
        model(src, src_mask[0], tgt_in)  # was read as 5 sources: "tgt_in has 4 targets for 5 sources"
    assert model(src, src_mask, tgt_in.int()).shape == (*tgt_in.shape, 13)  # int32 ids are ids too


@pytest.mark.parametrize("name", ["gru", "transformer_rel"])
def test_int32_sources_and_targets_read_as_int64_ones_and_other_integer_dtypes_are_named(name: str) -> None:
    model = tiny_model(name).eval()
    src, src_mask, tgt_in, _ = reversal_batch(4)
    expected = model(src, src_mask, tgt_in)
    torch.testing.assert_close(model(src.int(), src_mask, tgt_in.int()), expected, rtol=0, atol=0)  # (was refused)
    decoded = model.greedy_decode(src, src_mask, max_len=4, bos=BOS, eos=EOS)
    assert torch.equal(model.greedy_decode(src.int(), src_mask, max_len=4, bos=BOS, eos=EOS), decoded)
    for dtype in (torch.uint8, torch.int8, torch.int16):  # (what nn.Embedding refuses)
        with pytest.raises(ValueError, match=rf"token sources must be int64 or int32 ids \[batch, length\], got {dtype}"):
            model(src.to(dtype), src_mask, tgt_in)
        with pytest.raises(ValueError, match=rf"tgt_in must be int64 or int32 target ids \[batch, length >= 1\], got {dtype}"):
            model(src, src_mask, tgt_in.to(dtype))


def test_the_sequence_losses_take_int32_ids_as_int64_ones() -> None:
    model = tiny_model("gru").eval()
    src, src_mask, tgt_in, tgt_out = reversal_batch(4)
    digits = tgt_out.masked_fill(tgt_out <= EOS, IGNORE_INDEX)  # the reversed digits, padded as HINT's results
    batch = {"tokens": src, "mask": ~src_mask, "res_digits": digits}
    narrow = {**batch, "tokens": src.int(), "res_digits": digits.int()}
    assert sequence_loss(model, narrow, False) == sequence_loss(model, batch, False)  # (int32 failed in cross_entropy)
    answers = torch.cat([tgt_in, tgt_out[:, -1:]], dim=1)
    narrow_answers = (src.int(), src_mask, answers.int())
    assert answer_loss(model, narrow_answers) == answer_loss(model, (src, src_mask, answers))


@pytest.mark.parametrize(("dtype", "kept"), [(torch.float64, torch.float64), (torch.bfloat16, torch.float32)])
def test_the_sequence_losses_keep_a_float64_models_precision(dtype, kept) -> None:
    """A float64 model's losses were computed on logits rounded to float32; a half-precision model's are in float32."""
    model = tiny_model("gru").to(dtype).eval()
    src, src_mask, tgt_in, tgt_out = reversal_batch(4)
    digits = tgt_out.masked_fill(tgt_out <= EOS, IGNORE_INDEX)
    batch = {"tokens": src, "mask": ~src_mask, "res_digits": digits}
    _, _, hint_in, hint_out = hint_batch(batch, False)
    answers = torch.cat([tgt_in, tgt_out[:, -1:]], dim=1)  # (PAD is the mathematics task's padding id too)
    for loss, inputs, expected, ignored in (
        (sequence_loss(model, batch, False), hint_in, hint_out, IGNORE_INDEX),
        (answer_loss(model, (src, src_mask, answers)), answers[:, :-1], answers[:, 1:], PAD),
    ):
        logits = model(src, src_mask, inputs).to(kept).flatten(0, 1)
        reference = torch.nn.functional.cross_entropy(logits, expected.flatten(), ignore_index=ignored)
        assert loss.dtype == kept
        torch.testing.assert_close(loss, reference, rtol=1e-12 if kept == torch.float64 else 1e-6, atol=0)


def test_uint8_image_windows_read_as_their_pixels_over_255() -> None:
    model = tiny_model("transformer_rel", kind="image").eval()
    pixels = torch.randint(0, 256, (2, 4, 1, 16, 16), dtype=torch.uint8)
    src_mask, tgt_in = torch.zeros(2, 4, dtype=torch.bool), torch.full((2, 3), BOS)
    torch.testing.assert_close(model(pixels, src_mask, tgt_in), model(pixels.float() / 255, src_mask, tgt_in))
    torch.testing.assert_close(model(pixels.double() / 255, src_mask, tgt_in), model(pixels.float() / 255, src_mask, tgt_in))
    model.double()  # (the pixels were divided in float32, off by 1e-9 in the output)
    torch.testing.assert_close(model(pixels, src_mask, tgt_in), model(pixels.double() / 255, src_mask, tgt_in), rtol=0, atol=0)


def test_front_ends_called_alone_name_a_mask_that_does_not_fit() -> None:
    tokens, images = torch.zeros(2, 3, dtype=torch.long), torch.rand(2, 3, 1, 16, 16)
    for front_end, src in (
        (build_front_end("symbol", 8, vocab_size=5), tokens),
        (build_front_end("image", 8, image_size=16), images),
    ):
        with pytest.raises(ValueError, match="src_mask must be a bool tensor"):
            front_end(src, torch.zeros(2, 3, dtype=torch.long))
        with pytest.raises(ValueError, match=r"and src_mask \(2, 2\) disagree on \[batch, length\]"):
            front_end(src, torch.zeros(2, 2, dtype=torch.bool))


@pytest.mark.parametrize("boundaries", [False, True])
@pytest.mark.parametrize("kind", ["symbol", "image"])
def test_front_ends_called_alone_name_a_source_that_is_no_tensor(kind: str, boundaries: bool) -> None:
    """A list or numpy array of sources failed on ``src.dim()`` with an AttributeError."""
    front_end = build_front_end(kind, 8, boundaries=boundaries, **front_options(kind, 5))
    src = torch.zeros(2, 3, dtype=torch.long) if kind == "symbol" else torch.rand(2, 3, 1, 16, 16)
    for given in (src.tolist(), src.numpy()):
        with pytest.raises(TypeError, match=f"src must be a torch.Tensor, got {type(given).__name__}"):
            front_end(given, torch.zeros(2, 3, dtype=torch.bool))


@pytest.mark.parametrize("name", ["gru_att", "transformer"])
def test_a_decoding_step_names_tokens_that_are_not_one_id_per_source(name: str) -> None:
    model = tiny_model(name).eval()
    src, src_mask, _, _ = reversal_batch(2)
    state = model.start_decoding(src, src_mask)
    with pytest.raises(
        ValueError, match=r"tokens must be int64 or int32 target ids \[2\] \(one per source\), got torch.int64 \(2, 1\)"
    ):
        model.decode_step(state, torch.full((2, 1), BOS))
    with pytest.raises(ValueError, match=r"step token ids must lie in \[0, 13\), got 1..20"):
        model.decode_step(state, torch.tensor([1, 20]))
    assert model.decode_step(state, torch.full((2,), BOS)).shape == (2, 13)


def test_an_encoder_of_another_width_than_the_front_end_was_built_for_is_named() -> None:
    front_end = ImageWindowFrontEnd(SmallCNN(1, 64, input_size=16), 32, 8)
    with pytest.raises(ValueError, match="the encoder gives 64 features per window, the front end was built for 32"):
        front_end(torch.rand(2, 3, 1, 16, 16), torch.zeros(2, 3, dtype=torch.bool))


@pytest.mark.parametrize(("name", "boundaries"), [*((name, False) for name in VARIANTS), ("gru_att", True)])
def test_every_model_maps_an_empty_batch_to_empty_outputs(name: str, boundaries: bool) -> None:
    """The recurrent models refused an empty batch (torch cannot pack one) where the Transformers gave empty logits."""
    src, src_mask, tgt_in, _ = reversal_batch(4)
    src, src_mask, tgt_in = src[:0], src_mask[:0], tgt_in[:0]
    model = tiny_model(name, boundaries=boundaries).eval()
    assert model(src, src_mask, tgt_in).shape == (0, tgt_in.shape[1], 13)
    assert model.decode_step(model.start_decoding(src, src_mask), tgt_in[:, 0]).shape == (0, 13)
    assert model.greedy_decode(src, src_mask, max_len=5, bos=BOS, eos=EOS).shape == (0, 1)


@pytest.mark.parametrize("name", ["lstm_att_bi", "gru_bi"])
def test_bidirectional_encoder_shapes(name: str) -> None:
    """hidden / 2 units per direction: memory [B, S, hidden], decoder state [decoder_layers, B, hidden]."""
    src, src_mask, tgt_in, _ = reversal_batch(8, seed=3)
    model = tiny_model(name, encoder_layers=2, decoder_layers=3).eval()
    assert model.encoder.bidirectional and model.encoder.hidden_size == 32 and model.encoder.num_layers == 2
    state = model.start_decoding(src, src_mask)
    assert state.memory.shape == (8, 5, 64)
    for part in state.hidden if name.startswith("lstm") else (state.hidden,):
        assert part.shape == (3, 8, 64)
    assert model(src, src_mask, tgt_in).shape == (8, tgt_in.shape[1], 13)
    assert model.decode_step(state, tgt_in[:, 0]).shape == (8, 13)


@pytest.mark.parametrize("name", ["lstm_att", "lstm_att_bi", "gru_bi"])
def test_only_a_bidirectional_encoder_sees_the_future(name: str) -> None:
    """Changing the last real source token changes the first memory position only with a backward pass;
    the backward pass starts at the last real token, not at the padding."""
    src = torch.tensor([[3, 4, 5, 0], [3, 4, 5, 6]])
    src_mask = torch.tensor([[False, False, False, True], [False] * 4])
    changed = src.clone()
    changed[0, 2], changed[1, 3] = 9, 9
    model = tiny_model(name, encoder_layers=2).eval()
    memory = model.start_decoding(src, src_mask).memory
    first_changes = ~torch.isclose(memory[:, 0], model.start_decoding(changed, src_mask).memory[:, 0]).all(dim=-1)
    assert first_changes.tolist() == [name.endswith("_bi")] * 2
    unpadded = model.start_decoding(src[:1, :3], src_mask[:1, :3]).memory
    torch.testing.assert_close(unpadded[0], memory[0, :3])


def test_bidirectional_option_is_off_by_default_and_checked() -> None:
    default = tiny_model("lstm_att")
    assert isinstance(default, RNNSeq2Seq) and not default.encoder.bidirectional and default.encoder.hidden_size == 64
    front = build_front_end("symbol", 32, vocab_size=SOURCE_VOCAB)
    with pytest.raises(ValueError, match="hidden must be even"):
        build_seq2seq("lstm_att", front, 13, hidden=63, bidirectional=True)
    with pytest.raises(ValueError, match="not to 'transformer'"):
        build_seq2seq("transformer", front, 13, bidirectional=True)


def test_a_transformer_wider_than_its_embeddings_projects_them_and_learns() -> None:
    """Embeddings of 16 in a post-norm Transformer of width 32 (the HINT release's 128 in 512): both
    embeddings go through a trained linear map, decoding stays consistent, and the model overfits."""
    torch.manual_seed(0)
    front = build_front_end("symbol", 16, vocab_size=SOURCE_VOCAB)
    model = build_seq2seq(
        "transformer_rel_uni", front, 13, dim=32, hidden=64, heads=4, encoder_layers=2, dropout=0.0, pre_norm=False
    )
    assert isinstance(model, TransformerSeq2Seq) and model.dim == 32
    for projection in (model.source_projection, model.target_projection):
        assert (projection.in_features, projection.out_features) == (16, 32)
    src, src_mask, tgt_in, tgt_out = reversal_batch()
    assert model.encode(src, src_mask).shape == (64, 5, 32)
    before = model.source_projection.weight.detach().clone()
    assert overfit(model, src, src_mask, tgt_in, tgt_out, steps=200) == 1.0
    assert not torch.equal(before, model.source_projection.weight)
    cached = model.greedy_decode(src[:8], src_mask[:8], max_len=7, bos=BOS, eos=EOS, use_cache=True)
    assert torch.equal(cached, model.greedy_decode(src[:8], src_mask[:8], max_len=7, bos=BOS, eos=EOS, use_cache=False))


def test_equal_embedding_and_width_add_no_projection() -> None:
    model = tiny_model("transformer_rel_uni")
    assert isinstance(model.source_projection, torch.nn.Identity)
    assert isinstance(model.target_projection, torch.nn.Identity)
    wider = build_seq2seq(
        "transformer_rel_uni",
        build_front_end("symbol", 32, vocab_size=SOURCE_VOCAB),
        13,
        dim=64,
        hidden=64,
        heads=4,
        encoder_layers=2,
    )
    extra = 2 * (32 * 64 + 64)  # the two projections
    own = sum(p.numel() for name, p in wider.named_parameters() if "projection" in name)
    assert own == extra


def test_boundary_markers_frame_every_source_with_start_and_end() -> None:
    torch.manual_seed(0)
    front = BoundaryMarkers(TokenFrontEnd(SOURCE_VOCAB, 4))
    src = torch.tensor([[3, 4, 5], [6, 7, 0]])
    src_mask = torch.tensor([[False, False, False], [False, False, True]])
    framed = front(src, src_mask)
    assert framed.shape == (2, 5, 4)
    assert torch.equal(front.output_mask(src_mask), torch.tensor([[False] * 5, [False] * 4 + [True]]))
    table = front.front_end.embedding.weight
    for row, length in enumerate((3, 2)):
        torch.testing.assert_close(framed[row, 0], front.start)
        torch.testing.assert_close(framed[row, 1 : length + 1], table[src[row, :length]])
        torch.testing.assert_close(framed[row, length + 1], front.end)
    assert torch.equal(framed[1, 4], torch.zeros(4))
    framed.sum().backward()
    assert torch.equal(front.start.grad, torch.full((4,), 2.0)) and torch.equal(front.end.grad, torch.full((4,), 2.0))
    with pytest.raises(ValueError, match="right-padded"):
        front.output_mask(torch.tensor([[True, False, False]]))


@pytest.mark.parametrize("name", ["transformer_rel_uni", "transformer", "gru_att", "lstm"])
def test_framed_sources_ignore_extra_padding_and_decode_alike_with_a_cache(name: str) -> None:
    src, src_mask, tgt_in, _ = reversal_batch(8, seed=3)
    model = tiny_model(name, boundaries=True).eval()
    longer = torch.nn.functional.pad(src, (0, 3))
    longer_mask = torch.nn.functional.pad(src_mask, (0, 3), value=True)
    torch.testing.assert_close(model(src, src_mask, tgt_in), model(longer, longer_mask, tgt_in))
    cached = model.greedy_decode(src, src_mask, max_len=8, bos=BOS, eos=EOS, use_cache=True)
    assert torch.equal(cached, model.greedy_decode(src, src_mask, max_len=8, bos=BOS, eos=EOS, use_cache=False))


def test_a_model_over_framed_sources_overfits_a_batch_of_64() -> None:
    src, src_mask, tgt_in, tgt_out = reversal_batch()
    assert overfit(tiny_model("transformer_rel_uni", boundaries=True), src, src_mask, tgt_in, tgt_out, steps=200) == 1.0


@pytest.mark.parametrize("name", ["gru_att", "transformer_rel"])
def test_a_non_finite_pixel_is_named_at_its_index_in_the_source_as_given(name: str) -> None:
    """Left padding is moved behind the real windows before the front end reads them: the front end named the NaN at
    window 1 of the moved source, not at window 2 where the caller put it."""
    sizes = dict(heads=2) if name.startswith("transformer") else {}
    model = build_seq2seq(name, build_front_end("image", 8, cnn="small", image_size=16), 5, hidden=8, encoder_layers=1, **sizes)
    src = torch.rand(1, 3, 1, 16, 16)
    src[0, 2, 0, 5, 7] = math.nan
    src_mask = torch.tensor([[True, False, False]])
    with pytest.raises(ValueError, match=re.escape("src must be finite, got nan at index [0, 2, 0, 5, 7]")):
        model.eval().greedy_decode(src, src_mask, max_len=3, bos=1, eos=2)
    with pytest.raises(ValueError, match=re.escape("src must be finite, got nan at index [0, 2, 0, 5, 7]")):
        model(src, src_mask, torch.ones(1, 2, dtype=torch.long))


@hypothesis.settings(max_examples=20, deadline=None)
@hypothesis.given(st.integers(0, 1), st.integers(0, 3), st.sampled_from([255.0, 1.5, -0.25, math.nan, math.inf]))
def test_image_sources_outside_0_1_or_not_finite_are_refused(row: int, position: int, bad: float) -> None:
    """Pixels 0..255 given as floats were read as saturated white, and a NaN pixel made its output NaN, silently."""
    front_end = build_front_end("image", 8, cnn="small", image_size=16).eval()
    src = torch.rand(2, 4, 1, 16, 16)
    src[row, position, 0, 3, 5] = bad
    message = "must be finite" if not math.isfinite(bad) else r"float images must hold intensities in \[0, 1\]"
    with pytest.raises(ValueError, match=message):
        front_end(src, torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"images must be uint8 pixels or floats in \[0, 1\], got torch.int16"):
        front_end(torch.zeros(2, 4, 1, 16, 16, dtype=torch.int16), torch.zeros(2, 4, dtype=torch.bool))


@pytest.mark.parametrize("name", ["gru_att", "transformer_rel"])
@pytest.mark.parametrize("padding", [-1.0, 255.0])
def test_what_padding_windows_hold_is_never_read_nor_refused(name: str, padding: float) -> None:
    """Padding windows never reach the CNN, yet a value outside [0, 1] there was refused (token sources take any id
    at padding). A NaN there is still refused, by the model, for every front end: one of one's own may embed it."""
    sizes = dict(heads=2) if name.startswith("transformer") else {}
    model = build_seq2seq(name, build_front_end("image", 8, cnn="small", image_size=16), 5, hidden=8, encoder_layers=1, **sizes)
    model.eval()
    src, src_mask = torch.rand(2, 3, 1, 16, 16), torch.tensor([[False, False, True], [True, False, True]])
    filled = src.masked_fill(src_mask[..., None, None, None], padding)
    tgt_in = torch.ones(2, 2, dtype=torch.long)
    torch.testing.assert_close(model(filled, src_mask, tgt_in), model(src, src_mask, tgt_in), rtol=0, atol=0)
    assert torch.equal(model.greedy_decode(filled, src_mask, max_len=3, bos=1, eos=2),
                       model.greedy_decode(src, src_mask, max_len=3, bos=1, eos=2))  # fmt: skip
    with pytest.raises(ValueError, match=re.escape("src must be finite, got nan at index [0, 2, 0, 0, 0]")):
        model(src.masked_fill(src_mask[..., None, None, None], math.nan), src_mask, tgt_in)
