"""The README's quickstart is executable documentation: it must run as written."""

import re

from doc_blocks import ROOT, python_blocks

README = ROOT / "README.md"


def test_readme_starts_with_the_two_setup_commands():
    text = README.read_text()
    first_block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    assert [line.split()[0:2] for line in first_block.strip().splitlines()] == [["make", "run"], ["make", "test"]]


def test_readme_quickstart_runs():
    blocks = python_blocks(README)
    assert blocks, "README has no python quickstart"
    namespace: dict = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    assert namespace["y"].shape == (128, 1)
    assert namespace["loss"].requires_grad
