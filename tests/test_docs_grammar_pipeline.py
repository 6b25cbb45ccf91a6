"""docs/grammar_pipeline.md's own task (binary numbers from handwritten bits) runs as written and learns."""

import re
from pathlib import Path

import torch

DOC = Path(__file__).resolve().parents[1] / "docs" / "grammar_pipeline.md"


def test_the_user_task_in_the_docs_is_short_and_learns_from_values_alone(one_thread, capsys):
    block = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)[0]
    assert len(block.strip().splitlines()) <= 40
    namespace: dict = {}
    exec(compile(block, str(DOC), "exec"), namespace)
    scores = namespace["evaluate_grammar_pipeline"](
        namespace["pipeline"], namespace["numbers"]("test", 500, seed=2), torch.device("cpu")
    )
    assert scores["symbol"] > 0.95 and scores["accuracy"] > 0.8  # chance: 0.5 and 1/64
    assert "accuracy" in capsys.readouterr().out
