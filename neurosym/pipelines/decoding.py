"""Grammar-constrained decoding: the most probable sentence that the HINT grammar accepts.

The HINT grammar (numbers, binary operators, round brackets) accepts exactly the strings of a
bracket-counting automaton whose state is ``(depth, expecting)``: ``expecting`` an *operand* (a number
or ``(``) or an *operator* (a binary operator or ``)``). A sentence is accepted when it ends expecting an
operator at depth 0. Precedence never changes which strings are accepted, so it plays no role here.

:func:`constrained_decode` runs exact Viterbi over that automaton, vectorised over a batch and over
depths, so every returned sentence is grammatical and no grammatical sentence is more probable.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

OPEN, CLOSE = "(", ")"
_OPERAND, _OPERATOR = 0, 1


@dataclass(frozen=True)
class TokenRoles:
    """Which vocabulary indices are numbers, binary operators and the two brackets.

    Built with :meth:`from_vocabulary`; symbols that are neither numbers, operators nor brackets are
    never emitted by the decoder.
    """

    vocabulary: tuple[str, ...]
    numbers: tuple[int, ...]
    operators: tuple[int, ...]
    open: int
    close: int

    @classmethod
    def from_vocabulary(
        cls, vocabulary: Sequence[str], numbers: Iterable[str], operators: Iterable[str]
    ) -> "TokenRoles":
        index = {symbol: i for i, symbol in enumerate(vocabulary)}
        missing = [s for s in (*numbers, *operators, OPEN, CLOSE) if s not in index]
        if missing:
            raise ValueError(f"symbols {missing} are not in the vocabulary {list(vocabulary)}")
        number_ids = tuple(index[s] for s in numbers)
        operator_ids = tuple(index[s] for s in operators)
        if not number_ids or not operator_ids:
            raise ValueError("the grammar needs at least one number and one operator symbol")
        return cls(tuple(vocabulary), number_ids, operator_ids, index[OPEN], index[CLOSE])


@dataclass(frozen=True)
class Decoded:
    """Decoder output: ``tokens`` [B, T] vocabulary indices (``-1`` past each length) and ``log_prob`` [B]."""

    tokens: torch.Tensor
    log_prob: torch.Tensor

    def sentences(self, vocabulary: Sequence[str]) -> list[str]:
        """The decoded sentences as strings of single-character symbols."""
        return ["".join(vocabulary[i] for i in row if i >= 0) for row in self.tokens.tolist()]


def _best_of(log_probs: torch.Tensor, ids: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Best score and its vocabulary index among ``ids``: both [B, T]."""
    index = torch.tensor(ids, device=log_probs.device)
    score, arg = log_probs.index_select(-1, index).max(dim=-1)
    return score, index[arg]


def constrained_decode(log_probs: torch.Tensor, lengths: torch.Tensor, roles: TokenRoles) -> Decoded:
    """Exact most probable grammatical sentence per example.

    Args:
        log_probs: [B, T, V] per-window log-probabilities (padding positions are ignored).
        lengths: [B] number of windows of each example, 1 <= length <= T.
        roles: the vocabulary's grammatical roles.

    Raises:
        ValueError: when a length admits no grammatical sentence (every HINT sentence has odd length).
    """
    batch, steps, _ = log_probs.shape
    lengths = lengths.to(log_probs.device)
    bad = ((lengths < 1) | (lengths > steps) | (lengths % 2 == 0)).nonzero().flatten().tolist()
    if bad:
        raise ValueError(
            f"no grammatical sentence has length {lengths[bad[0]].item()} (example {bad[0]}): "
            "HINT sentences have an odd number of symbols, at least 1"
        )
    depths = steps // 2 + 1
    neg_inf = torch.finfo(log_probs.dtype).min
    number_score, number_id = _best_of(log_probs, roles.numbers)
    operator_score, operator_id = _best_of(log_probs, roles.operators)
    open_score = log_probs[..., roles.open]
    close_score = log_probs[..., roles.close]

    # score[b, d, e]: best log-probability of a prefix ending in state (depth d, expecting e).
    score = log_probs.new_full((batch, depths, 2), neg_inf)
    score[:, 0, _OPERAND] = 0.0
    back_state, back_token = [], []
    flat = torch.arange(depths * 2, device=log_probs.device).view(depths, 2)
    for t in range(steps):
        new = log_probs.new_full((batch, depths, 2), neg_inf)
        prev = flat.expand(batch, depths, 2).clone()
        token = torch.full((batch, depths, 2), -1, dtype=torch.long, device=log_probs.device)
        candidates = [
            # (target depth slice, source depth slice, source expecting, target expecting, score, token)
            (slice(None), slice(None), _OPERAND, _OPERATOR, number_score[:, t], number_id[:, t]),
            (slice(1, None), slice(None, -1), _OPERAND, _OPERAND, open_score[:, t], roles.open),
            (slice(None), slice(None), _OPERATOR, _OPERAND, operator_score[:, t], operator_id[:, t]),
            (slice(None, -1), slice(1, None), _OPERATOR, _OPERATOR, close_score[:, t], roles.close),
        ]
        for target, source, src_e, dst_e, step_score, step_token in candidates:
            value = score[:, source, src_e] + step_score[:, None]
            better = value > new[:, target, dst_e]
            new[:, target, dst_e] = torch.where(better, value, new[:, target, dst_e])
            prev[:, target, dst_e] = torch.where(better, flat[source, src_e], prev[:, target, dst_e])
            chosen = step_token[:, None].expand_as(value) if torch.is_tensor(step_token) else step_token
            token[:, target, dst_e] = torch.where(better, chosen, token[:, target, dst_e])
        active = (t < lengths)[:, None, None]
        score = torch.where(active, new, score)
        back_state.append(prev.flatten(1))
        back_token.append(token.flatten(1))

    accept = int(flat[0, _OPERATOR])
    log_prob = score.flatten(1)[:, accept]
    state = torch.full((batch,), accept, dtype=torch.long, device=log_probs.device)
    tokens = torch.full((batch, steps), -1, dtype=torch.long, device=log_probs.device)
    rows = torch.arange(batch, device=log_probs.device)
    for t in range(steps - 1, -1, -1):
        active = t < lengths
        tokens[:, t] = torch.where(active, back_token[t][rows, state], tokens[:, t])
        state = torch.where(active, back_state[t][rows, state], state)
    return Decoded(tokens, log_prob)
