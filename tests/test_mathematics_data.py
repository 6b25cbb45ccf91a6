"""DeepMind Mathematics data: loader, malformed files, encoding, generation driver and cache."""

import codecs
import json
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from neurosym.data.mathematics import (
    ALPHABET,
    BOS,
    EOS,
    PAD,
    VOCAB_SIZE,
    MathematicsFormatError,
    MathExample,
    decode,
    encode,
    encode_batch,
    generate,
    generator_env_ready,
    list_modules,
    load_split,
    module_path,
    pad_sequences,
    read_module_file,
)
from neurosym.data.mathematics import generation as generate_module
from neurosym.data.mathematics.loader import count_pairs
from neurosym.metrics.mathematics import mean_over_modules, module_accuracies

FIXTURES = Path(__file__).resolve().parent / "data" / "mathematics"
FIXTURE_SEED = 2026  # the seed tests/data/mathematics was generated with (20 pairs per file)


def write_module(root: Path, regime: str, module: str, lines: list[str]) -> Path:
    path = root / regime / f"{module}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_loader_reads_released_layout(tmp_path):
    write_module(tmp_path, "interpolate", "arithmetic__add_or_sub", ["What is 1 + 2?", "3", "Sum 4 and -5.", "-1"])
    write_module(tmp_path, "interpolate", "algebra__linear_1d", ["Solve 2*x = 4 for x.", "2"])
    write_module(tmp_path, "extrapolate", "arithmetic__mul_big", ["7 * 6", "42"])
    assert list_modules(tmp_path, "interpolate") == ["algebra__linear_1d", "arithmetic__add_or_sub"]
    examples = load_split(tmp_path, "interpolate")
    assert examples == [
        MathExample("Solve 2*x = 4 for x.", "2", "algebra__linear_1d", "interpolate"),
        MathExample("What is 1 + 2?", "3", "arithmetic__add_or_sub", "interpolate"),
        MathExample("Sum 4 and -5.", "-1", "arithmetic__add_or_sub", "interpolate"),
    ]
    assert load_split(tmp_path, "interpolate", ["arithmetic__add_or_sub"], limit=1) == examples[1:2]
    assert load_split(tmp_path, "extrapolate")[0].answer == "42"
    with pytest.raises(ValueError, match="modules must be a list of module names, got the string 'arithmetic__add_or_sub'"):
        load_split(tmp_path, "interpolate", "arithmetic__add_or_sub")
    with pytest.raises(FileNotFoundError, match="train-easy"):
        list_modules(tmp_path, "train-easy")


@pytest.mark.parametrize(
    ("lines", "line_number", "problem"),
    [
        (["What is 1 + 2?", "3", "What is 2 + 2?"], 3, "odd number of lines"),
        (["What is 1 + 2?", "3", "", "4"], 3, "empty question"),
        (["What is 1 + 2?", "3", "", "What is 2 + 2?", "4"], 3, "empty question \\(a blank line\\)"),  # (not line 5)
        (["What is 1 + 2?", "3", "", "", "What is 2 + 2?", "4", ""], 3, "empty question"),  # (blank lines, then more)
        (["What is 1 + 2?", "3", " ", "What is 2 + 2?", "4"], 3, "empty question \\(a blank line of spaces\\)"),  # (not 5)
        (["What is 1 + 2?", "3", "  ", "What is 2 + 2?"], 3, "empty question"),  # (was read as the pair ("  ", "What is..."))
        (["What is 1 + 2?", "", "What is 2 + 2?", "4"], 2, "empty answer"),
        (["What is 1 + 2?", ""], 1, "question without an answer"),  # (a blank line ends the file: no answer)
        (["x" * 161, "3"], 1, "question of 161 characters"),
        (["What is 1 + 2?", "3" * 31], 2, "answer of 31 characters"),
        (["What is 1 + 2?", "12 "], 2, ":3: answer ends with a space"),  # (read as an answer "12" does not match)
        (["What is 1 + 2?", " 12"], 2, ":1: answer begins with a space"),
        (["What is 1 + 2?", "3", "What is 1\t+ 1?", "2"], 3, "character '\\\\t'"),
        (["What is 1 + 2?", "3", "Wh\u00e9t is 2?", "2"], 3, "outside the dataset's alphabet"),
        (["What is 1 + 2?", "3", "\t"], 3, ":1: character '\\\\t'"),  # (a last line of a tab: said odd number of lines)
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, lines, line_number, problem):
    path = write_module(tmp_path, "interpolate", "arithmetic__mul", lines)
    with pytest.raises(MathematicsFormatError, match=rf"arithmetic__mul\.txt:{line_number}\b.*{problem}"):
        read_module_file(path)


def test_a_file_of_another_encoding_is_named_by_its_first_foreign_character(tmp_path):
    """UTF-16 without a byte-order mark split into an odd number of lines at its NUL bytes: "question without an
    answer" at the last line."""
    path = write_module(tmp_path, "interpolate", "arithmetic__mul", ["x"])
    path.write_bytes("What is 1 + 2?\n3\n".encode("utf-16-le"))
    with pytest.raises(MathematicsFormatError, match=r"arithmetic__mul\.txt:1:2: character '\\x00' is outside"):
        read_module_file(path)


def _no_edge_space(answer: str) -> str:
    """``answer`` as the dataset writes answers: without a space at either end (one made ``"x"``)."""
    return answer.strip(" ") or "x"


@settings(max_examples=60, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.text(ALPHABET, min_size=1, max_size=160), st.text(ALPHABET, min_size=1, max_size=30).map(_no_edge_space)),
        min_size=1,
        max_size=5,
    ),
    line_end=st.sampled_from(["\n", "\r\n"]),
    final_end=st.booleans(),
    bom=st.booleans(),
)
def test_files_read_back_pair_for_pair_with_either_line_end(tmp_path_factory, pairs, line_end, final_end, bom):
    """Also with a UTF-8 byte-order mark before the first question (refused as byte 0xef at 1:1)."""
    path = tmp_path_factory.mktemp("release") / "arithmetic__mul.txt"
    text = line_end.join(part for pair in pairs for part in pair) + line_end * final_end
    path.write_bytes(codecs.BOM_UTF8 * bom + text.encode("ascii"))
    assert read_module_file(path) == pairs
    assert count_pairs(path) == len(pairs)


def test_a_lone_carriage_return_is_refused_where_it_is_rather_than_splitting_its_line(tmp_path):
    path = tmp_path / "arithmetic__mul.txt"
    path.write_bytes(b"What is 1 + 2?\n3\nWhat is\r 2 + 2?\n4\nWhat is\r 3 + 3?\n6\n")  # (read as 8 lines: misaligned)
    with pytest.raises(MathematicsFormatError, match=r"arithmetic__mul\.txt:3:8: character '\\r'"):
        read_module_file(path)
    # old Mac line ends: the pairs in one line of an odd count, refused as "question without an answer"
    path.write_bytes(b"What is 1 + 1?\r2\n")
    with pytest.raises(MathematicsFormatError, match=r"arithmetic__mul\.txt:1:15: character '\\r' .*no line end"):
        read_module_file(path)


def test_bytes_beyond_ascii_are_named_by_value_and_column(tmp_path):
    path = tmp_path / "arithmetic__mul.txt"
    path.write_bytes("What is 1 + 2?\n3\nWh\u00e9t is 2?\n2\n".encode())
    with pytest.raises(MathematicsFormatError, match=r"arithmetic__mul\.txt:3:3: byte 0xc3 \(not ASCII\) is outside"):
        read_module_file(path)


@pytest.mark.parametrize(
    ("encoding", "named"),
    [
        ("utf-16-le", "UTF-16"),
        ("utf-16-be", "UTF-16 \\(big-endian\\)"),
        ("utf-32-le", "UTF-32"),
        ("utf-32-be", "UTF-32 \\(big-endian\\)"),
    ],
)
@pytest.mark.parametrize("pairs", [1, 2])
def test_a_file_of_wider_text_is_named_by_its_byte_order_mark(tmp_path, encoding, named, pairs):
    """PowerShell's ``>`` writes UTF-16: such a file was refused as a question without an answer, or at byte 0xff."""
    path = tmp_path / "arithmetic__mul.txt"
    path.write_bytes(("\ufeff" + "What is 1 + 2?\n3\n" * pairs).encode(encoding))
    with pytest.raises(MathematicsFormatError, match=rf"arithmetic__mul\.txt:1: {named} text \(it opens with the byte-order"):
        read_module_file(path)


def test_module_names_are_file_stems_present_once_in_a_release_folder(tmp_path):
    write_module(tmp_path, "interpolate", "arithmetic__mul", ["1 * 2", "2"])
    write_module(tmp_path, "extrapolate", "arithmetic__mul_big", ["7 * 6", "42"])
    with pytest.raises(ValueError, match="'../extrapolate/arithmetic__mul_big' is not a module name"):
        load_split(tmp_path, "interpolate", ["../extrapolate/arithmetic__mul_big"])  # (read as an interpolate module)
    with pytest.raises(ValueError, match="'arithmetic__mul.txt' is not a module name"):
        load_split(tmp_path, "interpolate", ["arithmetic__mul.txt"])
    with pytest.raises(ValueError, match="'arithmetic__mul' is listed twice"):
        load_split(tmp_path, "interpolate", ["arithmetic__mul", "arithmetic__mul"])  # (its examples counted twice)
    with pytest.raises(FileNotFoundError, match=r"no module 'arithmetic__div' in .*interpolate.*modules: \['arithmetic__mul'\]"):
        load_split(tmp_path, "interpolate", ["arithmetic__div"])
    with pytest.raises(
        FileNotFoundError,
        match=r"no 'interpolate' folder under .*\(its folders: \[\]; it holds module files, .*\); a release has",
    ):
        load_split(tmp_path / "interpolate", "interpolate", ["arithmetic__mul"])  # (one folder too deep)
    with pytest.raises(ValueError, match="regime '../extrapolate' is not a folder name"):
        load_split(tmp_path / "interpolate", "../extrapolate")


def test_hidden_files_beside_the_modules_are_no_modules(tmp_path):
    """A tar made on macOS holds ``._<module>.txt`` metadata beside each file: load_split failed on it as no module."""
    write_module(tmp_path, "interpolate", "arithmetic__mul", ["1 * 2", "2"])
    (tmp_path / "interpolate" / "._arithmetic__mul.txt").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X")
    assert list_modules(tmp_path, "interpolate") == ["arithmetic__mul"]
    assert load_split(tmp_path, "interpolate") == [MathExample("1 * 2", "2", "arithmetic__mul", "interpolate")]


def test_limits_are_inclusive(tmp_path):
    path = write_module(tmp_path, "interpolate", "arithmetic__mul", ["q" * 160, "a" * 30])
    assert read_module_file(path) == [("q" * 160, "a" * 30)]


def test_alphabet_is_printable_ascii():
    assert len(ALPHABET) == 95 and ALPHABET[0] == " " and ALPHABET[-1] == "~"
    assert VOCAB_SIZE == 98 and len({PAD, BOS, EOS}) == 3


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=160), bos=st.booleans(), eos=st.booleans())
def test_encoding_round_trip(text, bos, eos):
    ids = encode(text, bos=bos, eos=eos)
    assert len(ids) == len(text) + bos + eos
    assert all(3 <= i < VOCAB_SIZE for i in ids[bos : len(ids) - eos])
    assert decode(ids) == text
    assert decode(ids + [EOS, 50, PAD]) == text  # everything after the first EOS is ignored


def test_encoding_errors_name_the_position():
    with pytest.raises(ValueError, match="position 3"):
        encode("abc\u00e9")
    with pytest.raises(ValueError, match="id 98 at position 1"):
        decode([5, 98])
    for fractional in ([5, 10.7], torch.tensor([5.0, 10.5]), np.array([5.0, 10.2])):  # (int() truncated them)
        with pytest.raises(ValueError, match=r"id 10\.\d at position 1 is not an integer"):
            decode(fractional)


@settings(max_examples=30, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.text(ALPHABET, min_size=1, max_size=20), st.text(ALPHABET, min_size=1, max_size=8)), min_size=1, max_size=6
    )
)
def test_batches_are_padded_and_decode_back(pairs):
    batch = encode_batch([MathExample(q, a, "m", "interpolate") for q, a in pairs])
    assert batch.questions.shape == (len(pairs), max(len(q) for q, _ in pairs) + 1)
    assert batch.answers.shape == (len(pairs), max(len(a) for _, a in pairs) + 2)
    assert batch.questions.dtype == batch.answers.dtype == torch.long
    for row, (question, answer) in enumerate(pairs):
        assert decode(batch.questions[row].tolist()) == question
        assert batch.answers[row, 0] == BOS and decode(batch.answers[row].tolist()) == answer
        assert (batch.answers[row, len(answer) + 2 :] == PAD).all()


def test_module_scores_are_means_over_modules():
    per_module = module_accuracies(["b", "a", "b", "b"], ["1", "2", "3", "0"], ["1", "x", "3", "4"])
    assert per_module == {"a": 0.0, "b": pytest.approx(2 / 3)}
    assert mean_over_modules(per_module) == pytest.approx(1 / 3)
    for accuracy in (float("nan"), 1.5, None, True):
        with pytest.raises(ValueError, match="module 'b': an accuracy must be a number in"):
            mean_over_modules({"a": 0.5, "b": accuracy})
    with pytest.raises(ValueError, match="align"):
        module_accuracies(["a", "b"], ["1", "2"], ["1"])
    with pytest.raises(ValueError, match="2 predictions for 1 targets"):
        module_accuracies(["a"], ["1", "2"], ["1"])


def test_module_scores_take_arrays_of_strings_and_refuse_anything_else():
    assert module_accuracies(np.array(["a", "b"]), ("1", "2"), np.array(["1", "3"])) == {"a": 1.0, "b": 0.0}  # (arrays:
    # "truth value of an array is ambiguous")
    with pytest.raises(TypeError, match=r"predictions must be strings, got 1 \(int\) at 0"):
        module_accuracies(["a", "a"], [1, 2], ["1", "2"])  # (scored 0.0)
    with pytest.raises(TypeError, match=r"answers must be strings, got tensor\(1\) \(Tensor\) at 0"):
        module_accuracies(["a", "a"], ["1", "2"], torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="modules must be a sequence of strings, got the string 'ab'"):
        module_accuracies("ab", ["1", "2"], ["1", "2"])
    assert module_accuracies(["a", "b"], (p for p in ["1", "2"]), ["1", "3"]) == {"a": 1.0, "b": 0.0}  # (in order)


@pytest.mark.parametrize(
    ("predictions", "kind"),
    [({"2", "1"}, "set"), (frozenset({"1", "2"}), "frozenset"), ({"q1": "1", "q2": "2"}, "dict")],
)
def test_module_scores_refuse_predictions_without_an_order_or_keyed(predictions, kind):
    # (a set's strings were scored in the order of their hashes, a dict's keys as the predictions)
    with pytest.raises(TypeError, match=rf"^predictions must be a sequence of strings, got a {kind}"):
        module_accuracies(["a", "b"], predictions, ["1", "2"])


def test_generate_reuses_cached_files_and_asks_only_for_missing(tmp_path, monkeypatch):
    write_module(tmp_path, "interpolate", "arithmetic__mul", ["1 * 2", "2", "3 * 2", "6"])
    (tmp_path / generate_module.SEED_RECORD).write_text("5\n")
    calls = []
    monkeypatch.setattr(generate_module, "_run_driver", lambda jobs, root, progress: calls.append(list(jobs)))
    generate([("interpolate", "arithmetic__mul")], 2, seed=5, root=tmp_path)
    assert calls == []
    generate([("interpolate", "arithmetic__mul"), ("extrapolate", "arithmetic__mul_big")], 3, seed=5, root=tmp_path)
    assert [(job["regime"], job["module"], job["count"]) for job in calls[0]] == [
        ("interpolate", "arithmetic__mul", 3),
        ("extrapolate", "arithmetic__mul_big", 3),
    ]
    seeds = [job["seed"] for job in calls[0]]
    assert len(set(seeds)) == 2 and seeds[0] == generate_module.job_seed(5, "interpolate", "arithmetic__mul")
    with pytest.raises(ValueError, match="unknown regime"):
        generate([("validation", "arithmetic__mul")], 1, root=tmp_path)


def test_a_root_keeps_the_questions_of_one_seed(tmp_path, monkeypatch):
    def fake_driver(jobs, root, progress):
        for job in jobs:
            write_module(root, job["regime"], job["module"], [f"seed {job['seed']}?", "1"] * job["count"])

    monkeypatch.setattr(generate_module, "_run_driver", fake_driver)
    request = [("interpolate", "arithmetic__mul")]
    generate(request, 2, seed=0, root=tmp_path / "mine")
    assert (tmp_path / "mine" / generate_module.SEED_RECORD).read_text() == "0\n"
    with pytest.raises(ValueError, match="holds questions generated with seed 0 .*, not 1: generate into another root"):
        generate(request, 2, seed=1, root=tmp_path / "mine")  # (reused seed 0's file)
    write_module(tmp_path / "unknown", "interpolate", "arithmetic__mul", ["1 * 2?", "2"])
    with pytest.raises(ValueError, match="holds question files but no record of the seed"):
        generate(request, 1, seed=0, root=tmp_path / "unknown")
    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))  # a default root names its seed: taken as recorded
    made_before = write_module(generate_module.generated_root(3), "interpolate", "arithmetic__mul", ["1 * 2?", "2"])
    assert generate(request, 1, seed=3) == made_before.parent.parent
    assert (made_before.parent.parent / generate_module.SEED_RECORD).read_text() == "3\n"
    assert read_module_file(made_before) == [("1 * 2?", "2")]


def test_driver_output_is_written_atomically(tmp_path):
    job = {"regime": "interpolate", "module": "a__b", "count": 2}
    lines = [json.dumps({"question": f"q{k}", "answer": f"{k}"}) for k in range(2)]
    bar = generate_module.tqdm(disable=True)
    assert generate_module._write_job(lines[:1], job, tmp_path, bar) == 1  # cut off
    assert not (tmp_path / "interpolate" / "a__b.txt").exists()
    assert not list((tmp_path / "interpolate").glob("*.partial"))
    assert generate_module._write_job(lines, job, tmp_path, bar) == 2
    assert read_module_file(tmp_path / "interpolate" / "a__b.txt") == [("q0", "0"), ("q1", "1")]
    with pytest.raises(RuntimeError, match="line 2 from the generator is not a JSON record"):
        generate_module._write_job([lines[0], "Traceback (most recent call last):"], job, tmp_path, bar)
    assert not list((tmp_path / "interpolate").glob("*.partial"))


@pytest.mark.mathematics_generator
def test_generation_is_deterministic_for_a_seed(tmp_path):
    requests = [("interpolate", "arithmetic__mixed"), ("extrapolate", "arithmetic__div_big")]
    generate(requests, 20, seed=FIXTURE_SEED, root=tmp_path / "first", progress=False)
    generate(requests[:1], 5, seed=FIXTURE_SEED + 1, root=tmp_path / "other", progress=False)
    for regime, module in requests:
        produced = (tmp_path / "first" / regime / f"{module}.txt").read_text()
        assert produced == (FIXTURES / regime / f"{module}.txt").read_text()
    other = read_module_file(tmp_path / "other" / "interpolate" / "arithmetic__mixed.txt")
    assert other != read_module_file(tmp_path / "first" / "interpolate" / "arithmetic__mixed.txt", limit=5)


@pytest.mark.mathematics_generator
def test_a_file_does_not_depend_on_the_other_files_generated_with_it(tmp_path):
    """The generator keeps state that reseeding does not reset: in one process, the polynomial module's questions
    changed after the algebra module's, and a file grown later did not start with the questions it had."""
    algebra, polynomials = ("interpolate", "algebra__linear_1d"), ("train-easy", "polynomials__evaluate")
    generate([algebra, polynomials], 4, seed=0, root=tmp_path / "together")
    generate([polynomials], 2, seed=0, root=tmp_path / "alone")
    together = read_module_file(module_path(tmp_path / "together", *polynomials))
    assert read_module_file(module_path(tmp_path / "alone", *polynomials)) == together[:2]
    generate([polynomials], 6, seed=0, root=tmp_path / "together")  # too short: generated again
    assert read_module_file(module_path(tmp_path / "together", *polynomials))[:4] == together


@pytest.mark.mathematics_generator
def test_generator_errors_surface_with_the_reason(tmp_path):
    with pytest.raises(RuntimeError, match="unknown module 'arithmetic__nope'"):
        generate([("interpolate", "arithmetic__nope")], 1, root=tmp_path, progress=False)
    assert not (tmp_path / "interpolate" / "arithmetic__nope.txt").exists()


def test_generator_env_is_ready_only_with_its_marker(tmp_path):
    from neurosym.data.mathematics.environment import GENERATOR_REQUIREMENTS, ensure_generator_env, generator_python

    env = tmp_path / "env"
    assert not generator_env_ready(env)
    with pytest.raises(FileNotFoundError, match="not ready"):
        ensure_generator_env(create=False, env_dir=env)
    generator_python(env).parent.mkdir(parents=True)
    generator_python(env).touch()
    (env / "neurosym-ready.txt").write_text("sympy==1.4\n")  # an older, different pin list
    assert not generator_env_ready(env)
    (env / "neurosym-ready.txt").write_text("\n".join(GENERATOR_REQUIREMENTS) + "\n")
    assert generator_env_ready(env) and ensure_generator_env(create=False, env_dir=env) == generator_python(env)


def test_a_failed_pip_install_says_how_to_go_on_and_leaves_no_ready_environment(tmp_path, monkeypatch):
    from neurosym.data.mathematics import environment

    def run(command, **kwargs):  # the venv is made; pip finds no index
        failed = "pip" in command
        return subprocess.CompletedProcess(command, int(failed), "", "ERROR: No matching distribution found" if failed else "")

    monkeypatch.setattr(environment.subprocess, "run", run)
    env = tmp_path / "env"
    with pytest.raises(RuntimeError, match="could not pip-install the generator") as error:
        environment.ensure_generator_env(env_dir=env)
    assert "No matching distribution found" in str(error.value) and "NEUROSYM_MATHEMATICS_ENV" in str(error.value)
    assert "--data" in str(error.value) and not env.exists() and not generator_env_ready(env)


def test_the_generator_environment_lives_where_the_variable_names(tmp_path, monkeypatch):
    from neurosym.data.mathematics.environment import ENV_VARIABLE, generator_env_dir

    monkeypatch.setenv("NEUROSYM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    assert generator_env_dir() == tmp_path / "cache" / "mathematics-env"
    monkeypatch.setenv(ENV_VARIABLE, str(tmp_path / "named"))
    assert generator_env_dir() == tmp_path / "named" and not generator_env_ready()


def test_decoding_refuses_text_and_batches_instead_of_misreading_them():
    with pytest.raises(TypeError, match="id '1' at position 0 is not a number"):
        decode("123")  # (read as BOS, EOS: the empty string)
    with pytest.raises(TypeError, match="id '5' at position 1 is not a number"):
        decode([5, "5"])  # (read as the id 5)
    with pytest.raises(TypeError, match="id True at position 0 is not a number"):
        decode([True, 5])
    with pytest.raises(ValueError, match=r"one sequence of ids, got an array of shape \[2, 2\]"):
        decode(torch.tensor([[5, 6], [7, 8]]))
    assert decode(np.array([5, 6, EOS, 9])) == decode(torch.tensor([5.0, 6.0])) == '"#'


def test_padding_refuses_fractional_ids_text_and_nesting():
    with pytest.raises(ValueError, match="id 1.7 at position 0 of row 1 is not an integer"):
        pad_sequences([[3], [1.7, 2]])  # (truncated to 1)
    with pytest.raises(ValueError, match="id inf at position 1 of row 0 is not an integer"):
        pad_sequences([[5, float("inf")]])  # (was the smallest int64)
    with pytest.raises(TypeError, match="row 0 is the text 'abc', not a sequence of ids"):
        pad_sequences(["abc"])
    with pytest.raises(ValueError, match=r"row 0 must be a flat sequence of ids, got shape \[1, 2\]"):
        pad_sequences([[[1, 2]]])
    with pytest.raises(TypeError, match=r"row 1 must be a flat sequence of integer ids, got \[1, None\]"):
        pad_sequences([[3], [1, None]])
    with pytest.raises(TypeError, match="row 0 must hold integer ids, got torch.bool values"):
        pad_sequences([[True, False]])  # (read as the ids 1, 0)
    with pytest.raises(TypeError, match="encode takes text, got int 123"):
        encode(123)
    assert pad_sequences([[4.0, 5], np.array([6], dtype=np.uint8), []]).tolist() == [[4, 5], [6, PAD], [PAD, PAD]]
    assert pad_sequences(torch.tensor([[5, 6], [7, 8]])).tolist() == [[5, 6], [7, 8]]


def test_loader_refuses_negative_limits_empty_files_and_empty_regimes(tmp_path):
    path = write_module(tmp_path, "interpolate", "arithmetic__mul", ["1 * 2", "2", "3 * 2", "6"])
    with pytest.raises(ValueError, match="limit must be an int of at least 0, got -1"):
        read_module_file(path, limit=-1)  # (dropped the last pair)
    with pytest.raises(ValueError, match="limit must be an int of at least 0, got 1.5"):
        load_split(tmp_path, "interpolate", limit=1.5)
    assert read_module_file(path, limit=0) == [] and len(read_module_file(path, limit=np.int64(5))) == 2
    empty = write_module(tmp_path, "interpolate", "arithmetic__div", [])
    with pytest.raises(MathematicsFormatError, match=r"arithmetic__div\.txt:1: empty file"):
        read_module_file(empty)
    (tmp_path / "extrapolate").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no module files \(\*\.txt\) in .*extrapolate"):
        load_split(tmp_path, "extrapolate")  # (an empty split)
    assert load_split(tmp_path, "extrapolate", []) == []  # (a module without extrapolation tests asks for none)


def test_generate_checks_count_seed_and_requests_before_running(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(generate_module, "_run_driver", lambda jobs, root, progress: calls.append(list(jobs)))
    request = [("interpolate", "arithmetic__mul")]
    with pytest.raises(ValueError, match="count must be an int of at least 1, got 2.5"):
        generate(request, 2.5, root=tmp_path)  # (reached the generator's range())
    with pytest.raises(ValueError, match="count must be an int of at least 1, got True"):
        generate(request, True, root=tmp_path)
    with pytest.raises(ValueError, match="seed must be an int of at least 0, got True"):
        generate(request, 2, seed=True)  # (named another cache folder than seed 1)
    with pytest.raises(ValueError, match="seed must be an int of at least 0, got -1"):
        generate_module.generated_root(-1)
    with pytest.raises(ValueError, match=r"each request must be a \(regime, module\) pair of strings, got 'interpolate'"):
        generate(("interpolate", "arithmetic__mul"), 2, root=tmp_path)
    with pytest.raises(ValueError, match=r"pair of strings, got \('interpolate', 5\)"):
        generate([("interpolate", 5)], 2, root=tmp_path)
    with pytest.raises(ValueError, match="module '../arithmetic__mul' is not a module name"):
        generate([("interpolate", "../arithmetic__mul")], 2, root=tmp_path)  # (its file would lie outside root)
    assert calls == []
    generate([["interpolate", "arithmetic__mul"]], np.int64(2), seed=np.int64(3), root=tmp_path)
    assert [(job["module"], job["count"], job["seed"]) for job in calls[0]] == [
        ("arithmetic__mul", 2, generate_module.job_seed(3, "interpolate", "arithmetic__mul"))
    ]


def test_the_generator_environment_may_be_named_by_a_string(tmp_path):
    from neurosym.data.mathematics.environment import generator_python

    assert not generator_env_ready(str(tmp_path / "env"))
    assert generator_python(str(tmp_path / "env")) == generator_python(tmp_path / "env")


def test_a_prediction_with_a_pad_or_bos_before_its_end_matches_no_answer() -> None:
    from neurosym.models.seq2seq.mathematics_task import greedy_answers

    one, two = encode("12")

    class Predicts(torch.nn.Module):  # greedy decoding's output: no BOS in front, EOS-filled after the end
        def greedy_decode(self, src, src_mask, max_len, bos, eos):
            return torch.tensor([[one, PAD, two, EOS], [one, BOS, two, EOS], [one, two, EOS, EOS]])

    answers = greedy_answers(Predicts(), ["q", "q", "q"], torch.device("cpu"), batch_size=3)  # type: ignore[arg-type]
    assert answers[2] == "12" and "12" not in answers[:2] and all(len(answer) == 3 for answer in answers[:2])
    assert decode([BOS, one, two, EOS, PAD]) == "12"  # a padded target still reads as its text
    with pytest.raises(TypeError, match=r"greedy_answers takes a list of questions, got one str 'qqq'"):
        greedy_answers(Predicts(), "qqq", torch.device("cpu"), batch_size=3)  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.integers(max_value=0), st.floats(allow_nan=True), st.booleans(), st.none()))
def test_greedy_answers_names_a_batch_size_that_is_no_int_of_at_least_1(batch_size) -> None:
    from neurosym.models.seq2seq.mathematics_task import greedy_answers

    class Decodes(torch.nn.Module):  # (never reached: the batch size is checked first)
        def greedy_decode(self, src, src_mask, max_len, bos, eos):
            raise AssertionError("decoded with a bad batch size")

    with pytest.raises(ValueError, match=rf"batch_size must be an int of at least 1, got {re.escape(repr(batch_size))}"):
        greedy_answers(Decodes(), ["1+1", "2+2"], torch.device("cpu"), batch_size=batch_size)  # type: ignore[arg-type]


def test_greedy_answers_decode_in_evaluation_mode_and_restore_each_module_s_mode() -> None:
    """With the model in training mode, dropout changed the answers from one call to the next."""
    from neurosym.models.seq2seq.mathematics_task import CONFIGS, build_model, greedy_answers

    torch.manual_seed(0)
    model = build_model("transformer", replace(CONFIGS["smoke"], dropout=0.5))
    model.train()
    frozen = next(module for module in model.modules() if isinstance(module, torch.nn.Dropout))
    frozen.eval()  # a part the caller left in evaluation mode keeps it
    questions = ["What is 12 + 30?", "Solve 3*x = 9 for x.", "Let f(x) = x**2. What is f(4)?"]
    first = greedy_answers(model, questions, torch.device("cpu"), batch_size=2)
    assert all(greedy_answers(model, questions, torch.device("cpu"), batch_size=2) == first for _ in range(3))
    assert model.training and not frozen.training
    assert sum(module.training for module in model.modules()) == len(list(model.modules())) - 1
