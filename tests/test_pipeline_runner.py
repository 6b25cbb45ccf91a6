"""The `neurosym hint --model neurosym` runner end to end on symbol input (tiny scale)."""

import dataclasses
import itertools
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from neurosym.cli import main
from neurosym.data.hint import fewshot_split, main_split
from neurosym.data.symbol_images import HINT_SYMBOLS, SymbolBank, with_brackets
from neurosym.experiments.hint_pipeline import trained_hint_pipeline
from neurosym.experiments.hint_pipeline.fewshot import concept_checkpoint, unseen
from neurosym.perception.routed import RoutedReader
from neurosym.pipelines.pipeline import HintPipeline
from neurosym.pipelines.trainer import evaluate_pipeline
from neurosym.pipelines.windows import WindowSource
from neurosym.training.checkpoint import save_checkpoint
from neurosym.training.stopping import TIME_LIMIT, TrainingInterrupted


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    return tmp_path


def undrawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The image runs' training figure left undrawn (0.4 s a run) in tests of what the runs train and score: they
    check no figure, tests/test_plots.py draws this one, and the other image runs here still draw it."""
    from neurosym.experiments.hint_pipeline import image

    monkeypatch.setattr(image, "plot_training", lambda *args, **kwargs: None)


def test_symbol_input_run_induces_semantics_and_learns_concepts(private_cache, capsys):
    out = private_cache / "out"
    out.mkdir()
    (out / "hint_neurosym.png").write_bytes(b"")  # an earlier image run's files, which this run does not write
    (out / "grounding.json").write_text("{}")
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "0.01"]
    assert main([*argv, "--speed-samples", "5", "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["programs"]["+"] == "(i + j)"
    assert results["test"]["avg"] == 1.0
    fewshot = results["fewshot"]["0.01"]["concepts"]
    assert fewshot["x"]["learned"] == "= 11" and fewshot["a"]["learned"].startswith("level 1: max")
    assert fewshot["x"]["val_accuracy"] == fewshot["a"]["val_accuracy"] == 1.0 and fewshot["x"]["val"] > 0  # scored on validation
    assert results["abduction_speed"]["samples"] == 5
    assert (out / "hint_neurosym_fewshot_symbol.png").is_file()
    printed = capsys.readouterr().out
    assert "| induced semantics |" in printed and "paper Table 4" in printed and "unseen expressions" in printed
    assert "training sentences, validation set " in printed
    assert printed.endswith(f"Results in {out}: fewshot_symbol.json, hint_neurosym_fewshot_symbol.png, results.json\n")


@pytest.mark.slow
def test_image_input_run_trains_from_results_then_learns_concepts_from_images(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.data.symbol_images import FEWSHOT_CONCEPTS, HINT_SYMBOLS
    from neurosym.experiments import hint_sources

    bank = prototype_bank(symbols=[*HINT_SYMBOLS, *FEWSHOT_CONCEPTS])
    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: bank)  # a tiny bank keeps the test fast
    undrawn(monkeypatch)
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002", "--steps", "100"]
    argv += ["--batch-size", "12", "--curriculum", "1:20,3:40,7:40", "--classifier-features", "32"]
    argv += ["--classifier-width", "8", "--fewshot-scales", "0.01", "--fewshot-replay", "40"]
    argv += ["--fewshot-concepts", "x,a", "--fewshot-steps", "30,10", "--fewshot-only-new-class", "none"]
    argv += ["--speed-samples", "5", "--out", str(out), "--no-progress"]
    argv += ["--device", "cpu"]  # the concepts are learned twice and compared exactly: CUDA's kernels may not repeat
    assert main([*argv, "--no-score-test"]) == 0  # validation alone, the few-shot concepts' too: for choosing
    alone = json.loads((out / "results.json").read_text())
    assert alone["test"] is None and alone["fewshot"]["0.01"]["avg"] is None
    assert all(c["test_accuracy"] is None and c["val_accuracy"] > 0.5 for c in alone["fewshot"]["0.01"]["concepts"].values())
    printed = capsys.readouterr().out
    assert "sentences, validation set" in printed and "sentences, whole test set" not in printed and ", test " not in printed
    assert main([*argv, "--resume"]) == 0  # the same run scored: concepts without a test score are learned again
    results = json.loads((out / "results.json").read_text())
    assert results["test"]["symbol"] > 0.9 and results["val"] == alone["val"]
    concepts = results["fewshot"]["0.01"]["concepts"]
    assert all(concepts[c]["val_accuracy"] == alone["fewshot"]["0.01"]["concepts"][c]["val_accuracy"] for c in concepts)
    assert concepts["x"]["learned"] == "number, = 11" and concepts["x"]["train"] == 11
    assert concepts["a"]["learned"] == "operator, level 1: max(i, j)"
    assert concepts.keys() == {"x", "a"} and min(c["test_accuracy"] for c in concepts.values()) > 0.5
    assert all(c["test_unseen"] < c["test"] and c["val"] > 0 and c["val_accuracy"] > 0.5 for c in concepts.values())
    assert results["fewshot"]["0.01"]["avg_val"] == sum(c["val_accuracy"] for c in concepts.values()) / 2
    assert set(results["val"]) >= {"avg", "symbol"}
    assert (out / "hint_neurosym_fewshot_image.png").is_file()
    assert json.loads((out / "fewshot_image.json").read_text())["0.01"]["concepts"].keys() == {"x", "a"}
    assert "glyphs learned from the few shots" in capsys.readouterr().out
    from neurosym.cli import build_parser
    from neurosym.experiments.hint_options import HintOptions
    from neurosym.experiments.hint_sources import load_hint_data
    from neurosym.experiments.options import options_from

    data = load_hint_data(options_from(HintOptions, build_parser().parse_args(argv)), image_input=True, fewshot=True)
    for concept in ("x", "a"):  # each concept's grown pipeline read back: it scores as the run did
        grown = trained_hint_pipeline(out, concept)
        validation = WindowSource(data.fewshot(concept, 0.01)["val"], data.image_bank(), "val", 0)
        scored = evaluate_pipeline(grown, validation, torch.device("cpu"), 256)["avg"]
        assert scored == concepts[concept]["val_accuracy"] and grown.classifier.vocabulary[-1] == concept
    for concept in ("x", "a"):  # a user's own look into a concept's file, under torch.load's default since 2.6
        assert torch.load(concept_checkpoint(out, "image", "0.01", concept), weights_only=True)["vocabulary"][-1] == concept
    assert trained_hint_pipeline(out, "a", scale=0.01).table.operators["a"].apply(3, 5) == 5
    assert trained_hint_pipeline(out, "x").table.numbers["x"] == 11 and "a" not in trained_hint_pipeline(out, "x").table.operators
    with pytest.raises(
        ValueError, match="learned no few-shot concept 'y' from images \\(fewshot_image.json lists a at 0.01, x at"
    ):
        trained_hint_pipeline(out, "y")
    with pytest.raises(ValueError, match="learned no few-shot concept 'x' from images at scale 0.1 "):
        trained_hint_pipeline(out, "x", scale=0.1)
    (out / "fewshot_image_0.01_x.pt").unlink()
    with pytest.raises(ValueError, match="fewshot_image_0.01_x.pt is missing: delete .*fewshot_image.json and run the same"):
        trained_hint_pipeline(out, "x")
    assert main([*argv, "--resume", "--classifier-width", "16"]) == 2  # another reader over the same checkpoint
    assert "(classifier_width differ): classifier_width 8 there, 16 now" in capsys.readouterr().err


def test_stroke_width_option_puts_a_stroke_normaliser_in_front_of_the_reader(private_cache, monkeypatch):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    undrawn(monkeypatch)
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002", "--steps", "5", "--batch-size", "4",
            "--curriculum", "1:5", "--classifier-features", "8", "--classifier-width", "4", "--fewshot-scales", "none",
            "--speed-samples", "1", "--out", str(out), "--no-progress"]  # fmt: skip
    argv += ["--device", "cpu"]  # read back and scored on the CPU below: on CUDA the run scores under bfloat16 autocast
    assert main([*argv, "--stroke-width", "3"]) == 0
    saved = torch.load(out / "checkpoint.pt")["model"]
    assert saved["strokes.gaussian"].sum().item() == pytest.approx(1.0)  # the checkpoint holds the classifier
    pipeline = trained_hint_pipeline(out)  # the run's pipeline read back: it scores as the run did
    validation = WindowSource(list(main_split(scale=0.002, seed=0)["val"]), prototype_bank(), "val", 0)
    scores = evaluate_pipeline(pipeline, validation, torch.device("cpu"), 256)
    assert scores == json.loads((out / "results.json").read_text())["val"] and pipeline.classifier.strokes is not None
    with pytest.raises(ValueError, match="holds no checkpoint.pt"):
        trained_hint_pipeline(private_cache)
    whole = torch.load(out / "checkpoint.pt")
    save_checkpoint({name: value for name, value in whole.items() if name not in ("model", "config", "vocabulary")},
                    private_cache / "checkpoint.pt")  # fmt: skip
    with pytest.raises(ValueError, match=r"checkpoint.pt is not a checkpoint of .* it lacks \['model', 'vocabulary'\]"):
        trained_hint_pipeline(private_cache)  # (said only that it is no reader of such a run)
    save_checkpoint(whole | {"setup": {"model": "transformer", "input": "image"}}, private_cache / "checkpoint.pt")
    with pytest.raises(ValueError, match="is not the reader of a neurosym hint --model neurosym --input image run"):
        trained_hint_pipeline(private_cache)
    argv[argv.index(str(out))] = str(out.with_name("plain"))
    assert main(argv) == 0
    assert not any("strokes" in key for key in torch.load(out.with_name("plain") / "checkpoint.pt")["model"])


def test_a_batch_larger_than_the_training_set_is_named_before_training(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    argv = ["hint", "--model", "neurosym", "--input", "image", "--scale", "0.001", "--steps", "2", "--fewshot-scales", "none"]
    assert main([*argv, "--batch-size", "100000", "--out", str(private_cache / "out"), "--no-progress"]) == 1
    assert "the training set (998 examples) is smaller than one batch (100000)" in capsys.readouterr().err
    assert not (private_cache / "out" / "checkpoint.pt").exists()
    empty_windows, no_lengths = WindowSource([], prototype_bank(), "test", 0).batch([])
    assert empty_windows.shape == (0, 0, 32, 32) and no_lengths.shape == (0,)


def test_steps_default_to_the_pipelines_budget_not_the_seq2seq_one(monkeypatch):
    from neurosym.experiments import hint_pipeline
    from neurosym.experiments.hint_options import DEFAULT_STEPS

    seen = []
    monkeypatch.setattr(hint_pipeline, "run", lambda options: seen.append(options.training_steps()))
    assert main(["hint", "--model", "neurosym", "--input", "symbol", "--fewshot-scales", "none"]) == 0
    assert seen == [DEFAULT_STEPS["neurosym"]] == [2_000]
    assert main(["hint", "--model", "neurosym", "--input", "image", "--steps", "7"]) == 0 and seen[-1] == 7


def test_test_scale_validates_and_evaluates_on_the_larger_generated_splits(private_cache):
    from neurosym.cli import build_parser
    from neurosym.data.hint import main_split
    from neurosym.experiments.hint_options import HintOptions
    from neurosym.experiments.hint_sources import load_hint_data
    from neurosym.experiments.options import options_from

    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "none"]
    out = str(private_cache / "out")
    parsed = build_parser().parse_args([*argv, "--test-scale", "0.004", "--speed-samples", "3", "--out", out, "--no-progress"])
    args = options_from(HintOptions, parsed)
    small, large = main_split(scale=0.002, progress=False), main_split(scale=0.004, progress=False)
    assert len(large["test"]) > len(small["test"]) and [r.expr for r in large["val"]] != [r.expr for r in small["val"]]
    chosen = load_hint_data(args, image_input=False, test_scale=args.test_scale).splits
    for split in ("val", "test"):  # the larger split's subsets but I, less what this run trained on (I: test_hint_held_out)
        unseen = {r.expr for r in large[split]} - {r.expr for r in small["train"]}
        assert {r.expr for r in chosen[split] if r.eval != "I"} == {r.expr for r in large[split] if r.eval != "I"} & unseen
    assert [r.expr for r in chosen["train"]] == [r.expr for r in small["train"]]
    assert main([*argv, "--test-scale", "0.004", "--speed-samples", "3", "--out", out, "--no-progress"]) == 0
    results = json.loads((private_cache / "out" / "results.json").read_text())
    assert results["test_scale"] == 0.004 and results["test"]["avg"] == 1.0


def test_image_input_run_stops_at_the_time_limit_with_a_checkpoint(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002"]
    argv += ["--steps", "50", "--batch-size", "4"]
    assert main([*argv, "--time-limit", "0", "--out", str(out), "--no-progress"]) == 75
    assert "training stopped after step 1 of 50 (time limit)" in capsys.readouterr().err
    assert (out / "checkpoint.pt").is_file() and not (out / "results.json").exists()


def scored_too_soon(*args, **kwargs):
    """In place of the runner's scorer where a later stage stops the call: nothing is scored before every stage has
    trained (a call that a stop ends would score again)."""
    raise AssertionError("scored before every stage had trained")


def stopped_few_shot_stage(*args):
    """In place of the few-shot stage: stopped by the time limit after its first concept."""
    raise TrainingInterrupted(1, 2, TIME_LIMIT, "fewshot_image.json", unit="few-shot concept")


@pytest.mark.parametrize(
    "stage",
    [["--cnn", "small", "--steps", "4", "--batch-size", "4", "--curriculum", "7:4", "--classifier-features", "8",
      "--classifier-width", "4"], ["--semantics", "learned"]],
    ids=["given semantics", "learned semantics"],
)  # fmt: skip
def test_an_image_run_scores_nothing_before_its_few_shot_stage_has_learned_every_concept(private_cache, monkeypatch, stage):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources
    from neurosym.experiments.hint_pipeline import image, learned

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank(symbols=[*HINT_SYMBOLS, "x"]))
    runner = learned if "learned" in stage else image
    if runner is learned:  # (the grounding as learned: not read before the few-shot stage)
        monkeypatch.setattr(learned, "learn_grounding_from_images", lambda *args: SimpleNamespace(pipeline=None))
    monkeypatch.setattr(runner, "fewshot_from_images", stopped_few_shot_stage)
    monkeypatch.setattr(runner, "evaluate_pipeline", scored_too_soon)
    argv = ["hint", "--model", "neurosym", "--input", "image", "--scale", "0.002", "--fewshot-scales", "0.01",
            "--fewshot-concepts", "x", "--no-progress", "--out", str(private_cache / "out"), *stage]  # fmt: skip
    assert main(argv) == 75  # (was: the main task scored, then the few-shot stage stopped: scored again by the next call)
    assert not (private_cache / "out" / "grounding.json").exists()


def test_adaptation_stops_at_what_is_left_of_the_time_limit_with_its_checkpoint(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources
    from neurosym.experiments.hint_pipeline import image

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    monkeypatch.setattr(hint_sources, "writers_bank", lambda side, seed=0: prototype_bank(seed=1))
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002", "--steps", "4",
            "--batch-size", "4", "--curriculum", "7:4", "--classifier-features", "8", "--classifier-width", "4",
            "--fewshot-scales", "none", "--speed-samples", "1", "--no-progress", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0  # trained: the main training has no step left
    with pytest.raises(ValueError, match="holds no finished --adapt run"):
        trained_hint_pipeline(out, adapted=True)
    (out / "results.json").unlink()
    adapt = ["--adapt", "test-writers", "--adapt-examples", "20", "--adapt-steps", "5", "--adapt-refit", "0"]
    monkeypatch.setattr(image, "evaluate_pipeline", scored_too_soon)  # (was: the trained reader scored before adapting)
    assert main([*argv, *adapt, "--time-limit", "0"]) == 75  # (was: adapted to the end, past the time limit)
    assert "training stopped after step 1 of 5 (time limit); " in capsys.readouterr().err
    assert torch.load(out / "adapt_checkpoint.pt", weights_only=False)["step"] == 1 and not (out / "results.json").exists()
    (out / "checkpoint.pt").unlink()  # the main reader trained anew (one step more): the adaptation is another reader's
    longer = [*argv[: argv.index("--steps") + 1], "5", *argv[argv.index("--steps") + 2 :]]
    assert main([*longer, *adapt]) == 2  # (was: the old reader's adaptation resumed, and scored as this reader's)
    assert "adapt_checkpoint.pt was written for another model or data (trained_reader differ)" in capsys.readouterr().err


def test_an_adaptation_of_other_adapt_options_is_refused_without_advising_no_resume(private_cache, monkeypatch, capsys):
    """RESULTS' R5rt over R5's folder: a finished run adapted again under other --adapt options. --no-resume would
    remove the main run's checkpoint too and train its reader anew (R5's 74 minutes): the advice is to remove the
    adaptation's checkpoints."""
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    monkeypatch.setattr(hint_sources, "writers_bank", lambda side, seed=0: prototype_bank(seed=1))
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002", "--steps", "2",
            "--batch-size", "4", "--curriculum", "7:2", "--classifier-features", "8", "--classifier-width", "4",
            "--fewshot-scales", "none", "--speed-samples", "1", "--no-progress", "--no-score-test", "--out", str(out),
            "--adapt", "test-writers", "--adapt-examples", "20", "--adapt-steps", "2", "--adapt-refit", "0"]  # fmt: skip
    assert main([*argv, "--adapt-distill", "0"]) == 0
    capsys.readouterr()
    assert main([*argv, "--adapt-distill", "1"]) == 2
    err = capsys.readouterr().err
    assert "adapt_checkpoint.pt was written with another configuration (distill differ)" in err
    assert "remove it, and the later stages' checkpoints beside it, to adapt anew" in err
    assert "--no-resume would remove the main run's checkpoint too" in err
    assert "(--no-resume starts afresh over it)" not in err and "choose another checkpoint path" not in err  # (was: both)


def test_few_shot_stage_stops_after_the_concept_under_way_and_the_same_command_continues(private_cache, capsys):
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "0.01",
            "--fewshot-concepts", "x,y,a", "--speed-samples", "3", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main([*argv, "--time-limit", "0"]) == 75
    err = capsys.readouterr().err
    assert "training stopped after few-shot concept 1 of 3 (time limit)" in err and "fewshot_symbol.json holds it" in err
    assert json.loads((out / "fewshot_symbol.json").read_text())["0.01"]["concepts"].keys() == {"x"}
    assert not (out / "results.json").exists()
    assert main([*argv, "--time-limit", "0", "--seed", "3"]) == 2  # seed 0's concepts are not seed 3's
    assert "fewshot_symbol.json was written for another model or data (seed differ)" in capsys.readouterr().err
    assert main(argv) == 0
    assert json.loads((out / "results.json").read_text())["fewshot"]["0.01"]["concepts"].keys() == {"x", "y", "a"}


def test_a_run_that_learns_no_concept_reads_no_few_shot_progress(private_cache, capsys):
    out = private_cache / "out"
    out.mkdir()
    (out / "fewshot_symbol.json").write_text('{"setup": {"seed": 3}}')  # another run's concepts, left over
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--scale", "0.002", "--fewshot-scales", "none",
            "--speed-samples", "1", "--out", str(out), "--no-progress", "--resume"]  # fmt: skip
    assert main(argv) == 0  # (was 2: refused for the seed of concepts it does not learn)
    assert json.loads((out / "results.json").read_text())["fewshot"] == {}
    assert (out / "fewshot_symbol.json").read_text() == '{"setup": {"seed": 3}}'  # left as it was
    (out / "fewshot_symbol.json").write_text("{cut short")
    assert main(argv) == 0  # (was 1: not valid JSON)


@pytest.mark.parametrize(("semantics", "scale"), [("given", "0.002"), ("learned", "0.005")])
def test_the_few_shot_stage_on_symbols_gets_what_the_induction_left_of_the_time_limit(
    private_cache, monkeypatch, capsys, semantics, scale
):
    from neurosym.experiments.hint_pipeline import learned, symbol

    clock = itertools.count(0.0, 100.0)  # the runner's clock: the induction takes more than the minute
    runner = learned if semantics == "learned" else symbol
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: float(next(clock))), raising=False)
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--semantics", semantics, "--scale", scale, "--seed", "3",
            "--fewshot-scales", "0.01", "--fewshot-concepts", "x,a", "--speed-samples", "1", "--no-progress",
            "--out", str(private_cache / "out"), "--time-limit", "1"]  # fmt: skip
    assert main(argv) == 75  # (was 0: the few-shot stage had the whole minute again)
    assert "training stopped after few-shot concept 1 of 2 (time limit)" in capsys.readouterr().err


def test_symbol_input_learns_everything_from_results_when_asked(private_cache, capsys):
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "symbol", "--semantics", "learned", "--scale", "0.005", "--seed", "3"]
    argv += ["--fewshot-scales", "0.01", "--fewshot-concepts", "x,a"]
    assert main([*argv, "--speed-samples", "3", "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["equals_hint"] and results["mismatches"] == [] and results["test"]["avg"] == 1.0
    concepts = results["fewshot"]["0.01"]["concepts"]  # then the new concepts, beside the learned table
    assert concepts["x"]["learned"] == "= 11" and concepts["a"]["learned"] == "level 1: max(i, j)"
    assert min(c["test_accuracy"] for c in concepts.values()) == 1.0
    saved = json.loads((out / "grounding.json").read_text())
    assert saved == results["grounding"]
    printed = capsys.readouterr().out
    assert "the learned table equals HINT's" in printed and "| neurosym, everything learned (symbol input) |" in printed
    assert "Few-shot concepts (symbol input, everything learned)" in printed
    assert "two precedence levels (each operator is assigned to one)" in printed  # what it was told, beside the table


def test_adapting_to_a_new_writer_from_results_improves_on_its_images(private_cache, monkeypatch, capsys, tmp_path):
    import numpy as np
    from hint_banks import prototype_bank

    from neurosym.data.symbol_images import merge_banks
    from neurosym.experiments import hint_sources

    first = prototype_bank(seed=0)
    digits = list("0123456789")
    new = merge_banks(prototype_bank(seed=1).subset(digits), first.subset(list("+-*/()")))  # a new writer's digits
    archive = tmp_path / "new_writer.npz"
    np.savez(archive, images=new.images, labels=new.labels, splits=new.pools)
    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: first)
    undrawn(monkeypatch)
    out = private_cache / "out"
    # mostly one-symbol expressions, in batches of 32, so that the claims hold whatever the seed: --seed 0..4 adapt to
    # 0.92-1.0 on the new writer and keep 0.99-1.0 on the first bank (1:20,3:40,7:40 in batches of 12 failed three of them)
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.001", "--steps", "100", "--batch-size", "32",
            "--curriculum", "1:60,3:20,7:20", "--classifier-features", "32", "--classifier-width", "8",
            "--fewshot-scales", "none", "--extra-test-bank", str(archive), "--adapt", str(archive),
            "--adapt-examples", "400", "--adapt-steps", "100", "--adapt-distill", "0", "--adapt-refit", "0",
            "--speed-samples", "3", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    before, after = results["extra_test_bank"]["test"]["symbol"], results["adapt"]["test_new_writer"]["symbol"]
    assert after > max(before, 0.8), (before, after)  # learned the new glyphs from results alone
    assert results["adapt"]["test_first_bank"]["symbol"] > 0.8  # and kept the first ones
    extra = results["extra_test_bank"]  # the new writer's own batch-norm statistics change how its windows read
    for split in ("val", "test"):  # validation beside test, to choose on
        assert extra[f"{split}_their_batch_statistics"].keys() == extra[split].keys() >= {"I", "LL", "avg", "symbol"}
        assert extra[f"{split}_their_batch_statistics"] != extra[split]
    assert extra["val"] != extra["test"]
    printed = capsys.readouterr().out
    assert "adapted from 400 results" in printed and "batch-norm statistics of 400 unlabelled expressions" in printed
    assert main([*argv, "--resume", "--no-score-test"]) == 0  # the same checkpoints, validation alone: for choosing
    alone = json.loads((out / "results.json").read_text())
    assert alone["test"] is None and alone["val"] == results["val"]
    assert alone["train_seconds"] == results["train_seconds"] > 0  # the training's, not this call's (which trained nothing)
    assert alone["extra_test_bank"].keys() == {"images", "val", "val_their_batch_statistics"}
    assert alone["extra_test_bank"]["val"] == extra["val"]
    scored = {key for key in alone["adapt"] if key.startswith(("val_", "test_"))}
    assert scored == {key for key in results["adapt"] if key.startswith("val_")} and len(scored) == 4
    assert all(alone["adapt"][key] == results["adapt"][key] for key in scored)
    printed = capsys.readouterr().out
    assert ", test" not in printed and " test expressions" not in printed and " validation expressions; accuracy" in printed
    fewer = [a if a != "400" else "300" for a in argv]  # another adaptation: refused, not reported as this one
    assert main([*fewer, "--no-score-test"]) == 2
    assert "adapt_checkpoint.pt was written for another model or data (examples, replay differ)" in capsys.readouterr().err


def test_validation_alone_is_refused_where_a_stage_would_score_test_anyway(private_cache, capsys):
    argv = ["hint", "--model", "neurosym", "--no-score-test", "--out", str(private_cache / "out")]
    for other in (["--input", "symbol", "--fewshot-scales", "none"], ["--input", "image", "--semantics", "learned"]):
        with pytest.raises(SystemExit) as stopped:
            main([*argv, *other])
        assert stopped.value.code == 2 and "--no-score-test scores validation alone" in capsys.readouterr().err


def test_drawn_digits_join_the_bank_s_training_images_and_the_report(private_cache, monkeypatch, tmp_path):
    from hint_banks import prototype_bank

    from neurosym.data.symbol_images import DIGITS, with_drawn_digits
    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--scale", "0.002", "--steps", "5", "--batch-size", "4",
            "--curriculum", "1:5", "--classifier-features", "8", "--classifier-width", "4", "--fewshot-scales", "none",
            "--speed-samples", "1", "--no-progress"]  # fmt: skip
    assert main([*argv, "--drawn-digits", "6", "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text())["data"].endswith("+ 6 drawn digits each, scale 0.002")
    bank = with_drawn_digits(prototype_bank(), 6, seed=0)
    drawn = bank.sources == "drawn"
    assert set(bank.pools[drawn].tolist()) == {"train"} and sorted(bank.labels[drawn].tolist()) == sorted(list(DIGITS) * 6)
    ink = bank.images[drawn] > 32
    rows, columns = ink.any(axis=2).sum(axis=1), ink.any(axis=1).sum(axis=1)
    assert (abs(np.maximum(rows, columns) - 20) <= 2).all(), "drawn digits come in MNIST's glyph size"
    with pytest.raises(SystemExit) as stopped:  # a usage error, before any work
        main(["hint", "--model", "neurosym", "--input", "image", "--data", str(tmp_path), "--drawn-digits", "6"])
    assert stopped.value.code == 2


def test_adapting_runs_the_main_schedule_anew_at_adapt_lr_with_adapt_replay_and_distill(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    undrawn(monkeypatch)
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.001", "--steps", "6", "--batch-size", "4",
            "--curriculum", "7:6", "--classifier-features", "8", "--classifier-width", "4", "--fewshot-scales", "none",
            "--speed-samples", "1", "--no-progress", "--lr-schedule", "cosine", "--adapt", "test-writers",
            "--adapt-examples", "30", "--adapt-steps", "4", "--adapt-lr", "4e-4", "--adapt-replay", "20", "--adapt-distill", "2",
            "--adapt-refit", "0", "--out", str(out)]  # fmt: skip
    monkeypatch.setattr(hint_sources, "writers_bank", lambda side, seed=0: prototype_bank(seed=1))
    assert main(argv) == 0
    _read_back_as_scored(out, argv, prototype_bank(seed=1))  # (was: only the reader before adaptation was read back)
    adapted = torch.load(out / "adapt_checkpoint.pt", weights_only=False)
    assert adapted["step"] == 4 and adapted["config"]["schedule"] == "cosine" and adapted["config"]["distill"] == 2
    assert torch.load(out / "checkpoint.pt", weights_only=False)["config"]["distill"] == 0  # the main run distils nothing
    assert adapted["scheduler"]["base_lrs"] == [4e-4]  # peaks at --adapt-lr, the main run at 1e-3
    assert torch.load(out / "checkpoint.pt", weights_only=False)["scheduler"]["base_lrs"] == [1e-3]
    assert adapted["scheduler"]["_last_lr"][0] < 1e-6  # decayed to zero over the adaptation's own steps
    report = json.loads((out / "results.json").read_text())["adapt"]
    assert report["examples"] == 30 and report["replayed"] == 20
    assert report["learning_rate"] == 4e-4 and set(report["val_new_writer"]) >= {"I", "LL", "avg", "symbol"}
    assert report["distill"] == 2 and set(report["val_first_bank"]) >= {"I", "LL", "avg", "symbol"}
    for split, writers in itertools.product(("val", "test"), ("new_writer", "first_bank")):  # also with their own statistics
        assert report[f"{split}_{writers}_own_statistics"].keys() == report[f"{split}_{writers}"].keys()
    assert "adapted, first bank, test (own batch-norm statistics)" in capsys.readouterr().out
    assert report["refit_steps"] == 0 and not (out / "refit_checkpoint.pt").exists()
    assert main([*argv, "--adapt-refit", "3", "--resume", "--no-score-test"]) == 0  # trained and adapted: only the refit runs
    _read_back_as_scored(out, argv, prototype_bank(seed=1))  # the refit reader
    refit = torch.load(out / "refit_checkpoint.pt", weights_only=False)
    assert refit["step"] == 3 and refit["config"]["batch_size"] == 128 and refit["config"]["learning_rate"] == 4e-4
    assert any(not torch.equal(refit["model"][name], tensor) for name, tensor in adapted["model"].items())
    assert torch.load(out / "adapt_checkpoint.pt", weights_only=False)["model"].keys() == adapted["model"].keys()
    assert json.loads((out / "results.json").read_text())["adapt"]["refit_steps"] == 3
    assert "adapted from 30 results, refit, " in capsys.readouterr().out
    routed = [*argv, "--adapt-refit", "3", "--adapt-route", "2", "--resume", "--no-score-test"]  # (read back: validation)
    assert main(routed) == 1  # routed, the refit fits the new writer's windows alone: the finished one fitted both banks'
    assert "refit_checkpoint.pt was fitted to other labelled windows" in capsys.readouterr().err
    (out / "refit_checkpoint.pt").unlink()
    assert main(routed) == 0  # the refit runs anew on the new writer's windows, then the router trains
    assert isinstance(_read_back_as_scored(out, argv, prototype_bank(seed=1)).classifier, RoutedReader)
    refit_alone = torch.load(out / "refit_checkpoint.pt", weights_only=False)
    assert refit_alone["step"] == 3 and refit_alone["fitted_to"] != refit["fitted_to"]
    routing = torch.load(out / "routing_checkpoint.pt", weights_only=False)
    assert routing["step"] == 2 and routing["model"]["classifier.weight"].shape == (2, 32)  # first bank, new writer
    assert json.loads((out / "results.json").read_text())["adapt"]["routing_steps"] == 2
    assert "adapted from 30 results, refit, routed, " in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*argv, "--adapt-route", "2", "--fewshot-scales", "0.01"])
    assert "--adapt-route reads with two readers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*argv, "--adapt-distill", "-1"])
    assert "--adapt-distill: expected a finite number >= 0, got '-1'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="give a concept or adapted, not both"):
        trained_hint_pipeline(out, "x", adapted=True)
    stale = torch.load(out / "adapt_checkpoint.pt", weights_only=False)
    stale["setup"]["trained_reader"] = "0" * 16  # the adaptation of another trained reader
    save_checkpoint(stale, out / "adapt_checkpoint.pt")
    with pytest.raises(ValueError, match=r"adapt_checkpoint.pt was written for another model or data \(trained_reader differ"):
        trained_hint_pipeline(out, adapted=True)


def _read_back_as_scored(out: Path, argv: list[str], new_writer: SymbolBank) -> HintPipeline:
    """Assert that the pipelines :func:`trained_hint_pipeline` reads back from the finished ``--adapt`` run of ``argv`` in
    ``out`` score its validation results: the trained one its ``val``, the adapted one (refit, routed, as the run was)
    its ``adapt`` scores of either writer (``new_writer``'s images, the first bank's); returns the adapted one."""
    from neurosym.cli import build_parser
    from neurosym.experiments.hint_options import HintOptions
    from neurosym.experiments.hint_sources import load_hint_data
    from neurosym.experiments.options import options_from

    results = json.loads((out / "results.json").read_text())
    options = options_from(HintOptions, build_parser().parse_args(argv))
    data = load_hint_data(options, image_input=True, fewshot=False)
    bank, device, seed = data.image_bank(), torch.device(results["device"]), options.data_seed_or_seed()

    def scored(pipeline: HintPipeline, images: SymbolBank) -> dict[str, float]:
        return evaluate_pipeline(pipeline, WindowSource(data.splits["val"], images, "val", seed), device, options.eval_batch_size)

    def subsets(scores: dict[str, float]) -> dict[str, float]:
        return {key: scores[key] for key in ("I", "SS", "LS", "SL", "LL", "avg", "symbol")}

    assert subsets(scored(trained_hint_pipeline(out), bank)) == subsets(results["val"])
    adapted = trained_hint_pipeline(out, adapted=True)
    assert subsets(scored(adapted, with_brackets(new_writer, bank))) == subsets(results["adapt"]["val_new_writer"])
    assert subsets(scored(adapted, bank)) == subsets(results["adapt"]["val_first_bank"])
    return adapted


def test_ensemble_reads_with_the_trained_runs_readers_and_trains_nothing(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    undrawn(monkeypatch)
    runs = [private_cache / "shift0", private_cache / "shift1"]
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002", "--classifier-features", "8",
            "--classifier-width", "4", "--fewshot-scales", "none", "--speed-samples", "1", "--no-progress"]  # fmt: skip
    training = ["--steps", "30", "--batch-size", "8", "--curriculum", "1:10,3:20"]  # (refused with --ensemble: unused)
    for shift, run in enumerate(runs):  # trained apart on the ensemble's data (its seed): by another training option
        assert main([*argv, *training, "--augment-shift", str(shift), "--out", str(run)]) == 0
    members = [(run / "checkpoint.pt").read_bytes() for run in runs]
    out = private_cache / "ensemble"
    assert main([*argv, "--ensemble", *map(str, runs), "--out", str(out)]) == 0
    assert [(run / "checkpoint.pt").read_bytes() for run in runs] == members  # the members are read, never rewritten
    assert not (out / "checkpoint.pt").exists()  # nothing was trained
    results = json.loads((out / "results.json").read_text())
    assert results["ensemble"] == list(map(str, runs)) and results["history"] == []
    assert set(results["val"]) >= {"avg", "symbol"}
    members_test = [json.loads((run / "results.json").read_text())["test"] for run in runs]
    assert all(results["test"] != member for member in members_test)  # read by both members, not by one alone
    assert "| ensemble of 2 readers, test:" in capsys.readouterr().out
    alone = private_cache / "alone"  # one run's reader alone scores exactly as that run did
    assert main([*argv, "--ensemble", str(runs[0]), "--out", str(alone)]) == 0
    trained = json.loads((runs[0] / "results.json").read_text())
    assert json.loads((alone / "results.json").read_text())["test"] == trained["test"]


def test_ensemble_refuses_missing_runs_and_training_stages_before_any_work(private_cache, monkeypatch, capsys):
    from neurosym.experiments import hint_sources

    def no_data(*args, **kwargs):
        raise AssertionError("the data were loaded before the ensemble was checked")

    monkeypatch.setattr(hint_sources, "default_bank", no_data)
    argv = ["hint", "--model", "neurosym", "--input", "image", "--out", str(private_cache / "out")]
    missing = private_cache / "never_trained"
    assert main([*argv, "--fewshot-scales", "none", "--ensemble", str(missing)]) == 1
    assert f"--ensemble: no checkpoint at {missing}/checkpoint.pt" in capsys.readouterr().err
    usage_errors = [
        ([*argv, "--ensemble", str(missing)], "--adapt and the few-shot stage train one reader"),  # few-shot: on by default
        ([*argv, "--fewshot-scales", "none", "--adapt", "test-writers", "--ensemble", str(missing)], "--adapt and the few"),
        ([*argv, "--fewshot-scales", "none", "--steps", "9", "--ensemble", str(missing)], "--steps is used by a run that trains"),
    ]
    usage_errors += [
        ([*argv, *other, "--fewshot-scales", "none", "--ensemble", str(missing)], "--ensemble reads with trained symbol readers")
        for other in (["--input", "symbol"], ["--semantics", "learned"], ["--model", "transformer"])
    ]
    for command, message in usage_errors:
        with pytest.raises(SystemExit) as stopped:
            main(command)
        assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_ensemble_refuses_members_trained_on_other_data_or_built_otherwise_before_any_work(private_cache, monkeypatch, capsys):
    from neurosym.data.symbol_images import HINT_SYMBOLS
    from neurosym.experiments import hint_sources
    from neurosym.experiments.hint_options import HintOptions, RunSetup
    from neurosym.experiments.hint_pipeline.image import READER_OPTIONS, hint_reader

    def no_data(*args, **kwargs):
        raise AssertionError("the data were loaded")

    monkeypatch.setattr(hint_sources, "default_bank", no_data)
    given = {"cnn": "small", "scale": 0.002, "classifier_features": 8, "classifier_width": 4}
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.002", "--classifier-features", "8",
            "--classifier-width", "4", "--fewshot-scales", "none", "--out", str(private_cache / "out")]  # fmt: skip

    def member(name: str, seed: int = 0, kept: tuple[str, ...] = (), **options) -> str:
        """A finished run's checkpoint as ``neurosym hint --seed SEED`` with ``options`` would have written it (one
        written before the data seed was kept where ``kept`` names ``data_seed``)."""
        setup = RunSetup(HintOptions(model="neurosym", input="image", seed=seed, **given, **options)).of(READER_OPTIONS)
        setup = {name: value for name, value in setup.items() if name not in kept}
        save_checkpoint({"model": hint_reader(setup).state_dict(), "step": 5, "config": {"steps": 5, "seed": seed},
                         "setup": setup, "vocabulary": list(HINT_SYMBOLS)}, private_cache / name / "checkpoint.pt")  # fmt: skip
        return str(private_cache / name)

    refused = [  # the data seed draws the bank's train/validation/test image pools; the stroke width is the reader's
        (member("seed1", seed=1), "setup.data_seed 1 there, 0 now"),
        (member("data_seed1", seed=0, data_seed=1), "setup.data_seed 1 there, 0 now"),
        (member("before_data_seed1", seed=1, kept=("data_seed",)), "setup.data_seed 1 there, 0 now"),  # its seed's data
        (member("strokes2", stroke_width=2), "setup.stroke_width 2 there, None now"),
        (member("other_bank", bank="other-writers"), "setup.bank 'other-writers' there, 'default' now"),
    ]
    for run, message in refused:
        assert main([*argv, "--ensemble", member("seed0"), run]) == 1
        assert re.search(f"--ensemble: checkpoint {run}/checkpoint.pt was written .*{message}", capsys.readouterr().err)
    accepted = [  # each member checked and read: then the data
        ["--seed", "1", "--ensemble", member("seed1", seed=1), member("changes3", seed=1, abduction_changes=3)],
        ["--data-seed", "0", "--ensemble", member("seed0"), member("seed1_data0", seed=1, data_seed=0)],
        ["--seed", "1", "--data-seed", "0", "--ensemble", member("before_data_seed0", kept=("data_seed",)), member("seed0")],
    ]
    for command in accepted:
        with pytest.raises(AssertionError, match="the data were loaded"):
            main([*argv, *command])


def test_data_seed_draws_the_data_and_seed_the_reader_so_runs_of_one_data_seed_are_read_as_one(
    private_cache, monkeypatch, capsys
):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources
    from neurosym.experiments.hint_options import HintOptions
    from neurosym.experiments.hint_sources import load_hint_data

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank(per_symbol=8, seed=seed))
    undrawn(monkeypatch)

    def data(**seeds: int) -> tuple[dict, np.ndarray]:
        loaded = load_hint_data(HintOptions(model="neurosym", input="image", scale=0.001, **seeds), image_input=True)
        return loaded.splits, loaded.image_bank().images

    seed0, seed1 = data(seed=0), data(seed=1)
    assert seed0[0] != seed1[0] and not np.array_equal(seed0[1], seed1[1])  # (else nothing below tells them apart)
    for seeds in ({"seed": 0, "data_seed": 0}, {"seed": 1, "data_seed": 0}):
        splits, images = data(**seeds)
        assert splits == seed0[0] and np.array_equal(images, seed0[1])
    argv = ["hint", "--model", "neurosym", "--input", "image", "--cnn", "small", "--scale", "0.001", "--classifier-features", "8",
            "--classifier-width", "4", "--fewshot-scales", "none", "--speed-samples", "1", "--no-progress", "--device", "cpu"]  # fmt: skip
    training = ["--steps", "6", "--batch-size", "4", "--curriculum", "1:3,3:3"]
    runs = {seeds: private_cache / "_".join(seeds) for seeds in [("--seed", "0"), ("--seed", "0", "--data-seed", "0"),
                                                                   ("--seed", "1", "--data-seed", "0")]}  # fmt: skip
    for seeds, run in runs.items():
        assert main([*argv, *training, *seeds, "--out", str(run)]) == 0
    plain, given, other = [torch.load(run / "checkpoint.pt", weights_only=False)["model"] for run in runs.values()]
    results = [json.loads((run / "results.json").read_text()) for run in runs.values()]
    assert all(torch.equal(plain[name], given[name]) for name in plain)  # --data-seed at --seed's: the same run
    assert results[0]["val"] == results[1]["val"] and results[0]["test"] == results[1]["test"]
    assert any(not torch.equal(plain[name], other[name]) for name in plain)  # another seed: other weights
    members = [str(runs[("--seed", "0")]), str(runs[("--seed", "1", "--data-seed", "0")])]
    assert main([*argv, "--data-seed", "0", "--ensemble", *members, "--out", str(private_cache / "ensemble")]) == 0
    refused = r"--ensemble: checkpoint .*seed_0/checkpoint.pt was written .*setup.data_seed 0 there, 1 now"
    assert main([*argv, "--seed", "1", "--ensemble", *members, "--out", str(private_cache / "refused")]) == 1
    assert re.search(refused, capsys.readouterr().err)
    resume = [*argv, *training, "--resume", "--out", members[0]]  # (finished: a resume scores it again)
    checkpoint = runs[("--seed", "0")] / "checkpoint.pt"
    for kept in (True, False):  # as kept, then as a run from before the data seed was kept: its seed's data
        assert main([*resume, "--data-seed", "0"]) == 0
        assert main([*resume, "--data-seed", "1"]) == 2 and "(data_seed differ)" in capsys.readouterr().err
        saved = torch.load(checkpoint, weights_only=False)
        assert saved["setup"].pop("data_seed", "absent") == (None if kept else "absent")
        save_checkpoint(saved, checkpoint)


def test_a_run_stamps_its_data_files_once_and_each_checkpoint_keeps_that_stamp(private_cache, monkeypatch):
    from hint_banks import prototype_bank

    from neurosym.data.symbol_images import FEWSHOT_CONCEPTS, HINT_SYMBOLS
    from neurosym.experiments import options
    from neurosym.experiments.hint_pipeline import fewshot
    from neurosym.training.checkpoint import files_stamp, load_checkpoint

    undrawn(monkeypatch)
    monkeypatch.setattr(fewshot, "plot_fewshot", lambda *args, **kwargs: None)  # (drawing it takes seconds)
    bank = prototype_bank(per_symbol=12, symbols=[*HINT_SYMBOLS, *FEWSHOT_CONCEPTS])
    archive = private_cache / "bank.npz"  # a path option: its stamp is kept beside it
    np.savez(archive, images=bank.images, labels=bank.labels, splits=bank.pools)
    stamped: list[Path] = []  # the paths whose files were walked (a large release's: many thousands of files)
    monkeypatch.setattr(options, "files_stamp", lambda path: stamped.append(path) or files_stamp(path))
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--bank", str(archive), "--cnn", "small", "--scale", "0.002",
            "--classifier-features", "8", "--classifier-width", "4", "--abduction-changes", "1", "--speed-samples", "1",
            "--no-score-test", "--no-progress", "--device", "cpu"]  # fmt: skip
    concepts = ["--fewshot-scales", "0.01", "--fewshot-concepts", "x", "--fewshot-steps", "1,1", "--fewshot-replay", "4"]
    training = ["--steps", "1", "--batch-size", "4", "--curriculum", "1:1"]
    assert main([*argv, *training, *concepts, "--out", str(out)]) == 0
    assert stamped == [archive]  # once, for the training's, the few-shot stage's and each concept's checkpoints
    kept = {"path": str(archive), "files": files_stamp(archive)}
    assert load_checkpoint(out / "checkpoint.pt")["setup"]["bank"] == kept
    assert json.loads((out / "fewshot_image.json").read_text())["setup"]["bank"] == kept
    assert load_checkpoint(out / "fewshot_image_0.01_x.pt")["setup"]["bank"] == kept
    stamped.clear()  # a run of its own: stamped afresh, once for itself and for checking its member
    assert main([*argv, "--fewshot-scales", "none", "--ensemble", str(out), "--out", str(private_cache / "ensemble")]) == 0
    assert stamped == [archive]


def test_an_ensemble_run_is_named_as_one_where_a_trained_run_is_read_back(private_cache):
    run = private_cache / "ensemble"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"input": "image", "ensemble": ["/runs/r0", "/runs/r1"]}))
    with pytest.raises(ValueError, match="is a neurosym hint --ensemble run, which keeps no reader of its own: read back "
                                         "each of its members' runs \\(/runs/r0, /runs/r1\\)"):  # fmt: skip
        trained_hint_pipeline(run)
    with pytest.raises(ValueError, match="holds no checkpoint.pt: give the --out folder"):
        trained_hint_pipeline(private_cache)


def test_a_few_shot_concept_the_run_found_no_meaning_of_is_named_so_where_it_is_read_back(private_cache):
    run = private_cache / "run"
    run.mkdir()
    failed = "not learned (no program explains 60% of the examples of operator 'c')"
    entry = {"train": 10, "val": 48, "test": 48, "test_unseen": 38, "learned": failed, "val_accuracy": 0.0}
    (run / "fewshot_image.json").write_text(json.dumps({"setup": {}, "0.01": {"concepts": {"c": entry}}}))
    message = r"found no meaning of the few-shot concept 'c' at scale 0.01: not learned \(no program explains 60%"
    with pytest.raises(ValueError, match=message):  # was: its model "is missing", to be learned again by the same command
        trained_hint_pipeline(run, "c")


@pytest.mark.parametrize(("key", "scale"), [("1.0", 1), ("1.0", 1.0), ("0.01", 0.01), ("1e-05", 0.00001)])
def test_a_few_shot_concept_is_read_back_at_the_scale_of_that_value(private_cache, key, scale):
    """The scale was looked up as text: a run's concepts at --fewshot-scales 1 (kept as "1.0") were not found at scale 1."""
    run = private_cache / "run"
    run.mkdir()
    entry = {"learned": "not learned (no value explains 60% of the examples of 'x')", "val_accuracy": 0.0}
    (run / "fewshot_image.json").write_text(json.dumps({"setup": {}, key: {"concepts": {"x": entry}}}))
    with pytest.raises(ValueError, match=f"found no meaning of the few-shot concept 'x' at scale {key}: not learned"):
        trained_hint_pipeline(run, "x", scale=scale)
    with pytest.raises(ValueError, match=f"learned no few-shot concept 'x' from images at scale 0.5 .*lists x at {key}"):
        trained_hint_pipeline(run, "x", scale=0.5)


def test_stages_their_data_cannot_feed_are_refused_before_training(private_cache, monkeypatch, capsys):
    from hint_banks import prototype_bank

    from neurosym.experiments import hint_sources
    from neurosym.pipelines import trainer

    def no_training(*args, **kwargs):
        raise AssertionError("trained before the stages were checked")

    monkeypatch.setattr(hint_sources, "default_bank", lambda seed=0: prototype_bank())
    monkeypatch.setattr(trainer, "run_reader_training", no_training)
    out = private_cache / "out"
    argv = ["hint", "--model", "neurosym", "--input", "image", "--scale", "0.002", "--out", str(out), "--no-progress"]
    assert main([*argv, "--fewshot-scales", "none", "--adapt", "test-writers", "--adapt-examples", "5000"]) == 1
    assert "--adapt: 1996 expressions leave none to replay after the 5000 of the new writer" in capsys.readouterr().err
    assert not (out / "checkpoint.pt").exists()


def test_subset_accuracy_refuses_records_that_miss_a_subset():
    from neurosym.data.hint import main_split
    from neurosym.experiments.hint_pipeline.symbol import subset_accuracy
    from neurosym.semantics import HINT_SEMANTICS

    test = main_split(scale=0.002, seed=0, cache=False, progress=False)["test"]
    assert subset_accuracy(HINT_SEMANTICS, list(test))["avg"] == 1.0
    records = [record for record in test if record.eval != "I"]
    with pytest.raises(ValueError, match=r"no record of the test subsets \['I'\]"):
        subset_accuracy(HINT_SEMANTICS, records)  # was NaN for I and for the average
    wrong_ss = [dataclasses.replace(record, res=-1) if record.eval == "SS" else record for record in test]  # SS all missed
    scores = subset_accuracy(HINT_SEMANTICS, wrong_ss)
    assert scores["SS"] == 0.0 and scores["avg"] == pytest.approx(1 - sum(r.eval == "SS" for r in test) / len(test))


def test_few_shot_stage_resumes_under_its_options_typed_at_their_defaults(tmp_path):
    """The stage's setup kept --steps / --learning-rate as given: typing the defaults (2,000; 1e-3) was another setup."""
    from neurosym.experiments.hint_options import HintOptions, RunSetup
    from neurosym.experiments.hint_pipeline.fewshot import learn_fewshot
    from neurosym.training.checkpoint import CheckpointMismatch

    records = main_split(scale=0.001, seed=0, progress=False)["train"][:2]
    learned: list[str] = []

    def learn(concept, train):
        learned.append(concept)
        return "11", lambda records, split: 1.0, None

    def run(**given):
        args = HintOptions(model="neurosym", input="image", fewshot_scales=[0.01], fewshot_concepts=["x"], out=tmp_path, **given)
        learn_fewshot(
            args, tmp_path, "test", learn, lambda concept, scale: dict.fromkeys(("train", "val", "test"), records), RunSetup(args)
        )

    run()
    run(steps=2000, learning_rate=1e-3)  # resumed: nothing left to learn
    assert learned == ["x"]
    with pytest.raises(CheckpointMismatch, match="steps 2000 there, 1000 now"):
        run(steps=1000)


def test_few_shot_stage_stopped_within_a_concept_says_the_run_continues(tmp_path):
    """A Ctrl-C within a concept's own training (which keeps no checkpoint) ended the command with "this training had
    no checkpoint, so running it again starts it afresh", though the main training and the concepts learned were kept
    and the same command continued from them."""
    from neurosym.experiments.hint_options import HintOptions, RunSetup
    from neurosym.experiments.hint_pipeline.fewshot import learn_fewshot
    from neurosym.training.stopping import TrainingInterrupted

    records = main_split(scale=0.001, seed=0, progress=False)["train"][:2]
    learned: list[str] = []

    def learn(concept, train):
        learned.append(concept)
        if learned == ["x", "y"]:  # y's training, stopped by SIGINT (its own loop, without a checkpoint)
            raise TrainingInterrupted(9, 10, "SIGINT", None)
        return "11", lambda records, split: 1.0, None

    args = HintOptions(model="neurosym", input="image", fewshot_scales=[0.01], fewshot_concepts=["x", "y"], out=tmp_path)

    def run() -> dict:
        return learn_fewshot(
            args, tmp_path, "test", learn, lambda concept, scale: dict.fromkeys(("train", "val", "test"), records), RunSetup(args)
        )

    stopped = rf"after few-shot concept 1 of 2 \(SIGINT\); {re.escape(str(tmp_path))} holds it: run the same command again"
    with pytest.raises(TrainingInterrupted, match=stopped):
        run()
    assert run()["0.01"]["concepts"].keys() == {"x", "y"} and learned == ["x", "y", "y"]  # x kept, y learned again


def test_unseen_few_shot_test_expressions_are_told_apart_by_expression_not_by_subset():
    """A release's few-shot records need not carry ``eval``: read by it, a test list without it counted its training
    sentences (HINT's few-shot ``I``) as unseen. On generated lists both readings agree."""
    split = fewshot_split("x", 0.01)
    train, test = split["train"], split["test"]
    assert unseen(test, train) == [record for record in test if record.eval != "I"] and 0 < len(unseen(test, train)) < len(test)
    bare = [dataclasses.replace(record, eval=None) for record in test]
    assert unseen(bare, train) == [record for record, original in zip(bare, test, strict=True) if original.eval != "I"]
