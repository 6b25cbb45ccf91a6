"""A path given to a library function that opens with ``~`` names a file under the home folder, as a shell reads
it and as the command line's options and the environment's variables read it: ``load_mnist("~/m.pkl.gz")`` looked in
a folder named ``~`` in the working folder."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pvr_fakes import write_fake_mnist
from torch import nn

from neurosym.paths import user_path


def _json(home: Path) -> None:
    from neurosym.training.checkpoint import load_json, save_json

    assert save_json({"run": 1}, "~/results/run.json") == home / "results" / "run.json"
    assert load_json(home / "results" / "run.json") == load_json("~/results/run.json") == {"run": 1}


def _checkpoint(home: Path) -> None:
    from neurosym.training import load_checkpoint, save_checkpoint

    assert save_checkpoint({"step": 3}, "~/checkpoint.pt") == home / "checkpoint.pt"
    assert load_checkpoint("~/checkpoint.pt") == {"step": 3}


def _reader(home: Path) -> None:
    from neurosym.perception.saved_reader import load_reader
    from neurosym.training import save_checkpoint

    reader = nn.Linear(2, 3)
    save_checkpoint({"model": nn.Linear(2, 3).state_dict(), "step": 1}, home / "reader.pt")
    assert load_reader("~/reader.pt", reader, finished=False) is reader


def _mnist(home: Path) -> None:
    from neurosym.data.mnist import load_mnist

    write_fake_mnist(home / "mnist.pkl.gz", per_class=1)
    assert load_mnist("~/mnist.pkl.gz", download=False).test_images.shape == (10, 28, 28)


def _mathematics(home: Path) -> None:
    from neurosym.data.mathematics import load_split

    (home / "release" / "interpolate").mkdir(parents=True)
    (home / "release" / "interpolate" / "arithmetic__add_or_sub.txt").write_text("What is 1 + 1?\n2\n")
    [example] = load_split("~/release", "interpolate")
    assert (example.question, example.answer) == ("What is 1 + 1?", "2")


def _hint_release(home: Path) -> None:
    from neurosym.data.hint import HintSplit, load_release, main_split, read_records, write_release

    splits = main_split(scale=0.001, cache_root="~/cache")
    assert all(path.name.startswith("main_") for path in (home / "cache").iterdir())
    splits["train"].save("~/train.npz")
    assert list(HintSplit.load("~/train.npz")) == list(splits["train"])
    write_release("~/release", {name: list(split) for name, split in splits.items()})
    assert read_records("~/release/expr_val.json") == list(splits["val"])
    assert load_release("~/release", dict.fromkeys(("train", "val", "test"), 1.0), images=False)[0]["test"]


def _symbol_images(home: Path) -> None:
    from neurosym.data.symbol_images import load_folder_bank, load_npz_bank
    from neurosym.data.symbol_images.folder import read_image, write_folder_bank, write_image

    image = np.full((4, 4), 200, dtype=np.uint8)
    write_image("~/images/one.png", image)
    np.testing.assert_array_equal(read_image("~/images/one.png"), image)
    np.savez(home / "bank.npz", images=np.zeros((8, 28, 28), dtype=np.uint8), labels=np.array(list("01234567")))
    bank = load_npz_bank("~/bank.npz")
    assert len(bank.labels) == 8
    write_folder_bank(bank, "~/folder", size=8)
    assert sorted(load_folder_bank("~/folder", size=8).paths.tolist()) == sorted(bank.paths.tolist())


def _handwriting(home: Path) -> None:
    from neurosym.data.symbol_images.handwriting import HANDWRITTEN_ARCHIVE, handwritten_symbols

    (home / "symbols.npz").symlink_to(HANDWRITTEN_ARCHIVE)
    assert handwritten_symbols("~/symbols.npz") is handwritten_symbols()


def _grammar(home: Path) -> None:
    from neurosym.syntax import SymbolGrammar

    (home / "digits.lark").write_text('start: DIGIT+\nDIGIT: "0".."9"\n')
    assert SymbolGrammar("~/digits.lark").source_path == str(home / "digits.lark")


def _grounding(home: Path) -> None:
    from neurosym.pipelines.grounding import Grounding
    from neurosym.semantics.induction import Program

    grounding = Grounding(("number", "operator", "open", "close"), {0: 1}, {1: Program(("+", ("i",), ("j",)))}, {1: 1})
    assert grounding.save("~/grounding.json") == home / "grounding.json"
    assert Grounding.load("~/grounding.json") == grounding


def _trained_run(home: Path) -> None:
    from neurosym.experiments.hint_pipeline import trained_hint_pipeline

    (home / "run").mkdir()
    with pytest.raises(ValueError, match=f"^{home / 'run'} holds no checkpoint.pt"):  # (not: it does not exist)
        trained_hint_pipeline("~/run")


def _figure(home: Path) -> None:
    from neurosym.plots.figure import pyplot, save_figure

    assert save_figure(pyplot().figure(), "~/plots/empty.png") == home / "plots" / "empty.png"
    assert (home / "plots" / "empty.png").stat().st_size > 0


def _generator_env(home: Path) -> None:
    from neurosym.data.mathematics import generator_env_ready
    from neurosym.data.mathematics.environment import generator_python

    assert generator_python(env_dir="~/env").parent.parent == home / "env"
    assert not generator_env_ready(env_dir="~/env")


@pytest.mark.parametrize(
    "use",
    [_json, _checkpoint, _reader, _mnist, _mathematics, _hint_release, _symbol_images, _handwriting, _grammar,
     _grounding, _trained_run, _figure, _generator_env],
    ids=lambda use: use.__name__.strip("_"),
)  # fmt: skip
def test_a_path_a_library_function_is_given_opens_with_the_home_folder(
    use: Callable[[Path], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(work)
    use(home)
    assert list(work.iterdir()) == []  # (no folder named ~ in the working folder)


def test_a_user_path_is_the_same_file_when_given_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder named ``~``, given as ``./~`` (which a shell leaves as written), came back as ``~``, which the next
    function it was given read as the home folder; a ``~user`` of no user stays as written."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert user_path("~/a") == tmp_path / "home" / "a" and user_path(Path("~")) == tmp_path / "home"
    assert user_path("./~/a") == user_path(user_path("./~/a")) == tmp_path / "~" / "a"
    assert user_path("~nosuchuser/a") == user_path(user_path("~nosuchuser/a")) == tmp_path / "~nosuchuser" / "a"
    assert user_path("a/~") == Path("a/~") and user_path("") == Path()
    with pytest.raises(TypeError):
        user_path(os)  # type: ignore[arg-type]
