"""Target sequences for teacher forcing, and decoded sequences brought to the same layout."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from neurosym.models.seq2seq.padding import real_first
from neurosym.training.checks import int_at_least, is_int


def teacher_forcing_pair(
    sequences: torch.Tensor, bos: int, eos: int, ignore_index: int = -100
) -> tuple[torch.Tensor, torch.Tensor]:
    """Decoder input and expected output for padded target ``sequences [B, K]``.

    Padding in ``sequences`` is ``ignore_index``, anywhere in a row: a row's tokens are read in order with
    its padding left out (:func:`~neurosym.models.seq2seq.padding.real_first`). Returns ``tgt_in [B, K+1]``
    = ``bos`` then the tokens (padding replaced by ``eos``; the causal decoder never looks at it for real
    positions) and ``tgt_out [B, K+1]`` = the tokens, then ``eos``, then ``ignore_index``. ``ValueError`` for
    ``sequences`` that are no int64 or int32 tensor ``[B, K]``, a ``bos`` or ``eos`` that is no int of at least 0 and an
    ``ignore_index`` that is no int.
    """
    if not (isinstance(sequences, torch.Tensor) and sequences.dtype in (torch.int64, torch.int32) and sequences.dim() == 2):
        raise ValueError(  # (uint8 failed inside torch: its padding -100 does not fit)
            "target sequences must be an int64 or int32 tensor of shape [batch, length], got "
            + (f"{sequences.dtype} {tuple(sequences.shape)}" if isinstance(sequences, torch.Tensor) else type(sequences).__name__)
        )
    for name, token in (("bos", bos), ("eos", eos)):  # (a bos of 10.5 was read as 10, one of -3 taken)
        int_at_least(token, name, 0)
    if not is_int(ignore_index):
        raise ValueError(f"ignore_index must be an int, got {ignore_index!r}")
    sequences, padding = real_first(sequences, sequences == ignore_index)
    lengths = (~padding).sum(dim=1)
    batch = sequences.shape[0]
    tgt_in = torch.cat([sequences.new_full((batch, 1), bos), sequences.masked_fill(padding, eos)], dim=1)
    tgt_out = F.pad(sequences, (0, 1), value=ignore_index)
    tgt_out[torch.arange(batch, device=sequences.device), lengths] = eos
    return tgt_in, tgt_out


def align_for_exact_match(
    decoded: torch.Tensor, tgt_out: torch.Tensor, eos: int, ignore_index: int = -100
) -> tuple[torch.Tensor, torch.Tensor]:
    """``decoded [B, L]`` (from ``greedy_decode``, ``eos``-filled after its first ``eos``) and
    ``tgt_out [B, K]`` (from :func:`teacher_forcing_pair`), both filled with ``eos`` to width
    ``max(L, K)``: rows are then equal exactly when the prediction up to its ``eos`` equals the target."""
    if decoded.dim() != 2 or tgt_out.dim() != 2 or len(decoded) != len(tgt_out):
        raise ValueError(
            f"decoded [B, L] and tgt_out [B, K] must hold the same B rows, got {list(decoded.shape)} and {list(tgt_out.shape)}"
        )
    if decoded.shape[1] < tgt_out.shape[1] and not bool((decoded == eos).any(dim=1).all()):
        raise ValueError(
            f"a prediction was cut at {decoded.shape[1]} tokens before its eos: decode with max_len >= {tgt_out.shape[1]}"
        )
    width = max(decoded.shape[1], tgt_out.shape[1])
    decoded = F.pad(decoded, (0, width - decoded.shape[1]), value=eos)
    expected = F.pad(tgt_out.masked_fill(tgt_out == ignore_index, eos), (0, width - tgt_out.shape[1]), value=eos)
    return decoded, expected
