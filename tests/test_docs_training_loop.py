"""docs/transformers.md's loop of one's own (run_training and its pieces) runs as written and resumes."""

from dataclasses import dataclass

import torch
from doc_blocks import DOCS, python_blocks

DOC = DOCS / "transformers.md"


@dataclass
class Config:
    learning_rate: float = 1e-3


def _block() -> str:
    blocks = python_blocks(DOC)
    return next(block for block in blocks if "run_training(" in block)


def test_the_documented_loop_trains_checkpoints_and_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # its checkpoint goes to results/own_loop.pt
    model = torch.nn.Linear(3, 1)

    def step(index: int) -> tuple[torch.Tensor, dict]:
        x = torch.randn(16, 3, generator=torch.Generator().manual_seed(index)).to(model.weight.device)
        return ((model(x) - x.sum(1, keepdim=True)) ** 2).mean(), {}

    block = _block().replace("max_steps=10_000", "max_steps=600")
    namespace = {"model": model, "config": Config(), "step": step}
    before = step(10_000)[0].item()
    exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["result"].step == 600 and (tmp_path / "results" / "own_loop.pt").is_file()
    assert step(10_000)[0].item() < before / 2  # it learns the sum
    exec(compile(block, str(DOC), "exec"), namespace)  # the checkpoint is finished: nothing left to train
    assert namespace["result"].steps_this_call == 0
