"""Exact grammar-constrained decoding for any context-free grammar: Viterbi CKY over its normal form, after a
linear shortcut that settles most examples of a trained reader.

Each window is read as one symbol; a sentence's probability is the product of its windows'. The most
probable sentence of each example's length that the grammar accepts is found by the max-product CKY
chart ``best[b, i, l, A]`` (the best log-probability of nonterminal ``A`` deriving the ``l`` symbols
from ``i``), vectorised over the batch, the start positions and the split points of each span length,
then read back through back-pointers. Unary rules are closed per span; rules carry no weight, so the
grammar only constrains. Cost: ``O(T^3 R)`` per example for ``T`` windows and ``R`` binary rules. Before the
chart, each example's best symbol per position (among those the grammar allows there at its length) is checked
with the parser: when that sentence is grammatical it is exactly the most probable one, found in ``O(T)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from einops import rearrange

from neurosym.pipelines.decoding import Decoded, checked_decoder_inputs
from neurosym.syntax.symbol_grammar import NormalForm, SymbolGrammar
from neurosym.training.device import at_least_float32


@dataclass(frozen=True)
class _Tables:
    """The normal form as index tensors: rules grouped by their head (padded with the dummy rule id)."""

    terminal_heads: torch.Tensor  # [N, Mt] terminal-rule ids per head
    terminal_of_rule: torch.Tensor  # [Rt] terminal id
    unary_heads: torch.Tensor  # [N, Mu] unary-rule ids per head
    unary_child: torch.Tensor  # [Ru]
    binary_heads: torch.Tensor  # [N, Mb]
    binary_left: torch.Tensor  # [Rb]
    binary_right: torch.Tensor  # [Rb]


def _best_per_head(per_rule: torch.Tensor, heads: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The best of each head's rules: ``per_rule [R, ...]`` scores and ``heads [N, M]`` rule ids (padded
    with ``R``) -> best score ``[N, ...]`` and the rule id giving it ``[N, ...]``."""
    padded = torch.cat([per_rule, per_rule.new_full((1, *per_rule.shape[1:]), -torch.inf)])  # also for no rules
    best, which = padded[heads].max(dim=1)  # [N, M, ...] -> [N, ...]
    return best, heads.gather(1, which.flatten(1)).view_as(which)


def _grouped(heads: list[int], count: int) -> torch.Tensor:
    """Rule ids per head ``[count, max]``, padded with ``len(heads)`` (a dummy rule that never wins)."""
    members: list[list[int]] = [[] for _ in range(count)]
    for rule, head in enumerate(heads):
        members[head].append(rule)
    width = max(1, max(len(m) for m in members))
    return torch.tensor([m + [len(heads)] * (width - len(m)) for m in members], dtype=torch.long)


class GrammarDecoder:
    """The most probable grammatical sentence per example, for any :class:`SymbolGrammar`.

    Args:
        grammar: the language; its vocabulary orders the columns of the log-probabilities.
    """

    def __init__(self, grammar: SymbolGrammar):
        self.grammar = grammar
        self.form: NormalForm = grammar.normal_form
        terminal_index = {name: i for i, name in enumerate(self.form.terminals)}
        self.symbol_terminal = torch.tensor([terminal_index[grammar.terminal_of[s]] for s in grammar.symbols])
        self._allowed_cache: dict[int, torch.Tensor] = {}

    @cached_property
    def _tables(self) -> _Tables:
        form, count = self.form, len(self.form.nonterminals)
        return _Tables(
            _grouped([a for a, _ in form.terminal_rules], count),
            torch.tensor([t for _, t in form.terminal_rules], dtype=torch.long),
            _grouped([a for a, _ in form.unary_rules], count),
            torch.tensor([b for _, b in form.unary_rules], dtype=torch.long),
            _grouped([a for a, _, _ in form.binary_rules], count),
            torch.tensor([b for _, b, _ in form.binary_rules], dtype=torch.long),
            torch.tensor([c for _, _, c in form.binary_rules], dtype=torch.long),
        )

    def terminal_scores(self, log_probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Best log-probability and symbol per terminal: ``log_probs [B, T, V]`` -> both ``[B, T, K]``."""
        terminals = len(self.form.terminals)
        member = self.symbol_terminal.to(log_probs.device)[None, :] == torch.arange(terminals, device=log_probs.device)[:, None]
        masked = torch.where(member[None, None], log_probs[:, :, None, :], torch.tensor(-torch.inf, device=log_probs.device))
        return masked.max(dim=-1)

    def decode(self, log_probs: torch.Tensor, lengths: torch.Tensor) -> Decoded:
        """Exact decoding: per example, the best symbol at each position among those some sentence of its
        length has there (:meth:`~neurosym.syntax.symbol_grammar.SymbolGrammar.position_symbols`); where that
        sentence is grammatical it is the most probable one (no grammatical sentence can score more), in time
        linear in its length; the other examples go through :meth:`viterbi`.

        Args:
            log_probs: ``[B, T, V]`` per-window log-probabilities over the grammar's symbols (``-inf`` rules a
                symbol out at a position; padding positions are ignored), summed in float32, or in their dtype where it
                is wider (float64 ones rounded to float32 tied sentences they tell apart).
            lengths: ``[B]`` symbols of each example, integers, ``1 <= length <= T``.

        Returns:
            :class:`Decoded`: ``tokens [B, T]`` symbol ids (``-1`` past each length), ``log_prob [B]``.

        Raises:
            ValueError: an example whose length (or whose fixed symbols) no grammatical sentence fits, and on inputs
                :func:`~neurosym.pipelines.decoding.checked_decoder_inputs` rejects (NaN at a real position, another
                number of symbols).
        """
        lengths = self._checked(log_probs, lengths)
        with torch.no_grad():
            tokens, score = self._position_best(at_least_float32(log_probs.detach()), lengths)
        symbols = self.grammar.symbols
        rest = [
            row
            for row, length in enumerate(lengths.tolist())
            if not (torch.isfinite(score[row]) and self.grammar.accepts("".join(symbols[i] for i in tokens[row, :length])))
        ]
        if rest:
            chosen = torch.tensor(rest)
            charted = self.viterbi(log_probs[chosen.to(log_probs.device)], lengths[chosen])
            tokens[chosen], score[chosen] = charted.tokens.cpu(), charted.log_prob.cpu()
        return Decoded(tokens.to(log_probs.device), score.to(log_probs.device))

    def viterbi(self, log_probs: torch.Tensor, lengths: torch.Tensor) -> Decoded:
        """:meth:`decode` through the CKY chart for every example (``O(T^3)`` each): what it falls back to."""
        lengths = self._checked(log_probs, lengths)
        batch, steps, _ = log_probs.shape
        with torch.no_grad():
            term_score, best_symbol = self.terminal_scores(at_least_float32(log_probs.detach()))
            chart, back = self._chart(term_score)
        rows = torch.arange(batch)
        score = chart[rows, 0, lengths, self.form.start].cpu()
        bad = (~torch.isfinite(score)).nonzero().flatten().tolist()
        if bad:
            raise ValueError(
                f"no sentence of the grammar fits example {bad[0]} (length {lengths[bad[0]].item()} and its fixed symbols)"
            )
        tokens = self._backtrack(back, best_symbol.cpu().numpy(), lengths.tolist(), steps)
        return Decoded(torch.from_numpy(tokens).to(log_probs.device), score.to(log_probs.device))

    def _checked(self, log_probs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return checked_decoder_inputs(log_probs, lengths, len(self.grammar.symbols)).to("cpu")

    def _position_best(self, log_probs: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per example the best symbol at each position among :meth:`position_symbols`' (``tokens [B, T]`` on
        the CPU, ``-1`` past each length) and the sum of their log-probabilities (``[B]``, ``-inf``: none fits)."""
        batch, steps, _ = log_probs.shape
        tokens = torch.full((batch, steps), -1, dtype=torch.long)
        score = torch.full((batch,), -torch.inf, dtype=log_probs.dtype)
        for length in lengths.unique().tolist():
            rows = (lengths == length).nonzero().flatten()
            allowed = self._allowed(length).to(log_probs.device)  # [L, V]
            masked = log_probs[rows.to(log_probs.device), :length].masked_fill(~allowed, -torch.inf)
            best, symbol = masked.max(dim=-1)  # [R, L]
            tokens[rows, :length], score[rows] = symbol.cpu(), best.sum(dim=-1).cpu()
        return tokens, score

    def _allowed(self, length: int) -> torch.Tensor:
        """``[length, V]``: whether each symbol may stand at each position of a sentence of ``length``."""
        if length not in self._allowed_cache:
            positions = self.grammar.position_symbols(length)
            self._allowed_cache[length] = torch.tensor([[s in there for s in self.grammar.symbols] for there in positions])
        return self._allowed_cache[length]

    def _chart(self, term_score: torch.Tensor) -> tuple[torch.Tensor, dict[str, list[np.ndarray]]]:
        """From the best score per terminal ``term_score [B, T, K]``: ``best [B, T, T+1, N]`` (example, start,
        length, nonterminal) and the back-pointers per span length (``rule``, ``split``, ``unary``: each ``[B, S, N]``)."""
        batch, steps, _ = term_score.shape
        device, tables = term_score.device, self._tables
        count = len(self.form.nonterminals)
        chart = torch.full((count, batch, steps, steps + 1), -torch.inf, dtype=term_score.dtype, device=device)
        # The same spans by end and reversed length, so the right parts of every split are one slice.
        by_end = chart.new_full((count, batch, steps + 1, steps), -torch.inf)  # [A, b, i + l, T - l]
        back: dict[str, list] = {"rule": [None], "split": [None, None], "unary": [None]}
        per_rule = rearrange(term_score[..., tables.terminal_of_rule.to(device)], "b t r -> r b t")
        best, rule = _best_per_head(per_rule, tables.terminal_heads.to(device))
        chart[:, :, :, 1] = best
        back["rule"].append(rearrange(rule, "n b s -> b s n").cpu().numpy())
        back["unary"].append(self._close(chart[:, :, :, 1]))
        by_end[:, :, 1:, steps - 1] = chart[:, :, :, 1]
        left_ids, right_ids = tables.binary_left.to(device), tables.binary_right.to(device)
        heads = tables.binary_heads.to(device)
        for length in range(2, steps + 1):
            starts = steps - length + 1
            left = chart[:, :, :starts, 1:length]  # [N, B, S, L-1]: span (i, k) for k = 1 .. L-1
            right = by_end[:, :, length : length + starts, steps - length + 1 :]  # span (i + k, L - k)
            candidate = left.index_select(0, left_ids) + right.index_select(0, right_ids)  # [R, B, S, L-1]
            rule_best, rule_split = candidate.max(dim=-1)  # [R, B, S]
            best, rule = _best_per_head(rule_best, heads)
            split = torch.cat([rule_split, rule_split.new_zeros((1, *rule_split.shape[1:]))]).gather(0, rule) + 1
            chart[:, :, :starts, length] = best
            back["rule"].append(rearrange(rule, "n b s -> b s n").cpu().numpy())
            back["split"].append(rearrange(split, "n b s -> b s n").cpu().numpy())
            back["unary"].append(self._close(chart[:, :, :starts, length]))
            by_end[:, :, length : length + starts, steps - length] = chart[:, :, :starts, length]
        return rearrange(chart, "n b s l -> b s l n"), back

    def _close(self, cell: torch.Tensor) -> np.ndarray:
        """Apply unary rules to ``cell [N, B, S]`` in place until nothing improves; the unary rule that
        last improved each entry, ``[B, S, N]`` (``-1``: none)."""
        tables, device = self._tables, cell.device
        used = torch.full(cell.shape, -1, dtype=torch.long, device=device)
        if self.form.unary_rules:
            heads, child = tables.unary_heads.to(device), tables.unary_child.to(device)
            for _ in range(len(self.form.nonterminals)):
                best, rule = _best_per_head(cell.index_select(0, child), heads)
                better = best > cell
                if not better.any():
                    break
                cell.copy_(torch.where(better, best, cell))
                used = torch.where(better, rule, used)
        return rearrange(used, "n b s -> b s n").cpu().numpy()

    def _backtrack(
        self, back: dict[str, list[np.ndarray]], best_symbol: np.ndarray, lengths: list[int], steps: int
    ) -> np.ndarray:
        form = self.form
        tokens = np.full((len(lengths), steps), -1, dtype=np.int64)
        terminal_of_rule = [t for _, t in form.terminal_rules]
        for row, length in enumerate(lengths):
            stack = [(0, length, form.start)]
            while stack:
                start, span, head = stack.pop()
                unary = back["unary"][span][row, start, head]
                if unary >= 0:
                    stack.append((start, span, form.unary_rules[unary][1]))
                elif span == 1:
                    terminal = terminal_of_rule[back["rule"][1][row, start, head]]
                    tokens[row, start] = best_symbol[row, start, terminal]
                else:
                    _, left, right = form.binary_rules[back["rule"][span][row, start, head]]
                    split = int(back["split"][span][row, start, head])
                    stack += [(start, split, left), (start + split, span - split, right)]
        return tokens
