"""The interface shared by every sequence-to-sequence model, and its greedy decoder."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
from torch import nn

from neurosym.layers.shape_checks import check_tensor
from neurosym.layers.value_checks import TOKEN_ID_DTYPES, check_finite, check_token_ids, values_are_readable
from neurosym.models.seq2seq.padding import real_first
from neurosym.training.checks import int_at_least, is_int


class Seq2Seq(nn.Module, ABC):
    """An encoder–decoder mapping a source sequence to target-token logits.

    * ``src``: token ids ``[B, S]`` (int64 or int32) or image windows ``[B, S, C, H, W]`` (whatever the front end takes);
    * ``src_mask``: ``[B, S]`` bool, ``True`` marks source padding;
    * ``tgt_in``: ``[B, T]`` target ids (int64 or int32) starting with the begin-of-sequence token (teacher forcing).

    ``forward(src, src_mask, tgt_in) -> logits [B, T, target_vocab]``; an empty batch (``B = 0``) gives empty logits,
    and :meth:`greedy_decode` empty tokens ``[0, 1]``. Subclasses implement
    :meth:`start_decoding` and :meth:`_step` (the unchecked :meth:`decode_step`), which :meth:`greedy_decode` drives.
    """

    target_vocab: int

    @abstractmethod
    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """``src`` (``[B, S]`` ids or ``[B, S, C, H, W]`` windows), ``src_mask [B, S]`` (``True`` marks padding) and the
        teacher-forced ``tgt_in [B, T]`` -> logits ``[B, T, target_vocab]``."""

    @abstractmethod
    def start_decoding(self, src: torch.Tensor, src_mask: torch.Tensor, *, use_cache: bool = True) -> Any:
        """Encode the source and return the decoder's initial state."""

    def decode_step(self, state: Any, tokens: torch.Tensor) -> torch.Tensor:
        """Feed the last emitted ``tokens [B]``; update ``state`` in place; return logits ``[B, V]``."""
        check_step_tokens(tokens, len(state.memory), self.target_vocab)
        return self._step(state, tokens)

    @abstractmethod
    def _step(self, state: Any, tokens: torch.Tensor) -> torch.Tensor:
        """:meth:`decode_step` on tokens known to fit (the greedy decoder's own: no check reads them back)."""

    @torch.no_grad()
    def greedy_decode(
        self,
        src: torch.Tensor,
        src_mask: torch.Tensor,
        max_len: int,
        bos: int,
        eos: int,
        *,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """Most likely token at every step, ``[B, L]`` with ``L <= max_len`` (without ``bos``).

        Decoding stops when every sequence has produced ``eos``; after its ``eos`` a sequence is filled
        with ``eos`` (a negative ``eos`` is never produced: ``max_len`` tokens are decoded). ``use_cache=False``
        makes Transformers recompute the whole prefix at every step (slower, same result); recurrent decoders are
        incremental either way.
        """
        max_len = int_at_least(max_len, "max_len", 1)  # a numpy int too, as bos and eos
        # a bos of 0.5 was read as token 0; an eos of 99 (not a target id) never stopped decoding. A negative eos (the
        # speed benchmark's -1) is one no step emits, on purpose: max_len tokens are decoded.
        if not is_int(bos) or not 0 <= bos < self.target_vocab:
            raise ValueError(f"bos ({bos!r}) must be a target id in [0, {self.target_vocab})")
        if not is_int(eos) or eos >= self.target_vocab:
            raise ValueError(
                f"eos ({eos!r}) must be a target id in [0, {self.target_vocab}) (or negative: none, decode max_len tokens)"
            )
        state = self.start_decoding(src, src_mask, use_cache=use_cache)  # (checks src and src_mask first)
        batch = src_mask.shape[0]
        tokens = torch.full((batch,), bos, dtype=torch.long, device=src_mask.device)
        finished = torch.zeros(batch, dtype=torch.bool, device=src_mask.device)
        emitted = []
        for _ in range(max_len):
            tokens = self._step(state, tokens).argmax(-1).masked_fill(finished, eos)
            emitted.append(tokens)
            finished = finished | (tokens == eos)
            if bool(finished.all()):
                break
        return torch.stack(emitted, dim=1)


def check_targets(tgt_in: torch.Tensor, src_mask: torch.Tensor, target_vocab: int) -> None:
    """Raise ``ValueError`` unless ``tgt_in`` is int64 or int32 target ids ``[B, T]`` (``T >= 1``) for the ``B`` sources of
    ``src_mask [B, S]`` (itself checked first, :func:`check_padding_mask`), each in ``[0, target_vocab)`` (where values
    are readable); ``TypeError`` for a non-tensor."""
    check_tensor(tgt_in, "tgt_in")
    check_padding_mask(src_mask)  # (a mask [S] was read as S sources: "tgt_in has B targets for S sources")
    if tgt_in.dtype not in TOKEN_ID_DTYPES or tgt_in.dim() != 2 or tgt_in.shape[1] == 0:
        raise ValueError(
            f"tgt_in must be int64 or int32 target ids [batch, length >= 1], got {tgt_in.dtype} {tuple(tgt_in.shape)}"
        )
    if tgt_in.shape[0] != src_mask.shape[0]:
        raise ValueError(f"tgt_in has {tgt_in.shape[0]} targets for {src_mask.shape[0]} sources")
    check_token_ids(tgt_in, target_vocab, "target")


def check_step_tokens(tokens: torch.Tensor, batch: int, target_vocab: int) -> None:
    """Raise ``ValueError`` unless ``tokens`` is the ``batch`` last emitted target ids ``[batch]``, each in
    ``[0, target_vocab)`` (where values are readable); ``TypeError`` for a non-tensor."""
    check_tensor(tokens, "tokens")
    if tokens.dtype not in TOKEN_ID_DTYPES or tuple(tokens.shape) != (batch,):
        raise ValueError(
            f"tokens must be int64 or int32 target ids [{batch}] (one per source), got {tokens.dtype} {tuple(tokens.shape)}"
        )
    check_token_ids(tokens, target_vocab, "step")


def check_padding_mask(src_mask: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``src_mask`` is a bool ``[batch, length]`` (``TypeError`` unless it is a tensor)."""
    check_tensor(src_mask, "src_mask")
    if src_mask.dtype != torch.bool or src_mask.dim() != 2:
        raise ValueError(
            f"src_mask must be a bool tensor [batch, length] (True = padding), got {src_mask.dtype} "
            f"with shape {tuple(src_mask.shape)}"
        )


def check_source_mask(src: torch.Tensor, src_mask: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``src_mask`` is a bool ``[batch, length]`` matching ``src``'s first two sizes
    (``TypeError`` unless both are tensors)."""
    check_tensor(src, "src")
    check_padding_mask(src_mask)
    if tuple(src.shape[:2]) != tuple(src_mask.shape):
        raise ValueError(f"src {tuple(src.shape)} and src_mask {tuple(src_mask.shape)} disagree on [batch, length]")


def padding_zeroed(src: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
    """``src [B, S, ...]`` with every padding position (``src_mask [B, S]`` True) zero, for checks of the real
    positions' values that name an index in ``src`` as given (what padding holds is never read)."""
    return src.masked_fill(src_mask.reshape(*src_mask.shape, *[1] * (src.dim() - 2)), 0)


def prepared_source(src: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(src, src_mask)`` checked and with every row's real positions first (:func:`real_first`), which is
    what the encoders and :class:`~neurosym.models.seq2seq.front_ends.BoundaryMarkers` assume; raises a clear
    error when the two do not fit together, or (where values are readable, see
    :func:`values_are_readable`) when a source is empty or holds a value that is not finite (named with its index in
    ``src`` as given: the front end, which sees the reordered source, would name another; padding too, since a front
    end of one's own may embed it, and a NaN there reaches every real position through masked attention, 0 · NaN)."""
    check_source_mask(src, src_mask)
    check_finite(src, "src")
    if values_are_readable(src_mask):
        empty = src_mask.all(dim=1)
        if bool(empty.any()):
            raise ValueError(f"source {int(empty.nonzero()[0, 0])} of the batch is empty (all padding)")
    return real_first(src, src_mask)
