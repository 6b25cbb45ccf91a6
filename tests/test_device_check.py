"""benchmarks/device_check.py: its report of a pytest run, a part's failure, and its files."""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "device_check.py"


@pytest.fixture(scope="module")
def device_check():
    spec = importlib.util.spec_from_file_location("device_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1"
skipped="2" tests="6"><testcase classname="tests.test_a" name="test_ok"/><testcase classname="tests.test_a"
name="test_bad"><failure message="assert 1 == 2&#10;more">trace</failure></testcase><testcase
classname="tests.test_b" name="test_broken"><error message="fixture failed">trace</error></testcase><testcase
classname="tests.test_c" name="test_gpu"><skipped message="needs a CUDA device"/></testcase><testcase
classname="tests.test_c" name="test_gpu2"><skipped message="needs a CUDA device"/></testcase><testcase
classname="tests.test_d" name="test_ok2"/></testsuite></testsuites>"""


def test_a_junit_report_gives_totals_failing_tests_and_skip_reasons(device_check, tmp_path):
    (tmp_path / "junit.xml").write_text(JUNIT)
    counts = device_check._junit_counts(tmp_path / "junit.xml")
    assert (counts["tests"], counts["passed"], counts["failures"], counts["errors"], counts["skipped"]) == (6, 2, 1, 1, 2)
    assert counts["failing"] == [
        {"test": "tests.test_a::test_bad", "outcome": "failure", "message": "assert 1 == 2"},
        {"test": "tests.test_b::test_broken", "outcome": "error", "message": "fixture failed"},
    ]
    assert counts["skipped_reasons"] == {"needs a CUDA device": 2}


def test_a_command_over_its_budget_is_stopped_and_reported(device_check):
    command = "import time; print('started', flush=True); time.sleep(30)"
    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as where the check is started by `nohup ... &`
    try:
        started = time.monotonic()
        with pytest.raises(device_check.PartFailed, match=r"stopped after 1 s \(its budget\)"):
            device_check._command(["python3", "-c", command], 1)
        assert time.monotonic() - started < 15  # SIGINT stopped it, not the kill 20 s later
    finally:
        signal.signal(signal.SIGINT, ignored)


def test_the_arithmetic_part_stops_at_its_budget_between_families(device_check, tmp_path):
    with pytest.raises(device_check.PartFailed, match="stopped at its budget of 0 s after 0 families"):
        device_check.arithmetic(torch.device("cpu"), tmp_path, 0.0, seeds=1, steps=1)  # it ran on past --deadline


def test_every_part_has_its_runner_and_budget(device_check):
    assert set(device_check.RUNNERS) == set(device_check.PARTS) == set(device_check.BUDGETS)


@pytest.mark.slow
def test_the_check_writes_json_and_markdown_and_lists_what_failed(device_check, tmp_path, monkeypatch, capsys):
    quick = functools.partial(device_check.arithmetic, seeds=2, steps=3, graph_seconds=0.0, together_seconds=0.0)
    monkeypatch.setitem(device_check.RUNNERS, "arithmetic", quick)
    monkeypatch.setitem(
        device_check.RUNNERS,
        "arithmetic_training",
        functools.partial(device_check.arithmetic_training, steps=3, seeds=2, evaluation_size=10, compile_loss=False),
    )

    def broken(device, out, seconds):
        raise device_check.PartFailed("exit status 1:\nTraceback ...")

    monkeypatch.setitem(device_check.RUNNERS, "hint_transformer", broken)
    status = device_check.main(["--skip", "suite,hint_pipeline", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "device_check.json").read_text())
    assert status == 1 and list(report) == ["environment", "arithmetic", "arithmetic_training", "hint_transformer"]
    assert report["arithmetic_training"]["status"] == "ok" and report["arithmetic_training"]["rate"] > 0
    assert report["arithmetic_training"]["training_rate"] > report["arithmetic_training"]["rate"]
    assert report["arithmetic"]["status"] == "ok" and report["arithmetic"]["cells"] == 13
    assert {family["model"] for family in report["arithmetic"]["families"]} == {"NAC•", "NALU", "NAC+", "Linear", "NAU", "NMU"}
    assert (
        report["arithmetic"]["rate"] > 0 and report["arithmetic"]["graph_rate"] > 0 and report["arithmetic"]["together_rate"] > 0
    )
    assert all(family["graph"]["steps"] == 3 for family in report["arithmetic"]["families"])
    assert report["hint_transformer"]["status"] == "failed"
    text = (tmp_path / "device_check.md").read_text()
    assert "| hint_transformer | failed |" in text and "- hint_transformer: exit status 1:" in text
    assert "| arithmetic | ok |" in text and "as CUDA graphs" in text and "with every family at once over" in text
    if not torch.cuda.is_available():
        assert "no CUDA device: every part ran on the CPU" in text
    assert text in capsys.readouterr().out


def test_an_optional_part_runs_only_when_asked_for(device_check, tmp_path, monkeypatch, capsys):
    ran = []

    def compiled(device, out, seconds):
        ran.append(seconds)
        return {"seeds": 100, "families": {"NMU": {"runs": 100, "steps": 9, "seconds": 1.0, "rate": 2.5e6}}}

    monkeypatch.setitem(device_check.RUNNERS, "arithmetic_compiled", compiled)
    others = "suite,arithmetic,arithmetic_training,hint_pipeline,hint_transformer"
    assert device_check.main(["--skip", others, "--out", str(tmp_path)]) == 0 and ran == []
    assert device_check.main(["--skip", others, "--with", "arithmetic_compiled", "--out", str(tmp_path)]) == 0
    assert ran == [device_check.BUDGETS["arithmetic_compiled"]]
    assert "compiled CUDA graphs, seed-iterations/s: NMU 2.5e+06" in (tmp_path / "device_check.md").read_text()
    with pytest.raises(SystemExit):
        device_check.main(["--with", "suite", "--out", str(tmp_path)])
    assert "unknown parts ['suite']" in capsys.readouterr().err


def test_a_deadline_caps_each_budget_and_reports_the_parts_it_leaves_no_time_for(device_check, monkeypatch, capsys):
    budgets, written = {}, []

    def sleeping(part: str, seconds_asleep: float):
        def run(device, out, seconds):
            budgets[part] = seconds
            time.sleep(seconds_asleep)
            return {}

        return run

    monkeypatch.setattr(device_check, "MIN_PART_SECONDS", 0.5)
    for part, asleep in [("environment", 1.5), ("arithmetic", 1.2), ("hint_transformer", 0.0)]:
        monkeypatch.setitem(device_check.RUNNERS, part, sleeping(part, asleep))
    parts = ["environment", "arithmetic", "hint_transformer"]
    report = device_check.run_parts(
        parts, torch.device("cpu"), Path("."), deadline=3.0, written=lambda r: written.append(list(r))
    )
    assert (
        budgets["environment"] == pytest.approx(3.0, abs=0.05)
        and 1.0 < budgets["arithmetic"] <= 1.5
        and "hint_transformer" not in budgets
    )
    assert [report[part]["status"] for part in parts] == ["ok", "ok", "failed"]
    assert report["hint_transformer"]["error"].startswith("not run: 0 s were left of the check's --deadline 3 s")
    assert written == [parts[:1], parts[:2], parts]  # the files are rewritten after every part
    with pytest.raises(SystemExit):
        device_check.main(["--deadline", "0"])
    assert "--deadline must be a positive number of seconds, got 0" in capsys.readouterr().err
    for option, value in (("--deadline", "nan"), ("--budget-scale", "-1"), ("--budget-scale", "nan")):
        with pytest.raises(SystemExit):  # (NaN ran every part; a scale of -1 left every part a budget of none)
            device_check.main([option, value])
        assert f"{option} must be a positive number" in capsys.readouterr().err


def test_a_small_budget_scale_without_a_deadline_runs_every_part_within_its_scaled_budget(device_check, monkeypatch):
    """Below about 0.67 the parts were refused as if under a deadline, whose message then failed on None."""
    budgets = []

    def run(device, out, seconds):
        budgets.append(seconds)
        return {}

    monkeypatch.setitem(device_check.RUNNERS, "hint_transformer", run)
    report = device_check.run_parts(["hint_transformer"], torch.device("cpu"), Path("."), scale=0.1)
    assert report["hint_transformer"]["status"] == "ok"
    assert budgets == [pytest.approx(0.1 * device_check.BUDGETS["hint_transformer"])]


@pytest.mark.slow
def test_the_compiled_probe_times_each_family_and_then_all_at_once(device_check, tmp_path):
    found = device_check.arithmetic_compiled(
        torch.device("cpu"), tmp_path, 300, seeds=2, steps=3, models="NAU,NMU", min_seconds=0, together_seconds=0
    )
    families = found["families"]
    assert list(families) == ["NAU", "NMU", "together"] and families["together"]["runs"] == 2 * 2 + 2
    assert all(record["steps"] == 3 and record["rate"] > 0 for record in families.values())


def test_a_suite_stopped_at_its_budget_says_so(device_check):
    counts = {"tests": 5, "failures": 0, "errors": 0, "skipped": 1, "passed": 4, "failing": [], "skipped_reasons": {}}
    stopped = {"status": "failed", "seconds": 300.0, "stopped_at_budget": True, **counts}
    text = device_check.markdown({"suite": stopped}, torch.device("cuda"))
    assert "| suite | failed | 300.0 | 4 passed, 0 failed, 0 errors, 1 skipped before it was stopped at its time budget |" in text
    assert "- suite: stopped at its time budget (raise it with --budget-scale)" in text
    finished = device_check.markdown({"suite": stopped | {"stopped_at_budget": False, "failures": 2}}, torch.device("cuda"))
    assert "- suite: 2 failing tests, 0 errors (listed above)" in finished and "stopped" not in finished


def test_the_hint_speed_runs_are_valid_commands_that_time_training_only(device_check, tmp_path, monkeypatch):
    """The two pipeline runs parse as ``neurosym hint`` commands and learn no few-shot concepts (the part
    times training; few-shot learning after 100 steps would spend its budget)."""
    from neurosym.cli import build_parser

    commands = []

    def fake(argv, seconds, env=None):
        commands.append(argv)
        out = Path(argv[argv.index("--out") + 1])
        out.mkdir(parents=True)
        (out / "results.json").write_text(json.dumps({"steps": 100, "train_seconds": 4.0, "test": {"avg": 0.5}}))
        return subprocess.CompletedProcess(argv, 0, "", None)

    monkeypatch.setattr(device_check, "_command", fake)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the commands name the GPU they will run on
    found = device_check.hint_pipeline(torch.device("cuda"), tmp_path, 100.0)
    assert found["steps_per_second_batch_128"] == 25.0 and found["make_run_test"] == {"avg": 0.5}
    assert len(commands) == 2
    for argv in commands:
        hint = argv[argv.index("hint") :]
        args = build_parser("hint").parse_args(hint)
        assert args.device == "cuda" and args.fewshot_scales in ([], None, ()), args.fewshot_scales


def test_a_check_killed_while_writing_its_report_keeps_the_last_report_whole(device_check, tmp_path, monkeypatch):
    write_text, killed = Path.write_text, []

    def cut_short(path: Path, text: str, *args, **kwargs) -> int:  # the kill comes halfway through a file, once asked for
        if not killed:
            return write_text(path, text, *args, **kwargs)
        write_text(path, text[: len(text) // 2], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", cut_short)
    monkeypatch.setitem(device_check.RUNNERS, "hint_transformer", lambda device, out, seconds: killed.append(True) or {})
    parts = ",".join(part for part in device_check.PARTS if part not in ("environment", "hint_transformer"))
    with pytest.raises(KeyboardInterrupt):
        device_check.main(["--skip", parts, "--out", str(tmp_path)])
    assert list(json.loads((tmp_path / "device_check.json").read_text())) == ["environment"]
    assert "| environment | ok |" in (tmp_path / "device_check.md").read_text()


def test_the_report_is_strict_json_with_a_number_that_is_no_number_as_null(device_check, tmp_path, monkeypatch):
    rates = {"steps_per_second_batch_128": math.nan, "projected_hours_1e5_x_128": math.inf}  # (a stalled or failed timing)
    monkeypatch.setitem(device_check.RUNNERS, "hint_transformer", lambda device, out, seconds: rates)
    parts = ",".join(part for part in device_check.PARTS if part not in ("environment", "hint_transformer"))
    device_check.main(["--skip", parts, "--out", str(tmp_path)])

    def refused(constant: str) -> None:  # (what a strict parser does with Python's NaN)
        raise ValueError(constant)

    report = json.loads((tmp_path / "device_check.json").read_text(), parse_constant=refused)
    assert report["hint_transformer"]["steps_per_second_batch_128"] is None
    assert report["hint_transformer"]["projected_hours_1e5_x_128"] is None


def test_the_help_names_every_options_default(device_check, capsys):
    with pytest.raises(SystemExit) as stopped:
        device_check.main(["--help"])
    options = re.split(r"\n  (?=-)", capsys.readouterr().out.split("options:", 1)[1])[1:]
    assert stopped.value.code == 0 and len(options) == 6  # (--out, --skip, --with and --budget-scale named none)
    assert [" ".join(text.split()) for text in options if "(default:" not in text] == [
        "-h, --help show this help message and exit"
    ]
    assert "(default: results/device_check in the repository)" in " ".join(" ".join(options).split())
