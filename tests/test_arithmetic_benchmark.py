import json
import math
import re
import signal
from dataclasses import replace

import pytest
import torch
from doc_blocks import ROOT

import neurosym.experiments.arithmetic as arithmetic_runner
from neurosym.benchmarking import arithmetic_speed as speed
from neurosym.benchmarking import arithmetic_training
from neurosym.benchmarking.arithmetic_results import group_cells, results_caption, results_table
from neurosym.benchmarking.arithmetic_training import (
    Curves,
    GraphedStep,
    GroupConfig,
    GroupRun,
    build,
    checkpoint_name,
    evaluate,
    group_loss,
    train_group,
    train_groups,
    train_step,
)
from neurosym.benchmarking.timing import fastest_of_rounds, median_seconds
from neurosym.cli import main
from neurosym.data.arithmetic import SimpleFunctionData
from neurosym.metrics import perturbed_solution_mse, run_outcomes
from neurosym.metrics.profile import beta_mean_interval, gamma_mean_interval
from neurosym.models.arithmetic import (
    MODEL_LAYERS,
    PAPER_ITERATIONS,
    TwoLayerArithmetic,
)
from neurosym.training import load_checkpoint, save_checkpoint
from neurosym.training.stopping import TIME_LIMIT, StopRequests

CPU = torch.device("cpu")


@pytest.mark.parametrize("name", sorted(MODEL_LAYERS))
def test_models_map_batched_inputs_to_one_output_per_member(name):
    model = TwoLayerArithmetic(name, steps=1000, ensemble=3)
    output = model(torch.rand(3, 5, 100) + 1)
    assert output.shape == (3, 5, 1) and torch.isfinite(output).all()
    assert model.sparsity_error().shape == (3,) and model.regularization(10**9).shape == (3,)


@pytest.mark.parametrize("build", ["constructed", "reset", "materialised from meta"])
def test_linear_baseline_is_built_like_the_reference_code(build: str):
    """Built on ``meta`` and reset (deferred initialisation), or reset, the layers had nn.Linear's initialisation."""
    model = TwoLayerArithmetic("Linear", steps=10, ensemble=50, device="meta" if build.endswith("meta") else None)
    if build != "constructed":
        model = model.to_empty(device="cpu")
        for layer in model.layers:
            layer.reset_parameters()
    first, second = model.layers
    for layer, bound in ((first, (6 / 102) ** 0.5), (second, (6 / 3) ** 0.5)):
        assert layer.bias is not None and bool((layer.bias == 0).all())  # a trainable bias that starts at zero
        assert layer.weight.abs().max() <= bound and layer.weight.abs().max() > 0.9 * bound  # Xavier-uniform range


def test_regulariser_schedules_scale_with_the_budget():
    model = TwoLayerArithmetic("NMU", steps=PAPER_ITERATIONS // 100)  # NAU → NMU, 1/100 of the paper's budget
    schedule = model.schedule
    assert schedule is not None and (schedule.weight, schedule.start, schedule.end) == (10.0, 10_000, 20_000)
    assert model.regularization(9_000).item() == 0.0  # NAU's own warm-up (0.01 from 50) does not apply here
    assert model.regularization(20_000).item() > model.regularization(15_000).item() > 0
    assert model.regularization(torch.tensor(20_000)).item() == model.regularization(20_000).item()
    with pytest.raises(ValueError, match=r"step must be an int or a 0-d integer tensor, got torch.int64 of shape \(2,\)"):
        model.regularization(torch.tensor([100, 200]))
    for step in (torch.tensor(math.nan), torch.tensor(5.5), torch.tensor(True)):  # (NaN gave a NaN regulariser)
        with pytest.raises(ValueError, match=f"0-d integer tensor, got {step.dtype} of shape"):
            model.regularization(step)
    assert TwoLayerArithmetic("NALU", steps=10).schedule is None
    assert TwoLayerArithmetic("NALU", steps=10).regularization(10).item() == 0.0


@pytest.mark.parametrize("model", ["NMU", "NALU"])  # (with a warm-up, and without one)
@pytest.mark.parametrize("step", [-1, math.nan, 1.5, True])
def test_the_regulariser_names_a_step_that_is_no_int_of_at_least_0(model, step):
    """Before the warm-up, or without one, such a step gave zeros."""
    with pytest.raises(ValueError, match=re.escape(f"step must be an int of at least 0, got {step!r}")):
        TwoLayerArithmetic(model, steps=10).regularization(step)


@pytest.mark.parametrize("steps", [0, 2.5, "10", True])
def test_the_schedule_budget_is_a_positive_int(steps):
    with pytest.raises(ValueError, match=f"steps must be an int of at least 1, got {re.escape(repr(steps))}"):
        TwoLayerArithmetic("NMU", steps=steps)
    with pytest.raises(ValueError, match="^hidden must be an int of at least 1, got 0$"):  # (named NAU's out_features)
        TwoLayerArithmetic("NAU", steps=10, hidden=0)


@pytest.mark.parametrize("step", [15_000, torch.tensor(15_000)])
def test_one_warmup_scales_the_sum_of_both_layers_regularisers(step):
    """As in the reference code: ``λ(step) · (R_NAU + R_NMU)``, the NMU's λ on the first layer too."""
    model = TwoLayerArithmetic("NMU", steps=PAPER_ITERATIONS // 100, ensemble=3)
    first, second = model.units
    expected = 5.0 * (first.regularization() + second.regularization())  # λ = 10 halfway through 10⁴ → 2·10⁴
    assert torch.allclose(model.regularization(step), expected, rtol=1e-6)
    assert bool((first.regularization() > 0).all())


def test_the_optimal_solution_passes_the_success_criterion_and_a_perturbed_one_fails():
    data = SimpleFunctionData(["add", "add"], seeds=[4, 4], evaluation_size=2000)
    model = TwoLayerArithmetic("NAU", steps=1000, ensemble=2)
    with torch.no_grad():
        model.layers[0].weight.copy_(data.weights)
        model.layers[1].weight.fill_(1.0)
        model.layers[0].weight[1, 0, :] += 1e-3 * (2 * data.weights[1, 0] - 1)  # member 1: 100× the ε perturbation
    threshold = perturbed_solution_mse("add", samples=20_000).value
    test = evaluate(model, data, "test")
    outcomes = run_outcomes(torch.tensor([1]), evaluate(model, data, "validation")[None], test[None], threshold)
    assert outcomes.solved.tolist() == [True, False]
    assert test[0] < 1e-3 * threshold


class DroppingOut(TwoLayerArithmetic):
    """A two-layer model whose output goes through dropout: a part that reads otherwise in training mode."""

    def __init__(self, name: str, steps: int, ensemble: int) -> None:
        super().__init__(name, steps, ensemble=ensemble)
        self.dropout = torch.nn.Dropout(0.9)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(super().forward(x))


def test_evaluate_reads_in_evaluation_mode_and_gives_each_module_its_mode_back():
    data = SimpleFunctionData(["add", "mul"], seeds=[4, 5], evaluation_size=200)
    torch.manual_seed(0)
    model = DroppingOut("NAU", steps=1000, ensemble=2)
    model.layers[0].eval()  # a part its caller froze
    modes = [module.training for module in model.modules()]
    errors = evaluate(model, data, "test")
    with torch.no_grad():
        expected = [
            (TwoLayerArithmetic.forward(model, x) - target).double().square().sum(dim=(1, 2))
            for x, target in data.evaluation_batches("test")
        ]
    torch.testing.assert_close(errors, sum(expected) / data.evaluation_size)  # (was read with dropout on)
    assert [module.training for module in model.modules()] == modes


def test_ensemble_members_train_exactly_like_separate_models():
    config = GroupConfig("NMU", ("mul", "add"), (0, 1), steps=100, evaluation_size=10)
    data, model = build(config, CPU)
    member = TwoLayerArithmetic("NMU", steps=100)
    for plain, batched in zip(member.layers, model.layers):
        plain.load_state_dict({key: value[2].clone() for key, value in batched.state_dict().items()})
    batched_optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    plain_optimizer = torch.optim.Adam(member.parameters(), lr=1e-3)
    for step in range(30):
        x, target = data.training_batch(16)
        target[0] = float("nan")  # a diverged member must not disturb the others
        train_step(model, batched_optimizer, x, target, step, amp=False)
        train_step(member, plain_optimizer, x[2], target[2], step, amp=False)
    for plain, batched in zip(member.layers, model.layers):
        torch.testing.assert_close(plain.weight, batched.weight[2], rtol=1e-5, atol=1e-6)
    assert torch.isfinite(model.layers[0].weight[1:]).all()


def test_group_configuration_members_evaluations_and_errors():
    config = GroupConfig("NAU", ("add", "sub"), (3, 4), steps=250, eval_every=100)
    assert config.members == [("add", 3), ("add", 4), ("sub", 3), ("sub", 4)]
    assert config.evaluation_steps == [100, 200, 250]
    assert config.stream("init") != config.stream("batches") != GroupConfig("NMU", ("add",), (3,), 10).stream("batches")
    with pytest.raises(ValueError, match="operations must be a tuple of operation names, got the string 'add'"):
        GroupConfig("NMU", "add", (3,), 10)  # (was read as the operations 'a', 'd', 'd')
    with pytest.raises(ValueError, match="at least one operation"):
        GroupConfig("NAU", (), (0,), steps=10)
    with pytest.raises(ValueError, match="must be positive"):
        GroupConfig("NAU", ("add",), (0,), steps=0)
    with pytest.raises(ValueError, match="schedule must be one of"):
        GroupConfig("NAU", ("add",), (0,), steps=10, schedule="compressed")


def test_regulariser_warmups_stay_at_the_published_iterations_unless_scaled():
    published = build(GroupConfig("NMU", ("mul",), (0,), steps=2_000_000, evaluation_size=1), CPU)[1]
    scaled = build(GroupConfig("NMU", ("mul",), (0,), steps=2_000_000, evaluation_size=1, schedule="scaled"), CPU)[1]
    assert published.schedule is not None and (published.schedule.start, published.schedule.end) == (1_000_000, 2_000_000)
    assert scaled.schedule is not None and (scaled.schedule.start, scaled.schedule.end) == (400_000, 800_000)


def test_short_nau_run_solves_addition():
    config = GroupConfig("NAU", ("add",), (0, 1), steps=5000, eval_every=250, ranges="[-2,2]", evaluation_size=1000)
    run = train_group(config, CPU, progress=False)
    curves = run.curves.stacked()
    threshold = perturbed_solution_mse("add", "[-2,2]", samples=20_000).value
    outcomes = run_outcomes(curves["steps"], curves["validation"], curves["test"], threshold)
    assert run.finished and outcomes.solved.all(), (outcomes, threshold)
    assert (outcomes.solved_at <= 5000).all()


def counted_steps(monkeypatch) -> list[int]:
    """Count the training steps taken from now on (every ``group_loss`` call of the runner)."""
    steps, loss = [], arithmetic_training.group_loss

    def counting(*args, **kwargs):
        steps.append(1)
        return loss(*args, **kwargs)

    monkeypatch.setattr(arithmetic_training, "group_loss", counting)
    return steps


def test_resume_after_interruption_equals_an_uninterrupted_run(tmp_path, monkeypatch):
    config = GroupConfig("NALU", ("mul", "sub"), (0, 1), steps=300, eval_every=100, evaluation_size=200)
    straight = train_group(config, CPU, tmp_path / "straight.pt", progress=False)
    assert straight.finished and straight.stop_reason is None
    interrupted = train_group(config, CPU, tmp_path / "resumed.pt", stops=StopRequests(0), progress=False)
    assert interrupted.stop_reason == TIME_LIMIT and not interrupted.finished
    saved = load_checkpoint(tmp_path / "resumed.pt")
    assert interrupted.step == 1 and interrupted.curves.steps == [] and saved["step"] == 1
    with pytest.raises(ValueError, match="NALU stopped before its first evaluation: it has no result yet"):
        group_cells(interrupted, {"mul": 1.0, "sub": 1.0})  # failed in torch.stack
    assert 0 < saved["seconds"] <= interrupted.seconds
    steps = counted_steps(monkeypatch)
    resumed = train_group(config, CPU, tmp_path / "resumed.pt", resume=True, progress=False)
    assert resumed.finished and resumed.curves.steps == [100, 200, 300] and len(steps) == 299
    for name, values in straight.curves.stacked().items():
        torch.testing.assert_close(resumed.curves.stacked()[name], values, rtol=0, atol=0)
    final = load_checkpoint(tmp_path / "resumed.pt")["seconds"]  # the training's time counted across the stop
    assert saved["seconds"] < final <= resumed.seconds
    again = train_group(config, CPU, tmp_path / "resumed.pt", resume=True, progress=False)  # nothing left to do
    assert again.curves.steps == [100, 200, 300] and len(steps) == 299 and again.seconds >= final
    with pytest.raises(ValueError, match="another configuration"):
        train_group(GroupConfig("NALU", ("mul", "sub"), (0, 1), steps=400, eval_every=100, evaluation_size=200),
                    CPU, tmp_path / "resumed.pt", resume=True, progress=False)  # fmt: skip


def test_a_stop_request_at_an_evaluation_step_evaluates_before_stopping(tmp_path, monkeypatch):
    config = GroupConfig("NAU", ("add",), (0,), steps=300, eval_every=100, evaluation_size=50)

    class StopAt:
        def __init__(self, step):
            self.calls, self.step = 0, step

        def reason(self):
            self.calls += 1
            return "SIGTERM" if self.calls >= self.step else None

    run = train_group(config, CPU, tmp_path / "run.pt", stops=StopAt(200), progress=False)
    assert (run.step, run.curves.steps, run.stop_reason) == (200, [100, 200], "SIGTERM")
    assert load_checkpoint(tmp_path / "run.pt")["curves"]["steps"] == [100, 200]


def test_checkpoints_with_a_foreign_stream_state_are_read_when_finished_and_refused_when_not(tmp_path):
    config = GroupConfig("NAU", ("add",), (0,), steps=200, eval_every=100, evaluation_size=50)
    for path, stops in [(tmp_path / "finished.pt", None), (tmp_path / "stopped.pt", StopRequests(0))]:
        run = train_group(config, CPU, path, stops=stops, progress=False)
        state = load_checkpoint(path)
        state["generator"] = torch.Generator().get_state()  # as written before UniformStream
        save_checkpoint(state, path)
    again = train_group(config, CPU, tmp_path / "finished.pt", resume=True, progress=False)
    assert again.finished and again.curves.steps == [100, 200]
    assert not run.finished
    with pytest.raises(ValueError, match="cannot resume"):
        train_group(config, CPU, tmp_path / "stopped.pt", resume=True, progress=False)


def test_cli_writes_table_json_and_plot(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    common = ["--steps", "200", "--seeds", "2", "--eval-every", "100", "--evaluation-size", "100",
              "--threshold-samples", "2000", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(["arithmetic", "--models", "nau,nmu", *common]) == 0
    printed = capsys.readouterr().out
    assert "| Op" in printed and "| ×  | NMU" in printed and "| +  | NAU" in printed
    assert f"Results in {out}: results.json, success_rates.png, learning_curves.png\n" in printed
    result = json.loads((out / "results.json").read_text())
    assert [(c["operation"], c["model"]) for c in result["cells"]] == [("mul", "NMU"), ("add", "NAU"), ("sub", "NAU")]
    assert printed.index("| ×  | NMU") < printed.index("| +  | NAU") < printed.index("| −  | NAU")
    assert result["cells"][0]["published"] == 0.98 and result["cells"][0]["runs"] == 2
    assert set(result["thresholds"]) == {"mul", "add", "sub"}
    assert result["preset"] is None  # steps, seeds and models given: no preset chose anything (was "smoke")
    assert result["amp"] is False and result["cuda_graph"] is False  # how it trained is recorded (it was not)
    assert (out / "success_rates.png").stat().st_size > 0 and (out / "learning_curves.png").stat().st_size > 0
    assert "| 2 x 200 " in printed and "| 100 x 5,000,000 " in printed  # each row's budget beside the published one
    assert "Solved at: mean [95% interval]" in printed and "Sparsity error: mean [95% interval]" in printed
    assert all(len(cell["per_seed"]["sparsity_error"]) == 2 for cell in result["cells"])
    assert (out / "checkpoints" / "nau.pt").exists() and (out / "checkpoints" / "nmu.pt").exists()
    steps = counted_steps(monkeypatch)
    assert main(["arithmetic", "--models", "nau,nmu", *common]) == 0  # resumes by default
    assert steps == []  # finished checkpoints: no training
    assert json.loads((out / "results.json").read_text())["cells"] == result["cells"]
    assert main(["arithmetic", "--models", "nau", "--no-resume", *common]) == 0
    assert len(steps) == 200  # NAU (+ and − as one batched model) trained afresh


def test_cli_stops_with_status_75_when_a_group_side_by_side_stopped_though_the_last_finished(tmp_path, monkeypatch):
    def first_stopped(configs, device, checkpoints, resume, stops, *args, **kwargs):  # as side by side may end
        stopped, _ = arithmetic_training.train_groups(configs[:1], device, checkpoints, resume, StopRequests(0), *args, **kwargs)
        finished, _ = arithmetic_training.train_groups(configs[1:], device, checkpoints, resume, stops, *args, **kwargs)
        return [*stopped, *finished], []

    monkeypatch.setattr(arithmetic_runner, "train_groups", first_stopped)
    common = ["--models", "linear,nau", "--steps", "100", "--seeds", "2", "--eval-every", "50", "--evaluation-size", "100",
              "--threshold-samples", "2000", "--out", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(["arithmetic", *common]) == 75  # was 0: only the last group's stop was read
    assert not json.loads((tmp_path / "results.json").read_text())["finished"]


def test_cli_time_limit_stops_with_status_75_and_resume_finishes(tmp_path, capsys):
    common = ["--models", "linear,nau", "--steps", "300", "--seeds", "2", "--eval-every", "100", "--evaluation-size", "100",
              "--threshold-samples", "2000", "--out", str(tmp_path), "--no-progress"]  # fmt: skip
    assert main(["arithmetic", "--time-limit", "1e-9", *common]) == 75
    partial = json.loads((tmp_path / "results.json").read_text())
    assert not partial["finished"] and partial["not_evaluated"] == ["Linear"] and partial["not_started"] == ["NAU"]
    assert partial["cells"] == [] and load_checkpoint(tmp_path / "checkpoints" / "linear.pt")["step"] == 1
    printed = capsys.readouterr()
    assert "Linear stopped at step 1 of 300; not evaluated yet: Linear; not started: NAU" in printed.out
    assert "(time limit)" in printed.err and "run the same command again to continue" in printed.err
    assert main(["arithmetic", *common]) == 0
    finished = json.loads((tmp_path / "results.json").read_text())
    assert finished["finished"] and {c["steps_done"] for c in finished["cells"]} == {300}
    assert {c["model"] for c in finished["cells"]} == {"Linear", "NAU"}


def test_cli_ctrl_c_reports_the_cells_evaluated_so_far_and_exits_130(tmp_path, capsys, monkeypatch):
    steps = []

    def interrupting_step(*args, **kwargs):
        steps.append(1)
        if len(steps) == 150:
            signal.raise_signal(signal.SIGINT)
        return group_loss(*args, **kwargs)

    monkeypatch.setattr(arithmetic_training, "group_loss", interrupting_step)
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN under nohup
    status = main(["arithmetic", "--models", "nau", "--ops", "add", "--steps", "300", "--seeds", "2", "--eval-every", "100",
                   "--evaluation-size", "100", "--threshold-samples", "2000", "--out", str(tmp_path), "--no-progress"])  # fmt: skip
    assert status == 130 and len(steps) == 150
    partial = json.loads((tmp_path / "results.json").read_text())
    assert [(c["model"], c["steps_done"], c["finished"]) for c in partial["cells"]] == [("NAU", 100, False)]
    assert "NAU stopped at step 150 of 300" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGINT) is before


def test_smoke_preset_names_its_cells_and_the_published_budget(tmp_path, capsys, monkeypatch):
    trained = []
    monkeypatch.setattr(
        arithmetic_training, "train_group", lambda config, *rest: trained.append(config) or GroupRun(config, Curves(), 0, 0.0)
    )
    assert main(["arithmetic", "--steps", "10", "--threshold-samples", "2000", "--out", str(tmp_path), "--no-progress"]) == 0
    assert [(c.model, c.operations, len(c.seeds), c.schedule) for c in trained] == [
        ("NAU", ("add", "sub"), 10, "published"), ("NAC+", ("sub",), 10, "published")
    ]  # fmt: skip
    assert "10 seeds x 10 iterations: a shorter budget than published" in capsys.readouterr().out
    trained.clear()
    assert main(["arithmetic", "--preset", "paper", "--models", "nmu", "--steps", "10", "--threshold-samples", "2000",
                 "--out", str(tmp_path), "--no-progress"]) == 0  # fmt: skip
    assert [(c.model, c.operations, len(c.seeds)) for c in trained] == [("NMU", ("mul",), 100)]


def test_cli_speed_mode(tmp_path, capsys, monkeypatch):
    kept = []
    monkeypatch.setattr(arithmetic_runner, "retain_freed_memory", lambda: kept.append(True) or True)
    out = tmp_path / "speed"
    arguments = ["arithmetic", "--speed", "--speed-seeds", "3", "--speed-steps", "4", "--models", "linear,nmu", "--device", "cpu"]
    arguments += ["--out", str(out)]
    assert main(arguments) == 0
    result = json.loads((out / "speed.json").read_text())
    assert result["seeds"] == 3 and [(run["model"], run["operation"]) for run in result["models"]] == [
        ("Linear", "add"),
        ("NMU", "mul"),
    ]
    for run in result["models"]:
        assert run["batched_rate"] > 0 and run["sequential_rate"] > 0
        assert run["speedup"] == pytest.approx(run["sequential_seconds"] / run["batched_seconds"])
    printed = capsys.readouterr().out
    assert "Seed-iterations/s" in printed and "NMU (×)" in printed and (out / "speed.png").exists()
    assert printed.endswith(f"Results in {out}: speed.json, speed.png\n")
    assert kept == [True]  # a CPU run keeps freed memory (no page faults for the batched buffers)


def test_speed_interleaves_the_modes_and_trains_every_step(monkeypatch):
    """The batched model takes its steps in shares between groups of one-seed runs, and both modes
    train exactly ``steps`` steps per seed."""
    calls = []
    advance = speed._TimedRun.advance

    def spy(run, steps):
        calls.append(("batched" if run.batched else "one seed", steps))
        return advance(run, steps)

    monkeypatch.setattr(speed._TimedRun, "advance", spy)
    monkeypatch.setattr(speed, "ROUNDS", 2)
    speed.measure_speed("Linear", "add", seeds=3, steps=5, device=torch.device("cpu"))
    assert calls == [("one seed", 5), ("one seed", 5), ("batched", 3), ("one seed", 5), ("batched", 2)]


def test_cli_rejects_unknown_models_and_operations(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["arithmetic", "--models", "transformer"])
    assert "unknown model 'transformer'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["arithmetic", "--ops", "add,pow"])
    assert "unknown operation 'pow'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:  # a usage error before any work
        main(["arithmetic", "--input-size", "10", "--subset-ratio", "0.7"])
    assert stopped.value.code == 2 and "error: two subsets of 7 overlapping by 3 span 11 elements" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:  # it was found after the training: a NaN threshold, exit 1
        main(
            [
                "arithmetic",
                "--models",
                "NAU",
                "--ops",
                "sqrt",
                "--epsilon",
                "0.3",
                "--steps",
                "10",
                "--seeds",
                "1",
                "--out",
                str(tmp_path),
            ]
        )
    assert stopped.value.code == 2 and "takes the square root of sums down to" in capsys.readouterr().err


def test_every_evaluation_gives_freed_memory_back(monkeypatch):
    released = []
    monkeypatch.setattr(arithmetic_training, "release_free_memory", lambda: released.append(True) or True)
    config = GroupConfig("NAU", ("add",), (0,), steps=300, eval_every=100, evaluation_size=50)
    assert train_group(config, CPU, progress=False).finished
    assert len(released) == 3  # a long run would otherwise grow by the evaluations' fragments (gigabytes by 10^6 steps)


@pytest.mark.parametrize(("model", "operations"), [("NMU", ("mul", "add")), ("NALU", ("mul", "div", "add", "sub"))])
def test_the_whole_step_as_one_call_trains_exactly_as_the_eager_loop(model, operations):
    """On the CPU the CUDA-graph step runs eagerly: with its step counter on the device (the warm-ups of the NAU
    and NMU regularisers inside the 300 steps of a scaled schedule) it gives the eager loop's curves bit for bit."""
    config = GroupConfig(model, operations, (0, 1, 2), steps=300, eval_every=100, evaluation_size=50, schedule="scaled")
    eager, graphed = (train_group(config, CPU, progress=False, cuda_graph=graph) for graph in (False, True))
    assert graphed.finished and graphed.curves.steps == [100, 200, 300]
    for name, values in eager.curves.stacked().items():
        torch.testing.assert_close(graphed.curves.stacked()[name], values, rtol=0, atol=0, msg=name)


def test_a_graphed_step_counts_from_the_loops_step():
    config = GroupConfig("NMU", ("mul",), (0, 1), steps=10, evaluation_size=1)
    data, model = build(config, CPU)
    step = GraphedStep(model, torch.optim.Adam(model.parameters()), data, batch_size=4)
    assert step(0) == (None, {}) and step.counter.item() == 1
    step(5)  # a resumed run starts at its checkpoint's step
    assert step.counter.item() == 6
    step(6)
    assert step.counter.item() == 7


def test_a_cuda_graph_step_refuses_mixed_precision():
    config = GroupConfig("NAU", ("add",), (0,), steps=10, evaluation_size=1)
    with pytest.raises(ValueError, match="cuda_graph or with amp"):
        train_group(config, CPU, progress=False, amp=True, cuda_graph=True)
    with pytest.raises(ValueError, match="float32"):
        speed.batched_rate(config, CPU, steps=2, amp=True, cuda_graph=True)
    with pytest.raises(SystemExit):
        main(["arithmetic", "--cuda-graph", "--amp"])


def test_a_compiled_loss_is_refused_outside_a_cuda_graph_step(capsys):
    config = GroupConfig("NAU", ("add",), (0,), steps=10, evaluation_size=1)
    with pytest.raises(ValueError, match="give cuda_graph too"):
        train_group(config, CPU, progress=False, compile_loss=True)
    with pytest.raises(ValueError, match="give cuda_graph too"):
        speed.batched_rate(config, CPU, steps=2, compile_loss=True)
    with pytest.raises(SystemExit):
        main(["arithmetic", "--compile-loss"])
    assert "--compile-loss" in capsys.readouterr().err


@pytest.mark.slow
def test_a_group_trained_with_its_loss_compiled_follows_the_uncompiled_step():
    """``compile_loss`` (on the CPU: the compiled loss inside the step run eagerly) changes how the loss is
    computed, not what: the curves of 200 steps agree with the uncompiled step's up to float rounding."""
    config = GroupConfig("NMU", ("mul", "add"), (0, 1), steps=200, eval_every=100, evaluation_size=50, schedule="scaled")
    torch._dynamo.utils.counters.clear()
    plain, compiled = (train_group(config, CPU, progress=False, cuda_graph=True, compile_loss=flag) for flag in (False, True))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 1  # the loss went through the compiler
    assert compiled.finished and compiled.curves.steps == [100, 200]
    for name, values in plain.curves.stacked().items():
        torch.testing.assert_close(compiled.curves.stacked()[name], values, rtol=1e-4, atol=1e-6, msg=name)


def test_a_rate_measured_for_a_minimum_time_times_more_steps(monkeypatch):
    advanced = []
    monkeypatch.setattr(speed._TimedRun, "advance", lambda run, steps: advanced.append(steps) or 0.5)
    config = GroupConfig("NAU", ("add",), (0, 1), steps=10, evaluation_size=1)
    measured = speed.batched_rate(config, CPU, steps=10, warmup=2, cuda_graph=True, min_seconds=2.0)
    assert advanced == [2, 10, 30] and measured["steps"] == 40 and measured["rate"] == pytest.approx(2 * 40 / 1.0)


def test_groups_trained_side_by_side_take_every_step_of_each():
    configs = [
        GroupConfig(model, (operation,), (0, 1), steps=10, evaluation_size=1)
        for model, operation in (("NAU", "add"), ("NMU", "mul"))
    ]
    measured = speed.concurrent_rate(configs, CPU, steps=4, warmup=1)
    assert measured["runs"] == 4 and measured["steps"] == 4 and measured["rate"] > 0
    with pytest.raises(ValueError, match="steps must be positive"):
        speed.concurrent_rate(configs, CPU, steps=0)


def test_groups_trained_side_by_side_give_the_curves_and_checkpoints_of_groups_in_turn(tmp_path):
    configs = [
        GroupConfig(model, operations, (0, 1), steps=200, eval_every=100, evaluation_size=50, schedule="scaled")
        for model, operations in (("NMU", ("mul",)), ("NAU", ("add", "sub")), ("NALU", ("div",)))
    ]
    together, started = train_groups(
        configs, CPU, tmp_path / "together", False, StopRequests(), progress=False, side_by_side=True
    )
    in_turn, _ = train_groups(configs, CPU, tmp_path / "in_turn", False, StopRequests(), progress=False)
    assert started == [] and [run.config.model for run in together] == ["NMU", "NAU", "NALU"]
    for a, b in zip(together, in_turn):
        assert a.finished and (tmp_path / "together" / checkpoint_name(a.config.model)).exists()
        for name, values in b.curves.stacked().items():
            torch.testing.assert_close(a.curves.stacked()[name], values, rtol=0, atol=0, msg=name)
    stopped, _ = train_groups(configs, CPU, tmp_path / "stopped", False, StopRequests(0), progress=False, side_by_side=True)
    assert all(run.stop_reason is not None and run.step == 1 for run in stopped)  # a stop request ends every group


def test_a_later_groups_checkpoint_of_another_configuration_is_refused_before_any_group_trains(tmp_path):
    """Each group's checkpoint was checked as its turn came: after the groups before it had trained."""
    configs = [
        GroupConfig(model, ("add",), (0,), steps=20, eval_every=10, evaluation_size=20, schedule="scaled")
        for model in ("NAU", "NMU")
    ]
    train_groups(configs[1:], CPU, tmp_path, False, StopRequests(), progress=False)  # the NMU's, at this learning rate
    changed = [replace(config, learning_rate=config.learning_rate / 2) for config in configs]
    with pytest.raises(ValueError, match=r"nmu.pt was written with another configuration \(learning_rate differ"):
        train_groups(changed, CPU, tmp_path, True, StopRequests(), progress=False)
    assert not (tmp_path / checkpoint_name("NAU")).exists()  # (the NAU's group had trained first)


def test_cells_keep_each_solved_seeds_sparsity_error_and_show_the_profiled_intervals():
    config = GroupConfig("NAU", ("add", "sub"), (0, 1, 2), steps=30, eval_every=10)

    def sixes(*rows: list[float]) -> list[torch.Tensor]:  # evaluations of S = 6 runs
        return [torch.tensor(row, dtype=torch.float64) for row in rows]

    curves = Curves(
        [10, 20, 30],
        validation=sixes([1, 1, 1, 1, 1, 1], [0.1, 0.5, 0.1, 0.1, 1, 1], [0.5, 0.1, 0.5, 0.5, 1, 1]),
        test=sixes([1, 1, 1, 1, 1, 1], [0.01, 1, 0.01, 0.01, 1, 1], [1, 0.01, 1, 1, 1, 1]),
        sparsity=sixes([0.4] * 6, [0.01, 0.3, 0.02, 0.05, 0.3, 0.3], [0.3, 0.04, 0.3, 0.3, 0.3, 0.3]),
    )  # add: seeds 0 and 2 solved at 20 (best there), seed 1 at 30; sub: seed 0 at 20 only
    add, sub = group_cells(GroupRun(config, curves, 30, 1.0), {"add": 0.05, "sub": 0.05})
    assert add["per_seed"]["solved_at"] == [20.0, 30.0, 20.0] and add["per_seed"]["sparsity_error"] == [0.01, 0.04, 0.02]
    assert sub["per_seed"]["solved_at"] == [20.0, None, None] and sub["per_seed"]["sparsity_error"] == [0.05, None, None]
    assert (add["mean_solved_at"], *add["solved_at_interval"]) == gamma_mean_interval(add["per_seed"]["solved_at"])
    assert (add["mean_sparsity_error"], *add["sparsity_error_interval"]) == beta_mean_interval([0.01, 0.04, 0.02])
    assert add["median_solved_at"] == 20.0
    assert (sub["mean_solved_at"], sub["solved_at_interval"], sub["mean_sparsity_error"], sub["sparsity_error_interval"]) == (
        20.0, None, 0.05, None
    )  # fmt: skip
    _, headers, rows = results_table([add, sub], 3, 30, (100, 5_000_000))
    solved_at, sparsity = headers.index("Solved at: mean [95% interval]"), headers.index("Sparsity error: mean [95% interval]")
    budget, success = headers.index("Budget"), headers.index("Success")
    assert [rows[0][budget], rows[0][headers.index("Published budget")]] == ["3 x 30", "100 x 5,000,000"]  # (was 5e+06)
    for rate, shown in ((0.0, "0%"), (1 / 200, "<1%"), (0.5, "50%"), (199 / 200, ">99%"), (1.0, "100%")):
        assert results_table([{**add, "success_rate": rate}], 3, 30, (100, 5_000_000))[2][0][success] == shown
    low, high = add["solved_at_interval"]
    assert rows[0][solved_at] == f"23.3 [{low:.3g}, {high:.3g}]" and rows[1][solved_at] == "20"
    assert rows[0][sparsity].startswith(f"{add['mean_sparsity_error']:.2g} [") and rows[1][sparsity] == "0.05"


def test_the_caption_gives_each_budget_whole():
    caption = results_caption(20, 15_000, (100, 5_000_000))  # was rounded to one digit: 20 seeds x 2e+04
    assert "20 seeds x 15,000 iterations: a shorter budget" in caption and "100 seeds x 5,000,000 iterations" in caption


def test_group_counts_and_learning_rates_that_are_no_positive_numbers_are_named():
    with pytest.raises(ValueError, match=r"operations of a group are each trained once: \['add'\] given more than once"):
        GroupConfig("NAU", ("add", "sub", "add"), (0,), steps=4)  # was two cells of the same runs
    with pytest.raises(ValueError, match=r"seeds of a group are each trained once: \[0\]"):
        GroupConfig("NAU", ("add",), (0, 1, 0), steps=4)
    with pytest.raises(ValueError, match="steps must be an int of at least 1, got 2.5"):  # ran 3 steps
        GroupConfig("NAU", ("add",), (0,), steps=2.5)
    with pytest.raises(ValueError, match="eval_every must be an int of at least 1, got 1.5"):  # evaluated at 3 and 4
        GroupConfig("NAU", ("add",), (0,), steps=4, eval_every=1.5)
    with pytest.raises(ValueError, match="learning_rate must be a finite number above 0, got nan"):
        GroupConfig("NAU", ("add",), (0,), steps=4, learning_rate=float("nan"))


def test_timings_name_rounds_and_measuring_times_that_would_give_inf_or_never_end():
    steps = {"noop": lambda: None}
    with pytest.raises(ValueError, match="rounds must be an int of at least 1, got 0"):  # was {"noop": inf}
        fastest_of_rounds(steps, 0, 0.01, 1, "x")
    for min_time in (float("nan"), float("inf"), 0.0):  # NaN and inf timed forever
        with pytest.raises(ValueError, match=r"min_time \(seconds\) must be a finite number above 0"):
            fastest_of_rounds(steps, 1, min_time, 1, "x")
    with pytest.raises(ValueError, match=r"threads \(0: torch's current number\) must be an int of at least 0, got -1"):
        median_seconds(lambda: None, 0.01, -1)
    assert median_seconds(lambda: None, 0.01, 0) >= 0  # 0 is torch's current number (failed inside torch)


def test_results_quote_table_1s_solved_at_steps_as_the_means_they_are():
    """Madsen & Johansen (2019, Sec. 3 and Table 1) report the gamma-profiled mean of the solved-at step, not a median:
    the published column of RESULTS.md's Table 1 cells names the statistic it quotes."""
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")
    cells = text.split("### Cells of Table 1", 1)[1].split("\n\n", 2)[2]  # the table after the command block
    rows = [line.split("|")[-2] for line in cells.splitlines() if line.startswith("| ")][1:]  # published column, header dropped
    quoted = [cell for cell in rows if "solved at" in cell]
    assert quoted and all("mean solved at" in cell for cell in quoted), quoted
