"""The isolated Python environment in which DeepMind's ``mathematics_dataset`` generator runs.

The generator (PyPI ``mathematics-dataset`` 1.0.1) only runs with sympy 1.4 and numpy 1.23.5, which this
project's own environment cannot have. So a separate virtual environment is created on demand in the
cache, the pinned versions are installed there with pip, and the generator is driven as a subprocess
(see :mod:`neurosym.data.mathematics.generation`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from neurosym.data.mnist import cache_dir, path_variable
from neurosym.paths import user_path

GENERATOR_REQUIREMENTS: tuple[str, ...] = (
    "mathematics-dataset==1.0.1",
    "sympy==1.4",
    "numpy==1.23.5",
    "mpmath==1.4.1",
    "six",
    "absl-py",
)
_READY_MARKER = "neurosym-ready.txt"


ENV_VARIABLE = "NEUROSYM_MATHEMATICS_ENV"
"""Names the folder of the generator's environment (``make test`` keeps it in the repository's ``.cache/``)."""


def generator_env_dir() -> Path:
    """Where the generator's environment lives: ``$NEUROSYM_MATHEMATICS_ENV`` (a leading ``~`` the home folder), else
    ``<cache>/mathematics-env``."""
    return path_variable(ENV_VARIABLE) or cache_dir() / "mathematics-env"


def _env_dir(env_dir: str | os.PathLike | None) -> Path:
    """``env_dir`` as a ``Path`` (a string too), or the default :func:`generator_env_dir` for ``None``."""
    return generator_env_dir() if env_dir is None else user_path(env_dir)


def generator_python(env_dir: str | os.PathLike | None = None) -> Path:
    """The interpreter of the generator's environment (whether or not it exists yet)."""
    env_dir = _env_dir(env_dir)
    return env_dir / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def generator_env_ready(env_dir: str | os.PathLike | None = None) -> bool:
    """Whether the environment exists and its pinned requirements were installed completely."""
    env_dir = _env_dir(env_dir)
    marker = env_dir / _READY_MARKER
    return generator_python(env_dir).exists() and marker.is_file() and marker.read_text().split() == list(GENERATOR_REQUIREMENTS)


def ensure_generator_env(create: bool = True, env_dir: str | os.PathLike | None = None) -> Path:
    """Return the generator environment's interpreter, creating the environment first if needed.

    The environment is built in a sibling ``.partial`` folder and renamed into place only once pip has
    installed everything, so an interrupted build never looks ready. With ``create=False`` a missing
    environment raises :class:`FileNotFoundError` instead.
    """
    env_dir = _env_dir(env_dir)
    if generator_env_ready(env_dir):
        return generator_python(env_dir)
    if not create:
        raise FileNotFoundError(
            f"the mathematics_dataset generator environment is not ready at {env_dir}; "
            "create it with neurosym.data.mathematics.ensure_generator_env()"
        )
    partial = env_dir.with_name(env_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", str(partial)], "create the virtual environment")
    python = generator_python(partial)
    _run([str(python), "-m", "pip", "install", "--quiet", *GENERATOR_REQUIREMENTS], "pip-install the generator",
         f"without a package index, build the environment where pip works and name it in ${ENV_VARIABLE}, or read a "
         "released dataset folder instead (neurosym mathematics --data)")  # fmt: skip
    (partial / _READY_MARKER).write_text("\n".join(GENERATOR_REQUIREMENTS) + "\n")
    shutil.rmtree(env_dir, ignore_errors=True)
    os.replace(partial, env_dir)
    return generator_python(env_dir)


def _run(command: list[str], purpose: str, remedy: str = "") -> None:
    """Run ``command``; if it fails, raise ``RuntimeError`` naming ``purpose``, the command, the end of its error
    output and ``remedy``."""
    result = subprocess.run(command, capture_output=True, text=True, check=False)  # the error names the command
    if result.returncode != 0:
        raise RuntimeError(
            f"could not {purpose} for mathematics_dataset ({' '.join(command)}): {result.stderr.strip()[-800:]}"
            + (f"\n{remedy}" if remedy else "")
        )
