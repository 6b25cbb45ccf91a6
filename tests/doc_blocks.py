"""The python blocks of the README and docs/, for the tests that run them as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def python_blocks(path: Path) -> list[str]:
    """The ```python blocks of the Markdown file ``path``, in order."""
    return re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)
