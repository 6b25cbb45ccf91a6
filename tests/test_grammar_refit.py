"""Refitting a grammar pipeline's reader: training windows labelled by abduction towards their results, a fresh
reader fitted to them (alone and as two gloo processes), and ``neurosym pipeline --refit-epochs``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from hint_pipelines import check_reads_in_evaluation_mode_and_keeps_training_mode
from test_distributed import run_two_processes, torchrun_process
from test_tasks import GLYPH, GlyphReader, addition_problem

from neurosym.cli import main
from neurosym.pipelines.grammar_abduction import AbductionBudget
from neurosym.pipelines.grammar_pipeline import GrammarPipeline
from neurosym.pipelines.grammar_refit import abduced_sentence_windows
from neurosym.pipelines.refit import LabelledWindows, RefitConfig, refit_reader
from neurosym.pipelines.sentences import READ
from neurosym.syntax.symbol_grammar import SymbolGrammar
from neurosym.tasks import grammar_file
from neurosym.tasks.mnist_add import addition_semantics
from neurosym.training import load_checkpoint

CPU = torch.device("cpu")


def reader_confusing_three_with_eight() -> GlyphReader:
    """Reads the lit row of a glyph, except that a 3 is read as 8 (3 the runner-up, at p ≈ 0.1)."""
    reader = GlyphReader()
    weight = torch.zeros(10, GLYPH, GLYPH)
    weight[torch.arange(10), torch.arange(10)] = 1.0
    weight[8, 3] = 1.2  # an 8's evidence in row 3 too, a little stronger than a 3's own
    with torch.no_grad():
        reader.layer.weight.copy_(weight.flatten(1))
        reader.layer.bias.zero_()
    return reader


def pipeline_with(reader: GlyphReader) -> GrammarPipeline:
    grammar = SymbolGrammar(grammar_file("mnist_add.lark"))
    return GrammarPipeline(grammar, addition_semantics(), reader, AbductionBudget(max_changes=4, max_candidates=32, readings=8))


def test_abduction_labels_each_read_window_with_the_symbol_its_result_pins_down():
    source = addition_problem(2, 60, seed=3)
    pipeline = pipeline_with(reader_confusing_three_with_eight())
    labelled = abduced_sentence_windows(pipeline, source, CPU, batch_size=7)
    read = source.given[:, : source.lengths.max()] == READ  # the '+' is given, not read
    assert (labelled.expressions, labelled.left_out) == (60, 0) and len(labelled.labels) == read.sum() == 240
    truths = [int(symbol) for truth in source.truths for symbol in truth if symbol != "+"]
    assert labelled.truths.tolist() == truths
    assert torch.equal(labelled.windows, source.images[torch.from_numpy(source.picks[read])])
    with torch.no_grad():
        read_as = pipeline.reader(labelled.windows).argmax(-1)
    assert (read_as != labelled.truths).sum() >= 10  # the threes were read as eights ...
    assert torch.equal(labelled.labels, labelled.truths)  # ... and the sums put them right


def test_examples_abduction_cannot_explain_are_left_out_and_nothing_explained_is_refused():
    source = addition_problem(1, 40, seed=1)
    source.targets[:5] = [10**6] * 5  # no two digits sum to this
    labelled = abduced_sentence_windows(pipeline_with(reader_confusing_three_with_eight()), source, CPU)
    assert (labelled.expressions, labelled.left_out, len(labelled.labels)) == (35, 5, 70)
    source.targets[:] = [10**6] * 40
    with pytest.raises(ValueError, match="explained none of the examples"):
        abduced_sentence_windows(pipeline_with(GlyphReader()), source, CPU)


def test_a_target_no_value_can_equal_is_named_with_its_example_as_training_names_it():
    """A tensor target was refused without the index of its example, which training and evaluation name."""
    source = addition_problem(1, 10, seed=1)
    source.targets[4] = torch.tensor(7)
    with pytest.raises(TypeError, match="the target of example 4: "):
        abduced_sentence_windows(pipeline_with(reader_confusing_three_with_eight()), source, CPU)


def test_labelling_reads_in_evaluation_mode_and_leaves_the_reader_in_the_callers_mode():
    source = addition_problem(1, 20, seed=2)
    pipeline = pipeline_with(reader_confusing_three_with_eight())
    check_reads_in_evaluation_mode_and_keeps_training_mode(
        pipeline.reader, lambda: abduced_sentence_windows(pipeline, source, CPU).labels.tolist()
    )


def _labelled() -> LabelledWindows:
    source = addition_problem(1, 48, seed=0)
    return abduced_sentence_windows(pipeline_with(reader_confusing_three_with_eight()), source, CPU)


REFIT = RefitConfig(steps=4, batch_size=16, learning_rate=0.05, checkpoint_every=2)


def _refit_worker(rank: int, port: int, folder: str) -> None:
    with torchrun_process(rank, port) as context:
        torch.manual_seed(0)
        reader = GlyphReader()
        history = refit_reader(reader, [_labelled()], REFIT, CPU, Path(folder) / "refit.pt", context=context)
        torch.save({"model": reader.state_dict(), "history": history}, Path(folder) / f"rank{rank}.pt")


def test_two_gloo_processes_refit_a_reader_as_one_process_on_the_global_batch(tmp_path):
    run_two_processes(_refit_worker, tmp_path)
    torch.manual_seed(0)
    single = GlyphReader()
    initial = {name: value.clone() for name, value in single.state_dict().items()}
    refit_reader(single, [_labelled()], REFIT, CPU)
    for rank in (0, 1):
        replica = torch.load(tmp_path / f"rank{rank}.pt")["model"]
        for name, value in single.state_dict().items():
            torch.testing.assert_close(replica[name], value, atol=1e-5, rtol=1e-4)
            assert not torch.equal(replica[name], initial[name])
    assert load_checkpoint(tmp_path / "refit.pt")["step"] == 4


@pytest.mark.slow
def test_the_pipeline_command_refits_a_fresh_reader_and_a_resume_keeps_it(tmp_path, capsys, monkeypatch, tiny_hwf):
    from neurosym.experiments import pipeline as runner

    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--epochs", "0.2", "--reader-width", "8"]
    assert main([*common, "--refit-epochs", "0.5", "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    refit, task = results["refit"], runner.task_for(runner.PipelineOptions(task="hwf"))
    reads = int(sum(task.train.lengths))  # HWF reads every symbol
    assert 0 < refit["windows"] <= reads and refit["left_out"] >= 0
    assert refit["steps"] == math.ceil(0.5 * refit["windows"] / runner.REFIT_BATCH)
    assert 0 <= refit["label_accuracy"] <= 1 and set(refit["validation_before"]) == {"accuracy", "symbol"}
    assert results["train_seconds"] >= refit["seconds"] > 0
    assert "refit to its abduced labels (0.5 epochs)" in capsys.readouterr().out
    trained, fitted = load_checkpoint(tmp_path / "checkpoint.pt"), load_checkpoint(tmp_path / "refit.pt")
    assert fitted["step"] == refit["steps"]
    assert any(not torch.equal(trained["model"][name], value) for name, value in fitted["model"].items())
    # the results are the refit reader's: reading with it alone gives the same validation score
    options = runner.PipelineOptions(task="hwf", reader_width=8)
    reader = runner.task_for(options).make_reader()
    reader.load_state_dict(fitted["model"])
    pipeline = GrammarPipeline(task.grammar, task.semantics, reader, task.abduction)
    assert runner.evaluate_grammar_pipeline(pipeline, task.validation, CPU) == results["validation"]
    _, rebuilt = runner.trained_pipeline(tmp_path)  # the refit reader, read back from the run folder
    assert runner.evaluate_grammar_pipeline(rebuilt, task.validation, CPU) == results["validation"]
    # a resume relabels the same windows and finds the refit done: nothing is fitted again
    fits = []
    monkeypatch.setattr(runner, "refit_reader", lambda *a, **k: fits.append(a) or refit_reader(*a, **k))
    assert main([*common, "--refit-epochs", "0.5", "--resume", "--out", str(tmp_path)]) == 0
    assert len(fits) == 1 and load_checkpoint(tmp_path / "refit.pt")["step"] == refit["steps"]
    assert json.loads((tmp_path / "results.json").read_text())["validation"] == results["validation"]
    # --time-limit bounds this call: what earlier calls trained (here a million seconds) is not charged to the refit
    limits = []
    trained_earlier = runner._train

    def long_trained(*args, **kwargs):
        history, seconds, abandoned = trained_earlier(*args, **kwargs)
        return history, seconds + 1e6, abandoned

    monkeypatch.setattr(runner, "_train", long_trained)
    monkeypatch.setattr(runner, "refit_reader", lambda *a, **k: limits.append(a[6]) or refit_reader(*a, **k))
    assert main([*common, "--refit-epochs", "0.5", "--time-limit", "10", "--out", str(tmp_path)]) == 0
    assert 500 < limits[0] <= 600


def test_a_call_stopped_in_the_refit_scores_nothing(tmp_path, monkeypatch, small_hwf):
    from neurosym.experiments import pipeline as runner

    common = ["pipeline", "--task", "hwf", "--device", "cpu", "--no-progress", "--epochs", "0.1", "--reader-width", "8",
              "--out", str(tmp_path)]  # fmt: skip
    assert main(common) == 0  # trained: the refit's call trains no step of it
    refit, scored = [*common, "--refit-epochs", "0.2"], []
    with monkeypatch.context() as watched:
        watched.setattr(runner, "evaluate_grammar_pipeline", lambda *args, **kwargs: scored.append(args))
        assert main([*refit, "--time-limit", "0"]) == 75  # the refit stopped after its first step
    assert scored == []  # (was: the trained reader scored on validation first, to be scored again by the next call)
    assert load_checkpoint(tmp_path / "refit.pt")["step"] == 1
