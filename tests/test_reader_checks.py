"""What the pipelines and the symbol classifier refuse from a reader or its windows, before a wrong number comes out."""

import math

import pytest
import torch
from torch import nn

from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.perception.reader import LOG_PROB_TOLERANCE
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines import GrammarPipeline, HintPipeline
from neurosym.pipelines.sentences import READ, SentenceBatch
from neurosym.semantics import TreeSemantics
from neurosym.syntax import SymbolGrammar

BITS = SymbolGrammar('start: BIT+\nBIT: "0" | "1"\n')
BIT_VALUE = TreeSemantics({"start": lambda *bits: int("".join(bits), 2)})
HINT_SYMBOL_ROWS = SymbolGrammar("start: SYMBOL+\nSYMBOL: " + " | ".join(f'"{s}"' for s in HINT_SYMBOLS) + "\n")
ROW_LENGTH = TreeSemantics({"start": lambda *symbols: len(symbols)})


class Logits(nn.Module):
    """A reader of HINT's symbols; ``log_softmax`` decides whether it returns log-probabilities or raw logits."""

    def __init__(self, log_softmax: bool, vocabulary: tuple[str, ...] = HINT_SYMBOLS):
        super().__init__()
        self.vocabulary, self.log_softmax = list(vocabulary), log_softmax
        self.linear = nn.Linear(32 * 32, len(vocabulary))

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        scores = 20 * self.linear(windows.flatten(1).float())
        return scores.log_softmax(-1) if self.log_softmax else scores


class NoGroups(nn.Module):
    vocabulary = ("0", "1")

    def forward(self, windows: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(windows), 2).log_softmax(-1)


def test_float_windows_outside_0_1_are_refused_not_read_as_white():
    reader = SymbolClassifier(list(HINT_SYMBOLS), features=8, width=4).eval()
    pixels = torch.randint(0, 256, (3, 32, 32), dtype=torch.uint8)
    assert reader(pixels).shape == (3, len(HINT_SYMBOLS)) and torch.equal(reader(pixels), reader(pixels.float() / 255))
    with pytest.raises(
        ValueError, match=r"float images must hold intensities in \[0, 1\], got values in \[0.0, 25\d.0\]: give uint8"
    ):
        reader(pixels.float())
    for bad in (torch.nan, torch.inf):  # (NaN was named as values in [nan, nan]; windows [N, 1, H, W] as read)
        windows = torch.zeros(2, 32, 32)
        windows[1, 4, 7] = bad
        with pytest.raises(ValueError, match=rf"images must be finite, got {bad} at index \[1, 0, 4, 7\]"):
            reader(windows)
    lengths = torch.tensor([3])
    with pytest.raises(ValueError, match="float images must hold intensities in"):  # through the pipeline's predict too
        HintPipeline(reader).predict(pixels.float().unsqueeze(0), lengths)


def test_a_reader_that_returns_logits_is_refused_by_the_hint_pipeline():
    windows, lengths = torch.rand(2, 3, 32, 32), torch.tensor([3, 1])
    assert len(HintPipeline(Logits(log_softmax=True)).predict(windows, lengths)) == 2
    with pytest.raises(ValueError, match=r"the reader must return log-probabilities .*; row \d+'s is .* away from 0"):
        HintPipeline(Logits(log_softmax=False)).predict(windows, lengths)


@pytest.mark.parametrize("pipeline", ["hint", "grammar"])
def test_a_bfloat16_readers_log_probabilities_are_read_not_refused(pipeline):
    """bfloat16 rounds each log-probability by up to 2^-8 of itself: a bfloat16 reader's log_softmax over HINT's 16
    symbols sums (in log space) up to 0.022 away from 0, and both pipelines refused one further than 0.01 as no
    log-probabilities."""
    torch.manual_seed(7)
    reader = SymbolClassifier(list(HINT_SYMBOLS), features=32, width=8).to(torch.bfloat16).eval()
    windows, lengths = torch.randint(0, 256, (8, 5, 32, 32), dtype=torch.uint8), torch.full((8,), 5)
    with torch.no_grad():
        read = reader(windows.flatten(0, 1))  # [40, 16]
        assert read.float().logsumexp(-1).abs().max() > LOG_PROB_TOLERANCE  # (what was refused)
        if pipeline == "hint":
            log_probs = HintPipeline(reader).read(windows, lengths).log_probs
        else:
            batch = SentenceBatch(windows, lengths, torch.full((8, 5), READ))
            grammar_pipeline = GrammarPipeline(HINT_SYMBOL_ROWS, ROW_LENGTH, reader)
            log_probs = grammar_pipeline.log_probs(batch)[..., grammar_pipeline.columns]
    assert torch.equal(log_probs.flatten(0, 1), read.float())


def test_a_reader_whose_forward_takes_no_groups_is_named_when_the_pipeline_is_built():
    for build, who in ((lambda r: GrammarPipeline(BITS, BIT_VALUE, r), "GrammarPipeline"), (HintPipeline, "HintPipeline")):
        with pytest.raises(
            TypeError, match=f"{who} calls its reader as reader\\(windows, groups\\).*NoGroups's forward takes no groups"
        ):
            build(NoGroups())
        with pytest.raises(TypeError, match=f"{who} takes a reader: a module with a vocabulary; Linear has none"):
            build(nn.Linear(2, 2))
    assert GrammarPipeline(BITS, BIT_VALUE, Logits(True, ("0", "1"))).reader.vocabulary == ["0", "1"]


class Misread(nn.Module):
    """A reader of HINT's symbols whose output is wrong in one way: ``"short"`` a row too few, ``"tuple"`` the rows in a
    tuple, ``"integers"`` int64 scores."""

    vocabulary = HINT_SYMBOLS

    def __init__(self, fault: str):
        super().__init__()
        self.fault = fault

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> object:
        read = torch.zeros(len(windows), len(self.vocabulary)).log_softmax(-1)
        return {"short": read[:-1], "tuple": (read,), "integers": read.long()}[self.fault]


@pytest.mark.parametrize("pipeline", ["hint", "grammar"])
@pytest.mark.parametrize(
    ("fault", "error", "message"),
    [
        ("short", ValueError, r"the reader returned shape \[5, 16\] for its 16 symbols and 6 windows: expected \[6, 16\]"),
        ("tuple", TypeError, r"the reader returned a tuple: expected a tensor of log-probabilities \[6, 16\]"),
        ("integers", ValueError, "the reader returned torch.int64 log-probabilities: expected floating point"),
    ],
)
def test_a_reader_that_returns_no_row_of_log_probabilities_per_window_is_named(pipeline, fault, error, message):
    """A row too few failed deep inside torch where the rows were put in place (a shape mismatch), a tuple on its missing
    ``ndim``, and integer scores were read as log-probabilities."""
    windows, lengths = torch.zeros(2, 4, 32, 32, dtype=torch.uint8), torch.tensor([4, 2])
    with pytest.raises(error, match=message):
        if pipeline == "hint":
            HintPipeline(Misread(fault)).read(windows, lengths)
        else:
            GrammarPipeline(HINT_SYMBOL_ROWS, ROW_LENGTH, Misread(fault)).log_probs(
                SentenceBatch(windows, lengths, torch.full((2, 4), READ))
            )


def test_black_on_white_windows_are_refused_by_predict_not_read_as_other_symbols():
    pipeline = HintPipeline(SymbolClassifier(list(HINT_SYMBOLS), features=8, width=4))
    glyphs = torch.zeros(2, 3, 32, 32, dtype=torch.uint8)
    glyphs[:, :, 8:24, 14:18] = 255  # a white stroke on black
    lengths = torch.tensor([3, 1])
    assert len(pipeline.predict(glyphs, lengths)) == len(pipeline.predict(glyphs.float()[:, :, None] / 255, lengths)) == 2
    padded = glyphs.clone()
    padded[1, 1:] = 255  # (the padding after an expression is never read)
    assert len(pipeline.predict(padded, lengths)) == 2
    for inverted in (255 - glyphs, 1 - glyphs.float()[:, :, None] / 255):  # (was: read, as other symbols)
        with pytest.raises(ValueError, match=r"window 0 of expression 0 has a bright border \(mean intensity 1.00\): the"):
            pipeline.predict(inverted, lengths)


class Unread(nn.Module):
    """A reader of HINT's symbols that fails the test where it is asked to read."""

    vocabulary = HINT_SYMBOLS

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        pytest.fail("the reader read windows that predict refuses")


def test_predict_refuses_bad_windows_before_the_reader_reads_any():
    """The windows were read first and the bright borders only then refused: a full reading spent on a refused batch."""
    pipeline, lengths = HintPipeline(Unread()), torch.tensor([3, 1])
    glyphs = torch.full((2, 3, 32, 32), 255, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"window 0 of expression 0 has a bright border"):
        pipeline.predict(glyphs, lengths)
    windows = torch.zeros(2, 3, 32, 32)
    windows[1, 0, 0, 5] = torch.nan  # (on the border: its mean is NaN, which no brightness check refuses)
    with pytest.raises(ValueError, match=r"images must be finite, got nan at index \[1, 0, 0, 5\]"):
        pipeline.predict(windows, lengths)
    with pytest.raises(ValueError, match=r"float images must hold intensities in \[0, 1\], got values in \[255.0, 255.0\]"):
        pipeline.predict(glyphs.float(), lengths)
    with pytest.raises(ValueError, match=r"lengths must be a tensor \[2\]"):
        pipeline.predict(glyphs, torch.tensor([3]))


class Fixed(nn.Module):
    """A reader of two symbols that returns ``read`` for the first rows and log-probabilities for the others."""

    vocabulary = ("0", "1")

    def __init__(self, read: list[list[float]]):
        super().__init__()
        self.read = torch.tensor(read)

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        rows = torch.full((len(windows), 2), 0.5).log()
        rows[: len(self.read)] = self.read
        return rows


@pytest.mark.parametrize(
    ("read", "message"),
    [
        (
            [[math.log(0.5)] * 2, [-0.7, math.nan]],
            r"returned NaN log-probabilities \(a diverged reader, or NaN windows\), first in row 1 at symbol 1",
        ),
        ([[math.log(0.5)] * 2, [math.inf, -math.inf]], r"row 1's is inf away from 0 \(a log-probability of \+inf\)"),
        ([[-math.inf, -math.inf]], r"row 0's is inf away from 0 \(every log-probability -inf\)"),
    ],
)
def test_log_probabilities_that_are_not_finite_are_named_with_their_row(read, message):
    """NaN was named without its place, a row of +inf or only -inf as "a row's is inf away from 0"."""
    windows, lengths = torch.zeros(2, 2, 32, 32, dtype=torch.uint8), torch.tensor([2, 2])
    with pytest.raises(ValueError, match=message):
        GrammarPipeline(BITS, BIT_VALUE, Fixed(read)).log_probs(SentenceBatch(windows, lengths, torch.full((2, 2), READ)))


def test_a_reader_assigned_to_a_pipeline_reads_by_its_own_vocabulary_and_is_checked():
    """The columns of the first reader's vocabulary stayed: a reader of another symbol order assigned read every
    symbol as the other one (the runner's refit assigns readers so)."""
    torch.manual_seed(0)
    first = Logits(log_softmax=True, vocabulary=("0", "1"))
    swapped = Logits(log_softmax=True, vocabulary=("1", "0"))
    with torch.no_grad():  # the same reader with its two output rows, and its vocabulary, in the other order
        swapped.linear.weight.copy_(first.linear.weight.flip(0))
        swapped.linear.bias.copy_(first.linear.bias.flip(0))
    windows, lengths = torch.rand(4, 3, 32, 32), torch.tensor([3, 2, 3, 1])
    batch = SentenceBatch(windows, lengths, torch.full((4, 3), READ))
    pipeline = GrammarPipeline(BITS, TreeSemantics({"start": lambda bits: int("".join(bits), 2)}), first)
    read_first = pipeline.read(batch).values
    pipeline.reader = swapped
    assert pipeline.read(batch).values == read_first and pipeline.columns.tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"the reader's symbols \['2'\] are not in the grammar's vocabulary"):
        pipeline.reader = Logits(log_softmax=True, vocabulary=("0", "2"))
    with pytest.raises(TypeError):
        pipeline.reader = "a reader"
