"""Generate DeepMind Mathematics questions on demand, in the released file layout, into a cache.

Generation runs DeepMind's own generator in its isolated environment
(:mod:`neurosym.data.mathematics.environment`) through the driver script
:mod:`neurosym.data.mathematics.generator_driver`, one subprocess per file. Output is deterministic for a
seed: each ``(regime, module)`` file gets its own seed derived from ``(seed, regime, module)``, Python's
``random`` and numpy are seeded with it, and ``PYTHONHASHSEED`` is fixed in the child. The generator keeps
state between questions that reseeding does not reset (in one process, a polynomial module's questions
changed after an algebra module's), so only a fresh process per file makes a file's questions independent
of the other files generated in the same call. Files are written as
``<root>/<regime>/<area>__<module>.txt`` with alternating question and answer lines; a cached file with at
least the requested number of pairs is reused (its first pairs are the same questions). The root records
its seed in :data:`SEED_RECORD`, and a root made with another seed is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from tqdm import tqdm

from neurosym.data.mathematics.environment import ensure_generator_env
from neurosym.data.mathematics.loader import check_module_name, count_pairs, module_path
from neurosym.data.mnist import cache_dir
from neurosym.paths import read_user_text, user_path
from neurosym.training.checks import int_at_least

REGIMES: tuple[str, ...] = ("train-easy", "train-medium", "train-hard", "train", "interpolate", "extrapolate")
"""The regimes the generator writes: the three training difficulties, ``train`` (training questions of every
difficulty), ``interpolate`` and ``extrapolate``."""
_DRIVER = Path(__file__).with_name("generator_driver.py")
_CHILD_HASH_SEED = "0"
SEED_RECORD = "neurosym-seed.txt"
"""The file in a root of generated questions that records the seed they were generated with."""


def generated_root(seed: int) -> Path:
    """The cache folder holding the files generated with ``seed``: ``<cache>/mathematics/seed-<seed>``."""
    return cache_dir() / "mathematics" / f"seed-{int_at_least(seed, 'seed', 0)}"


def job_seed(seed: int, regime: str, module: str) -> int:
    """The seed of one ``(regime, module)`` file, stable across runs and independent of other files."""
    digest = hashlib.sha256(f"{seed}:{regime}:{module}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def generate(
    requests: Iterable[tuple[str, str]],
    count: int,
    seed: int = 0,
    root: str | os.PathLike | None = None,
    progress: bool = False,
) -> Path:
    """Make sure ``count`` question/answer pairs exist for every ``(regime, module)`` in ``requests``.

    ``module`` is the released file stem, e.g. ``"arithmetic__mixed"``; ``regime`` is one of
    :data:`REGIMES`. Missing or too-short files are generated, each in a subprocess of its own (with
    ``progress``, under a tqdm bar over all questions). Returns the dataset root (default
    :func:`generated_root` of ``seed``). ``ValueError`` for a root whose :data:`SEED_RECORD` names another
    seed, or for a root other than the default that holds question files but no record.
    """
    count = int_at_least(count, "count", 1)  # (a float or bool would reach the generator's range())
    seed = int_at_least(seed, "seed", 0)  # (True and 1.5 would name other files than 1)
    root = generated_root(seed) if root is None else user_path(root)
    requested = dict.fromkeys(_request(request) for request in requests)
    _record_seed(root, seed)
    todo: list[dict] = []
    for regime, module in requested:
        path = module_path(root, regime, module)
        if not path.is_file() or count_pairs(path) < count:
            todo.append({"regime": regime, "module": module, "count": count, "seed": job_seed(seed, regime, module)})
    if todo:
        _run_driver(todo, root, progress)
    return root


def _record_seed(root: Path, seed: int) -> None:
    """Record ``seed`` in ``root``, or raise ``ValueError`` when ``root`` holds questions of another or an unknown seed.

    The default root of a seed (:func:`generated_root`) has the seed in its name: its files, made before seeds were
    recorded, are taken as that seed's.
    """
    record = root / SEED_RECORD
    if record.is_file():
        recorded = read_user_text(record, "seed record").strip()  # (written by hand: maybe in Notepad, with a mark)
        if recorded != str(seed):  # (its files were reused: seed 1 read seed 0's questions)
            raise ValueError(
                f"{root} holds questions generated with seed {recorded} ({record}), not {seed}: generate into another "
                f"root (generated_root({seed}) is the default)"
            )
        return
    if root.resolve() != generated_root(seed).resolve() and any(any((root / regime).glob("*.txt")) for regime in REGIMES):
        raise ValueError(
            f"{root} holds question files but no record of the seed they were generated with ({SEED_RECORD}): generate "
            f"into another root, or write that seed into {record}"
        )
    root.mkdir(parents=True, exist_ok=True)
    record.write_text(f"{seed}\n", encoding="ascii")


def _request(request: object) -> tuple[str, str]:
    """``request`` as a ``(regime, module)`` pair of strings with a known regime, else ``ValueError``."""
    if not (isinstance(request, tuple | list) and len(request) == 2 and all(isinstance(part, str) for part in request)):
        raise ValueError(f"each request must be a (regime, module) pair of strings, got {request!r}")
    regime, module = request
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; expected one of {REGIMES}")
    return regime, check_module_name(module)


def _run_driver(jobs: Sequence[dict], root: Path, progress: bool) -> None:
    """Generate each of ``jobs`` in a subprocess of its own, under one tqdm bar over all their questions."""
    python = ensure_generator_env()
    with tqdm(total=sum(job["count"] for job in jobs), desc="generating questions", unit="q", disable=not progress) as bar:
        for job in jobs:
            _run_job(python, job, root, bar)


def _run_job(python: Path, job: dict, root: Path, bar: tqdm) -> None:
    """Run the driver on one job and write its file; ``RuntimeError`` with the reason when the generator fails."""
    env = {**os.environ, "PYTHONHASHSEED": _CHILD_HASH_SEED}
    command = [str(python), str(_DRIVER), json.dumps(job)]
    with tempfile.TemporaryFile("w+") as errors:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, env=env) as child:
            output = child.stdout
            assert output is not None  # (stdout=PIPE)
            try:
                written = _write_job(output, job, root, bar)
            finally:
                output.close()
                child.wait()
        errors.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"mathematics_dataset generation failed: {errors.read().strip()[-4000:]}")
    if written < job["count"]:
        raise RuntimeError(f"the generator stopped early for {job['regime']}/{job['module']} ({written} of {job['count']})")


def _write_job(lines: Iterable[str], job: dict, root: Path, bar: tqdm) -> int:
    """Stream the driver's JSON lines into a ``.partial`` file, renamed into place once ``job["count"]`` pairs came.

    Returns the number of pairs received; an incomplete job leaves no file behind.
    """
    target = module_path(root, job["regime"], job["module"])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    written = 0
    try:
        with open(partial, "w", encoding="ascii") as file:
            for number, line in enumerate(lines, start=1):
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    raise RuntimeError(f"line {number} from the generator is not a JSON record: {line[:200]!r}") from None
                file.write(f"{record['question']}\n{record['answer']}\n")
                written += 1
                bar.update(1)
        if written >= job["count"]:
            os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return written
