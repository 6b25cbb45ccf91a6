"""The neuro-symbolic HINT pipeline: perception -> grammar-constrained reading -> parse -> execute."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from einops import rearrange, repeat

from neurosym.layers.value_checks import check_intensities
from neurosym.perception.reader import Reader, check_log_probs, check_reader
from neurosym.pipelines.abduction import Abducer
from neurosym.pipelines.decoding import TokenRoles, constrained_decode
from neurosym.pipelines.windows import real_positions
from neurosym.semantics import HINT_SEMANTICS, BatchSolver, OperatorTable, Value
from neurosym.training.device import at_least_float32
from neurosym.training.modes import reading_mode


@dataclass(frozen=True)
class Reading:
    """What the pipeline read: ``sentences`` (one string per example), their ``log_probs [B, T, V]``
    (per-window log-probabilities, with gradients when computed in training; in float32, or in the reader's dtype where
    it is wider: :func:`~neurosym.perception.reader.at_least_float32`) and ``values`` (results, ``None`` where
    invalid)."""

    sentences: list[str]
    log_probs: torch.Tensor
    values: list[Value | None]


class HintPipeline:
    """A symbol classifier, the HINT grammar and an operator table, wired together.

    Args:
        classifier: any :class:`~neurosym.perception.reader.Reader` over 32x32 windows (it is given each
            window's expression as its group); its vocabulary must contain the table's symbols it should
            read, and ``(`` and ``)``.
        table: the semantics (given, or assembled from induced programs).
        minimal_brackets: read only sentences the HINT release could have written: those the printer writes with
            minimal brackets, under the table's precedence (see :func:`~neurosym.pipelines.decoding.constrained_decode`).
        abduction_changes: the most symbols one abduced correction may change.
    """

    def __init__(
        self,
        classifier: Reader,
        table: OperatorTable = HINT_SEMANTICS,
        minimal_brackets: bool = True,
        abduction_changes: int = 2,
    ):
        check_reader(classifier, "HintPipeline")
        self.classifier = classifier
        self.minimal_brackets = minimal_brackets
        self.abduction_changes = abduction_changes
        self.set_table(table)

    def set_table(self, table: OperatorTable) -> None:
        """Use ``table``'s semantics (after a concept was added or an operator's meaning induced)."""
        vocabulary = self.classifier.vocabulary
        self.table = table
        operators = [s for s in table.operators if s in vocabulary]
        self.roles = TokenRoles.from_vocabulary(
            vocabulary,
            [s for s in table.numbers if s in vocabulary],
            operators,
            {s: table.operators[s].level for s in operators},
        )
        self.solver = BatchSolver(table)
        self.abducer = Abducer(vocabulary, table, max_changes=self.abduction_changes)

    def read(self, windows: torch.Tensor, lengths: torch.Tensor) -> Reading:
        """Read a padded batch of expressions.

        Args:
            windows: ``[B, T, 1, 32, 32]`` (or ``[B, T, 32, 32]``) symbol windows, padded.
            lengths: ``[B]`` number of symbols of each expression.

        Without gradients the classifier reads in evaluation mode (:func:`~neurosym.training.modes.reading_mode`),
        with them in the mode its caller set.
        """
        check_batch(windows, lengths)
        batch, steps = windows.shape[:2]
        flat = rearrange(windows, "b t ... -> (b t) ...")
        mask = real_positions(lengths, steps)
        expression = repeat(torch.arange(batch, device=windows.device), "b -> (b t)", t=steps)
        with reading_mode(self.classifier):
            read = self.classifier(flat[mask.flatten()], expression[mask.flatten()])  # [n, V]
        check_log_probs(read, len(self.classifier.vocabulary), int(mask.sum()))  # (in the reader's dtype, which rounds them)
        read = at_least_float32(read)
        log_probs = read.new_zeros(batch * steps, read.shape[-1]).index_put((mask.flatten().nonzero().flatten(),), read)
        log_probs = rearrange(log_probs, "(b t) v -> b t v", b=batch)
        decoded = constrained_decode(log_probs.detach(), lengths, self.roles, self.minimal_brackets)
        sentences = decoded.sentences(self.classifier.vocabulary)
        return Reading(sentences, log_probs, self.solver.solve(sentences))

    def predict(self, windows: torch.Tensor, lengths: torch.Tensor) -> list[Value | None]:
        """Results of a batch of expressions (no gradients: the classifier reads in evaluation mode): ``windows
        [B, T, 32, 32]`` (or ``[B, T, 1, 32, 32]``), uint8 pixels or float intensities in ``[0, 1]``, white ink on black
        as the banks hold them (a window whose border is mostly bright raises ``ValueError``: black-on-white images
        are read as other symbols), padded after each expression's ``lengths [B]`` symbols -> ``B`` values (``None``
        where the reading is invalid). The windows are checked before the reader reads any: a refused batch costs no
        reading."""
        check_batch(windows, lengths)
        check_intensities(windows)  # (first: the border check reads intensities, a NaN border passed it)
        check_white_on_black(windows, real_positions(lengths.to(windows.device), windows.shape[1]))
        with torch.no_grad():
            return self.read(windows, lengths).values

    def abduce(self, reading: Reading, targets: Sequence[int]) -> list[str | None]:
        """Pseudo-labels: per example, the most probable sentence found that gives its target (or ``None``)."""
        targets = _integer_targets(targets, len(reading.sentences), "readings")
        log_probs = at_least_float32(reading.log_probs.detach()).cpu().numpy()  # (float32 tied a float64 reader's)
        labels: list[str | None] = []
        for sentence, value, target, scores in zip(reading.sentences, reading.values, targets, log_probs):
            if value == target:
                labels.append(sentence)
                continue
            found = self.abducer.abduce(sentence, scores[: len(sentence)], target)
            labels.append(None if found is None else found.sentence)
        return labels

    def verified_positions(self, labels: Sequence[str | None], targets: Sequence[int]) -> list[list[bool] | None]:
        """Which symbols of each pseudo-label the result pins down: position ``i`` of ``labels[b]`` is
        verified when every other symbol of its role (another number for a number, another operator for
        an operator) in its place gives a value other than ``targets[b]`` (or an invalid sentence).
        Brackets are always verified (the grammar places them). ``None`` labels stay ``None``; any other label must
        give its target (``ValueError`` otherwise).

        A symbol the result does not pin down (a factor of ``0 * ...``, the subtrahend of a clamped
        ``a - b`` with ``b >= a``, a divisor whose neighbours round up to the same value) would only
        confirm what the classifier already reads there, right or wrong.
        """
        targets = _integer_targets(targets, len(labels), "labels")
        vocabulary = self.roles.vocabulary
        alternatives = {
            vocabulary[i]: [vocabulary[j] for j in ids if j != i]
            for ids in (self.roles.numbers, self.roles.operators)
            for i in ids
        }
        known = set(vocabulary)
        variants: list[str] = []
        owners: list[tuple[int, int]] = []  # (label index, position) of each variant
        for row, label in enumerate(labels):
            if label is None:
                continue
            for position, symbol in enumerate(label):
                if symbol not in known:
                    raise ValueError(
                        f"label {row} ({label!r}) has {symbol!r} at {position}, outside the vocabulary {''.join(vocabulary)!r}"
                    )
                for other in alternatives.get(symbol, ()):
                    variants.append(label[:position] + other + label[position + 1 :])
                    owners.append((row, position))
        given = {row: label for row, label in enumerate(labels) if label is not None}
        values = self.solver.solve([*given.values(), *variants])  # (one batch)
        wrong = next(((row, value) for row, value in zip(given, values) if value != targets[row]), None)
        if wrong is not None:  # (an ungrammatical or wrong label was "verified" everywhere)
            row, value = wrong
            got = "is no valid sentence" if value is None else f"gives {value}"
            raise ValueError(
                f"label {row} ({labels[row]!r}) {got}, not its target {targets[row]}: a pseudo-label explains its result"
            )
        verified = {row: [True] * len(label) for row, label in given.items()}
        for (row, position), value in zip(owners, values[len(given) :]):
            if value == targets[row]:
                verified[row][position] = False
        return [verified.get(row) for row in range(len(labels))]


def check_batch(windows: torch.Tensor, lengths: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``windows`` is a non-empty padded batch of images ``[B, T, (1,) H, W]`` and ``lengths``
    a tensor ``[B]``."""
    if not isinstance(windows, torch.Tensor) or windows.dim() not in (4, 5) or len(windows) == 0:
        raise ValueError(f"windows must be a padded batch [B, T, 32, 32] of at least one expression, got {_shape(windows)}")
    if not isinstance(lengths, torch.Tensor) or lengths.shape != (len(windows),):
        raise ValueError(f"lengths must be a tensor [{len(windows)}], one per expression of the windows, got {_shape(lengths)}")


BRIGHT_BORDER = 0.75
"""The mean intensity (0 to 1) of a window's border above which :meth:`HintPipeline.predict` refuses it as black on
white: the banks' windows have borders below 0.03, noise 0.5, a glyph drawn black on white near 1."""


def check_white_on_black(windows: torch.Tensor, positions: torch.Tensor) -> None:
    """Raise ``ValueError`` naming the first window at ``positions`` (bool ``[B, T]``: those read) of ``windows [B, T,
    (1,) H, W]`` (uint8 or floats in ``[0, 1]``, checked already) whose border's mean intensity is over
    :data:`BRIGHT_BORDER`."""
    scale = 255 if windows.dtype == torch.uint8 else 1
    border = torch.cat([windows[..., 0, :], windows[..., -1, :], windows[..., 0], windows[..., -1]], dim=-1)
    brightness = border.detach().float().flatten(2).mean(-1) / scale  # [B, T]
    bright = (brightness > BRIGHT_BORDER) & positions.to(windows.device)
    if bright.any():
        row, position = (int(i) for i in bright.nonzero()[0])
        raise ValueError(
            f"window {position} of expression {row} has a bright border (mean intensity {brightness[row, position]:.2f}): "
            "the reader reads white ink on black, as its training images show it; invert black-on-white images first "
            "(255 - pixels, or 1 - intensities, or neurosym.data.symbol_images.glyph_window)"
        )


def _shape(value: object) -> str:
    return f"shape {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__


def _integer_targets(targets: Sequence[int], count: int, what: str) -> list[int]:
    """``targets`` as ints, one for each of ``count`` ``what``; another count or a non-integer raises."""
    if len(targets) != count:
        raise ValueError(f"{count} {what} and {len(targets)} targets: one target per example")
    integers = []
    for position, target in enumerate(targets):
        try:
            integers.append(operator.index(target))
        except TypeError:
            raise TypeError(f"targets are integer results, got {target!r} at position {position}") from None
    return integers
