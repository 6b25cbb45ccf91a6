"""Max-product CKY over a grammar in normal form: the most probable derivation of each example's symbols.

:class:`Chart` fills the chart ``best[b, i, l, A]`` (the best log-probability of nonterminal ``A`` deriving the
``l`` symbols from ``i``), vectorised over the batch, the start positions and the split points of each span length,
then reads the best sentence back through back-pointers. Unary rules are closed per span; rules carry no weight, so
the grammar only constrains. Cost: ``O(T^3 R)`` per example for ``T`` symbols and ``R`` binary rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from einops import rearrange

from neurosym.syntax.symbol_grammar import NormalForm


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


class Chart:
    """Viterbi CKY over ``form``: per example, the most probable sentence its start symbol derives."""

    def __init__(self, form: NormalForm):
        self.form = form

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

    def best(self, term_score: torch.Tensor, best_symbol: torch.Tensor, lengths: list[int]) -> tuple[np.ndarray, torch.Tensor]:
        """The most probable sentence of each example's length.

        Args:
            term_score: ``[B, T, K]`` the best log-probability of each terminal at each position.
            best_symbol: ``[B, T, K]`` the symbol id giving it.
            lengths: ``B`` symbols of each example, ``1 <= length <= T``.

        Returns:
            ``tokens [B, T]`` symbol ids (``-1`` past each length, and for an example no sentence fits) and their
            log-probability ``[B]`` on the CPU (``-inf``: no sentence of the length has a finite one).
        """
        steps = term_score.shape[1]
        with torch.no_grad():
            chart, back = self._chart(term_score)
        score = chart[torch.arange(len(lengths)), 0, torch.tensor(lengths), self.form.start].cpu()
        feasible = [length if torch.isfinite(s) else 0 for s, length in zip(score, lengths)]
        return self._backtrack(back, best_symbol.cpu().numpy(), feasible, steps), score

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
        """The symbols of each example's best derivation (``[B, T]``; a length of 0 leaves its row ``-1``)."""
        form = self.form
        tokens = np.full((len(lengths), steps), -1, dtype=np.int64)
        terminal_of_rule = [t for _, t in form.terminal_rules]
        for row, length in enumerate(lengths):
            stack = [(0, length, form.start)] if length else []
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
