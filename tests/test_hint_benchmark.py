"""The HINT baselines runner: end to end on a tiny split, resume, exact-match scoring, neurosym hook."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hint_banks import pool_shaded_bank
from torch.utils.data import DataLoader

from neurosym.cli import main
from neurosym.data.hint import EVAL_SUBSETS, IGNORE_INDEX, HintSymbolDataset, collate_hint, main_split
from neurosym.data.hint.torch_data import DEFAULT_SYMBOLS, result_digits
from neurosym.experiments import hint, hint_pipeline, hint_sources
from neurosym.experiments.hint_options import HintOptions
from neurosym.experiments.options import add_options, options_from
from neurosym.layers import MultiheadAttention
from neurosym.models.seq2seq import BoundaryMarkers, TransformerSeq2Seq
from neurosym.models.seq2seq.hint_baseline import build_baseline
from neurosym.models.seq2seq.hint_task import BOS, EOS, answer_expressions, exact_match_by_subset
from neurosym.models.seq2seq.targets import align_for_exact_match, teacher_forcing_pair
from neurosym.syntax import ParseError
from neurosym.training import load_checkpoint, save_checkpoint

TINY = [
    "--scale",
    "0.002",
    "--batch-size",
    "8",
    "--eval-every",
    "2",
    "--embedding",
    "16",
    "--hidden",
    "32",
    "--encoder-layers",
    "1",
    "--eval-batch-size",
    "64",
    "--no-progress",
    "--device",
    "cpu",
]
TINY_TRANSFORMER = [*TINY, "--dim", "16", "--heads", "2"]  # (options the RNNs refuse: they would ignore them)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated splits go to a temporary cache, never to the user's."""
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))


def test_runner_trains_reports_and_resumes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["hint", "--model", "transformer_rel_uni", "--steps", "2", "--out", str(out), *TINY_TRANSFORMER]) == 0
    result = json.loads((out / "transformer_rel_uni_symbol.json").read_text())
    assert result["steps"] == 2 and set(result["accuracy"]) == {"I", "SS", "LS", "SL", "LL", "avg"}
    assert all(0.0 <= v <= 100.0 for v in result["accuracy"].values())
    assert result["published"]["avg"] == 61.5
    arguments = result["arguments"]  # the options as JSON holds them (each was a str: "0", "None")
    assert arguments["seed"] == 0 and arguments["time_limit"] is None and arguments["out"] == str(out)
    assert (out / "transformer_rel_uni_symbol.png").stat().st_size > 0
    assert capsys.readouterr().out.endswith(
        f"Results in {out}: transformer_rel_uni_symbol.json, transformer_rel_uni_symbol.png\n"
    )
    checkpoint = out / "transformer_rel_uni_symbol.pt"
    state = load_checkpoint(checkpoint)
    state["loop"]["history"][0]["loss"] = 123.0  # a marker that only a resumed run can report
    save_checkpoint(state, checkpoint)
    assert main(["hint", "--model", "transformer_rel_uni", "--steps", "4", "--out", str(out), *TINY_TRANSFORMER]) == 0
    resumed = json.loads((out / "transformer_rel_uni_symbol.json").read_text())
    assert [(h["step"], h["loss"] == 123.0) for h in resumed["history"]] == [(2, True), (4, False)]
    assert load_checkpoint(checkpoint)["setup"]["heads"] == 2


def test_avg_is_the_exact_match_over_the_whole_test_set_as_the_papers(tmp_path: Path, monkeypatch) -> None:
    # HINT's "Avg." scores every test example alike (the release's result_acc/avg), not the mean of the five subsets
    from neurosym.models.seq2seq import hint_baseline

    scores = {"I": 90.0, "SS": 80.0, "LS": 10.0, "SL": 10.0, "LL": 10.0, "all": 42.0}  # the subsets' mean: 40
    monkeypatch.setattr(hint_baseline, "exact_match_by_subset", lambda *args: dict(scores))
    out = tmp_path / "out"
    assert main(["hint", "--model", "gru", "--steps", "2", "--out", str(out), *TINY]) == 0
    accuracy = json.loads((out / "gru_symbol.json").read_text())["accuracy"]
    assert accuracy == {subset: scores[subset] for subset in EVAL_SUBSETS} | {"avg": 42.0}


def test_a_finished_run_read_back_scores_and_answers_as_the_run_did(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["hint", "--model", "gru", "--steps", "6", "--out", str(out), *TINY]) == 0
    reported = json.loads((out / "gru_symbol.json").read_text())["accuracy"]
    model = hint.trained_baseline(out, "gru")  # the best validation weights, as the table reports them
    test = main_split(scale=0.002, seed=0)["test"]
    batches = DataLoader(HintSymbolDataset(test), batch_size=64, collate_fn=collate_hint)
    scores = exact_match_by_subset(model, batches, False, torch.device("cpu"))
    assert all(scores.get(subset, math.nan) == pytest.approx(reported[subset], nan_ok=True) for subset in EVAL_SUBSETS)
    answers = answer_expressions(model, [" ".join(record.expr) for record in test])  # (spaces, as a user may write)
    assert np.mean([answer == record.res for answer, record in zip(answers, test)]) == pytest.approx(scores["all"] / 100)
    with pytest.raises(ValueError, match="symbol '&' at position 1 of '3&4' is not in the vocabulary"):
        answer_expressions(model, ["3&4"])
    with pytest.raises(ParseError, match="position 3"):  # (answered, as the model answers any string)
        answer_expressions(model, ["3+("])
    with pytest.raises(TypeError, match="answer_expressions takes a list of sentences, got one str '3\\+4': give \\['3\\+4'\\]"):
        answer_expressions(model, "3+4")  # (was read as three expressions, '3', '+' and '4')
    with pytest.raises(ValueError, match="holds no gru_image.pt"):
        hint.trained_baseline(out, "gru", "image")


def test_answers_encode_as_the_training_data_and_read_the_digits_least_significant_first(monkeypatch) -> None:
    records = list(main_split(scale=0.002, seed=0)["test"])[:20]
    model = build_baseline("gru", "symbol", len(DEFAULT_SYMBOLS) + 1, embedding=8, hidden=8, encoder_layers=1)
    expected = collate_hint([HintSymbolDataset(records)[k] for k in range(len(records))])

    def decode(src, src_mask, max_len, bos, eos):  # the true results, as a perfect model would decode them
        assert torch.equal(src, expected["tokens"]) and torch.equal(src_mask, ~expected["mask"])
        rows = [[*result_digits(record.res), eos] for record in records]
        rows[0] = [eos]  # nothing decoded: no number
        return torch.tensor([row + [eos] * (max_len - len(row)) for row in rows])

    monkeypatch.setattr(model, "greedy_decode", decode)
    assert answer_expressions(model, [record.expr for record in records]) == [None, *(record.res for record in records[1:])]


def test_an_answer_decoded_without_its_end_is_none_and_max_digits_is_checked(monkeypatch) -> None:
    model = build_baseline("gru", "symbol", len(DEFAULT_SYMBOLS) + 1, embedding=8, hidden=8, encoder_layers=1)
    lengths = []

    def decode(src, src_mask, max_len, bos, eos):  # two digits then the end; digits to the last token, no end
        lengths.append(max_len)
        return torch.tensor([[3, 2, eos], [2, 3, 3]])

    monkeypatch.setattr(model, "greedy_decode", decode)
    assert answer_expressions(model, ["4*5+3", "1+1"], max_digits=np.int64(2)) == [23, None]  # (was 332: 3 digits)
    assert lengths == [3]
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match=f"max_digits must be an int of at least 1, got {bad!r}"):
            answer_expressions(model, ["1+1"], max_digits=bad)


def test_an_answer_is_right_exactly_where_exact_match_scores_it_right(monkeypatch) -> None:
    model = build_baseline("gru", "symbol", len(DEFAULT_SYMBOLS) + 1, embedding=8, hidden=8, encoder_layers=1)
    sentences, results = ["2+3", "2+3", "9-9", "9-9", "5*2"], [5, 5, 0, 0, 10]
    decoded = torch.tensor([[5, EOS, EOS], [5, 0, EOS], [0, EOS, EOS], [0, 0, EOS], [0, 1, EOS]])  # 5, 05, 0, 00, 10
    monkeypatch.setattr(model, "greedy_decode", lambda src, src_mask, max_len, bos, eos: decoded[:, :max_len])
    answers = answer_expressions(model, sentences)
    assert answers == [5, None, 0, None, 10]  # (05 and 00 were read as 5 and 0: right answers, scored wrong)
    encoded = [HintSymbolDataset([]).encode(sentence) for sentence in sentences]
    batch = {
        "tokens": torch.nn.utils.rnn.pad_sequence(encoded, batch_first=True),
        "mask": torch.ones(len(sentences), 3, dtype=torch.bool),
        "res_digits": torch.nn.utils.rnn.pad_sequence(
            [torch.tensor(result_digits(result)) for result in results], batch_first=True, padding_value=IGNORE_INDEX
        ),
        "eval": ["I"] * len(sentences),
    }
    scores = exact_match_by_subset(model, [batch], False, torch.device("cpu"))
    assert scores["all"] == pytest.approx(100 * np.mean([answer == result for answer, result in zip(answers, results)]))


def test_answers_are_decoded_in_evaluation_mode_and_each_module_keeps_its_mode(monkeypatch) -> None:
    model = build_baseline("gru", "symbol", len(DEFAULT_SYMBOLS) + 1, embedding=8, hidden=8, encoder_layers=1)
    model.train()
    frozen = next(module for module in model.modules() if module is not model)
    frozen.eval()
    modes = {name: module.training for name, module in model.named_modules()}
    seen = []

    def decode(src, src_mask, max_len, bos, eos):
        seen.append(any(module.training for module in model.modules()))
        return torch.tensor([[1, eos]])

    monkeypatch.setattr(model, "greedy_decode", decode)
    assert answer_expressions(model, ["1"]) == [1]
    assert seen == [False]  # (was decoded in training mode: dropout changed the answers from call to call)
    assert {name: module.training for name, module in model.named_modules()} == modes


def test_exact_match_decodes_in_evaluation_mode_and_each_module_keeps_its_mode(monkeypatch) -> None:
    torch.manual_seed(0)
    model = build_baseline("transformer", "symbol", len(DEFAULT_SYMBOLS) + 1, embedding=8, dim=16, heads=2, dropout=0.9)
    model.train()
    frozen = next(module for module in model.modules() if module is not model)
    frozen.eval()
    modes = {name: module.training for name, module in model.named_modules()}
    sentences = ["2+3", "9-9", "5*2", "7*8"]
    batch = {
        "tokens": torch.nn.utils.rnn.pad_sequence([HintSymbolDataset([]).encode(s) for s in sentences], batch_first=True),
        "mask": torch.ones(len(sentences), 3, dtype=torch.bool),
        "res_digits": torch.tensor([[5, IGNORE_INDEX], [0, IGNORE_INDEX], [0, 1], [6, 5]]),
        "eval": ["I"] * len(sentences),
    }
    decode, seen = model.greedy_decode, []

    def spy(*args, **kwargs):
        seen.append((any(module.training for module in model.modules()), decode(*args, **kwargs)))
        return seen[-1][1]

    monkeypatch.setattr(model, "greedy_decode", spy)
    for _ in range(5):
        exact_match_by_subset(model, [batch], False, torch.device("cpu"))
    assert [training for training, _ in seen] == [False] * 5  # (was decoded in training mode, dropout on)
    assert all(torch.equal(decoded, seen[0][1]) for _, decoded in seen)
    assert {name: module.training for name, module in model.named_modules()} == modes


def test_bad_input_found_once_work_began_is_one_line_unless_a_traceback_is_asked_for(tmp_path: Path, capsys, monkeypatch) -> None:
    command = ["hint", "--model", "gru", "--steps", "1", "--out", str(tmp_path / "out"), *TINY, "--batch-size", "5000"]
    assert main(command) == 1
    message = capsys.readouterr().err
    assert message.count("\n") == 1 and "smaller than one batch (5000)" in message and "NEUROSYM_TRACEBACK=1" in message
    monkeypatch.setenv("NEUROSYM_TRACEBACK", "1")
    with pytest.raises(ValueError, match="smaller than one batch"):
        main(command)


def test_a_resume_under_other_model_or_data_options_is_refused(tmp_path: Path, capsys) -> None:
    """Other heads leave every weight's shape alone, another bank or scale every model: only the setup tells."""
    out = tmp_path / "out"
    command = ["hint", "--model", "transformer", "--steps", "2", "--out", str(out), *TINY_TRANSFORMER]
    assert main(command) == 0
    for other, differing in [
        (["--heads", "4"], "heads 2 there, 4 now"),
        (["--dropout", "0.3"], "dropout"),
        (["--scale", "0.004"], "scale"),
    ]:
        assert main([*command, "--steps", "4", *other]) == 2
        message = capsys.readouterr().err
        assert "was written for another model or data" in message and differing in message and "--no-resume" in message
    assert main([*command, "--steps", "4"]) == 0  # the same options resume


def test_a_model_option_given_at_its_default_resumes_a_run_started_without_it_and_the_other_way_round(
    tmp_path: Path, capsys
) -> None:
    """A vanilla Transformer's --dropout is 0.1 and its --embedding-dropout on when they are not given: given so, it is
    the same model (was refused: "dropout None there, 0.1 now")."""
    out = tmp_path / "out"
    command = ["hint", "--model", "transformer", "--out", str(out), *TINY_TRANSFORMER]
    assert main([*command, "--steps", "2"]) == 0
    assert main([*command, "--steps", "3", "--dropout", "0.1", "--embedding-dropout"]) == 0
    assert main([*command, "--steps", "4"]) == 0  # the checkpoint now holds the options given
    assert json.loads((out / "transformer_symbol.json").read_text())["steps"] == 4
    assert main([*command, "--steps", "5", "--dropout", "0.5"]) == 2  # (0.5: the RNNs' default, another model here)
    assert "(dropout differ): dropout 0.1 there, 0.5 now" in capsys.readouterr().err


def test_time_limit_exits_75_without_results_and_the_same_command_continues(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    command = ["hint", "--model", "gru", "--steps", "3", "--out", str(out), *TINY]
    assert main([*command, "--time-limit", "0"]) == 75
    assert "training stopped after step 1 of 3 (time limit)" in capsys.readouterr().err
    assert not (out / "gru_symbol.json").exists() and (out / "gru_symbol.pt").exists()
    assert main(command) == 0
    assert json.loads((out / "gru_symbol.json").read_text())["steps"] == 3


def test_an_unfinished_run_is_not_read_back_and_one_out_of_patience_is(tmp_path: Path) -> None:
    out = tmp_path / "out"
    command = ["hint", "--model", "gru", "--steps", "40", "--patience", "1", "--out", str(out), *TINY]
    for step in (1, 2):  # before any evaluation, then after the first (was read back: step 1's or step 2's weights)
        assert main([*command, "--time-limit", "0"]) == 75
        with pytest.raises(
            ValueError,
            match=f"gru_symbol.pt is of an unfinished run, stopped after step {step} of 40: rerun the command that trained it",
        ):
            hint.trained_baseline(out, "gru")
    assert main(command) == 0
    saved = load_checkpoint(out / "gru_symbol.pt")
    assert saved["step"] < 40 and saved["loop"]["bad_evaluations"] == 1  # stopped early: patience ran out
    weights = hint.trained_baseline(out, "gru").state_dict()
    assert all(torch.equal(weights[name], value) for name, value in saved["loop"]["best_model"].items())


def test_image_input_runs_with_the_small_cnn(tmp_path: Path) -> None:
    """A tiny random bank in the .npz format stands in for MNIST, so nothing is downloaded."""
    rng = np.random.default_rng(0)
    labels = np.repeat(np.array(list("0123456789+-*/()")), 6)
    bank = tmp_path / "bank.npz"
    np.savez(
        bank,
        images=rng.integers(0, 256, (len(labels), 28, 28), dtype=np.uint8),
        labels=labels,
        splits=np.tile(np.array(["train", "train", "train", "train", "val", "test"]), 16),
    )
    out = tmp_path / "out"
    args = [
        "hint",
        "--model",
        "gru_att",
        "--input",
        "image",
        "--cnn",
        "small",
        "--steps",
        "1",
        "--out",
        str(out),
        "--bank",
        str(bank),
    ]
    assert main([*args, *TINY]) == 0
    assert json.loads((out / "gru_att_image.json").read_text())["published"]["avg"] == 35.9


def test_a_resume_under_another_or_a_rewritten_mnist_file_is_refused(tmp_path: Path, monkeypatch, capsys) -> None:
    """The default bank's digits are $NEUROSYM_MNIST's: a checkpoint trained on one file resumed silently on another."""
    monkeypatch.setattr(hint_sources, "default_bank", lambda seed: pool_shaded_bank())  # (the file's digits aside)
    first, second = tmp_path / "first.pkl.gz", tmp_path / "second.pkl.gz"
    first.write_bytes(b"first")
    second.write_bytes(b"second")
    command = ["hint", "--model", "gru", "--input", "image", "--cnn", "small", "--out", str(tmp_path / "out"), *TINY]
    monkeypatch.setenv("NEUROSYM_MNIST", str(first))
    assert main([*command, "--steps", "1"]) == 0
    monkeypatch.setenv("NEUROSYM_MNIST", str(second))
    assert main([*command, "--steps", "2"]) == 2
    assert "another model or data (NEUROSYM_MNIST.files, NEUROSYM_MNIST.path differ)" in capsys.readouterr().err
    monkeypatch.setenv("NEUROSYM_MNIST", str(first))
    first.write_bytes(b"rewritten")
    assert main([*command, "--steps", "2"]) == 2
    assert "(NEUROSYM_MNIST.files differ)" in capsys.readouterr().err
    first.write_bytes(b"first")
    assert main([*command, "--steps", "2", "--no-resume"]) == 0
    assert main([*command, "--steps", "3"]) == 0  # the same file resumes
    symbols = HintOptions(model="gru", input="image", bank=str(tmp_path / "bank.npz"))
    assert symbols.mnist_file() is None and HintOptions(model="gru").mnist_file() is None  # (no MNIST digit read)


class Oracle(torch.nn.Module):
    """Decodes the right answer for the first ``right`` examples of every batch and garbage otherwise."""

    def __init__(self, answers: torch.Tensor, right: int) -> None:
        super().__init__()
        self.answers, self.right = answers, right

    def greedy_decode(self, src, src_mask, max_len, bos, eos):
        decoded = self.answers.masked_fill(self.answers == IGNORE_INDEX, eos)[:, :max_len].clone()
        decoded[self.right :, 0] = (decoded[self.right :, 0] + 1) % 10
        return decoded


def test_exact_match_is_counted_per_subset() -> None:
    digits = torch.tensor([[3, -100], [1, 2], [0, -100], [9, 9]])
    _, tgt_out = teacher_forcing_pair(digits, BOS, EOS)
    batch = {
        "tokens": torch.ones(4, 3, dtype=torch.long),
        "mask": torch.ones(4, 3, dtype=torch.bool),
        "res_digits": digits,
        "eval": ["I", "I", "LL", "LL"],
    }
    scores = exact_match_by_subset(Oracle(tgt_out, right=3), [batch], False, torch.device("cpu"))
    assert scores == {"all": 75.0, "I": 100.0, "LL": 50.0}
    three = {key: value[:3] for key, value in batch.items()}
    assert exact_match_by_subset(Oracle(tgt_out[:3], right=1), [three], False, torch.device("cpu"))["all"] == 100 * (1 / 3)
    empty = {"tokens": batch["tokens"][:0], "mask": batch["mask"][:0], "res_digits": digits[:0], "eval": []}
    for batches in ([], [empty, empty]):  # (empty batches gave {"all": nan})
        with pytest.raises(ValueError, match="the batches hold no example to evaluate"):
            exact_match_by_subset(Oracle(tgt_out[:0], right=0), batches, False, torch.device("cpu"))
    message = r"the batch holds no 'images' for a model of image input \(it holds eval, mask, res_digits, tokens\)"
    with pytest.raises(ValueError, match=message):  # (a KeyError: 'images')
        exact_match_by_subset(Oracle(tgt_out, right=3), [batch], True, torch.device("cpu"))


def test_a_prediction_without_end_token_is_wrong() -> None:
    _, tgt_out = teacher_forcing_pair(torch.tensor([[4, 2]]), BOS, EOS)
    decoded, expected = align_for_exact_match(torch.tensor([[4, 2, 7]]), tgt_out, EOS)
    assert not torch.equal(decoded, expected)
    with pytest.raises(ValueError, match="max_len >= 3"):
        align_for_exact_match(torch.tensor([[4, 2]]), tgt_out, EOS)
    with pytest.raises(ValueError, match=r"must hold the same B rows, got \[2, 3\] and \[1, 3\]"):  # (was scored)
        align_for_exact_match(torch.tensor([[4, 2, EOS], [4, 2, EOS]]), tgt_out, EOS)


def test_teacher_forcing_reads_the_tokens_of_a_row_wherever_its_padding_is() -> None:
    right = teacher_forcing_pair(torch.tensor([[4, 2, -100, -100], [7, 5, 3, 1]]), BOS, EOS)
    scattered = teacher_forcing_pair(torch.tensor([[-100, 4, -100, 2], [7, 5, 3, 1]]), BOS, EOS)
    for expected, got in zip(right, scattered):
        assert torch.equal(got, expected)
    assert right[1][0].tolist() == [4, 2, EOS, -100, -100]


def test_the_neurosym_model_runs_the_pipelines_runner_with_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hint_pipeline, "run", lambda args: {"ran": args.model, "changes": args.abduction_changes})
    options = _defaults("--model", "neurosym", "--input", "image", "--abduction-changes", "5")
    assert hint.run(options) == {"ran": "neurosym", "changes": 5}


def _defaults(*argv: str) -> HintOptions:
    """The options of ``neurosym hint ARGV`` as the command builds them (unlisted study knobs included)."""
    parser = argparse.ArgumentParser()
    add_options(parser, HintOptions)
    return options_from(HintOptions, parser.parse_args(list(argv)))


def test_default_transformer_is_the_hint_release_configuration() -> None:
    """``sweeps/transformer.yaml`` of the HINT release: embeddings 128, width 512, 8 heads, feed-forward
    4 × 512, post-norm, dropout 0.1, XL attention with distances clipped at 15, one layer applied 6 times
    without step embeddings, 1 decoder layer."""
    model = hint.build_model(_defaults(), source_vocab=17)
    assert model.front_end.dim == 128 and model.dim == 512
    assert (model.source_projection.in_features, model.source_projection.out_features) == (128, 512)
    assert (model.target_projection.in_features, model.target_projection.out_features) == (128, 512)
    shared = model.encoder.layer
    assert model.encoder.depth == 6 and not model.encoder.step_embedding
    assert shared.self_attention.heads == 8
    assert shared.self_attention.relative == "xl" and shared.self_attention.clipped
    assert shared.self_attention.max_rel_pos == 15  # the release's max_rel_pos clips the XL distances
    decoder_self = model.decoder.layers[0].self_attention
    assert decoder_self.clipped and decoder_self.max_rel_pos == 15
    assert (shared.feed_forward[0].in_features, shared.feed_forward[0].out_features) == (512, 2048)
    assert not shared.attention_block.pre_norm and not shared.feed_forward_block.pre_norm
    assert isinstance(model.encoder_norm, torch.nn.Identity)
    assert len(model.decoder.layers) == 1
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {0.1}


def test_default_rnn_is_the_hint_release_configuration() -> None:
    """``sweeps/rnn.yaml``: 512 units, 3 encoder layers, dropout 0.5, embeddings 128 (decoder: 1 layer, #4)."""
    model = hint.build_model(_defaults("--model", "lstm_att"), source_vocab=17)
    assert model.encoder.hidden_size == 512 and model.encoder.num_layers == 3 and model.encoder.dropout == 0.5
    assert model.encoder.input_size == 128 and model.decoder.num_layers == 1
    assert model.dropout.p == 0.5


def test_model_size_options_reach_the_model() -> None:
    args = _defaults(
        "--embedding",
        "32",
        "--dim",
        "64",
        "--hidden",
        "96",
        "--heads",
        "4",
        "--norm",
        "pre",
        "--dropout",
        "0.2",
        "--encoder-layers",
        "2",
        "--step-embedding",
    )
    model = hint.build_model(args, source_vocab=17)
    assert model.front_end.dim == 32 and model.dim == 64 and model.encoder.depth == 2 and model.encoder.step_embedding
    assert model.encoder.layer.self_attention.heads == 4 and model.encoder.layer.feed_forward[0].out_features == 96
    assert model.encoder.layer.attention_block.pre_norm
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {0.2}


def test_training_defaults_are_the_hint_release_schedule() -> None:
    """100k steps of 128, validation every 1,000 steps, early stopping after 50 evaluations without gain."""
    args = _defaults()
    assert (args.batch_size, args.eval_every, args.patience, args.clip) == (128, 1000, 50, 5.0)
    assert args.training_steps() == 100_000 and _defaults("--model", "neurosym").training_steps() == 2_000


def _uniform_bound(weight: torch.Tensor) -> float:
    """The largest magnitude in ``weight``: for a uniform initialisation, within a fraction of a percent of its bound."""
    return float(weight.detach().abs().max())


def test_default_transformers_are_initialised_and_biased_as_the_hint_release() -> None:
    """The release (its Transformer code by Csordás et al.): no attention biases; Xavier-uniform feed-forward (ReLU
    gain on the first layer), absolute-attention (q, k, v, merge) and output weights; its relative attention keeps
    PyTorch's default; Xavier target embeddings and no embedding dropout in the relative models."""
    torch.manual_seed(0)
    relative = hint.build_model(_defaults(), source_vocab=17)
    vanilla = hint.build_model(_defaults("--model", "transformer"), source_vocab=17)
    for model in (relative, vanilla):
        attentions = [m for m in model.modules() if isinstance(m, MultiheadAttention)]
        assert attentions and all(
            p is None for m in attentions for p in (m.query_proj.bias, m.key_value_proj.bias, m.out_proj.bias)
        )
    feed_forward = relative.encoder.layer.feed_forward
    assert _uniform_bound(feed_forward[0].weight) == pytest.approx(math.sqrt(2) * math.sqrt(6 / (512 + 2048)), rel=0.01)
    assert _uniform_bound(feed_forward[-1].weight) == pytest.approx(math.sqrt(6 / (512 + 2048)), rel=0.01)
    cross = relative.decoder.layers[0].cross_attention
    keys, values = cross.key_value_proj.weight.chunk(2)
    for weight in (cross.query_proj.weight, keys, values, cross.out_proj.weight):
        assert _uniform_bound(weight) == pytest.approx(math.sqrt(6 / 1024), rel=0.01)
    relative_self = relative.encoder.layer.self_attention
    assert _uniform_bound(relative_self.query_proj.weight) == pytest.approx(1 / math.sqrt(512), rel=0.01)  # PyTorch's
    vocab = relative.output.out_features
    assert _uniform_bound(relative.output.weight) == pytest.approx(math.sqrt(6 / (512 + vocab)), rel=0.05)
    assert _uniform_bound(relative.target_embedding.weight) <= math.sqrt(6 / (vocab + 128))
    assert _uniform_bound(vanilla.target_embedding.weight) > 1.5  # N(0, 1), as the release's vanilla model
    assert isinstance(relative.dropout, torch.nn.Identity) and not isinstance(vanilla.dropout, torch.nn.Identity)
    assert isinstance(relative.front_end, BoundaryMarkers) and isinstance(vanilla.front_end, BoundaryMarkers)
    plain = hint.build_model(_defaults("--model", "gru", "--no-source-boundaries"), source_vocab=17)
    assert not isinstance(plain.front_end, BoundaryMarkers)


def test_pytorch_initialisation_biases_and_embedding_dropout_on_request() -> None:
    torch.manual_seed(0)
    model = hint.build_model(_defaults("--init", "torch", "--attention-bias", "--embedding-dropout"), source_vocab=17)
    cross = model.decoder.layers[0].cross_attention
    assert cross.query_proj.bias is not None and model.encoder.layer.self_attention.out_proj.bias is not None
    assert _uniform_bound(cross.query_proj.weight) == pytest.approx(1 / math.sqrt(512), rel=0.01)
    assert _uniform_bound(model.encoder.layer.feed_forward[-1].weight) == pytest.approx(1 / math.sqrt(2048), rel=0.01)
    assert not isinstance(model.dropout, torch.nn.Identity)
    with pytest.raises(ValueError, match="unknown init"):
        TransformerSeq2Seq(model.front_end, 10, init="xavier")
