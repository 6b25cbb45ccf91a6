"""The device check: on a CUDA machine, the whole test suite (the ``cuda`` tests included) and the GPU
speed rows of benchmarks/RESULTS.md, in one command of about 8 minutes on one GPU.

    make gpu-check                                   # = python benchmarks/device_check.py
    python benchmarks/device_check.py --out results/device_check --skip suite

Parts, each within its own time budget (a part that overruns is stopped and reported, the rest still run):

- ``environment``: torch, CUDA, the GPU, a C++ compiler (``torch.compile`` on the CPU needs one);
- ``suite``: ``pytest tests`` on all cores, with ``device="auto"`` meaning the GPU; failures listed;
- ``arithmetic``: seed-iterations per second of every model family of Table 1 trained as one batched
  model over its published cells × 100 seeds, with eager steps and with the whole step captured into a CUDA
  graph, and with every family's graph at once on streams of their own (timed for 20 s), and the time
  the whole table (5·10⁶ steps) would take each way;
- ``arithmetic_training``: ``neurosym arithmetic --preset paper --cuda-graph --compile-loss`` for 5·10⁴ steps, its
  seed-iterations per second over the command's wall time and over its training (the compilations included);
- ``arithmetic_compiled`` (only ``--with arithmetic_compiled``): the CUDA-graph step with its loss compiled by
  ``torch.compile`` (fused kernels inside the graph), every family over its cells × 100 seeds, then all at once
  on streams of their own for two minutes;
- ``hint_pipeline``: ``make run``'s training (800 steps of 32) on the device, steps per second and the
  accuracies, then steps per second at HINT's batch of 128 and the projected time of 10⁵ steps;
- ``hint_transformer``: the same for the released relative universal Transformer (``transformer_rel_uni``).

It writes ``device_check.json`` and ``device_check.md`` under ``--out`` after every part (a check killed from
outside keeps the parts it finished) and prints the Markdown, ending with what it could not run. With
``--deadline S`` no part starts past ``S`` seconds from the start: each gets what is left of them at most as its budget,
and the parts with less than :data:`MIN_PART_SECONDS` left are reported as not run. A part checks its budget between
its steps (``arithmetic`` between model families, about 30 s each on a CPU), so it may run past it by one step.
Without CUDA it runs on the CPU and says so (the parts still work).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import torch

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("environment", "suite", "arithmetic", "arithmetic_training", "arithmetic_compiled", "hint_pipeline", "hint_transformer")
OPTIONAL = ("arithmetic_compiled",)
"""Parts that run only when asked for (``--with``): probes beyond the check's 8 minutes."""
BUDGETS = {
    "environment": 30,
    "suite": 300,
    "arithmetic": 200,
    "arithmetic_training": 200,
    "arithmetic_compiled": 330,
    "hint_pipeline": 120,
    "hint_transformer": 60,
}
"""Seconds each part may take at most; on one H100 the parts took 330 s together (benchmarks/RESULTS.md)."""
MIN_PART_SECONDS = 20
"""Under ``--deadline``, a part is started only with at least this many seconds left."""
PROJECTED_STEPS = 100_000
"""HINT's schedule: 10⁵ steps of 128 expressions."""
MAKE_RUN = ["--model", "neurosym", "--input", "image", "--scale", "0.01", "--cnn", "small"]
NO_FEWSHOT = ["--fewshot-scales", "none"]
"""Speed parts time the training only."""
MAKE_RUN_TRAINING = ["--steps", "800", "--batch-size", "32", "--curriculum", "1:150,3:200,7:200,15:250"]


class PartFailed(RuntimeError):
    """A part could not produce its numbers; the message says why."""


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _command(argv: list[str], seconds: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` from the repository root, stopped with SIGINT (files written so far stay) after ``seconds``."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # (as under `nohup ... &`): a child would inherit it and
        signal.signal(signal.SIGINT, signal.default_int_handler)  # not stop; a handler is reset to the default at exec
    process = subprocess.Popen(
        argv, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        output, _ = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)  # SIGINT: pytest writes its report, a training its checkpoint
        try:
            output, _ = process.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
        raise PartFailed(f"stopped after {seconds:.0f} s (its budget):\n{_tail(output)}") from None
    return subprocess.CompletedProcess(argv, process.returncode, output, None)


def environment(device: torch.device, out: Path, seconds: float) -> dict[str, Any]:
    from neurosym.training.device import autocast_dtype

    found: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": str(device),
        "cpu_cores": os.cpu_count(),
        "c_compiler": shutil.which("cc") or shutil.which("gcc") or shutil.which("g++"),
    }
    if device.type == "cuda":
        properties = torch.cuda.get_device_properties(device)
        found |= {"gpu": properties.name, "gpu_memory_gib": round(properties.total_memory / 2**30, 1)}
        found["amp_dtype"] = str(autocast_dtype(device))  # (bfloat16 where native; is_bf16_supported counts emulation)
    return found


def _junit_counts(path: Path) -> dict[str, Any]:
    """Totals and the failing tests (id and the first line of the message) of a pytest JUnit XML report."""
    root = ElementTree.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    totals = {key: sum(int(suite.get(key, 0)) for suite in suites) for key in ("tests", "failures", "errors", "skipped")}
    failing: list[dict[str, str]] = []
    skipped: dict[str, int] = {}
    for case in root.iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        for outcome in ("failure", "error"):
            for element in case.findall(outcome):
                message = (element.get("message") or element.text or "").strip().splitlines()
                failing.append({"test": test, "outcome": outcome, "message": message[0][:300] if message else ""})
        for element in case.findall("skipped"):
            reason = (element.get("message") or "").strip()
            skipped[reason] = skipped.get(reason, 0) + 1
    return {**totals, "passed": totals["tests"] - totals["failures"] - totals["errors"] - totals["skipped"],
            "failing": failing, "skipped_reasons": skipped}  # fmt: skip


def _spread_slow_tests() -> list[str]:
    """``--maxschedchunk 2`` where pytest-xdist has it (3.3 and later): each worker then starts on one of the tests
    marked ``slow``, which tests/conftest.py collects first, one in every two places."""
    try:
        major, minor = (int(part) for part in metadata.version("pytest-xdist").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return []
    return ["--maxschedchunk", "2"] if (major, minor) >= (3, 3) else []


def suite(device: torch.device, out: Path, seconds: float) -> dict[str, Any]:
    report = out / "junit.xml"
    report.unlink(missing_ok=True)
    cores = os.cpu_count() or 2
    workers = max(1, min(8, cores // 2))
    argv = [sys.executable, "-m", "pytest", "-q", "-n", str(workers), *_spread_slow_tests(), "tests", "-p", "no:cacheprovider",
            "--junitxml", str(report), "-rfE"]  # fmt: skip
    threads = str(max(1, cores // workers))  # each worker's torch would otherwise take every core
    try:
        completed = _command(argv, seconds, env={"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads})
        output, stopped = completed.stdout, False
    except PartFailed as error:
        output, stopped = str(error), True
    if not report.is_file():
        raise PartFailed(f"pytest wrote no report:\n{_tail(output)}")
    counts = _junit_counts(report) | {"workers": workers, "stopped_at_budget": stopped, "summary": _tail(output, 3)}
    if stopped or counts["failures"] or counts["errors"]:
        counts["status"] = "failed"
    return counts


def arithmetic(
    device: torch.device,
    out: Path,
    seconds: float,
    seeds: int = 100,
    steps: int = 200,
    graph_seconds: float = 3.0,
    together_seconds: float = 20.0,
) -> dict[str, Any]:
    """Every family of Table 1 over its published cells × ``seeds``: ``steps`` eager steps, then its CUDA-graph
    step (:class:`~neurosym.benchmarking.arithmetic_training.GraphedStep`) for at least ``graph_seconds``; then
    all families at once, each graph on a stream of its own, for at least ``together_seconds``. Past ``seconds`` it stops
    between families (:class:`PartFailed`: one family at most overruns it)."""
    from neurosym.benchmarking.arithmetic_results import published_operations
    from neurosym.benchmarking.arithmetic_speed import batched_rate, concurrent_rate
    from neurosym.benchmarking.arithmetic_training import GroupConfig
    from neurosym.models.arithmetic import MODEL_LAYERS, PAPER_ITERATIONS

    families: list[dict[str, Any]] = []
    configs, started = [], time.perf_counter()
    for model in MODEL_LAYERS:
        operations = published_operations(model)
        if not operations:
            continue
        if time.perf_counter() - started > seconds:
            raise PartFailed(f"stopped at its budget of {seconds:.0f} s after {len(families)} families")
        config = GroupConfig(model, operations, tuple(range(seeds)), steps=steps, evaluation_size=1)
        eager = batched_rate(config, device, steps)
        graphed = batched_rate(config, device, steps, cuda_graph=True, min_seconds=graph_seconds)
        families.append({"model": model, "operations": list(operations), **eager, "graph": graphed})
        configs.append(config)
    if time.perf_counter() - started > seconds:
        raise PartFailed(f"stopped at its budget of {seconds:.0f} s after every family, before they ran together")
    together = concurrent_rate(configs, device, steps, min_seconds=together_seconds)
    runs = sum(family["runs"] for family in families)
    found: dict[str, Any] = {"seeds": seeds, "steps_timed": steps, "families": families, "cells": runs // seeds}
    for name, records in (("", families), ("graph_", [family["graph"] for family in families]), ("together_", [together])):
        work = sum(record["runs"] * record["steps"] for record in records)
        rate = work / sum(record["seconds"] for record in records)
        found |= {f"{name}rate": rate, f"{name}table_hours": runs * PAPER_ITERATIONS / rate / 3600}
    found["together_seconds"] = together["seconds"]
    return found


COMPILED = """import json, sys, torch
from neurosym.benchmarking.arithmetic_results import published_operations
from neurosym.benchmarking.arithmetic_speed import batched_rate, concurrent_rate
from neurosym.benchmarking.arithmetic_training import GroupConfig
from neurosym.models.arithmetic import MODEL_LAYERS
device, seeds, steps, seconds = torch.device(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[5])
models = [model for model in MODEL_LAYERS if published_operations(model)] if sys.argv[4] == "all" else sys.argv[4].split(",")
configs = [GroupConfig(model, published_operations(model), tuple(range(seeds)), steps=steps, evaluation_size=1) for model in models]
rates = {config.model: batched_rate(config, device, steps, cuda_graph=True, compile_loss=True, min_seconds=seconds) for config in configs}
rates["together"] = concurrent_rate(configs, device, steps, min_seconds=float(sys.argv[6]), compile_loss=True)
print(json.dumps(rates))"""
"""The compiled CUDA-graph probe, in its own process so that its budget can stop a compiler that hangs."""


def arithmetic_compiled(
    device: torch.device, out: Path, seconds: float, seeds: int = 100, steps: int = 200, models: str = "all",
    min_seconds: float = 3.0, together_seconds: float = 120.0,
) -> dict[str, Any]:  # fmt: skip
    """``models``' (comma-separated, or ``all`` of Table 1) CUDA-graph step with the loss compiled
    (:class:`~neurosym.benchmarking.arithmetic_training.GraphedStep` with ``compile_loss``), each timed for at least
    ``min_seconds`` after its compilation, then all at once on streams of their own for ``together_seconds``."""
    argv = [sys.executable, "-c", COMPILED, device.type, str(seeds), str(steps), models, str(min_seconds), str(together_seconds)]
    completed = _command(argv, seconds)
    if completed.returncode != 0:
        raise PartFailed(f"exit status {completed.returncode}:\n{_tail(completed.stdout)}")
    return {"seeds": seeds, "families": json.loads(completed.stdout.strip().splitlines()[-1])}


def arithmetic_training(
    device: torch.device, out: Path, seconds: float, steps: int = 50_000, seeds: int = 100, evaluation_size: int = 10_000,
    compile_loss: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """``neurosym arithmetic --preset paper --cuda-graph`` (with ``--compile-loss``: each loss compiled, one model
    at a time) for ``steps`` steps (on CUDA every family side by side): seed-iterations per second over the
    command's whole wall time (compilation, thresholds, evaluations and plots included)."""
    folder = out / "arithmetic_training"
    argv = [sys.executable, "-m", "neurosym.cli", "arithmetic", "--preset", "paper", "--steps", str(steps), "--seeds", str(seeds),
            "--evaluation-size", str(evaluation_size), "--cuda-graph", "--threshold-samples", "100000", "--device", device.type,
            "--no-progress", "--no-resume", "--out", str(folder), *(["--compile-loss"] if compile_loss else [])]  # fmt: skip
    started = time.perf_counter()
    completed = _command(argv, seconds)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        raise PartFailed(f"exit status {completed.returncode}:\n{_tail(completed.stdout)}")
    results = json.loads((folder / "results.json").read_text())
    work = sum(cell["runs"] for cell in results["cells"]) * steps
    training = max(results["training_seconds"].values()) if device.type == "cuda" else sum(results["training_seconds"].values())
    return {"steps": steps, "compile_loss": compile_loss, "wall_seconds": wall, "training_seconds": results["training_seconds"],
            "rate": work / wall, "training_rate": work / training}  # fmt: skip


def _hint_run(device: torch.device, out: Path, seconds: float, argv: list[str], written: str = "results.json") -> dict[str, Any]:
    """One ``neurosym hint`` run into ``out`` (afresh), the JSON file ``written`` that it writes there."""
    command = [sys.executable, "-m", "neurosym.cli", "hint", *argv, "--device", device.type, "--no-progress", "--no-resume"]
    completed = _command([*command, "--out", str(out)], seconds)
    if completed.returncode != 0:
        raise PartFailed(f"exit status {completed.returncode}:\n{_tail(completed.stdout)}")
    return json.loads((out / written).read_text())


def _steps_per_second(results: dict[str, Any]) -> float:
    seconds = results.get("train_seconds", results.get("train_seconds_this_call"))
    return results["steps"] / seconds


def hint_pipeline(device: torch.device, out: Path, seconds: float) -> dict[str, Any]:
    started = time.perf_counter()
    make_run = _hint_run(device, out / "hint_pipeline", 0.7 * seconds, [*MAKE_RUN, *MAKE_RUN_TRAINING, *NO_FEWSHOT])
    left = seconds - (time.perf_counter() - started)
    large = _hint_run(device, out / "hint_pipeline_128", left, [*MAKE_RUN, "--steps", "100", "--batch-size", "128", *NO_FEWSHOT])
    rate = _steps_per_second(large)
    return {"make_run_steps_per_second": _steps_per_second(make_run), "make_run_train_seconds": make_run["train_seconds"],
            "make_run_test": make_run.get("test"), "steps_per_second_batch_128": rate,
            "projected_hours_1e5_x_128": PROJECTED_STEPS / rate / 3600}  # fmt: skip


def hint_transformer(device: torch.device, out: Path, seconds: float) -> dict[str, Any]:
    argv = ["--model", "transformer_rel_uni", "--scale", "0.01", "--steps", "300", "--batch-size", "128", "--eval-every", "300"]
    results = _hint_run(device, out / "hint_transformer", seconds, argv, "transformer_rel_uni_symbol.json")
    rate = _steps_per_second(results)
    return {
        "steps": results["steps"],
        "steps_per_second_batch_128": rate,
        "projected_hours_1e5_x_128": PROJECTED_STEPS / rate / 3600,
    }


RUNNERS: dict[str, Callable[[torch.device, Path, float], dict[str, Any]]] = {
    "environment": environment, "suite": suite, "arithmetic": arithmetic, "arithmetic_training": arithmetic_training,
    "arithmetic_compiled": arithmetic_compiled,
    "hint_pipeline": hint_pipeline, "hint_transformer": hint_transformer,
}  # fmt: skip


def run_parts(
    parts: list[str],
    device: torch.device,
    out: Path,
    scale: float = 1.0,
    deadline: float | None = None,
    written: Callable[[dict[str, dict[str, Any]]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Every part in turn, each within ``scale`` × its budget and what is left of ``deadline`` seconds from now:
    ``{part: {"status", "seconds", ...}}``, passed to ``written`` after every part."""
    report, opened = {}, time.perf_counter()
    for part in parts:
        started = time.perf_counter()
        budget = scale * BUDGETS[part]
        if deadline is not None:
            budget = min(budget, deadline - (started - opened))
        try:
            if deadline is not None and budget < MIN_PART_SECONDS:  # (without a deadline: a small --budget-scale)
                raise PartFailed(f"not run: {max(budget, 0):.0f} s were left of the check's --deadline {deadline:g} s")
            found = {"status": "ok"} | RUNNERS[part](device, out, budget)
        except PartFailed as error:
            found = {"status": "failed", "error": str(error)}
        except Exception as error:  # noqa: BLE001 - a part's crash is a finding; the other parts still run
            found = {"status": "failed", "error": f"{type(error).__name__}: {error}"}
        report[part] = found | {"seconds": round(time.perf_counter() - started, 1)}
        print(f"{part}: {report[part]['status']} in {report[part]['seconds']} s", flush=True)
        if written is not None:
            written(report)
    return report


def _numbers(part: str, found: dict[str, Any]) -> str:
    """The part's headline numbers, one line."""
    if found["status"] != "ok" and "error" in found:
        return found["error"].splitlines()[0]
    if part == "environment":
        return f"torch {found['torch']}, CUDA {found['cuda']}, {found.get('gpu', 'no GPU')}, compiler {found['c_compiler']}"
    if part == "suite":
        counts = f"{found['passed']} passed, {found['failures']} failed, {found['errors']} errors, {found['skipped']} skipped"
        return counts + (" before it was stopped at its time budget" if found["stopped_at_budget"] else "")
    if part == "arithmetic":
        return (f"{found['cells']} cells x {found['seeds']} seeds, seed-iterations/s: {found['rate']:.3g} eager (Table 1: "
                f"{found['table_hours']:.2f} h), {found['graph_rate']:.3g} as CUDA graphs (Table 1: {found['graph_table_hours']:.2f} h), "
                f"{found['together_rate']:.3g} with every family at once over {found['together_seconds']:.0f} s "
                f"(Table 1: {found['together_table_hours']:.2f} h)")  # fmt: skip
    if part == "arithmetic_training":
        flags = "--cuda-graph --compile-loss" if found["compile_loss"] else "--cuda-graph"
        return (f"neurosym arithmetic --preset paper {flags}, {found['steps']} steps: {found['rate']:.3g} seed-iterations/s "
                f"over its {found['wall_seconds']:.0f} s, {found['training_rate']:.3g} over its training (compilation included)")  # fmt: skip
    if part == "arithmetic_compiled":
        return "compiled CUDA graphs, seed-iterations/s: " + ", ".join(
            f"{model} {rate['rate']:.3g}" for model, rate in found["families"].items()
        )
    if part == "hint_pipeline":
        return (f"make run: {found['make_run_steps_per_second']:.1f} steps/s; batch 128: "
                f"{found['steps_per_second_batch_128']:.1f} steps/s, 1e5 steps in {found['projected_hours_1e5_x_128']:.2f} h")  # fmt: skip
    return (
        f"batch 128: {found['steps_per_second_batch_128']:.1f} steps/s, 1e5 steps in {found['projected_hours_1e5_x_128']:.2f} h"
    )


def _why(found: dict[str, Any]) -> str:
    """Why a part is not ok: its error, or for the suite its stop or its failing tests."""
    if "error" in found:
        return found["error"]
    if found.get("stopped_at_budget"):
        return "stopped at its time budget (raise it with --budget-scale)"
    return f"{found['failures']} failing tests, {found['errors']} errors (listed above)"


def markdown(report: dict[str, dict[str, Any]], device: torch.device) -> str:
    lines = [f"# Device check on {device}", "", "| part | status | seconds | numbers |", "|---|---|---|---|"]
    lines += [f"| {part} | {found['status']} | {found['seconds']} | {_numbers(part, found)} |" for part, found in report.items()]
    failing = report.get("suite", {}).get("failing", [])
    if failing:
        lines += ["", "## Failing tests", ""] + [f"- `{item['test']}` ({item['outcome']}): {item['message']}" for item in failing]
    not_run = [f"- {part}: {_why(found)}" for part, found in report.items() if found["status"] != "ok"]
    if device.type != "cuda":
        not_run.insert(0, "- no CUDA device: every part ran on the CPU")
    lines += ["", "## Could not run", ""] + (not_run or ["nothing: every part ran"])
    return "\n".join(lines) + "\n"


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a reader, or a check killed meanwhile, sees the old file or the new one."""
    from neurosym.training.checkpoint import atomic_path

    with atomic_path(path) as partial:
        partial.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "results" / "device_check",
        help="folder of the JSON and Markdown (default: results/device_check in the repository)",
    )  # fmt: skip
    parser.add_argument("--skip", default="", help=f"comma-separated parts to leave out, of {', '.join(PARTS)} (default: none)")
    parser.add_argument(
        "--with", dest="extra", default="",
        help=f"comma-separated optional parts to run, of {', '.join(OPTIONAL)} (default: none: they are left out)",
    )  # fmt: skip
    parser.add_argument("--budget-scale", type=float, default=1.0, help="multiply every part's time budget (default: 1)")
    parser.add_argument(
        "--deadline", type=float, default=None, help="seconds the whole check may take: no part starts past them (default: none)"
    )
    args = parser.parse_args(argv)
    skipped, extra = ({part.strip() for part in text.split(",") if part.strip()} for text in (args.skip, args.extra))
    if skipped - set(PARTS) or extra - set(OPTIONAL):
        unknown = sorted((skipped - set(PARTS)) | (extra - set(OPTIONAL)))
        parser.error(f"unknown parts {unknown}: choose from {', '.join(PARTS)} (optional: {', '.join(OPTIONAL)})")
    skipped |= set(OPTIONAL) - extra
    if args.deadline is not None and not (math.isfinite(args.deadline) and args.deadline > 0):  # (NaN ran every part)
        parser.error(f"--deadline must be a positive number of seconds, got {args.deadline:g}")
    if not (math.isfinite(args.budget_scale) and args.budget_scale > 0):  # (-1 and NaN gave every part a budget of none)
        parser.error(f"--budget-scale must be a positive number, got {args.budget_scale:g}")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":  # said before the parts, not only in the closing summary
        print("no CUDA device: every part runs on the CPU, against budgets meant for a GPU (--skip or --deadline bound it)")
    args.out.mkdir(parents=True, exist_ok=True)

    def write(report: dict[str, dict[str, Any]]) -> None:  # (atomically: a check killed meanwhile keeps the last report)
        from neurosym.training.checkpoint import save_json

        save_json(report, args.out / "device_check.json", default=str)  # (strict JSON: a NaN rate as null)
        _write_whole(args.out / "device_check.md", markdown(report, device))

    parts = [part for part in PARTS if part not in skipped]
    report = run_parts(parts, device, args.out, args.budget_scale, args.deadline, write)
    print(markdown(report, device))
    return 0 if all(found["status"] == "ok" for found in report.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
