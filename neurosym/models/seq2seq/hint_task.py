"""HINT as a sequence-to-sequence task: the result's digits as targets, the teacher-forced loss, and exact
match per test subset under greedy decoding (the seq2seq baselines of ``neurosym hint``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from neurosym.data.hint import IGNORE_INDEX, PAD_ID, HintSymbolDataset
from neurosym.metrics import sequence_matches
from neurosym.models.seq2seq.base import Seq2Seq
from neurosym.models.seq2seq.targets import align_for_exact_match, teacher_forcing_pair
from neurosym.semantics import HINT_FEWSHOT_SEMANTICS
from neurosym.syntax import canonical_sentence, parse
from neurosym.training.checks import int_at_least
from neurosym.training.device import at_least_float32, mixed_precision
from neurosym.training.modes import evaluation_mode

BOS, EOS = 10, 11
"""Target ids: the digits 0–9 are their own ids, then begin and end of sequence."""
TARGET_VOCAB = 12


def hint_batch(batch: dict[str, Any], image_input: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(src, src_mask, tgt_in, tgt_out)`` of a :func:`collate_hint` batch (``src_mask`` True = padding); ``ValueError``
    naming what is missing where the batch lacks the source it is asked for (``image_input``: images, else tokens)."""
    source = "images" if image_input else "tokens"
    if source not in batch:
        raise ValueError(
            f"the batch holds no {source!r} for a model of {'image' if image_input else 'symbol'} input (it holds "
            f"{', '.join(sorted(batch))})" + (": collate a HintImageDataset's items" if image_input else "")
        )
    src = batch[source]
    tgt_in, tgt_out = teacher_forcing_pair(batch["res_digits"], BOS, EOS, IGNORE_INDEX)
    return src, ~batch["mask"], tgt_in, tgt_out


def sequence_loss(model: nn.Module, batch: dict[str, Any], image_input: bool) -> torch.Tensor:
    """Mean cross-entropy of the next target token under teacher forcing (token and result ids int64 or int32), in
    float32, or in the logits' dtype where it is wider (a float64 model's loss was rounded to float32)."""
    src, src_mask, tgt_in, tgt_out = hint_batch(batch, image_input)
    logits = model(src, src_mask, tgt_in)
    return F.cross_entropy(at_least_float32(logits.flatten(0, 1)), tgt_out.flatten().long(), ignore_index=IGNORE_INDEX)


def exact_match_by_subset(
    model: Seq2Seq, batches: Iterable[dict[str, Any]], image_input: bool, device: torch.device
) -> dict[str, float]:
    """Greedy-decoding exact match (in %) per ``eval`` subset, plus ``"all"`` over every example (``ValueError``
    when ``batches`` holds none: no batch, or only empty ones). Decoding runs in evaluation mode (no dropout: the same
    scores at every call); each module's train/eval mode is restored after."""
    correct: dict[str, list[torch.Tensor]] = defaultdict(list)
    for batch in batches:
        src, src_mask, _, tgt_out = (t.to(device) for t in hint_batch(batch, image_input))
        with mixed_precision(device), evaluation_mode(model):
            decoded = model.greedy_decode(src, src_mask, tgt_out.shape[1], BOS, EOS)
        matches = sequence_matches(*align_for_exact_match(decoded, tgt_out, EOS, IGNORE_INDEX)).cpu()
        correct["all"].append(matches)
        for subset in set(batch["eval"]) - {""}:
            rows = torch.tensor([name == subset for name in batch["eval"]])
            correct[subset].append(matches[rows])
    if not sum(len(matches) for matches in correct["all"]):  # (no batch, or only empty ones: each mean missing or NaN)
        raise ValueError("exact_match_by_subset: the batches hold no example to evaluate")
    return {name: 100.0 * float(torch.cat(parts).double().mean()) for name, parts in correct.items()}


def answer_expressions(model: Seq2Seq, sentences: Sequence[str], max_digits: int = 12) -> list[int | None]:
    """A symbol-input baseline's answers to ``sentences`` (``"3+4*(5-2)"``; whitespace and ``× ÷ −`` as the parser takes
    them): each encoded as its training data were, its result's digits decoded greedily (least significant first, as
    trained, at most ``max_digits``) and read as an integer; ``None`` where what is decoded is no number as the
    targets write one (and :func:`exact_match_by_subset` scores it wrong): no digit before the end of sequence, a
    token that is no digit, a leading zero (``05``), or no end of sequence within ``max_digits + 1`` tokens (a longer
    result than ``max_digits`` allows, or none). Decoding runs in evaluation mode (no dropout: the same
    answers at every call); each module's train/eval mode is restored after. A symbol outside the training vocabulary
    raises ``ValueError`` naming it and its position, a sentence that is no expression of HINT's grammar (few-shot
    concepts included) a :class:`~neurosym.syntax.ParseError` naming where, and a ``max_digits`` below 1
    ``ValueError``."""
    if isinstance(sentences, str):  # (each character would be read as an expression of its own)
        raise TypeError(f"answer_expressions takes a list of sentences, got one str {sentences!r}: give [{sentences!r}]")
    max_digits = int_at_least(max_digits, "max_digits", 1)
    vocabulary = HintSymbolDataset([])  # the training data's symbol ids
    encoded = []
    for text in sentences:
        sentence = canonical_sentence(text)
        if not sentence:
            raise ValueError(f"{text!r} has no symbol to read")
        encoded.append(vocabulary.encode(sentence))
        parse(sentence, HINT_FEWSHOT_SEMANTICS.concepts)  # a model answers any string: "3+(" is no expression
    if not encoded:
        return []
    device = next(model.parameters()).device
    tokens = torch.nn.utils.rnn.pad_sequence(encoded, batch_first=True, padding_value=PAD_ID).to(device)
    with evaluation_mode(model):
        decoded = model.greedy_decode(tokens, tokens == PAD_ID, max_digits + 1, BOS, EOS).tolist()
    return [_read_digits(row) for row in decoded]


def _read_digits(row: list[int]) -> int | None:
    """The number whose digits (least significant first) ``row`` holds before its first ``EOS``; ``None`` without
    an ``EOS`` (the result went on past the tokens decoded), with no digit before it, with a token that is no
    digit or with a leading zero (``[5, 0]``: no target is written so)."""
    if EOS not in row:
        return None
    digits = row[: row.index(EOS)]
    if not digits or max(digits) >= 10 or (len(digits) > 1 and digits[-1] == 0):
        return None
    return int("".join(map(str, reversed(digits))))
