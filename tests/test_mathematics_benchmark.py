"""The ``neurosym mathematics`` runner end to end on a tiny released-format folder (no generator needed)."""

import itertools
import json
import shutil
from types import SimpleNamespace

import pytest
import torch
from mathematics_release import FIXTURES, released_folder

import neurosym.experiments.mathematics as mathematics_runner
from neurosym.cli import main
from neurosym.data.mathematics import read_module_file
from neurosym.models.seq2seq.mathematics_task import score, train_model
from neurosym.semantics.mathematics_arithmetic import ARITHMETIC_MODULES, symbolic_answers
from neurosym.training import load_checkpoint, save_checkpoint


def test_runner_trains_and_scores_every_model(tmp_path, capsys):
    data, out = released_folder(tmp_path / "data"), tmp_path / "out"
    argv = ["mathematics", "--preset", "smoke", "--data", str(data), "--modules", "arithmetic__mixed,arithmetic__div",
            "--device", "cpu", "--out", str(out)]  # fmt: skip
    assert main([*argv, "--models", "symbolic,transformer,lstm_att,lstm_att_bi", "--steps", "3"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert (out / "accuracy.png").stat().st_size > 0
    assert capsys.readouterr().out.endswith(f"Results in {out}: results.json, accuracy.png\n")
    assert results["modules"] == {
        "interpolate": ["arithmetic__div", "arithmetic__mixed"],
        "extrapolate": ["arithmetic__div_big", "arithmetic__mixed_longer"],
    }
    assert results["train_questions"] == 2 * 3 * 10
    symbolic = results["models"]["symbolic"]
    assert symbolic["interpolate"]["mean"] == symbolic["extrapolate"]["mean"] == 1.0
    for name in ("transformer", "lstm_att", "lstm_att_bi"):
        scores = results["models"][name]
        assert set(scores["extrapolate"]["per_module"]) == {"arithmetic__div_big", "arithmetic__mixed_longer"}
        assert 0.0 <= scores["interpolate"]["mean"] <= 1.0 and scores["parameters"] > 0
        assert scores["steps"] == 3 and torch.isfinite(torch.tensor(scores["final_loss"]))
        assert load_checkpoint(out / name / "checkpoint.pt")["step"] == 3
    lstm, bidirectional = (load_checkpoint(out / n / "checkpoint.pt")["model"] for n in ("lstm_att", "lstm_att_bi"))
    assert lstm["encoder.weight_hh_l0"].shape == (4 * 32, 32)  # quick config: 32 units
    assert bidirectional["encoder.weight_hh_l0_reverse"].shape == (4 * 16, 16)  # 16 per direction
    state = load_checkpoint(out / "transformer" / "checkpoint.pt")
    optimizer = state["optimizer"]["param_groups"][0]
    assert optimizer["betas"] == (0.9, 0.995) and optimizer["eps"] == 1e-9 and optimizer["lr"] == 6e-4
    assert state["config"]["clip_value"] == 0.1 and state["config"]["clip_norm"] is None


def test_a_larger_steps_resumes_to_the_weights_of_an_uninterrupted_run(tmp_path, capsys):
    data = released_folder(tmp_path / "data")
    argv = ["mathematics", "--preset", "smoke", "--data", str(data), "--modules", "arithmetic__mixed,arithmetic__div",
            "--device", "cpu", "--models", "lstm_att_bi", "--checkpoint-every", "2", "--threads", "1"]  # fmt: skip
    main([*argv, "--steps", "7", "--out", str(tmp_path / "straight")])
    assert main([*argv, "--steps", "4", "--out", str(tmp_path / "resumed")]) == 0
    path = tmp_path / "resumed" / "lstm_att_bi" / "checkpoint.pt"
    first = load_checkpoint(path)
    first["loop"]["history"][0]["loss"] = 123.0  # a marker that only a resumed run keeps
    save_checkpoint(first, path)
    assert main([*argv, "--steps", "7", "--out", str(tmp_path / "resumed")]) == 0
    straight, resumed = (load_checkpoint(tmp_path / run / "lstm_att_bi" / "checkpoint.pt") for run in ("straight", "resumed"))
    assert first["step"] == 4 and resumed["step"] == straight["step"] == 7
    assert not torch.equal(first["model"]["output.weight"], resumed["model"]["output.weight"])
    for key, value in straight["model"].items():
        torch.testing.assert_close(resumed["model"][key], value, rtol=0, atol=0)
    assert [h["step"] for h in resumed["loop"]["history"]] == [2, 4, 6, 7] and resumed["loop"]["history"][0]["loss"] == 123.0
    assert main([*argv, "--steps", "7", "--no-resume", "--out", str(tmp_path / "resumed")]) == 0
    afresh = load_checkpoint(path)
    assert afresh["step"] == 7 and afresh["loop"]["history"][0]["loss"] != 123.0  # trained from step 0 again
    assert json.loads((tmp_path / "resumed" / "results.json").read_text())["threads"] == 1
    assert main([*argv, "--steps", "9", "--lr", "1e-3", "--out", str(tmp_path / "resumed")]) == 2
    assert "was written with another configuration (lr differ): lr 0.0006 there, 0.001 now" in capsys.readouterr().err
    other_model = [a if a != "smoke" else "cpu" for a in argv]  # the cpu preset's sizes, the same loop settings
    sizes = ["--train-per-module", "30", "--test-per-module", "10", "--lr", "6e-4", "--batch-size", "16"]
    assert main([*other_model, *sizes, "--steps", "9", "--out", str(tmp_path / "resumed")]) == 2
    assert "was written for another model or data (model." in capsys.readouterr().err  # (each differing size named)
    fewer_modules = [a if a != "arithmetic__mixed,arithmetic__div" else "arithmetic__div" for a in argv]
    assert main([*fewer_modules, "--steps", "9", "--out", str(tmp_path / "resumed")]) == 2  # was continued as its model
    assert "was written for another model or data (data.modules differ)" in capsys.readouterr().err
    assert main([*argv, "--train-per-module", "20", "--steps", "9", "--out", str(tmp_path / "resumed")]) == 2  # (was the
    assert (
        "(data.train_per_module differ): data.train_per_module 30 there, 20 now" in capsys.readouterr().err
    )  # smoke preset's 30 whatever was given)


def test_a_run_is_not_resumed_under_another_test_per_module(tmp_path, capsys):
    """Training questions that occur in a test set are dropped, so --test-per-module shapes the training set too."""
    out = tmp_path / "out"
    argv = ["mathematics", "--preset", "smoke", "--data", str(released_folder(tmp_path / "data")), "--modules",
            "arithmetic__mixed,arithmetic__div", "--device", "cpu", "--models", "lstm_att", "--threads", "1",
            "--no-progress", "--out", str(out)]  # fmt: skip
    assert main([*argv, "--test-per-module", "12", "--steps", "2"]) == 0
    assert json.loads((out / "results.json").read_text())["train_questions"] == 2 * 3 * 8  # questions 12 and 11 dropped
    assert main([*argv, "--steps", "4"]) == 2  # (was resumed on 60 training questions: the preset's 10 tests drop none)
    assert "(data.test_per_module differ): data.test_per_module 12 there, 10 now" in capsys.readouterr().err
    path = out / "lstm_att" / "checkpoint.pt"
    older = load_checkpoint(path)  # a checkpoint from before the count was kept ran with the preset's count, unless given
    del older["setup"]["data"]["test_per_module"]
    save_checkpoint(older, path)
    assert main([*argv, "--test-per-module", "12", "--steps", "4"]) == 2
    assert "data.test_per_module 10 there, 12 now" in capsys.readouterr().err
    assert main([*argv, "--steps", "4"]) == 0
    assert load_checkpoint(path)["step"] == 4


def test_the_time_limit_is_the_whole_calls_not_each_models(tmp_path, monkeypatch):
    clock = iter(range(0, 1000, 10))  # the runner's clock: 10 s pass between its readings
    monkeypatch.setattr(mathematics_runner, "time", SimpleNamespace(perf_counter=lambda: float(next(clock))))
    limits = []

    def recording(*args, time_limit, **kwargs):
        limits.append(time_limit)
        return train_model(*args, time_limit=time_limit, **kwargs)

    monkeypatch.setattr(mathematics_runner, "train_model", recording)
    data = released_folder(tmp_path / "data")
    argv = ["mathematics", "--preset", "smoke", "--data", str(data), "--modules", "arithmetic__mixed,arithmetic__div",
            "--device", "cpu", "--models", "lstm_att,transformer", "--threads", "1", "--steps", "2", "--out", str(tmp_path)]  # fmt: skip
    assert main([*argv, "--time-limit", "1"]) == 0
    assert limits == [50.0, 30.0]  # 60 s less what the call spent before each model (each had 60 s)


def test_a_call_stopped_in_a_later_model_scores_no_model_and_the_same_command_continues(tmp_path, monkeypatch):
    # the runner's clock: the second model's training starts 70 s into the call's minute, the first's trained in it
    clock = itertools.chain([0.0, 10.0, 20.0, 70.0], itertools.count(80.0))
    scored = []

    def recording(answer, examples):
        scored.append(len(examples))
        return score(answer, examples)

    argv = ["mathematics", "--preset", "smoke", "--data", str(released_folder(tmp_path / "data")), "--modules",
            "arithmetic__mixed,arithmetic__div", "--device", "cpu", "--models", "lstm_att,transformer", "--threads", "1",
            "--steps", "2", "--no-progress", "--out", str(tmp_path / "out")]  # fmt: skip
    with monkeypatch.context() as timed:
        timed.setattr(mathematics_runner, "time", SimpleNamespace(perf_counter=lambda: float(next(clock))))
        timed.setattr(mathematics_runner, "score", recording)
        assert main([*argv, "--time-limit", "1"]) == 75  # the transformer stopped after its first step
    assert scored == []  # (was: the trained lstm_att scored past the time limit, to be scored again by the next call)
    assert load_checkpoint(tmp_path / "out" / "transformer" / "checkpoint.pt")["step"] == 1
    assert main(argv) == 0
    assert json.loads((tmp_path / "out" / "results.json").read_text())["models"]["transformer"]["steps"] == 2


def test_symbolic_route_scores_questions_outside_its_language_as_misses():
    questions = [q for q, _ in read_module_file(FIXTURES / "interpolate" / "arithmetic__mul.txt", limit=2)]
    answers = symbolic_answers([*questions, "Solve 2*x = 4 for x."])
    assert answers[-1] == "" and all(answers[:2])


def test_training_questions_that_occur_in_a_test_set_are_dropped(tmp_path):
    from neurosym.models.seq2seq.mathematics_task import load_data

    data = released_folder(tmp_path / "data")
    test_questions = {q for q, _ in read_module_file(data / "interpolate" / "arithmetic__div.txt", limit=12)}
    loaded = load_data(["arithmetic__div"], 30, 12, seed=0, data_root=data)
    assert {e.question for e in loaded["interpolate"]} == test_questions
    # each train file starts with interpolation questions 20..11, of which 12 and 11 are test questions
    assert len(loaded["train"]) == 3 * 8
    assert not test_questions & {e.question for e in loaded["train"]}
    for train_count, test_count, message in ((2, 12, "train_count 2 gives each of the 3 difficulties"),
                                             (-3, 12, "train_count must be an int of at least 0"),
                                             (30, -1, "test_count must be an int of at least 0")):  # fmt: skip
        with pytest.raises(ValueError, match=message):  # (2 trained on nothing; negative counts read nothing)
            load_data(["arithmetic__div"], train_count, test_count, seed=0, data_root=data)


def test_asking_for_more_questions_than_a_release_file_holds_is_refused(tmp_path):
    """A fixture file holds 20 pairs: asking for 21 scored 20 while results.json said 21 (a release's test files hold
    10,000 questions; --test-per-module 20000 was scored on those)."""
    from neurosym.models.seq2seq.mathematics_task import load_data

    data = released_folder(tmp_path / "data")
    assert len(load_data(["arithmetic__div"], 60, 20, seed=0, data_root=data)["interpolate"]) == 20
    with pytest.raises(
        ValueError,
        match=r"interpolate: 21 questions per module asked for, but arithmetic__div\.txt holds 20, arithmetic__mixed\.txt holds 20: ask for at most 20",
    ):
        load_data(["arithmetic__div", "arithmetic__mixed"], 60, 21, seed=0, data_root=data)
    with pytest.raises(ValueError, match=r"train-easy: 21 questions per module asked for, but arithmetic__div\.txt holds 20"):
        load_data(["arithmetic__div"], 63, 12, seed=0, data_root=data)  # (21 per difficulty)


def test_a_release_without_extrapolation_serves_modules_that_have_none(tmp_path):
    from neurosym.models.seq2seq.mathematics_task import load_data

    data = released_folder(tmp_path / "data")
    shutil.rmtree(data / "extrapolate")
    (data / "interpolate" / "arithmetic__add_or_sub_in_base.txt").write_text("What is 1 + 1 in base 2?\n10\n")
    loaded = load_data(["arithmetic__add_or_sub_in_base"], 0, 1, seed=0, data_root=data)  # (no extrapolation version)
    assert [e.answer for e in loaded["interpolate"]] == ["10"] and loaded["extrapolate"] == []


def test_table_marks_modules_a_model_was_not_scored_on():
    from neurosym.metrics.mathematics import results_table

    scored = {"per_module": {"arithmetic__mul": 1.0}, "mean": 1.0}
    results = {
        "modules": {"interpolate": ["arithmetic__mul", "comparison__pair"], "extrapolate": []},
        "models": {
            "symbolic": {"interpolate": scored, "extrapolate": {"per_module": {}, "mean": None}},
            "transformer": {
                "interpolate": {"per_module": {"arithmetic__mul": 0.5, "comparison__pair": 0.3}, "mean": 0.4},
                "extrapolate": {"per_module": {}, "mean": None},
            },
        },
    }
    headers, rows = results_table(results)
    assert headers[2:4] == ["symbolic", "transformer"]
    assert rows[1][:4] == ["interpolate", "comparison__pair", "n/a", 0.3]
    assert rows[2][:4] == ["interpolate", "mean over modules", 1.0, 0.4]


RELEASED_EXTRAPOLATION_FILES = {  # mathematics_dataset-v1.0/extrapolate (Saxton et al., Appendix B)
    *ARITHMETIC_MODULES["extrapolate"],  # (each with a fixture file here)
    "algebra__polynomial_roots_big",
    "comparison__closest_more",
    "comparison__kth_biggest_more",
    "comparison__sort_more",
    "measurement__conversion",
    "numbers__place_value_big",
    "numbers__round_number_big",
    "probability__swr_p_level_set_more_samples",
    "probability__swr_p_sequence_more_samples",
}


def test_every_released_extrapolation_module_tests_its_training_module(tmp_path):
    """Algebra, measurement and probability modules were scored on interpolation only, their extrapolation files never
    read, so an extrapolation mean left out four of the release's fifteen modules."""
    from neurosym.models.seq2seq.mathematics_task import EXTRAPOLATION_MODULES, TRAIN_REGIMES, load_data

    assert {m for tested in EXTRAPOLATION_MODULES.values() for m in tested} == RELEASED_EXTRAPOLATION_FILES
    files = {regime: ("measurement__conversion", "probability__swr_p_sequence") for regime in (*TRAIN_REGIMES, "interpolate")}
    files["extrapolate"] = ("measurement__conversion", "probability__swr_p_sequence_more_samples")
    for regime, modules in files.items():
        for module in modules:
            (tmp_path / regime).mkdir(exist_ok=True)
            (tmp_path / regime / f"{module}.txt").write_text(f"A {regime} question of {module}?\n1\n")
    loaded = load_data(["measurement__conversion", "probability__swr_p_sequence"], 3, 1, seed=0, data_root=tmp_path)
    assert [(e.regime, e.module) for e in loaded["extrapolate"]] == [
        ("extrapolate", "measurement__conversion"),
        ("extrapolate", "probability__swr_p_sequence_more_samples"),
    ]
