"""Grammar-constrained decoding: the most probable sentence that the HINT grammar accepts.

The HINT grammar (numbers, binary operators, round brackets) accepts exactly the strings of a
bracket-counting automaton whose state is ``(depth, expecting)``: ``expecting`` an *operand* (a number
or ``(``) or an *operator* (a binary operator or ``)``). A sentence is accepted when it ends expecting an
operator at depth 0. Precedence never changes which strings are accepted, so it plays no role there.
Two flags per state optionally exclude brackets the release never writes: around a single number and
around the whole sentence.

:func:`constrained_decode` runs exact Viterbi over that automaton, vectorised over a batch and over
states, so every returned sentence is grammatical and no accepted sentence is more probable. Which
brackets are redundant otherwise (``((1+2))*3``, ``(1*2)+3``) depends on what the brackets hold and on
the operators on both sides, which no automaton of few states tells apart; so where the roles give the
operators' precedence, an example whose best sentence is not printed as it reads
(:func:`neurosym.syntax.to_infix`) is decoded again by CKY (:class:`~neurosym.pipelines.cky.Chart`) over a
grammar of exactly the sentences the printer writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import torch

from neurosym.pipelines.cky import Chart
from neurosym.syntax.concepts import ADDITIVE, MULTIPLICATIVE
from neurosym.syntax.symbol_grammar import NormalForm
from neurosym.training.checks import is_int_tensor
from neurosym.training.device import at_least_float32

OPEN, CLOSE = "(", ")"


@dataclass(frozen=True)
class TokenRoles:
    """Which vocabulary indices are numbers, binary operators and the two brackets, and the operators' precedence.

    Built with :meth:`from_vocabulary`; symbols that are neither numbers, operators nor brackets are
    never emitted by the decoder. ``precedence`` holds each operator's level (``ADDITIVE`` like ``+ -``,
    ``MULTIPLICATIVE`` like ``* /``) in the order of ``operators``, or nothing where it is not known.
    """

    vocabulary: tuple[str, ...]
    numbers: tuple[int, ...]
    operators: tuple[int, ...]
    open: int
    close: int
    precedence: tuple[int, ...] = ()

    @classmethod
    def from_vocabulary(
        cls,
        vocabulary: Sequence[str],
        numbers: Iterable[str],
        operators: Iterable[str],
        precedence: Mapping[str, int] | None = None,
    ) -> TokenRoles:
        """The roles of ``vocabulary``'s symbols; ``precedence`` gives every operator's level (and no other symbol's).

        Raises:
            ValueError: naming the symbols in question: a symbol named twice in the vocabulary, in two roles or
                outside it; no number or no operator; a precedence that misses an operator, names another symbol or
                gives a level other than ``ADDITIVE`` (1) and ``MULTIPLICATIVE`` (2).
        """
        index = {symbol: i for i, symbol in enumerate(vocabulary)}
        if len(index) != len(vocabulary):
            repeated = sorted({s for s in vocabulary if list(vocabulary).count(s) > 1})
            raise ValueError(f"the vocabulary names {repeated} more than once")
        numbers, operators = list(numbers), list(operators)
        overlap = sorted((set(numbers) & set(operators)) | ((set(numbers) | set(operators)) & {OPEN, CLOSE}))
        if overlap:
            raise ValueError(f"symbols {overlap} take two roles: numbers, operators and the brackets {OPEN}{CLOSE} are disjoint")
        missing = [s for s in (*numbers, *operators, OPEN, CLOSE) if s not in index]
        if missing:
            raise ValueError(f"symbols {missing} are not in the vocabulary {list(vocabulary)}")
        number_ids = tuple(index[s] for s in numbers)
        operator_ids = tuple(index[s] for s in operators)
        if not number_ids or not operator_ids:
            raise ValueError("the grammar needs at least one number and one operator symbol")
        levels = _operator_levels(operators, precedence)
        return cls(tuple(vocabulary), number_ids, operator_ids, index[OPEN], index[CLOSE], levels)


def _operator_levels(operators: list[str], precedence: Mapping[str, int] | None) -> tuple[int, ...]:
    """The level of each of ``operators`` that ``precedence`` gives (none without it); ``ValueError`` unless it gives
    every operator, and nothing else, a level ``ADDITIVE`` or ``MULTIPLICATIVE``."""
    if precedence is None:
        return ()
    if set(precedence) != set(operators):
        raise ValueError(
            f"precedence must give the level of the operators {operators} and of nothing else, got {dict(precedence)}"
        )
    if odd := {s: level for s, level in precedence.items() if level not in (ADDITIVE, MULTIPLICATIVE)}:
        raise ValueError(f"operator levels {odd} are neither {ADDITIVE} (like + -) nor {MULTIPLICATIVE} (like * /)")
    return tuple(precedence[s] for s in operators)


@dataclass(frozen=True)
class Decoded:
    """Decoder output: ``tokens`` [B, T] vocabulary indices (``-1`` past each length) and ``log_prob`` [B] (float32, or
    the input's dtype where wider)."""

    tokens: torch.Tensor
    log_prob: torch.Tensor

    def sentences(self, vocabulary: Sequence[str]) -> list[str]:
        """The decoded sentences as strings of single-character symbols."""
        return ["".join(vocabulary[i] for i in row if i >= 0) for row in self.tokens.tolist()]


def checked_decoder_inputs(log_probs: torch.Tensor, lengths: torch.Tensor, vocabulary_size: int) -> torch.Tensor:
    """Check a decoder's ``log_probs [B, T, V]`` (``V == vocabulary_size``, floating, no NaN or ``+inf`` at the real
    positions: a ``+inf`` made every sentence through it score ``+inf``, and the decoders answered that no sentence fits)
    and ``lengths [B]`` (integers in ``[1, T]``); returns ``lengths`` on the device of ``log_probs``.

    Raises:
        ValueError: naming the first problem found.
    """
    if not isinstance(log_probs, torch.Tensor) or log_probs.dim() != 3 or log_probs.shape[-1] != vocabulary_size:
        shape = list(log_probs.shape) if isinstance(log_probs, torch.Tensor) else type(log_probs).__name__
        raise ValueError(f"log_probs must be [B, T, {vocabulary_size}] (one score per vocabulary symbol), got {shape}")
    if not log_probs.is_floating_point():
        raise ValueError(f"log_probs must be floating point, got {log_probs.dtype}")
    lengths = torch.as_tensor(lengths)
    if tuple(lengths.shape) != (log_probs.shape[0],):
        raise ValueError(f"lengths must give one length per example ({log_probs.shape[0]}), got shape {list(lengths.shape)}")
    if not is_int_tensor(lengths):
        raise ValueError(f"lengths must be integers, got {lengths.dtype}")
    lengths = lengths.to(log_probs.device)
    if ((lengths < 1) | (lengths > log_probs.shape[1])).any():
        raise ValueError(f"lengths must be in [1, {log_probs.shape[1]}], got {lengths.tolist()}")
    real = torch.arange(log_probs.shape[1], device=log_probs.device)[None, :] < lengths[:, None]
    for what, held, why in ((log_probs.isnan(), "NaN", ""), (log_probs == torch.inf, "+inf", ": no probability's log is +inf")):
        found = (what.any(dim=-1) & real).nonzero()
        if len(found):
            row, position = found[0].tolist()
            raise ValueError(f"log_probs hold {held} (example {row}, position {position}){why}")
    return lengths


# Token classes of the automaton, in the order of the class-score tensor built by the decoder.
NUMBER, OPERATOR, OPEN_CLASS, CLOSE_CLASS = range(4)


@dataclass(frozen=True)
class _Automaton:
    """States and transitions of the bracket automaton for sentences of at most ``steps`` symbols.

    ``incoming_source [S, M]`` / ``incoming_class [S, M]`` list, per state, the source states and
    token classes of its incoming transitions (padded with the dead state ``S - 1``).
    """

    start: int
    accept: torch.Tensor
    incoming_source: torch.Tensor
    incoming_class: torch.Tensor


State = tuple[int, bool, bool, bool]  # (depth, expecting an operator, fresh, wrapped)
START: State = (0, False, False, False)


def _successors(state: State | None, minimal_brackets: bool) -> list[tuple[int, State]]:
    """The ``(token class, next state)`` moves from ``state`` (``None``: before the first symbol).

    ``fresh``: the innermost open bracket holds no operator yet (closing it would give ``(N)``);
    ``wrapped``: the sentence opened with ``(`` and has had no operator at depth 0 since.
    Without ``minimal_brackets`` both flags stay false and only depth and expectation matter.
    """
    if state is None:
        moves = [(NUMBER, (0, True, False, False)), (OPEN_CLASS, (1, False, True, True))]
    else:
        depth, expect_operator, fresh, wrapped = state
        if not expect_operator:
            moves = [(NUMBER, (depth, True, fresh, wrapped)), (OPEN_CLASS, (depth + 1, False, True, wrapped))]
        else:
            moves = [(OPERATOR, (depth, False, False, wrapped and depth > 0))]
            if depth > 0 and not (minimal_brackets and fresh):
                moves.append((CLOSE_CLASS, (depth - 1, True, False, wrapped)))
    if not minimal_brackets:
        moves = [(c, (d, e, False, False)) for c, (d, e, _, _) in moves]
    return moves


def _accepting(state: State) -> bool:
    return state[0] == 0 and state[1] and not state[3]


@lru_cache(maxsize=16)
def _automaton(steps: int, minimal_brackets: bool) -> _Automaton:
    """Build the automaton for sentences of at most ``steps`` symbols (depth at most ``steps // 2``)."""
    depths = steps // 2 + 1
    states = [(d, e, f, w) for d in range(depths) for e in (False, True) for f in (False, True) for w in (False, True)]
    index = {state: i for i, state in enumerate(states)}
    start, dead = len(states), len(states) + 1
    edges: dict[int, list[tuple[int, int]]] = {i: [] for i in range(dead + 1)}
    for source_state, source in [(None, start), *index.items()]:
        for token_class, target in _successors(source_state, minimal_brackets):
            if target[0] < depths:
                edges[index[target]].append((source, token_class))
    width = max(len(e) for e in edges.values())
    padded = [e + [(dead, NUMBER)] * (width - len(e)) for e in edges.values()]
    table = torch.tensor(padded, dtype=torch.long)
    accept = torch.tensor([i for state, i in index.items() if _accepting(state)])
    return _Automaton(start, accept, table[..., 0], table[..., 1])


@lru_cache(maxsize=64)
def sentence_templates(length: int, minimal_brackets: bool = True) -> tuple[tuple[int, ...], ...]:
    """Every sequence of token classes (:data:`NUMBER`, :data:`OPERATOR`, :data:`OPEN_CLASS`, :data:`CLOSE_CLASS`)
    of ``length`` symbols that the bracket automaton accepts: the sentence shapes abduction may switch between. With
    ``minimal_brackets``, those without a pair of brackets that is redundant under every precedence: around a number
    (``(3)``), around the whole sentence, or directly around another pair (``1+((2+3))``, which the automaton itself
    accepts: it tells whether the innermost open bracket holds an operator, not the ones around it). Whether other
    brackets are redundant depends on the operators' precedence (:func:`constrained_decode` checks it)."""
    found: list[tuple[int, ...]] = []
    stack: list[tuple[State | None, tuple[int, ...]]] = [(None, ())]
    while stack:
        state, prefix = stack.pop()
        if len(prefix) == length:
            if state is not None and _accepting(state) and not (minimal_brackets and _doubled_brackets(prefix)):
                found.append(prefix)
            continue
        for token_class, target in _successors(state, minimal_brackets):
            if target[0] <= length - len(prefix) - 1:  # brackets still open must fit in what is left
                stack.append((target, prefix + (token_class,)))
    return tuple(sorted(found))


def _doubled_brackets(shape: Sequence[int]) -> bool:
    """Whether the token classes ``shape`` hold a pair of brackets directly around another pair (``((...))``)."""
    opened: list[int] = []  # positions of the brackets still open
    for position, token_class in enumerate(shape):
        if token_class == OPEN_CLASS:
            opened.append(position)
        elif token_class == CLOSE_CLASS:
            start = opened.pop()
            if opened and opened[-1] == start - 1 and position + 1 < len(shape) and shape[position + 1] == CLOSE_CLASS:
                return True
    return False


def _class_scores(log_probs: torch.Tensor, classes: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Best score and vocabulary index per class of ``classes`` (vocabulary indices; ``-inf`` for a class without
    members): ``log_probs [B, T, V]`` -> both ``[B, T, len(classes)]``."""
    scores, ids = [], []
    for members in classes:
        if not members:
            scores.append(log_probs.new_full(log_probs.shape[:-1], -torch.inf))
            ids.append(torch.zeros(log_probs.shape[:-1], dtype=torch.long, device=log_probs.device))
            continue
        index = torch.tensor(members, device=log_probs.device)
        score, arg = log_probs.index_select(-1, index).max(dim=-1)
        scores.append(score)
        ids.append(index[arg])
    return torch.stack(scores, dim=-1), torch.stack(ids, dim=-1)


#: The sentences the printer writes, as a grammar over the terminals ``NUMBER``, ``ADDITIVE`` and ``MULTIPLICATIVE``
#: (operators by level), ``OPEN`` and ``CLOSE``: a left operand is bracketed when its operator binds less tightly than
#: its parent's, a right operand when less tightly or equally, and nothing else is (so never a number, a bracketed
#: expression or the whole sentence).
_MINIMAL_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sentence", ("atom",)),
    ("sentence", ("sum",)),
    ("sentence", ("product",)),
    ("sum", ("left of plus", "plus right")),
    ("plus right", ("plus", "right of plus")),
    ("product", ("left of times", "times right")),
    ("times right", ("times", "right of times")),
    ("(sum)", ("open", "sum)")),
    ("sum)", ("sum", "close")),
    ("(product)", ("open", "product)")),
    ("product)", ("product", "close")),
    *(("left of plus", (operand,)) for operand in ("atom", "sum", "product")),
    *(("right of plus", (operand,)) for operand in ("atom", "product", "(sum)")),
    *(("left of times", (operand,)) for operand in ("atom", "product", "(sum)")),
    *(("right of times", (operand,)) for operand in ("atom", "(sum)", "(product)")),
    ("atom", ("NUMBER",)),
    ("plus", ("ADDITIVE",)),
    ("times", ("MULTIPLICATIVE",)),
    ("open", ("OPEN",)),
    ("close", ("CLOSE",)),
)
_MINIMAL_TERMINALS = ("NUMBER", "ADDITIVE", "MULTIPLICATIVE", "OPEN", "CLOSE")


def _normal_form(rules: Sequence[tuple[str, tuple[str, ...]]], terminals: Sequence[str]) -> NormalForm:
    """``rules`` (heads and bodies of one or two names; the first head starts) as the normal form CKY reads."""
    nonterminals = tuple(dict.fromkeys(head for head, _ in rules))
    index = {name: i for i, name in enumerate(nonterminals)}
    terminal = {name: i for i, name in enumerate(terminals)}
    singles = [(index[head], body[0]) for head, body in rules if len(body) == 1]
    return NormalForm(
        nonterminals,
        tuple(terminals),
        0,
        tuple((head, terminal[name]) for head, name in singles if name in terminal),
        tuple((head, index[name]) for head, name in singles if name not in terminal),
        tuple((index[head], index[body[0]], index[body[1]]) for head, body in rules if len(body) == 2),
    )


_MINIMAL_CHART = Chart(_normal_form(_MINIMAL_RULES, _MINIMAL_TERMINALS))


#: Operators in a sentence's shape (numbers as ``1``), by precedence level.
_SHAPE_LEVELS = {"+": ADDITIVE, "*": MULTIPLICATIVE}


def _printed_as_read(shape: str) -> bool:
    """Whether the printer writes the grammatical sentence ``shape`` (numbers as ``1``, operators as ``+`` or ``*`` by
    level) as it is: whether it needs each of its bracket pairs (:func:`_needed`)."""
    outside: list[tuple[int, int | None]] = []  # per open bracket: the level before it, the lowest level outside so far
    lowest: int | None = None  # the lowest operator level at the top level inside the innermost open bracket so far
    for position, symbol in enumerate(shape):
        if symbol == OPEN:
            outside.append((_level_at(shape, position - 1), lowest))
            lowest = None
        elif symbol == CLOSE:
            before, enclosing = outside.pop()
            if not _needed(before, lowest, _level_at(shape, position + 1)):
                return False
            lowest = enclosing
        elif symbol in _SHAPE_LEVELS:
            lowest = _SHAPE_LEVELS[symbol] if lowest is None else min(lowest, _SHAPE_LEVELS[symbol])
    return True


def _level_at(shape: str, position: int) -> int:
    """The level of the operator at ``position`` of ``shape`` (0: no operator there, or outside the sentence)."""
    return _SHAPE_LEVELS.get(shape[position], 0) if 0 <= position < len(shape) else 0


def _needed(before: int, inside: int | None, after: int) -> bool:
    """Whether the printer brackets an expression whose lowest top-level operator level is ``inside`` (``None``: it has
    none) between operators of levels ``before`` and ``after`` (0: none). It is the right operand of the one before
    when that binds at least as tightly as the one after (all operators are left-associative), and bracketed when it
    binds no more tightly; otherwise the left operand of the one after, bracketed when it binds less tightly."""
    if inside is None or not (before or after):
        return False
    return inside <= before if before >= after else inside < after


def _printed_only(decoded: Decoded, log_probs: torch.Tensor, lengths: torch.Tensor, roles: TokenRoles) -> Decoded:
    """``decoded`` (the bracket automaton's sentences, ``lengths [B]`` symbols of ``log_probs [B, T, V]``) with every
    example the printer would write otherwise decoded again over :data:`_MINIMAL_RULES` (``roles`` give precedence)."""
    levels = dict(zip(roles.operators, roles.precedence))
    shapes = {roles.open: OPEN, roles.close: CLOSE} | {i: "1" for i in roles.numbers}
    shapes |= {i: "+" if level == ADDITIVE else "*" for i, level in levels.items()}
    redo = [
        row
        for row, (tokens, length) in enumerate(zip(decoded.tokens.tolist(), lengths.tolist()))
        if not _printed_as_read("".join(shapes[token] for token in tokens[:length]))
    ]
    if not redo:
        return decoded
    rows = torch.tensor(redo, device=log_probs.device)
    by_level = [[i for i, level in levels.items() if level == wanted] for wanted in (ADDITIVE, MULTIPLICATIVE)]
    classes = (roles.numbers, *by_level, (roles.open,), (roles.close,))  # (in the order of _MINIMAL_TERMINALS)
    score, ids = _class_scores(at_least_float32(log_probs[rows]), classes)
    tokens, log_prob = _MINIMAL_CHART.best(score, ids, lengths[rows].tolist())
    if impossible := (~torch.isfinite(log_prob)).nonzero().flatten().tolist():
        row = redo[impossible[0]]
        raise ValueError(
            f"no sentence of length {lengths[row].item()} written with minimal brackets has a finite log-probability "
            f"(example {row}): every one holds a symbol scored -inf"
        )
    chosen, scores = decoded.tokens.clone(), decoded.log_prob.clone()
    chosen[rows], scores[rows] = torch.from_numpy(tokens).to(chosen.device), log_prob.to(scores)
    return Decoded(chosen, scores)


def constrained_decode(
    log_probs: torch.Tensor, lengths: torch.Tensor, roles: TokenRoles, minimal_brackets: bool = True
) -> Decoded:
    """Exact most probable grammatical sentence per example (Viterbi over the bracket automaton; with
    ``minimal_brackets`` and the operators' precedence, CKY for the examples the automaton reads otherwise).

    Args:
        log_probs: [B, T, V] per-window log-probabilities (padding positions are ignored); half-precision ones are
            summed in float32 (in bfloat16 the path scores' rounding chose a less probable sentence).
        lengths: [B] number of windows of each example, integers, 1 <= length <= T.
        roles: the vocabulary's grammatical roles.
        minimal_brackets: read only sentences written with minimal brackets. Where ``roles`` give the operators'
            precedence, exactly the sentences :func:`neurosym.syntax.to_infix` writes (no ``(3)``, ``(2+3)``,
            ``((1+2))*3``, ``(1*2)+3`` or ``1+(2*3)``); without it, only brackets around a single number (``(3)``)
            and around the whole sentence (``(2+3)``) are excluded.

    Raises:
        ValueError: when a length admits no grammatical sentence (every HINT sentence has odd length), when
            every grammatical sentence holds a symbol scored ``-inf``, and on inputs
            :func:`checked_decoder_inputs` rejects (NaN or +inf at a real position, a vocabulary of another size).
    """
    lengths = checked_decoder_inputs(log_probs, lengths, len(roles.vocabulary))
    bad = (lengths % 2 == 0).nonzero().flatten().tolist()
    if bad:
        raise ValueError(
            f"no grammatical sentence has length {lengths[bad[0]].item()} (example {bad[0]}): "
            "HINT sentences have an odd number of symbols, at least 1"
        )
    decoded = _automaton_decode(log_probs, lengths, roles, minimal_brackets)
    return _printed_only(decoded, log_probs, lengths, roles) if minimal_brackets and roles.precedence else decoded


def _automaton_decode(log_probs: torch.Tensor, lengths: torch.Tensor, roles: TokenRoles, minimal_brackets: bool) -> Decoded:
    """Viterbi over the bracket automaton: ``log_probs [B, T, V]`` and checked odd ``lengths [B]``."""
    batch, steps, _ = log_probs.shape
    device = log_probs.device
    automaton = _automaton(steps, minimal_brackets)
    source, token_class = automaton.incoming_source.to(device), automaton.incoming_class.to(device)
    neg_inf = -torch.inf
    members = (roles.numbers, roles.operators, (roles.open,), (roles.close,))  # (NUMBER, OPERATOR, OPEN_CLASS, CLOSE_CLASS)
    class_score, class_token = _class_scores(at_least_float32(log_probs), members)
    score = class_score.new_full((batch, source.shape[0]), neg_inf)
    score[:, automaton.start] = 0.0
    back: list[torch.Tensor] = []  # per step, [B, S]: the incoming transition each state was best reached through
    sources, classes = source.flatten(), token_class.flatten()  # (index_select of [S * M]: 2x faster than [:, source])
    for t in range(steps):
        # candidate[b, s, m]: score of reaching state s through its m-th incoming transition.
        candidate = (score.index_select(1, sources) + class_score[:, t].index_select(1, classes)).view(batch, *source.shape)
        best, arg = candidate.max(dim=-1)
        active = (t < lengths)[:, None]
        score = torch.where(active, best, score)
        back.append(arg)

    final = score[:, automaton.accept.to(device)]
    log_prob, which = final.max(dim=-1)
    impossible = (log_prob == neg_inf).nonzero().flatten().tolist()
    if impossible:
        raise ValueError(
            f"no grammatical sentence of length {lengths[impossible[0]].item()} has a finite log-probability "
            f"(example {impossible[0]}): every one holds a symbol scored -inf"
        )
    state = automaton.accept.to(device)[which]
    tokens = torch.full((batch, steps), -1, dtype=torch.long, device=device)
    rows = torch.arange(batch, device=device)
    for t in range(steps - 1, -1, -1):  # (only the states on the path followed back, not a back pointer per state)
        active = t < lengths
        transition = back[t][rows, state]
        tokens[:, t] = torch.where(active, class_token[rows, t, token_class[state, transition]], tokens[:, t])
        state = torch.where(active, source[state, transition], state)
    return Decoded(tokens, log_prob)
