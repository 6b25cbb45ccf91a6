"""A trained pipeline learns a new concept (glyph, role, meaning) from a few images and results."""

import contextlib
import copy
import dataclasses
import functools
import math

import pytest
import torch
from hint_banks import prototype_bank
from hint_pipelines import (
    TINY_TRAINING,
    check_reads_in_evaluation_mode_and_keeps_training_mode,
    short_training_records,
    tiny_pipeline,
)
from table_readers import TableReader

from neurosym.data.hint import fewshot_split
from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.pipelines import fewshot
from neurosym.pipelines.fewshot import (
    ConceptNotLearned,
    FewShotConfig,
    _read,
    insist_on_symbol,
    learn_concept_from_images,
    spot_new_symbol,
    with_new_symbol,
)
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.trainer import evaluate_pipeline, train_pipeline
from neurosym.pipelines.windows import WindowSource

CPU = torch.device("cpu")
FAST = FewShotConfig(glyph_steps=60, abduction_steps=30, only_new_class=())  # a tiny reader's features are too weak


READER_TRAINING = dataclasses.replace(TINY_TRAINING, steps=300, learning_rate=3e-3)
"""Long enough that the tiny reader reads brackets from every initialisation (the 70 steps of
``TINY_TRAINING`` leave some seeds swapping them, and concepts are then learned from misread expressions)."""


@pytest.fixture(scope="module")
def trained():
    """A pipeline trained from results on the 16 HINT symbols; the bank also draws ``x`` and ``a``."""
    bank = prototype_bank(symbols=[*HINT_SYMBOLS, "x", "a"])
    short = short_training_records()
    pipeline = tiny_pipeline()
    with torch.random.fork_rng():
        train_pipeline(pipeline, WindowSource(short, bank, "train"), READER_TRAINING, CPU, progress=False)
    return pipeline, bank, short[:40]


def test_new_symbol_gets_the_mass_the_top_class_misses():
    probabilities = torch.tensor([[0.7, 0.2, 0.1], [1.0, 0.0, 0.0]])
    extended = with_new_symbol(probabilities.log())
    assert extended.shape == (2, 4)
    assert extended[0, 3].item() == pytest.approx(math.log(0.3), abs=1e-6)
    assert torch.isfinite(extended[1, 3]) and extended[1, 3] < -10  # a certain window: never new, never NaN
    torch.testing.assert_close(extended[:, :3], probabilities.log())
    for dtype in (torch.float16, torch.bfloat16):  # (1 - 1e-6 rounded to 1 there: the new class got -inf)
        half = with_new_symbol(probabilities.log().to(dtype))
        assert half.dtype == dtype and torch.isfinite(half[:, 3]).all() and half[1, 3] < -10


def test_the_new_symbols_mass_keeps_a_float64_readings_precision():
    """The mass was taken in float32 whatever the reading's dtype: a float64 reader's was rounded."""
    top = 0.7 - 1e-10
    extended = with_new_symbol(torch.tensor([[top, 0.2, 0.1 + 1e-10]], dtype=torch.float64).log())
    assert extended.dtype == torch.float64 and extended[0, 3].item() == pytest.approx(math.log1p(-top), rel=1e-12)


def _rows(vocabulary: list[str], shares: list[dict[str, float]], favoured: int) -> torch.Tensor:
    """Float64 log-probabilities ``[len(shares), V]``: per row the ``shares`` it names, the rest spread evenly over the
    other symbols; the first symbol named in row ``favoured`` made 1e-9 less likely (below float32's resolution)."""
    rows = torch.empty(len(shares), len(vocabulary), dtype=torch.float64)
    for row, named in zip(rows, shares):
        row.fill_((1 - sum(named.values())) / (len(vocabulary) - len(named)))
        for symbol, share in named.items():
            row[vocabulary.index(symbol)] = share
    rows = rows.log()
    rows[favoured, vocabulary.index(next(iter(shares[favoured])))] -= 1e-9
    return rows


class _Shown:
    """Expressions of given windows ``[B, T, 32, 32]`` and lengths ``[B]``, as a WindowSource hands them out."""

    def __init__(self, windows: torch.Tensor, lengths: torch.Tensor):
        self.windows, self.lengths = windows, lengths

    def __len__(self) -> int:
        return len(self.windows)

    def batch(self, indices):
        return self.windows[list(indices)], self.lengths[list(indices)]


@pytest.mark.parametrize("favoured", [0, 2])
def test_the_new_symbol_is_insisted_on_by_a_float64_readers_own_scores(favoured):
    """Spotting and reading the few shots rounded a float64 reader's log-probabilities to float32 before ranking where
    the new symbol goes: the positions it tells apart were tied, and the first was taken."""
    windows = torch.arange(3, dtype=torch.uint8)[None, :, None, None].expand(1, 3, 32, 32)  # "1+2", window t reads row t
    lengths, expected = torch.tensor([3]), "x+2" if favoured == 0 else "1+x"
    vocabulary = list(HINT_SYMBOLS)
    rows = _rows(vocabulary, [{"1": 0.6}, {"+": 0.9}, {"2": 0.6}], favoured)  # the new glyph gets log(0.4) at 0 and 2
    readings, _, _ = spot_new_symbol(HintPipeline(TableReader(vocabulary, rows)), "x", windows, lengths, role="number")
    assert readings == [expected]
    vocabulary.append("x")  # the grown reader's, sure of neither number
    rows = _rows(vocabulary, [{"1": 0.6, "x": 0.3}, {"+": 0.9}, {"2": 0.6, "x": 0.3}], favoured)
    grown = HintPipeline(TableReader(vocabulary, rows))
    assert _read(grown, _Shown(windows, lengths), CPU, insist=("x", "number")) == [expected]


def test_a_reading_without_the_new_symbol_gets_it_where_a_same_role_symbol_is_least_sure():
    vocabulary = ["9", "2", "3", "*", "+", "a"]
    log_probs = torch.full((5, 6), -9.0)
    for t, (symbol, read) in enumerate(zip("9*2+3", [-0.1, -0.2, -0.1, -1.5, -0.1])):
        log_probs[t, vocabulary.index(symbol)] = read
    log_probs[:, 5] = torch.tensor([-5.0, -2.5, -5.0, -0.4, -5.0])  # the '+' window is the unsure one
    assert insist_on_symbol("9*2+3", log_probs, vocabulary, "a", ["*", "+"]) == "9*2a3"
    assert insist_on_symbol("9a2+3", log_probs, vocabulary, "a", ["*", "+"]) == "9a2+3"  # already there
    log_probs[2, 5] = -1.0  # of the numbers, the '2' window is the unsure one
    assert insist_on_symbol("9*2+3", log_probs, vocabulary, "a", ["9", "2", "3"]) == "9*a+3"  # as a number
    with pytest.raises(ValueError, match=r"symbols \['b', '-'\] are not in the reader's vocabulary"):
        insist_on_symbol("9*2+3", log_probs, vocabulary, "b", ["*", "+", "-"])


@pytest.mark.parametrize(("concept", "role", "meaning"), [("x", "number", "value 11"), ("a", "operator", "max(i, j) at level 1")])
def test_concept_is_learned_from_ten_images_and_results(trained, concept, role, meaning):
    pipeline, bank, replay = trained
    split = fewshot_split(concept, scale=0.01, seed=0, cache=False, progress=False)
    train = list(split["train"])
    larger = fewshot_split(concept, scale=0.1, seed=0, cache=False, progress=False)["test"]
    test = [r for r in larger if len(r.expr) <= 7][:60]  # as long as the main task's training expressions
    assert len(train) <= 11 and len(test) >= 30
    pipeline.classifier.train()  # as training leaves it
    state, random_state = copy.deepcopy(pipeline.classifier.state_dict()), torch.get_rng_state()
    result = learn_concept_from_images(pipeline, concept, train, replay, bank, CPU, FAST)
    assert pipeline.classifier.training and torch.equal(torch.get_rng_state(), random_state)  # were left in eval / moved
    assert all(torch.equal(value, pipeline.classifier.state_dict()[key]) for key, value in state.items())
    assert result.role == role  # inferred, not given
    assert result.spotted >= 0.9  # decoding finds the unseen glyph without being told it is there
    learned = result.learned
    assert (f"value {learned.value}" if role == "number" else f"{learned.program} at level {learned.level}") == meaning
    assert result.pipeline.classifier.vocabulary[-1] == concept
    assert pipeline.classifier.vocabulary == list(HINT_SYMBOLS)  # the original pipeline is untouched
    scores = evaluate_pipeline(result.pipeline, WindowSource(test, bank, "test"), CPU)
    assert scores["avg"] >= 0.8 and scores["symbol"] >= 0.95, scores


def test_spotting_refuses_a_known_symbol_and_bad_configurations(trained):
    pipeline, bank, replay = trained
    windows, lengths = WindowSource(replay[:2], bank, "train").batch([0, 1])
    with pytest.raises(ValueError, match="already in the vocabulary"):
        spot_new_symbol(pipeline, "7", windows, lengths)
    with pytest.raises(ValueError, match="unknown role"):
        FewShotConfig(role="bracket")
    with pytest.raises(ValueError, match=r"rounds, glyph_steps and batch_size must be positive ints.*'batch_size': True"):
        FewShotConfig(batch_size=True)  # was accepted, as batches of one
    with pytest.raises(ValueError, match="agreements"):
        FewShotConfig(agreements=(0.9, 1.5))
    with pytest.raises(ValueError, match="only_new_class takes roles"):
        FewShotConfig(only_new_class=("bracket",))
    augmentations = ({"augment_shift": -1}, {"augment_shift": 2.5}, {"augment_style": 1.5}, {"augment_style": True})
    for augmentation in augmentations:  # 2.5 and True were accepted
        with pytest.raises(ValueError, match="augment_shift >= 0 and augment_style"):
            FewShotConfig(**augmentation)
    with pytest.raises(ValueError, match="no few-shot training expression"):
        learn_concept_from_images(pipeline, "x", [], replay, bank, CPU, FAST)


def test_spotting_reads_in_evaluation_mode_and_leaves_the_reader_as_it_was(trained):
    pipeline, bank, replay = trained
    windows, lengths = WindowSource(replay[:8], bank, "train").batch(range(8))
    pipeline.classifier.train()
    state = copy.deepcopy(pipeline.classifier.state_dict())
    readings, _, _ = spot_new_symbol(pipeline, "x", windows, lengths, role="number")
    assert pipeline.classifier.training  # (batch norm's running statistics were overwritten by the read)
    assert all(torch.equal(value, pipeline.classifier.state_dict()[key]) for key, value in state.items())
    pipeline.classifier.eval()
    assert spot_new_symbol(pipeline, "x", windows, lengths, role="number")[0] == readings


def test_reading_the_few_shots_reads_in_evaluation_mode_and_leaves_the_reader_in_the_callers_mode():
    pipeline, source = tiny_pipeline(), WindowSource(short_training_records()[:20], prototype_bank(), "train")
    for insist in (None, ("7", "number")):
        check_reads_in_evaluation_mode_and_keeps_training_mode(
            pipeline.classifier, functools.partial(_read, pipeline, source, CPU, insist)
        )


def test_few_shot_learning_refuses_bad_inputs_before_any_training(trained):
    pipeline, bank, replay = trained
    windows, lengths = WindowSource(replay[:2], bank, "train").batch([0, 1])
    with pytest.raises(ValueError, match=r"unknown role 'bracket': choose one of \('number', 'operator'\) or None"):
        spot_new_symbol(pipeline, "x", windows, lengths, role="bracket")  # was read as an operator, and named 'bracket'
    with pytest.raises(ValueError, match=r"lengths must be a tensor \[2\], one per expression"):
        spot_new_symbol(pipeline, "x", windows, lengths[:1])
    train = list(fewshot_split("x", scale=0.01, seed=0, cache=False, progress=False)["train"])
    with pytest.raises(ValueError, match=r"few-shot expression 0 \(id '0'\): expr 'x' does not use 'a'; every training"):
        learn_concept_from_images(pipeline, "a", train, replay, bank, CPU, FAST)  # was x's glyph learned as 'a' = 11
    with pytest.raises(ValueError, match="no main-task expression to replay while 'x' is learned"):
        learn_concept_from_images(pipeline, "x", train, [], bank, CPU, FAST)  # was a RuntimeError deep in torch
    for bad, match in (({"rounds": 1.5}, "must be positive ints"), ({"glyph_steps": 0}, "must be positive ints"),
                       ({"learning_rate": 0.0}, "finite learning_rate > 0"), ({"learning_rate": math.nan}, "finite"),
                       ({"seed": -1}, "int seed >= 0"), ({"glyph_batch": 65}, "glyph_batch an even int")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            FewShotConfig(**bad)


@pytest.mark.parametrize("only_new_class", [True, False])
def test_for_a_new_symbol_by_default_only_its_row_learns_and_the_known_symbols_are_read_as_before(trained, only_new_class):
    pipeline, bank, replay = trained
    train = list(fewshot_split("a", scale=0.01, seed=0, cache=False, progress=False)["train"])
    config = FewShotConfig(glyph_steps=20, abduction_steps=10, only_new_class=("operator",) if only_new_class else ())
    assert FewShotConfig().only_new_class == ("operator", "number")
    grown = learn_concept_from_images(pipeline, "a", train, replay, bank, CPU, config).pipeline.classifier
    before, after = pipeline.classifier.state_dict(), grown.state_dict()
    known = [key for key in before if key not in ("classifier.weight", "classifier.bias") and "num_batches" not in key]
    kept = all(torch.equal(before[key], after[key]) for key in known)
    kept_rows = torch.equal(after["classifier.weight"][:-1], before["classifier.weight"])
    assert kept == kept_rows == only_new_class
    assert all(parameter.requires_grad for parameter in grown.parameters())  # learns again afterwards
    assert all(layer.momentum == 0.1 for layer in grown.modules() if isinstance(layer, torch.nn.BatchNorm2d))


def test_only_the_new_class_learning_gives_every_parameter_back_the_learning_it_had():
    classifier = tiny_pipeline().classifier
    frozen = next(classifier.encoder.parameters())
    frozen.requires_grad_(False)  # the caller froze part of the reader
    before = [parameter.requires_grad for parameter in classifier.parameters()]
    with fewshot._only_new_class_learns(classifier, enabled=True):
        learning = {name for name, parameter in classifier.named_parameters() if parameter.requires_grad}
        assert learning == {"classifier.weight", "classifier.bias"}
    assert [parameter.requires_grad for parameter in classifier.parameters()] == before
    assert not frozen.requires_grad  # (it came back trainable)


def test_each_self_training_round_draws_its_own_windows_and_the_same_seed_the_same_ones(trained, monkeypatch):
    """Every round reseeded its generators alike: the second round trained on the first one's windows again."""
    pipeline, bank, replay = trained
    train = list(fewshot_split("x", scale=0.01, seed=0, cache=False, progress=False)["train"])
    first_batches: list[tuple[torch.Tensor, torch.Tensor]] = []

    def recorded(module, batch, schedule, device, description):
        first_batches.append(batch(0))

    monkeypatch.setattr(fewshot, "fit_windows", recorded)
    config = FewShotConfig(glyph_steps=5, abduction_steps=0, rounds=2)
    for _ in range(2):
        with contextlib.suppress(ConceptNotLearned):  # (nothing trained the glyph)
            learn_concept_from_images(pipeline, "x", train, replay, bank, CPU, config)
    (windows, labels), (windows_again, _), *again = first_batches
    assert windows.shape == windows_again.shape and not torch.equal(windows, windows_again)
    assert len(again) == 2 and all(torch.equal(a, b) for a, b in zip(again[0], (windows, labels)))
