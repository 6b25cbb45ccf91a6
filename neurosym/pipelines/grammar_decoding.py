"""Exact grammar-constrained decoding for any context-free grammar: Viterbi CKY over its normal form, after a
linear shortcut that settles most examples of a trained reader.

Each window is read as one symbol; a sentence's probability is the product of its windows'. The most
probable sentence of each example's length that the grammar accepts is found by the max-product CKY
chart (:class:`~neurosym.pipelines.cky.Chart`) over the grammar's normal form; rules carry no weight, so the
grammar only constrains. Cost: ``O(T^3 R)`` per example for ``T`` windows and ``R`` binary rules. Before the
chart, each example's best symbol per position (among those the grammar allows there at its length) is checked
with the parser: when that sentence is grammatical it is exactly the most probable one, found in ``O(T)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from neurosym.pipelines.cky import Chart
from neurosym.pipelines.decoding import Decoded, checked_decoder_inputs
from neurosym.syntax.symbol_grammar import NormalForm, SymbolGrammar
from neurosym.training.device import at_least_float32


class NoSentenceFits(ValueError):
    """No sentence of the grammar fits example ``row`` of a decoded batch (its length and its given symbols), the
    message saying why where it is plain; :meth:`of_example` names it by its index in a source of one's own."""

    def __init__(self, row: int, detail: str):
        self.row, self.detail = row, detail
        super().__init__(f"no sentence of the grammar fits example {row} {detail}")

    def of_example(self, index: int) -> NoSentenceFits:
        """The same error naming the example by ``index`` (a batch's rows are drawn, or sorted by length, from a
        source: the row's number named another example of it)."""
        return NoSentenceFits(index, self.detail)


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
        self.chart = Chart(self.form)

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
                :func:`~neurosym.pipelines.decoding.checked_decoder_inputs` rejects (NaN or +inf at a real position, another
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
            charted = self._charted(log_probs[chosen.to(log_probs.device)], lengths[chosen], rest)
            tokens[chosen], score[chosen] = charted.tokens.cpu(), charted.log_prob.cpu()
        return Decoded(tokens.to(log_probs.device), score.to(log_probs.device))

    def viterbi(self, log_probs: torch.Tensor, lengths: torch.Tensor) -> Decoded:
        """:meth:`decode` through the CKY chart for every example (``O(T^3)`` each): what it falls back to."""
        lengths = self._checked(log_probs, lengths)
        return self._charted(log_probs, lengths, range(len(lengths)))

    def _charted(self, log_probs: torch.Tensor, lengths: torch.Tensor, examples: Sequence[int]) -> Decoded:
        """:meth:`viterbi` of checked ``log_probs [R, T, V]`` and ``lengths [R]`` (on the CPU); ``examples [R]``: each row's
        index in the batch given to :meth:`decode` or :meth:`viterbi`, which an error names (the chart gets only the rows
        that the shortcut leaves)."""
        with torch.no_grad():
            term_score, best_symbol = self.terminal_scores(at_least_float32(log_probs.detach()))
        tokens, score = self.chart.best(term_score, best_symbol, lengths.tolist())
        bad = (~torch.isfinite(score)).nonzero().flatten().tolist()
        if bad:
            row = bad[0]
            raise NoSentenceFits(
                examples[row],
                f"(length {lengths[row].item()} and its fixed symbols){self._misfit(log_probs[row], int(lengths[row]))}",
            )
        return Decoded(torch.from_numpy(tokens).to(log_probs.device), score.to(log_probs.device))

    def _misfit(self, log_probs: torch.Tensor, length: int) -> str:
        """Why no sentence fits one example, ``log_probs [T, V]`` of ``length`` symbols, where a reason is plain: the
        grammar has no sentence of that length, or at some position none of the symbols it allows there is possible
        (finite), as where a symbol the reader lacks is marked to be read; else ``""``."""
        allowed = self._allowed(length)  # [L, V]
        if not allowed.any():
            return f": the grammar has no sentence of {length} symbols"
        finite = torch.isfinite(log_probs[:length]).cpu()
        for position in (~(finite & allowed).any(dim=1)).nonzero().flatten().tolist():
            wanted, possible = (
                " ".join(symbol for symbol, ok in zip(self.grammar.symbols, row[position].tolist()) if ok)
                for row in (allowed, finite)
            )
            return (
                f": at position {position} the grammar allows ({wanted}) and the example makes only ({possible}) possible "
                "there (a given symbol is the only one possible at its position; a symbol the reader lacks must be given, "
                "not read)"
            )
        return ""

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
