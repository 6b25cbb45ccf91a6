"""Padding anywhere in a row: :func:`real_first` against a per-row reference, models that read a padded
source as the sequence of its real positions; value checks that run on the CPU only, and Transformer
training steps that read no value on the host elsewhere."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_seq2seq import BOS, EOS, reversal_batch, tiny_model

from neurosym.layers.value_checks import values_are_readable
from neurosym.models import build_front_end, build_seq2seq
from neurosym.models.seq2seq import BoundaryMarkers, TokenFrontEnd
from neurosym.models.seq2seq.base import prepared_source
from neurosym.models.seq2seq.padding import real_first
from neurosym.models.seq2seq.targets import teacher_forcing_pair


@st.composite
def padded_rows(draw) -> tuple[torch.Tensor, torch.Tensor]:
    """``values [B, S, 2]`` and a padding mask ``[B, S]`` with padding anywhere (rows may be all padding)."""
    batch, length = draw(st.integers(1, 4)), draw(st.integers(1, 7))
    padding = torch.tensor(
        draw(st.lists(st.lists(st.booleans(), min_size=length, max_size=length), min_size=batch, max_size=batch))
    )
    values = torch.arange(batch * length * 2).reshape(batch, length, 2)
    return values, padding


@settings(max_examples=60, deadline=None)
@given(padded_rows())
def test_real_first_moves_each_rows_real_positions_to_its_front_in_order(rows) -> None:
    values, padding = rows
    aligned, aligned_padding = real_first(values, padding)
    for row in range(values.shape[0]):
        real = values[row][~padding[row]]
        count = real.shape[0]
        assert torch.equal(aligned[row, :count], real)
        assert torch.equal(aligned_padding[row], torch.arange(values.shape[1]) >= count)
        assert sorted(aligned[row, count:, 0].tolist()) == sorted(values[row][padding[row]][:, 0].tolist())


@settings(max_examples=60, deadline=None)
@given(padded_rows())
def test_boundary_markers_frame_right_padded_sources_and_name_any_other(rows) -> None:
    values, padding = rows
    torch.manual_seed(0)
    front = BoundaryMarkers(TokenFrontEnd(values.numel(), 4))
    src = values[..., 0]
    if bool((padding[:, :-1] & ~padding[:, 1:]).any()):  # a real position after a padding one
        with pytest.raises(ValueError, match="right-padded"):
            front(src, padding)
        return
    framed, table = front(src, padding), front.front_end.embedding.weight
    for row, length in enumerate((~padding).sum(dim=1).tolist()):
        assert torch.equal(framed[row, 0], front.start)
        assert torch.equal(framed[row, 1 : length + 1], table[src[row, :length]])
        assert torch.equal(framed[row, length + 1], front.end)
        assert not framed[row, length + 2 :].any()


def _scatter_padding(src: torch.Tensor, src_mask: torch.Tensor, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The same sources with three padding positions added and every row's positions (real and padding)
    shuffled among themselves while the real ones keep their order."""
    src = torch.nn.functional.pad(src, (0, 3))
    src_mask = torch.nn.functional.pad(src_mask, (0, 3), value=True)
    moved_src, moved_mask = torch.empty_like(src), torch.empty_like(src_mask)
    for row in range(src.shape[0]):
        places = torch.randperm(src.shape[1], generator=generator)
        real_places = places[: int((~src_mask[row]).sum())].sort().values
        padding_places = places[real_places.numel() :]
        moved_src[row, real_places] = src[row][~src_mask[row]]
        moved_src[row, padding_places] = 7  # any id: padding is never read
        moved_mask[row, real_places], moved_mask[row, padding_places] = False, True
    return moved_src, moved_mask


@pytest.mark.parametrize("boundaries", [False, True])
@pytest.mark.parametrize("name", ["transformer_rel_uni", "transformer", "gru_att", "lstm"])
def test_a_source_means_its_real_positions_wherever_the_padding_is(name: str, boundaries: bool) -> None:
    src, src_mask, tgt_in, _ = reversal_batch(8, seed=5)
    moved_src, moved_mask = _scatter_padding(src, src_mask, torch.Generator().manual_seed(0))
    assert bool((moved_mask[:, :-1] & ~moved_mask[:, 1:]).any())  # some row is not right-padded
    model = tiny_model(name, boundaries=boundaries).eval()
    torch.testing.assert_close(model(moved_src, moved_mask, tgt_in), model(src, src_mask, tgt_in))
    decoded = model.greedy_decode(moved_src, moved_mask, max_len=8, bos=BOS, eos=EOS)
    assert torch.equal(decoded, model.greedy_decode(src, src_mask, max_len=8, bos=BOS, eos=EOS))


def test_value_checks_run_where_reading_values_is_free() -> None:
    assert values_are_readable(torch.zeros(2))
    assert not values_are_readable(torch.zeros(2, device="meta"))  # shapes only: no values to read
    empty = torch.ones(2, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="source 0 of the batch is empty"):
        prepared_source(torch.zeros(2, 3, dtype=torch.long), empty)
    src, mask = prepared_source(torch.zeros(2, 3, dtype=torch.long, device="meta"), empty.to("meta"))
    assert src.shape == (2, 3) and mask.shape == (2, 3) and mask.dtype == torch.bool


@pytest.mark.parametrize("relative", ["xl_clipped", "xl", "shaw"])
@pytest.mark.parametrize("name", ["transformer", "transformer_rel", "transformer_rel_uni"])
def test_a_transformer_training_step_reads_no_value_on_the_host_off_the_cpu(name: str, relative: str) -> None:
    """On a GPU each host read waits for the queued kernels. The meta device holds shapes only (any read
    raises): targets, forward, loss and backward of every Transformer run there, dropout on."""
    front = build_front_end("symbol", 32, vocab_size=10, boundaries=True)
    options = {} if name == "transformer" else {"relative": relative}  # (the plain Transformer has no relative encoding)
    model = build_seq2seq(name, front, 13, hidden=64, heads=4, encoder_layers=2, dropout=0.1, **options).to("meta")
    targets = torch.zeros(4, 3, dtype=torch.long, device="meta")
    tgt_in, tgt_out = teacher_forcing_pair(targets, BOS, EOS, ignore_index=-100)
    src, src_mask = torch.zeros(4, 6, dtype=torch.long, device="meta"), torch.zeros(4, 6, dtype=torch.bool, device="meta")
    logits = model(src, src_mask, tgt_in)
    assert logits.shape == (4, 4, 13)
    torch.nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=-100).backward()
