"""Character-level encoding of DeepMind Mathematics text and padded batching.

Ids: ``0`` = padding, ``1`` = beginning of sequence, ``2`` = end of sequence, then the 95 characters of
:data:`~neurosym.data.mathematics.loader.ALPHABET` in order (``3`` is the space) — 98 ids in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from neurosym.data.mathematics.loader import ALPHABET, MathExample

PAD = 0
"""The id that pads a sequence."""
BOS = 1
"""The id that opens an answer (begin of sequence)."""
EOS = 2
"""The id that closes a question or an answer (end of sequence)."""
_OFFSET = 3
VOCAB_SIZE = _OFFSET + len(ALPHABET)
"""The number of token ids: :data:`PAD`, :data:`BOS`, :data:`EOS` and one per character of :data:`ALPHABET`."""
_CHAR_TO_ID = {char: index + _OFFSET for index, char in enumerate(ALPHABET)}


def encode(text: str, bos: bool = False, eos: bool = False) -> list[int]:
    """Ids of ``text``'s characters, optionally framed by BOS/EOS; a character outside the alphabet raises."""
    if not isinstance(text, str):
        raise TypeError(f"encode takes text, got {type(text).__name__} {text!r:.40}")
    ids = []
    for position, char in enumerate(text):
        if char not in _CHAR_TO_ID:
            raise ValueError(f"character {char!r} at position {position} of {text!r} is outside the alphabet")
        ids.append(_CHAR_TO_ID[char])
    return [BOS] * bos + ids + [EOS] * eos


SHOWN_SPECIAL = {PAD: "\u2400", BOS: "\u2402"}
"""How :func:`decode` shows PAD and BOS when asked: characters outside the alphabet, so that no answer equals them."""


def decode(ids: Sequence[int], show_special: bool = False) -> str:
    """Text of ``ids``: stops at the first EOS and skips PAD and BOS (a padded target), or, with ``show_special``
    (a model's prediction), writes them as :data:`SHOWN_SPECIAL`'s characters, so that a prediction with a PAD or
    BOS before its EOS equals no answer; an id outside the vocabulary raises."""
    if isinstance(ids, torch.Tensor | np.ndarray) and ids.ndim != 1:
        raise ValueError(f"decode takes one sequence of ids, got an array of shape {list(ids.shape)}")
    chars = []
    for position, index in enumerate(ids):
        value = index.item() if isinstance(index, torch.Tensor | np.generic) else index
        if not isinstance(value, int | float) or isinstance(value, bool):  # (int("5") would read a digit as an id)
            raise TypeError(f"id {value!r} at position {position} is not a number")
        if isinstance(value, float) and not value.is_integer():  # (int() would truncate it)
            raise ValueError(f"id {value} at position {position} is not an integer")
        index = int(value)
        if index == EOS:
            break
        if index in SHOWN_SPECIAL:
            if show_special:
                chars.append(SHOWN_SPECIAL[index])
            continue
        if not _OFFSET <= index < VOCAB_SIZE:
            raise ValueError(f"id {index} at position {position} is outside the vocabulary of {VOCAB_SIZE}")
        chars.append(ALPHABET[index - _OFFSET])
    return "".join(chars)


def pad_sequences(sequences: Sequence[Sequence[int]]) -> torch.Tensor:
    """Right-pad id lists with :data:`PAD` into a LongTensor ``[batch, longest]``."""
    if len(sequences) == 0:
        raise ValueError("cannot pad an empty list of sequences")
    rows = [_id_row(sequence, row) for row, sequence in enumerate(sequences)]
    batch = torch.full((len(rows), max(len(ids) for ids in rows)), PAD, dtype=torch.long)
    for row, ids in enumerate(rows):
        batch[row, : len(ids)] = ids
    return batch


def _id_row(sequence: Sequence[int], row: int) -> torch.Tensor:
    """Row ``row`` of a batch as a 1-d LongTensor; text, nesting and fractional ids raise rather than being truncated."""
    if isinstance(sequence, str | bytes):
        raise TypeError(f"row {row} is the text {sequence!r}, not a sequence of ids (encode it first)")
    try:
        ids = torch.as_tensor(sequence)
    except (TypeError, ValueError, RuntimeError) as error:  # None, text or ragged rows inside the row
        raise TypeError(f"row {row} must be a flat sequence of integer ids, got {sequence!r:.60}") from error
    if ids.dtype == torch.bool or ids.is_complex():
        raise TypeError(f"row {row} must hold integer ids, got {ids.dtype} values")
    if ids.dim() != 1:
        raise ValueError(f"row {row} must be a flat sequence of ids, got shape {list(ids.shape)}")
    if ids.is_floating_point() and not bool((ids == ids.round()).all() and ids.isfinite().all()):
        position = int(((ids != ids.round()) | ~ids.isfinite()).nonzero()[0])
        raise ValueError(f"id {ids[position].item():g} at position {position} of row {row} is not an integer")
    return ids.long()


@dataclass(frozen=True)
class EncodedBatch:
    """A padded batch: ``questions`` ``[B, S]`` (question ids then EOS) and ``answers`` ``[B, T]``
    (BOS, answer ids, EOS); both right-padded with :data:`PAD`."""

    questions: torch.Tensor
    answers: torch.Tensor

    def to(self, device: torch.device) -> EncodedBatch:
        """The batch with both tensors moved to ``device``."""
        return EncodedBatch(self.questions.to(device), self.answers.to(device))


def encode_batch(examples: Sequence[MathExample]) -> EncodedBatch:
    """Encode and pad a list of examples (usable as a DataLoader ``collate_fn``)."""
    return EncodedBatch(
        questions=pad_sequences([encode(e.question, eos=True) for e in examples]),
        answers=pad_sequences([encode(e.answer, bos=True, eos=True) for e in examples]),
    )
