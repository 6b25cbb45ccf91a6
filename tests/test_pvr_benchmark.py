import json

import pytest
from pvr_fakes import write_fake_mnist

from neurosym.cli import COMMANDS, main
from neurosym.experiments.pvr import merge_results

SMALL = {
    "noise": ["--ns-max-complexity", "1", "--ns-samples", "200", "--ns-repeats", "1"],
    "vector": ["--train-sizes", "64", "--complexities", "0", "--vector-models", "mlp"],
    "holdout_i": ["--holdout-train-size", "64", "--holdout-model", "mlp", "--rule-examples", "64"],
    "block": ["--visual-models", "small_cnn", "--rule-examples", "64"],
    "sequential": ["--sequential-models", "resnet18", "--rule-examples", "64"],
}  # fmt: skip
"""Each sweep's options, tiny (a sweep not run takes none of its options: they would be ignored)."""


def tiny(*sweeps: str, mnist=None) -> list[str]:
    """The smoke budget on the CPU, ``sweeps`` (default: all) with tiny options, ``--mnist`` where a sweep reads it."""
    sweeps = sweeps or tuple(SMALL)
    reads_mnist = mnist is not None and {"block", "sequential"} & set(sweeps)
    return ["--preset", "smoke", "--device", "cpu", "--no-progress", "--sweeps", ",".join(sweeps),
            *(option for sweep in sweeps for option in SMALL[sweep]), *(["--mnist", str(mnist)] if reads_mnist else [])]  # fmt: skip


def test_pvr_command_writes_tables_json_plots_and_reuses_finished_runs(tmp_path, capsys):
    assert "pvr" in COMMANDS
    mnist = write_fake_mnist(tmp_path / "mnist.pkl.gz", per_class=10)
    out = tmp_path / "out"
    assert main(["pvr", *tiny(mnist=mnist), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| aggregation" in printed and "holdout test" in printed and "neuro-symbolic" in printed
    assert printed.endswith(f"Results in {out}: holdout.png, noise_sensitivity.png, pvr.json, vector_sweep.png\n")
    results = json.loads((out / "pvr.json").read_text())
    assert set(results) >= {"noise", "vector", "holdout_i", "block", "sequential", "published"}
    assert [r["i"] for r in results["holdout_i"]["runs"]] == [1, 2]
    assert {r["aggregation"] for r in results["vector"]["runs"]} == {"mod_sum"}  # (the plot's chance line reads it)
    # the rule is symbolic: whatever the data, induction from the generated labels is exact on holdout-i
    assert all(r["neurosymbolic_holdout_accuracy"] == 1.0 for r in results["holdout_i"]["runs"])
    assert {r["model"] for r in results["block"]["runs"]} == {"small_cnn", "neurosymbolic"}
    sequential = {r["model"]: r for r in results["sequential"]["runs"]}
    assert set(sequential) == {"resnet18", "neurosymbolic"} and results["sequential"]["sequence_length"] == 11
    assert 0.0 <= sequential["resnet18"]["test_accuracy"] <= 1.0
    # the layout splits each 28 x 308 image into 11 cells: the pointer and 10 values to point at
    rule = sequential["neurosymbolic"]["induced_rule"]
    assert rule["length"] == 11 and len(rule["pointer_table"]) == 10 and "test_accuracy" in sequential["neurosymbolic"]
    for plot in ("noise_sensitivity.png", "vector_sweep.png", "holdout.png"):
        assert (out / plot).stat().st_size > 1000
    stored = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert len(stored) == 6  # noise, vector, two holdout-i, block CNN, sequential CNN
    assert main(["pvr", *tiny("vector", "holdout_i"), "--out", str(out)]) == 0
    # the files this run wrote (holdout.png drawn again from the merged sweeps), not the first run's noise plot
    assert capsys.readouterr().out.endswith(f"Results in {out}: holdout.png, pvr.json, vector_sweep.png\n")
    assert {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == stored
    merged = json.loads((out / "pvr.json").read_text())  # the sweeps not re-run are still there
    assert set(merged) >= {"noise", "vector", "holdout_i", "block", "sequential"}
    assert merged["block"] == results["block"]
    assert main(["pvr", *tiny("noise"), "--no-resume", "--out", str(out)]) == 0
    # (the plots of the collected sweeps are drawn again from the merged file)
    assert capsys.readouterr().out.endswith(f"Results in {out}: holdout.png, noise_sensitivity.png, pvr.json, vector_sweep.png\n")
    again = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert again.keys() == stored.keys()  # the other sweeps' runs stay
    assert {name for name in stored if again[name] != stored[name]} == {n for n in stored if n.startswith("noise")}


def test_pvr_time_limit_checkpoints_the_run_under_way_exits_75_and_the_same_command_continues(tmp_path, capsys):
    out = tmp_path / "out"
    command = ["pvr", *tiny("vector"), "--out", str(out)]
    assert main([*command, "--time-limit", "0"]) == 75
    assert "(time limit)" in capsys.readouterr().err
    [checkpoint] = (out / "checkpoints").iterdir()
    assert not (out / "runs").exists() and not (out / "pvr.json").exists()
    assert main([*command, "--time-limit", "30"]) == 0
    [stored] = (out / "runs").iterdir()
    assert checkpoint.stem == stored.stem and json.loads(stored.read_text())["steps"] == 3


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_time_limits_must_be_finite_minutes_at_least_zero(value, capsys):
    for command in ("pvr", "hint", "mathematics", "arithmetic"):
        with pytest.raises(SystemExit):
            main([command, "--time-limit", value])
        assert "argument --time-limit" in capsys.readouterr().err


def test_pvr_json_collects_sweeps_of_the_same_device_and_budget():
    earlier = {"device": "cpu", "budget": "cpu", "seed": 0, "noise": {"a": 1}, "vector": {"old": True}}
    now = {"device": "cpu", "budget": "cpu", "seed": 0, "vector": {"new": True}}
    assert merge_results(earlier, now) == {**now, "noise": {"a": 1}}
    assert merge_results(earlier, {**now, "seed": 1}) == {**now, "seed": 1}  # another seed's sweeps are not this one's
    assert merge_results(earlier, {**now, "budget": "paper"}) == {**now, "budget": "paper"}
    assert merge_results(earlier, {**now, "device": "cuda"}) == {**now, "device": "cuda"}
    on_gpu = {**earlier, "device": "cuda"}  # (device "auto" records "cuda")
    assert merge_results(on_gpu, {**now, "device": "cuda:0"}) == {**now, "device": "cuda:0", "noise": {"a": 1}}
    assert merge_results(None, now) == now


def test_pvr_json_vector_grid_grows_over_invocations_of_one_aggregation():
    def run(model, m, n, accuracy):
        return {"model": model, "complexity": m, "train_size": n, "test_accuracy": accuracy}

    key = {"device": "cpu", "budget": "cpu", "seed": 0}
    earlier = {**key, "vector": {"aggregation": "mod_sum", "runs": [run("mlp", 0, 1000, 0.2), run("mlp", 1, 50000, 1.0)]}}
    now = {**key, "vector": {"aggregation": "mod_sum", "runs": [run("mlp", 0, 1000, 0.3), run("mixer", 0, 1000, 0.5)]}}
    merged = merge_results(earlier, now)["vector"]
    assert merged == {"aggregation": "mod_sum", "runs": [run("mlp", 1, 50000, 1.0), *now["vector"]["runs"]]}
    other = {**key, "vector": {**now["vector"], "aggregation": "min"}}  # another labelling: not one grid
    assert merge_results(earlier, other) == other


@pytest.mark.parametrize(
    ("earlier", "named"),
    [([], "it holds a list"), ({"device": "cpu", "budget": "smoke", "seed": 0, "vector": {"runs": 3}}, "its runs is a int")],
)
def test_a_pvr_json_of_another_shape_in_out_is_named(tmp_path, capsys, earlier, named):
    """A pvr.json in --out that is JSON but no pvr.json (a list; a vector sweep without a list of runs) failed deep in
    the merge with a traceback ('list' object has no attribute 'get'); it is named, and left as it was."""
    (tmp_path / "pvr.json").write_text(json.dumps(earlier))
    assert main(["pvr", *tiny("noise"), "--threads", "1", "--out", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert f"{tmp_path / 'pvr.json'} is not the results of neurosym pvr" in error and named in error
    assert json.loads((tmp_path / "pvr.json").read_text()) == earlier


def test_pvr_command_rejects_unknown_sweeps_and_models(tmp_path, capsys):
    for option, value, message in (
        ("--sweeps", "graphs", "argument --sweeps: unknown sweep 'graphs'"),
        ("--vector-models", "mlp,lstm", "argument --vector-models: unknown vector model 'lstm'"),
        ("--visual-models", "resnet18,vit", "argument --visual-models: unknown visual model 'vit'"),
        ("--holdout-model", "lstm", "argument --holdout-model: invalid choice: 'lstm'"),
    ):
        with pytest.raises(SystemExit) as stopped:
            main(["pvr", option, value, "--out", str(tmp_path)])
        assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_vector_epochs_given_are_trained_past_the_smoke_budgets_cap(tmp_path):
    import torch

    from neurosym.benchmarking.pvr_runs import BUDGETS, PVRRuns, RunStore

    def steps(epochs):
        runs = PVRRuns(torch.device("cpu"), BUDGETS["smoke"], RunStore(tmp_path), vector_epochs=epochs)
        return runs.vector_config(1000).max_steps

    assert steps(None) == 3 and steps(50) == 50 * 32  # (50 epochs of 32 batches were cut to 3 steps)


def test_every_holdout_i_is_tested_on_the_window_0_to_m_alone_as_in_the_paper(tmp_path, monkeypatch):
    """Figure 13 trains holdout-i with i permutations of (0, ..., m) held out and tests "on only examples with
    (0, 1, ..., m) in the values window"; holdout-2 on wrote (1, 0) into half of its test rows at m = 1."""
    import numpy as np
    import torch

    from neurosym.benchmarking.pvr_runs import BUDGETS, PVRRuns, RunStore
    from neurosym.benchmarking.pvr_sweeps import holdout_i_sweep
    from neurosym.data.pvr import vector_rule

    tested = {}

    def record(self, key, model, train, tests, config, prepare=None):
        tested[key] = tests["holdout"]
        return {}

    monkeypatch.setattr(PVRRuns, "train_and_score", record)
    holdout_i_sweep(PVRRuns(torch.device("cpu"), BUDGETS["smoke"], RunStore(tmp_path)), "mlp", 1, 64, "mod_sum", 64)
    rule = vector_rule(1, "mod_sum")
    assert len(tested) == 2
    for digits, labels in tested.values():
        slots, _ = rule.window_slots(digits[:, 0])
        assert (np.take_along_axis(digits, slots, axis=1) == [0, 1]).all() and (labels == 1).all()


def test_results_are_saved_before_the_holdout_figure_is_drawn(tmp_path, monkeypatch):
    from neurosym.experiments import pvr

    def failing(*args):
        raise RuntimeError("figure failed")

    monkeypatch.setattr(pvr, "plot_holdouts", failing)
    with pytest.raises(RuntimeError, match="figure failed"):
        main(["pvr", *tiny("holdout_i"), "--out", str(tmp_path)])
    assert [r["i"] for r in json.loads((tmp_path / "pvr.json").read_text())["holdout_i"]["runs"]] == [1, 2]


def test_a_run_stored_on_another_kind_of_device_is_trained_anew(tmp_path):
    """Stored runs were reused whatever device stored them: a CPU run was reported as the CUDA one, seconds and all."""
    out = tmp_path / "out"
    assert main(["pvr", *tiny("vector"), "--out", str(out)]) == 0
    (stored,) = (out / "runs").iterdir()
    assert json.loads(stored.read_text())["device"] == "cpu"
    mine = stored.stat().st_mtime_ns
    assert main(["pvr", *tiny("vector"), "--out", str(out)]) == 0 and stored.stat().st_mtime_ns == mine  # reused
    for device in ("cuda", None):  # another kind of device's run, and one that records none
        run = json.loads(stored.read_text())
        stored.write_text(json.dumps({**run, "device": device, "train_accuracy": -1.0}))
        assert main(["pvr", *tiny("vector"), "--out", str(out)]) == 0
        again = json.loads(stored.read_text())
        assert again["device"] == "cpu" and 0.0 <= again["train_accuracy"] <= 1.0


def test_a_store_that_does_not_reuse_ignores_earlier_results_and_checkpoints_but_keeps_its_own(tmp_path):
    from neurosym.benchmarking.pvr_runs import RunStore

    earlier = RunStore(tmp_path)
    earlier.put("run", {"steps": 1})
    earlier.checkpoint("run").parent.mkdir(parents=True)
    earlier.checkpoint("run").write_bytes(b"stale")
    assert RunStore(tmp_path).get("run") == {"steps": 1} and RunStore(tmp_path).checkpoint("run").exists()
    fresh = RunStore(tmp_path, reuse=False)
    assert fresh.get("run") is None
    assert not fresh.checkpoint("run").exists()  # an earlier command's checkpoint is not resumed
    fresh.checkpoint("run").write_bytes(b"this command's")
    assert fresh.checkpoint("run").read_bytes() == b"this command's"  # its own stays
    fresh.put("run", {"steps": 2})
    assert fresh.get("run") == {"steps": 2}


def test_image_runs_on_another_mnist_file_are_trained_not_reused_and_the_file_is_recorded(tmp_path, monkeypatch):
    first, second = (write_fake_mnist(tmp_path / f"{name}.pkl.gz", per_class=10, seed=seed) for seed, name in enumerate("ab"))
    out = tmp_path / "out"
    assert main(["pvr", *tiny("block", mnist=first), "--out", str(out)]) == 0
    stored = {p.name for p in (out / "runs").iterdir()}
    assert json.loads((out / "pvr.json").read_text())["block"]["mnist"] == str(first.resolve())
    monkeypatch.setenv("NEUROSYM_MNIST", str(first))  # the same file named by the environment: reused
    assert main(["pvr", *tiny("block"), "--out", str(out)]) == 0
    assert {p.name for p in (out / "runs").iterdir()} == stored
    assert main(["pvr", *tiny("block", mnist=second), "--out", str(out)]) == 0
    again = {p.name for p in (out / "runs").iterdir()}
    assert len(again) == 2 * len(stored) and again > stored  # the CNN trained anew on the other digits
    assert json.loads((out / "pvr.json").read_text())["block"]["mnist"] == str(second.resolve())
