"""The pipeline learns perception from results alone on a tiny synthetic problem, and resumes exactly."""

import math
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch
from hint_banks import prototype_bank
from hint_pipelines import TINY_TRAINING, tiny_pipeline, tiny_problem
from hypothesis import given, settings
from hypothesis import strategies as st

import neurosym.pipelines.trainer as trainer_module
import neurosym.training.core as training_loop
from neurosym.data.hint import EVAL_SUBSETS
from neurosym.data.symbol_images import HINT_SYMBOLS
from neurosym.perception.batch_statistics import batch_norms, batch_statistics_of
from neurosym.perception.symbol_classifier import SymbolClassifier
from neurosym.pipelines.curriculum import Curriculum, parse_stages
from neurosym.pipelines.pipeline import HintPipeline, Reading
from neurosym.pipelines.reinforce import reinforce_loss
from neurosym.pipelines.subsets import subset_scores
from neurosym.pipelines.trainer import PipelineConfig, evaluate_pipeline, evaluate_pipeline_on_each, train_pipeline
from neurosym.pipelines.windows import WindowSource
from neurosym.semantics import HINT_SEMANTICS, BatchSolver
from neurosym.syntax import parse, to_infix
from neurosym.training import TrainingInterrupted, load_checkpoint, save_checkpoint
from neurosym.training.checkpoint import CheckpointMismatch, load_model_state
from neurosym.training.stopping import TIME_LIMIT

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def problem():
    return tiny_problem()


def test_perception_is_learned_from_results_alone(problem):
    train, test = problem
    pipeline = tiny_pipeline()
    before = evaluate_pipeline(pipeline, test, CPU)
    history = train_pipeline(pipeline, train, TINY_TRAINING, CPU, progress=False)
    after = evaluate_pipeline(pipeline, test, CPU)
    assert before["symbol"] < 0.3
    assert after["symbol"] > 0.9, after
    assert after["all"] > 0.8, after
    assert [h["max_length"] for h in history[:21:20]] == [1, 3]
    counts = Counter(symbol for record in test.records for symbol in record.expr)
    assert set(after["symbol_by_class"]) == set(counts)
    weighted = sum(after["symbol_by_class"][s] * n for s, n in counts.items()) / sum(counts.values())
    assert after["symbol"] == pytest.approx(weighted)


def test_the_scores_name_hints_test_subsets_in_hints_order_whatever_order_the_records_are_read_in(problem):
    _, test = problem
    shortest_first = sorted(test.records[:10], key=lambda record: len(record.expr))  # (the order they are read in)
    subsets = ["LL", "SL", "LS", "SS", "I", "LL", "SL", "LS", "SS", "I"]
    records = [replace(record, eval=subset) for record, subset in zip(shortest_first, subsets, strict=True)]
    scores = evaluate_pipeline(tiny_pipeline(), WindowSource(records, prototype_bank(), "test"), CPU)
    assert list(scores) == [*EVAL_SUBSETS, "avg", "symbol", "symbol_by_class"]
    assert scores["avg"] == pytest.approx(np.mean([scores[subset] for subset in EVAL_SUBSETS]))


def test_evaluating_no_record_is_named_rather_than_scored_nan_with_a_warning():
    with pytest.raises(ValueError, match="no example to score: the records evaluated are empty"):
        evaluate_pipeline(tiny_pipeline(), WindowSource([], prototype_bank(), "test"), CPU)  # was symbol 0.0, avg NaN
    with pytest.raises(ValueError, match="no example to score"):
        subset_scores({"I": []})
    assert subset_scores({"I": [], "SS": [True, False]}) == {"SS": 0.5, "avg": 0.5}


def test_avg_is_the_share_over_every_example_as_hints_avg_not_the_mean_of_the_subsets():
    # the HINT release's Avg. (result_acc/avg) scores every test example alike: a larger subset weighs more
    scores = subset_scores({"I": [True, True, True, False], "SS": [False]})
    assert scores == {"I": 0.75, "SS": 0.0, "avg": 0.6}  # (the mean of the two subsets: 0.375)


def test_evaluating_with_other_batch_statistics_reads_as_within_batch_statistics_of_and_restores_them(problem):
    train, test = problem
    pipeline = tiny_pipeline()
    running = [t.clone() for t in pipeline.classifier.state_dict().values()]
    plain = evaluate_pipeline(pipeline, test, CPU)
    own = evaluate_pipeline(pipeline, test, CPU, statistics=train.window_batches())
    with batch_statistics_of(pipeline.classifier, train.window_batches()):
        assert evaluate_pipeline(pipeline, test, CPU) == own  # the same reading as within the context
    assert own != plain  # the untrained reader's running statistics (0, 1) read otherwise
    assert all(torch.equal(a, b) for a, b in zip(running, pipeline.classifier.state_dict().values(), strict=True))
    assert evaluate_pipeline(pipeline, test, CPU) == plain


def test_each_source_is_scored_as_alone_with_the_batch_statistics_estimated_once(problem):
    train, test = problem
    pipeline = tiny_pipeline()
    halves = {
        "first": WindowSource(test.records[:10], test.dataset.bank, "test"),
        "rest": WindowSource(test.records[10:], test.dataset.bank, "test"),
    }
    alone = {name: evaluate_pipeline(pipeline, source, CPU, statistics=train.window_batches()) for name, source in halves.items()}
    estimates = []
    estimating = batch_norms(pipeline.classifier)  # (in training mode while they estimate, the rest reading in evaluation)
    pipeline.classifier.register_forward_hook(lambda *_: estimates.append(1) if estimating[0].training else None)
    assert evaluate_pipeline_on_each(pipeline, halves, CPU, statistics=train.window_batches()) == alone
    assert len(estimates) == len(list(train.window_batches()))  # the statistics' windows read once, not per source
    assert evaluate_pipeline_on_each(pipeline, halves, CPU) == {
        name: evaluate_pipeline(pipeline, source, CPU) for name, source in halves.items()
    }


def test_evaluating_each_source_shows_a_progress_bar_named_by_it(problem, capsys):
    _, test = problem
    halves = {
        "first": WindowSource(test.records[:10], test.dataset.bank, "test"),
        "rest": WindowSource(test.records[10:], test.dataset.bank, "test"),
    }
    pipeline = tiny_pipeline()
    quiet = evaluate_pipeline_on_each(pipeline, halves, CPU)
    assert "evaluate" not in capsys.readouterr().err
    assert evaluate_pipeline_on_each(pipeline, halves, CPU, progress=True) == quiet
    shown = capsys.readouterr().err
    assert "evaluate first" in shown and "evaluate rest" in shown  # (an adapted run's evaluation read for 20 min unseen)


def test_resume_after_interruption_matches_uninterrupted_run(problem, tmp_path, monkeypatch):
    train, test = problem
    config = PipelineConfig(
        steps=12,
        batch_size=8,
        checkpoint_every=4,
        schedule="cosine",
        augment_shift=1,
        augment_style=0.5,
        curriculum=Curriculum(((1, 4), (3, 4), (7, 4))),
    )
    straight = tiny_pipeline(seed=3)
    train_pipeline(straight, train, config, CPU, tmp_path / "straight.pt", progress=False)

    saved = training_loop.save_checkpoint

    def save_then_crash(state, path):
        saved(state, path)
        if state["step"] == 8:
            raise KeyboardInterrupt

    monkeypatch.setattr(training_loop, "save_checkpoint", save_then_crash)
    interrupted = tiny_pipeline(seed=3)
    with pytest.raises(KeyboardInterrupt):
        train_pipeline(interrupted, train, config, CPU, tmp_path / "resumed.pt", progress=False)
    monkeypatch.setattr(training_loop, "save_checkpoint", saved)
    resumed = tiny_pipeline(seed=99)  # a different initialisation: everything must come from the checkpoint
    history = train_pipeline(resumed, train, config, CPU, tmp_path / "resumed.pt", progress=False)
    assert len(history) == 12
    for name, tensor in straight.classifier.state_dict().items():
        assert torch.equal(tensor, resumed.classifier.state_dict()[name]), name
    assert evaluate_pipeline(straight, test, CPU) == evaluate_pipeline(resumed, test, CPU)


def test_time_limit_stops_between_checkpoints_and_the_next_call_continues_exactly(problem, tmp_path):
    train, _ = problem
    config = PipelineConfig(steps=5, batch_size=8, checkpoint_every=4, curriculum=Curriculum(((1, 2), (3, 3))))
    straight = tiny_pipeline(seed=3)
    train_pipeline(straight, train, config, CPU, tmp_path / "straight.pt", progress=False)
    path = tmp_path / "chunked.pt"
    stopped_at = []
    while True:
        chunked = tiny_pipeline(seed=99 if stopped_at else 3)  # later calls: everything must come from the checkpoint
        try:
            history = train_pipeline(chunked, train, config, CPU, path, progress=False, time_limit=0.0)
            break
        except TrainingInterrupted as stop:
            assert load_checkpoint(path)["step"] == stop.step
            stopped_at.append((stop.step, stop.reason))
    assert stopped_at == [(step, TIME_LIMIT) for step in range(1, 5)]
    assert len(history) == 5
    for name, tensor in straight.classifier.state_dict().items():
        assert torch.equal(tensor, chunked.classifier.state_dict()[name]), name


def test_checkpoint_of_another_configuration_is_refused(problem, tmp_path):
    train, _ = problem
    path = tmp_path / "ckpt.pt"
    train_pipeline(tiny_pipeline(), train, PipelineConfig(steps=2, batch_size=4), CPU, path, progress=False)
    with pytest.raises(ValueError, match="another configuration"):
        train_pipeline(tiny_pipeline(), train, PipelineConfig(steps=3, batch_size=4), CPU, path, progress=False)


def test_checkpoint_of_a_reader_of_another_vocabulary_is_refused_before_it_is_loaded(problem, tmp_path):
    train, _ = problem
    path, config = tmp_path / "ckpt.pt", PipelineConfig(steps=3, batch_size=4, curriculum=Curriculum.none())
    with pytest.raises(TrainingInterrupted):
        train_pipeline(tiny_pipeline(), train, config, CPU, path, time_limit=0.0)
    swapped = ["1", "0", *HINT_SYMBOLS[2:]]  # as many symbols, two in another order: the weights load alike
    torch.manual_seed(0)
    pipeline = HintPipeline(SymbolClassifier(swapped, features=32, width=8))
    weights = {name: tensor.clone() for name, tensor in pipeline.classifier.state_dict().items()}
    message = r"checkpoint .*ckpt.pt holds a reader of another vocabulary: \['0', '1', .* there, \['1', '0', .* here"
    with pytest.raises(CheckpointMismatch, match=message):  # was resumed, reading each 0 as 1 and each 1 as 0
        train_pipeline(pipeline, train, config, CPU, path)
    assert all(torch.equal(tensor, pipeline.classifier.state_dict()[name]) for name, tensor in weights.items())
    state = load_checkpoint(path)
    del state["vocabulary"]  # as written before the vocabulary was kept: accepted
    save_checkpoint(state, path)
    assert len(train_pipeline(pipeline, train, config, CPU, path)) == 3


def test_checkpoint_of_a_reader_of_other_sizes_is_refused_before_any_of_it_is_loaded(problem, tmp_path):
    train, _ = problem
    path, config = tmp_path / "ckpt.pt", PipelineConfig(steps=2, batch_size=4, curriculum=Curriculum.none())
    train_pipeline(tiny_pipeline(), train, config, CPU, path)
    wider = HintPipeline(SymbolClassifier(list(HINT_SYMBOLS), features=64, width=8))  # the same convolutions, a wider head
    weights = {name: tensor.clone() for name, tensor in wider.classifier.state_dict().items()}
    with pytest.raises(CheckpointMismatch, match=r"holds another model \(other sizes or options\): other values: "
                                                 r"encoder.head.weight \[32, 512\] there, \[64, 512\] here"):  # fmt: skip
        train_pipeline(wider, train, config, CPU, path)
    # (was: every tensor of the checkpoint that fitted, the convolutions', loaded before the refusal)
    assert all(torch.equal(tensor, wider.classifier.state_dict()[name]) for name, tensor in weights.items())


class _Tagged(torch.nn.Module):
    """A module with extra state (``get_extra_state``): a value of its state dict that is no tensor."""

    def __init__(self, tag: str) -> None:
        super().__init__()
        self.linear, self.tag = torch.nn.Linear(2, 2), tag

    def get_extra_state(self) -> dict:
        return {"tag": self.tag}

    def set_extra_state(self, state: dict) -> None:
        self.tag = state["tag"]


def test_a_modules_extra_state_loads_and_only_tensors_are_compared_by_shape():
    source, target = _Tagged("source"), _Tagged("target")
    load_model_state(target, source.state_dict(), "a state")  # (was refused: "_extra_state is a dict")
    assert target.tag == "source" and torch.equal(target.linear.weight, source.linear.weight)
    with pytest.raises(CheckpointMismatch, match=r"other values: linear.weight is a list"):
        load_model_state(target, {**source.state_dict(), "linear.weight": [[0.0, 0.0]] * 2}, "a state")


def test_checkpoint_from_before_a_new_config_field_resumes_with_its_default(problem, tmp_path):
    train, _ = problem
    path = tmp_path / "ckpt.pt"
    config = PipelineConfig(steps=2, batch_size=4)
    history = train_pipeline(tiny_pipeline(), train, config, CPU, path, progress=False)
    state = load_checkpoint(path)
    del state["config"]["pseudo_labels"]  # as written before the field existed
    save_checkpoint(state, path)
    assert train_pipeline(tiny_pipeline(seed=5), train, config, CPU, path, progress=False) == history  # read, not retrained
    with pytest.raises(ValueError, match="another configuration"):
        train_pipeline(tiny_pipeline(), train, replace(config, pseudo_labels="verified"), CPU, path, progress=False)


def test_reinforce_baseline_runs_and_reports_rewards(problem):
    train, _ = problem
    config = PipelineConfig(steps=3, batch_size=8, learning="reinforce", curriculum=Curriculum(((1, 10**9),)))
    history = train_pipeline(tiny_pipeline(), train, config, CPU, progress=False)
    assert len(history) == 3 and all(0.0 <= h["labelled"] <= 1.0 for h in history)
    assert all(h["loss"] is not None for h in history)


def test_reinforce_loss_rewards_readings_that_give_the_result_and_follows_the_score_function():
    vocabulary = list(HINT_SYMBOLS)
    sentences = ["2+3", "9*9"]
    logits = torch.full((2, 3, len(vocabulary)), -50.0)
    for row, sentence in enumerate(sentences):  # each window all but certain of its symbol
        for column, symbol in enumerate(sentence):
            logits[row, column, vocabulary.index(symbol)] = 50.0
    log_probs = torch.log_softmax(logits, -1).requires_grad_()
    lengths = torch.tensor([3, 3])
    solver = BatchSolver(HINT_SEMANTICS)
    loss, reward = reinforce_loss(log_probs, lengths, [5, 80], vocabulary, solver, baseline=0.25)
    with pytest.raises(ValueError, match="2 examples of log-probabilities, 2 lengths and 1 targets"):
        reinforce_loss(log_probs, lengths, [5], vocabulary, solver, baseline=0.25)
    assert reward == 0.5  # 2+3 = 5 is right, 9*9 = 81 is not
    loss.backward()
    chosen = log_probs.grad.gather(-1, torch.tensor([[vocabulary.index(c) for c in s] for s in sentences])[..., None])
    # d loss / d log p(chosen) = -(reward - baseline) / batch: raise the right reading, lower the wrong one
    torch.testing.assert_close(chosen.squeeze(-1), torch.tensor([[-0.375] * 3, [0.125] * 3]))
    assert float(log_probs.grad.abs().sum() - chosen.abs().sum()) == 0.0  # nothing else moves
    short = torch.tensor([1, 3])  # a one-symbol reading "2" of the first expression: reward 0, and its padding gets no gradient
    log_probs.grad = None
    loss, reward = reinforce_loss(log_probs, short, [5, 81], vocabulary, solver, baseline=0.0)
    loss.backward()
    assert reward == 0.5 and float(log_probs.grad[0, 1:].abs().sum()) == 0.0
    padded = log_probs.detach().clone()
    padded[0, 1:] = -torch.inf  # padding a reader scores -inf is never drawn from (torch refused the whole batch)
    assert reinforce_loss(padded, short, [2, 81], vocabulary, solver, baseline=0.0)[1] == 1.0
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 3\], got \[1, 4\]"):  # was cut to 3 symbols
        reinforce_loss(log_probs, torch.tensor([1, 4]), [5, 81], vocabulary, solver, baseline=0.0)
    with pytest.raises(ValueError, match="needs at least one example"):  # (a NaN loss and reward)
        reinforce_loss(log_probs[:0], short[:0], [], vocabulary, solver, baseline=0.0)
    padded[1, 2] = -torch.inf  # (torch's multinomial raised on the whole batch)
    with pytest.raises(ValueError, match=r"every symbol -inf at a real position \(example 1, position 2\)"):
        reinforce_loss(padded, short, [2, 81], vocabulary, solver, baseline=0.0)


def test_classifier_grows_its_vocabulary_keeping_weights():
    classifier = SymbolClassifier(list("0123"), features=16)
    windows = torch.rand(5, 32, 32)
    classifier.eval()
    before = classifier(windows)
    assert classifier.add_symbol("x") == 4
    after = classifier(windows)
    assert after.shape == (5, 5)
    # Old classes keep their logits, so their probabilities only shrink by the new class's share.
    assert torch.allclose((before.exp() * (1 - after.exp()[:, 4:5])).log(), after[:, :4], atol=1e-5)
    with pytest.raises(ValueError, match="already"):
        classifier.add_symbol("x")
    with pytest.raises(ValueError, match="windows"):
        classifier(torch.rand(2, 28, 28))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("weight_learns", "bias_learns"), [(True, True), (False, False), (False, True), (True, False)])
def test_a_grown_head_keeps_which_of_its_parameters_learn_and_their_dtype(weight_learns, bias_learns, dtype):
    classifier = SymbolClassifier(list("01"), features=8, width=4).to(dtype)
    classifier.classifier.weight.requires_grad_(weight_learns)
    classifier.classifier.bias.requires_grad_(bias_learns)
    classifier.add_symbol("x")
    head = classifier.classifier
    assert (head.weight.requires_grad, head.bias.requires_grad) == (weight_learns, bias_learns)  # (a frozen head learned)
    assert head.weight.dtype == head.bias.dtype == dtype


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 9), min_size=1, max_size=20), step=st.integers(0, 2000), seed=st.integers(0, 99))
def test_a_curriculum_draws_from_a_list_of_lengths_as_from_their_array(lengths, step, seed):
    """A source of one's own whose ``lengths`` is a list stopped training at its first step with "'<=' not supported
    between instances of 'list' and 'int'" (evaluation took the list)."""
    curriculum = Curriculum(((2, 150), (5, 400), (10**9, 10**9)))
    if min(lengths) > curriculum.max_length(step):
        with pytest.raises(ValueError, match="no training example is that short"):
            curriculum.sample(lengths, step, 8, seed)
        return
    drawn = curriculum.sample(lengths, step, 8, seed)
    assert np.array_equal(drawn, curriculum.sample(np.array(lengths), step, 8, seed))
    assert all(lengths[i] <= curriculum.max_length(step) for i in drawn.tolist())


def test_curriculum_stages_and_errors():
    curriculum = Curriculum(parse_stages("1:2,3:2,all"))
    assert [curriculum.max_length(s) for s in range(6)] == [1, 1, 3, 3, 10**9, 10**9]
    lengths = np.array([1, 3, 3, 7])
    first = curriculum.sample(lengths, 0, 50, seed=1)
    assert set(first.tolist()) == {0}
    assert np.array_equal(curriculum.sample(lengths, 5, 20, 1), curriculum.sample(lengths, 5, 20, 1))
    # (the default, HINT's, met a grammar's examples of four symbols with "no training expression has at most 1 symbols")
    with pytest.raises(
        ValueError,
        match=r"allows examples of at most 1 symbols at step 0, .*\(the shortest has 4\).*none\(\); on the command line --curriculum all\)",
    ):
        PipelineConfig().curriculum.sample(np.array([4, 6]), 0, 8, seed=0)
    for text in ("1-2", "3:１００", "1_0:5", "1:2:3", "-1:5"):  # other scripts' digits and '_' were read by int()
        with pytest.raises(ValueError, match=r"is not 'max_length:steps' \(ASCII digits\) or 'all'"):
            parse_stages(text)
    with pytest.raises(ValueError, match="needs a positive max_length and positive steps"):
        parse_stages("0:5")
    assert parse_stages(" 1 : 2 ,all") == ((1, 2), (10**9, 10**9))
    with pytest.raises(ValueError, match="growing"):
        Curriculum(((3, 1), (1, 1)))
    for stages in (((1, 5, 3),), ((-3, 5), (5, 5)), (), ((1, 2.5),), ((3.7, 10),), ((True, True),), (("3", 5),)):  # 2.5 lasted 3
        with pytest.raises(ValueError, match=r"stages must be \(max_length>0, steps>0\) pairs with growing lengths"):
            Curriculum(stages)
    with pytest.raises(ValueError, match=r"parse_stages\('1:10,all'\) reads the text form"):
        Curriculum("1:10,all")
    with pytest.raises(ValueError, match="a curriculum's text form is a string"):
        parse_stages(5)
    assert Curriculum([[1, 5], [3, 6]]).stages == ((1, 5), (3, 6))  # (hashable, like the tuples)
    with pytest.raises(ValueError, match=r"curriculum must be a Curriculum \(Curriculum.none\(\) for none\), got None"):
        PipelineConfig(curriculum=None)


def test_verified_positions_are_the_symbols_the_result_pins_down():
    pipeline = tiny_pipeline()
    labels = ["3*0", "2-7", "9/4", "(1+2)*3", None]
    targets = [0, 0, 3, 9, 5]
    verified = pipeline.verified_positions(labels, targets)
    # 3*0: any first factor gives 0; the 0 and the * (3+0, 3-0, 3/0 are not 0) are pinned.
    assert verified[0] == [False, True, True]
    # 2-7 = max(0, 2-7): 0, 1 and 2 also clamp to 0 against 7 (so 2 is not pinned); 7 is not
    # pinned either (8, 9 clamp too); the minus is (2+7, 2*7, ceil(2/7) = 1 differ from 0).
    assert verified[1] == [False, True, False]
    # 9/4 = ceil(2.25) = 3: 10 is not a digit, but 8/4 = 2 and ceil(9/3) = 3 (so the divisor is not pinned).
    assert verified[2] == [True, True, False]
    assert verified[3] == [True] * 7
    assert verified[4] is None


def test_pseudo_label_loss_uses_only_the_trained_positions():
    pipeline = tiny_pipeline()
    log_probs = torch.randn(2, 3, len(HINT_SYMBOLS)).log_softmax(-1)
    labels = ["3*0", "1+2"]
    index = {s: i for i, s in enumerate(HINT_SYMBOLS)}
    trained = [[False, True, True], [True, False, False]]
    loss = trainer_module.pseudo_label_loss(log_probs, labels, pipeline.classifier.vocabulary, trained)
    picked = [log_probs[0, 1, index["*"]], log_probs[0, 2, index["0"]], log_probs[1, 0, index["1"]]]
    assert torch.allclose(loss, -torch.stack(picked).mean())
    everything = trainer_module.pseudo_label_loss(log_probs, labels, pipeline.classifier.vocabulary)
    assert torch.allclose(
        everything, -torch.stack([log_probs[r, c, index[labels[r][c]]] for r in range(2) for c in range(3)]).mean()
    )
    with pytest.raises(ValueError, match="pseudo_labels"):
        PipelineConfig(pseudo_labels="some")
    with pytest.raises(ValueError, match=r"augment_style must be a number in \[0, 1\], got True"):  # was read as 1
        PipelineConfig(augment_style=True)
    with pytest.raises(ValueError, match="label 1 .* has no flags of the positions trained"):
        trainer_module.pseudo_label_loss(log_probs, labels, pipeline.classifier.vocabulary, [[True] * 3, None])


def test_distillation_loss_is_the_anchors_kl_over_the_real_windows_only():
    anchor = tiny_pipeline(seed=1).classifier.eval()
    windows = torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8)
    lengths = torch.tensor([3, 1])
    student = torch.randn(2, 3, len(HINT_SYMBOLS)).log_softmax(-1)
    real = [(0, 0), (0, 1), (0, 2), (1, 0)]  # (1, 1) and (1, 2) are padding
    with torch.no_grad():
        target = anchor(torch.stack([windows[r, c] for r, c in real]))
    picked = torch.stack([student[r, c] for r, c in real])
    expected = (target.exp() * (target - picked)).sum(-1).mean()
    assert torch.allclose(trainer_module._distillation_loss(anchor, windows, lengths, student), expected, atol=1e-6)
    same = student.clone()
    for k, (r, c) in enumerate(real):
        same[r, c] = target[k]
    assert trainer_module._distillation_loss(anchor, windows, lengths, same).abs() < 1e-6


class RulingOutAnchor(torch.nn.Module):
    """An anchor that rules the symbols of ``ruled_out [V]`` (bool) out (log-probability ``-inf``) and reads the others
    by the windows' ink."""

    def __init__(self, ruled_out: list[bool]):
        super().__init__()
        self.vocabulary, self.ruled_out = HINT_SYMBOLS, torch.tensor(ruled_out)

    def forward(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
        ink = windows.float().mean(dim=(-2, -1), keepdim=True).flatten(1) / 255  # [n, 1]
        scores = ink * torch.arange(len(self.vocabulary), dtype=torch.float32)  # [n, V]
        return scores.masked_fill(self.ruled_out, -torch.inf).log_softmax(-1)


@settings(max_examples=20, deadline=None)
@given(
    ruled_out=st.lists(st.booleans(), min_size=len(HINT_SYMBOLS), max_size=len(HINT_SYMBOLS)).filter(lambda out: not all(out)),
    student_too=st.booleans(),
)
def test_distillation_loss_counts_only_the_symbols_the_anchor_can_read(ruled_out, student_too):
    """A symbol the anchor rules out (-inf) made the loss NaN (kl_div's 0 · log 0), which stopped training."""
    anchor = RulingOutAnchor(ruled_out)
    windows = torch.randint(0, 256, (2, 3, 32, 32), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([3, 1])
    scores = torch.randn(2, 3, len(HINT_SYMBOLS), generator=torch.Generator().manual_seed(1))
    student = scores.masked_fill(anchor.ruled_out & student_too, -torch.inf).log_softmax(-1).requires_grad_()
    real = torch.arange(3)[None, :] < lengths[:, None]  # [B, T]
    target, picked = anchor(windows[real]), student.detach()[real]
    expected = torch.where(target.isfinite(), target.exp() * (target - picked), 0.0).sum(-1).mean()
    loss = trainer_module._distillation_loss(anchor, windows, lengths, student)
    torch.testing.assert_close(loss.detach(), expected)
    loss.backward()
    assert torch.isfinite(student.grad).all()


@pytest.mark.parametrize(("dtype", "kept"), [(torch.float64, torch.float64), (torch.bfloat16, torch.float32)])
def test_a_float64_readers_reading_and_distillation_keep_its_precision(problem, dtype, kept):
    """A float64 reader's log-probabilities were rounded to float32, and the distillation loss on them computed in
    float32; a half-precision reader's are still mixed in float32."""
    train, _ = problem
    pipeline = tiny_pipeline()
    pipeline.classifier.to(dtype).eval()
    windows, lengths = train.batch(range(3))
    reading = pipeline.read(windows, lengths)
    assert reading.log_probs.dtype == kept
    real = torch.arange(windows.shape[1])[None, :] < lengths[:, None]  # [B, T]
    with torch.no_grad():
        exact = pipeline.classifier(windows[real]).to(kept)  # [n, V]
    assert torch.equal(reading.log_probs[real], exact)
    anchor = tiny_pipeline(seed=1).classifier.to(dtype).eval()
    with torch.no_grad():
        target = anchor(windows[real]).to(kept)
    loss = trainer_module._distillation_loss(anchor, windows, lengths, reading.log_probs)
    assert loss.dtype == kept
    assert torch.allclose(loss, (target.exp() * (target - exact)).sum(-1).mean(), rtol=1e-12 if kept == torch.float64 else 1e-5)


def _reading_gap(reader: SymbolClassifier, anchor: SymbolClassifier, source: WindowSource) -> float:
    """Mean KL between two readers' distributions over ``source``'s windows (both in eval mode)."""
    windows = torch.cat([source.windows(i) for i in range(len(source))])
    with torch.no_grad():
        a, b = anchor.eval()(windows), reader.eval()(windows)
    return float((a.exp() * (a - b)).sum(-1).mean())


def test_distilling_keeps_the_anchors_reading_of_the_flagged_records_only(problem):
    from neurosym.pipelines.trainer import Anchor

    train, test = problem
    config = replace(TINY_TRAINING, steps=30, learning_rate=3e-3)
    anchor = tiny_pipeline(seed=3).classifier  # a reader whose reading training would move away from
    every, none = np.ones(len(train), dtype=bool), np.zeros(len(train), dtype=bool)
    gaps, histories = {}, {}
    for name, flags, distill in [("plain", every, 0.0), ("distilled", every, 30.0), ("unflagged", none, 30.0)]:
        pipeline = tiny_pipeline(seed=3)
        history = train_pipeline(
            pipeline, train, replace(config, distill=distill), CPU, progress=False, anchor=Anchor(anchor, flags)
        )
        histories[name] = [{key: value for key, value in step.items() if key != "seconds"} for step in history]
        gaps[name] = _reading_gap(pipeline.classifier, anchor, test)
    assert gaps["distilled"] < 0.3 * gaps["plain"], gaps
    assert histories["unflagged"] == histories["plain"]  # no flagged record, no added loss
    with pytest.raises(ValueError, match="anchor"):
        train_pipeline(tiny_pipeline(), train, replace(config, distill=1.0), CPU, progress=False)
    with pytest.raises(ValueError, match="distill"):
        PipelineConfig(distill=-1.0)
    for distill in (math.nan, math.inf):  # were accepted: every loss NaN
        with pytest.raises(ValueError, match=f"distill must be a finite number at least 0, got {distill}"):
            PipelineConfig(distill=distill)


@pytest.mark.parametrize("training", [True, False])
def test_distilling_reads_the_anchor_in_evaluation_mode_and_gives_it_its_own_mode_back(problem, training):
    """Training left the anchor in evaluation mode with its parameters frozen: a reader of one's own (adapting keeps
    the trained one to route with) was switched for good."""
    from neurosym.pipelines.trainer import Anchor

    train, _ = problem
    anchor = tiny_pipeline(seed=1).classifier.train(training)
    anchor.classifier.train(not training)  # a part in a mode of its own
    modes = [module.training for module in anchor.modules()]
    read_in = []
    anchor.register_forward_pre_hook(lambda module, args: read_in.append(module.training))
    config = replace(TINY_TRAINING, steps=3, distill=1.0)
    train_pipeline(tiny_pipeline(), train, config, CPU, progress=False, anchor=Anchor(anchor, np.ones(len(train), bool)))
    assert read_in and not any(read_in)  # it read in evaluation mode
    assert [module.training for module in anchor.modules()] == modes
    assert all(parameter.requires_grad for parameter in anchor.parameters())


@pytest.mark.parametrize("favoured", [0, 2])
def test_abduction_ranks_a_float64_readings_corrections_in_float64(favoured):
    """A float64 reading's log-probabilities were rounded to float32 for abduction: corrections they tell apart were
    tied, and the search kept whichever it met first."""
    pipeline = tiny_pipeline()
    vocabulary = pipeline.classifier.vocabulary
    log_probs = torch.full((1, 3, len(vocabulary)), math.log(0.01), dtype=torch.float64)
    log_probs[0, [0, 2], vocabulary.index("1")] = math.log(0.4)
    log_probs[0, [0, 2], vocabulary.index("2")] = math.log(0.3)
    log_probs[0, 1, vocabulary.index("+")] = math.log(0.9)
    log_probs[0, favoured, vocabulary.index("2")] += 1e-9  # far below float32's resolution at log(0.3)
    assert pipeline.abduce(Reading(["1+1"], log_probs, [2]), [3]) == ["2+1" if favoured == 0 else "1+2"]


def test_reading_abducing_and_verifying_refuse_bad_batches_and_targets(problem):
    train, _ = problem
    pipeline = tiny_pipeline()
    windows, lengths = train.batch(range(4))
    for bad in (lengths[:3], torch.cat([lengths, lengths[:1]]), lengths[:, None], lengths.tolist()):
        with pytest.raises(ValueError, match=r"lengths must be a tensor \[4\], one per expression"):
            pipeline.read(windows, bad)  # a mismatch was read with a misaligned mask (or an IndexError deep in torch)
    with pytest.raises(ValueError, match=r"of at least one expression, got shape \(0, "):
        pipeline.read(windows[:0], lengths[:0])
    with pytest.raises(ValueError, match=r"padded batch \[B, T, 32, 32\] .*got shape \(4, \d+, 32\)"):
        pipeline.predict(windows[..., 0], lengths)  # the reader named a flattened batch [4 T, 32]
    reading = pipeline.read(windows, lengths)
    targets = [record.res for record in train.records[:4]]
    assert pipeline.abduce(reading, np.asarray(targets)) == pipeline.abduce(reading, targets)  # numpy ints are ints
    with pytest.raises(TypeError, match=r"targets are integer results, got 2.5 at position 1"):
        pipeline.abduce(reading, [targets[0], 2.5, *targets[2:]])  # was abduced towards int(2.5) = 2
    with pytest.raises(ValueError, match="2 labels and 3 targets: one target per example"):
        pipeline.verified_positions(["1+2", "3"], [3, 3, 4])  # the extra target was ignored
    with pytest.raises(ValueError, match=r"label 1 \('2\*x'\) has 'x' at 2, outside the vocabulary"):
        pipeline.verified_positions(["1+2", "2*x"], [3, 4])  # 'x' was "verified"
    with pytest.raises(ValueError, match=r"label 1 \('1\+'\) is no valid sentence, not its target 3"):
        pipeline.verified_positions(["1+2", "1+"], [3, 3])  # was verified everywhere
    with pytest.raises(ValueError, match=r"label 0 \('1\+2'\) gives 3, not its target 4: a pseudo-label explains"):
        pipeline.verified_positions(["1+2", None], [4, 0])


def test_a_reader_that_is_no_module_reads_but_is_named_when_trained(problem):
    train, _ = problem

    class Uniform:  # a Reader, but no torch module: nothing to train or move
        vocabulary = tuple(HINT_SYMBOLS)

        def __call__(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
            return torch.full((len(windows), len(HINT_SYMBOLS)), -float(np.log(len(HINT_SYMBOLS))))

    pipeline = HintPipeline(Uniform())
    windows, lengths = train.batch(range(2))
    assert len(pipeline.read(windows, lengths).sentences) == 2
    for run in (lambda: train_pipeline(pipeline, train, TINY_TRAINING, CPU), lambda: evaluate_pipeline(pipeline, train, CPU)):
        with pytest.raises(TypeError, match="a reader trained from results must be a torch.nn.Module, got Uniform"):
            run()


def test_the_pipeline_reads_only_what_the_printer_writes_under_its_tables_precedence():
    """The roles it decoded with knew no precedence: a reader sure of ``(1*2)+3`` was read as written."""

    class Sure:  # reads the windows of one expression as (1*2)+3, other symbols far less likely
        vocabulary = tuple(HINT_SYMBOLS)

        def __call__(self, windows: torch.Tensor, groups: torch.Tensor | None = None) -> torch.Tensor:
            log_probs = torch.full((len(windows), len(HINT_SYMBOLS)), -20.0)
            log_probs[range(len(windows)), [HINT_SYMBOLS.index(c) for c in "(1*2)+3"]] = 0.0
            return log_probs.log_softmax(-1)

    windows, lengths = torch.zeros(1, 7, 32, 32), torch.tensor([7])
    assert HintPipeline(Sure(), minimal_brackets=False).read(windows, lengths).sentences == ["(1*2)+3"]
    (read,) = HintPipeline(Sure()).read(windows, lengths).sentences
    assert read != "(1*2)+3" and to_infix(parse(read)) == read
