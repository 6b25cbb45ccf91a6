"""A tiny DeepMind Mathematics folder in the released format, so that no test needs the generator."""

import shutil
from pathlib import Path

from neurosym.data.mathematics import read_module_file
from neurosym.models.seq2seq.mathematics_task import TRAIN_REGIMES

FIXTURES = Path(__file__).resolve().parent / "data" / "mathematics"


def released_folder(root: Path) -> Path:
    """The committed fixture plus train-* folders holding the interpolation pairs in reverse order."""
    shutil.copytree(FIXTURES, root)
    for regime in TRAIN_REGIMES:
        (root / regime).mkdir()
        for module in ("arithmetic__mixed", "arithmetic__div"):
            pairs = read_module_file(root / "interpolate" / f"{module}.txt")[::-1]
            (root / regime / f"{module}.txt").write_text("".join(f"{q}\n{a}\n" for q, a in pairs))
    return root
