"""The ``neurosym`` console command: one sub-command per benchmark.

Each sub-command lives in a runner module of :mod:`neurosym.experiments`, imported only when chosen. A
runner exposes ``OPTIONS``, the dataclass of its options (fields made with
:func:`~neurosym.experiments.options.option`, from which the command line is generated), and
``run(options)`` (bad input it finds once its work began: :class:`~neurosym.experiments.CommandFailed`, one line after
the program's name); every command also takes one ``--config FILE.toml`` (its keys: option names; a relative path in it is relative to the
file's folder; options given on the command line win).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from neurosym import __version__

if TYPE_CHECKING:  # (the options module loads torch: imported when a command runs)
    from neurosym.experiments.options import OutputOptions

COMMANDS: dict[str, tuple[str, str]] = {
    "hint-data": (
        "neurosym.experiments.hint_data",
        "HINT dataset: generate the splits in the official format, with statistics (Figure A2)",
    ),
    "solver-speed": (
        "neurosym.experiments.solver_speed",
        "HINT solver throughput: Lark LALR parse + execute versus the batch solver",
    ),
    "arithmetic": ("neurosym.experiments.arithmetic", "neural arithmetic units: the simple function task (Madsen & Johansen)"),
    "layer-speed": (
        "neurosym.experiments.layer_speed",
        "arithmetic units vs nn.Linear: forward+backward time (NAU, NMU, NALU goals)",
    ),
    "mathematics": (
        "neurosym.experiments.mathematics",
        "DeepMind Mathematics: Transformer, attentional LSTM and the symbolic route",
    ),
    "hint": (
        "neurosym.experiments.hint",
        "HINT: the neuro-symbolic pipeline (--model neurosym) and the seq2seq baselines (GRU/LSTM, Transformers)",
    ),
    "attention-speed": (
        "neurosym.experiments.attention_speed",
        "relative vs SDPA vanilla attention speed; cached vs uncached greedy decoding",
    ),
    "pipeline": (
        "neurosym.experiments.pipeline",
        "the grammar pipeline learned from results on a task: multi-digit MNIST addition, handwritten formulas",
    ),
    "pvr": ("neurosym.experiments.pvr", "Pointer Value Retrieval: vector/visual tasks, holdout shifts, noise sensitivity"),
}


INTERRUPTED = 130
"""Exit status after Ctrl-C outside a training loop: ``128 + SIGINT``, as a shell reports it."""
FAILED = 1
"""Exit status of a command stopped by bad input found once its work began (data files, checkpoints, option values
only the data shows wrong) or by a file it could not read or write (``--out`` where it may not write): the message
names it, in one line."""
TRACEBACK_VARIABLE = "NEUROSYM_TRACEBACK"
"""Set (to anything) in the environment, a command stopped by bad input shows Python's traceback instead of one line."""
USAGE_ERROR = 2
"""Exit status of a command that cannot run as given (argparse's), e.g. resuming a checkpoint of other options."""


STATED_DEFAULT = re.compile(r"\(default:|\bby default\b")
"""How an option's help says its default itself: ``(default: ...)``, or in words (``off by default: ...``)."""


class _HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default, unless the help already says what the default is
    (:data:`STATED_DEFAULT`) or the default is ``None``: the option left out, whose meaning (the command's own choice,
    or nothing) its help says in words. An option's default is shown as the command line writes it (``0.01,0.1,1``,
    ``0`` for ``0.0``, ``1e-5``: :func:`~neurosym.experiments.options.default_text`)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if STATED_DEFAULT.search(text) or action.default is None:
            return text
        shown = getattr(action, "shown", None)  # (options._Store's text of its default)
        return f"{text} (default: {shown().replace('%', '%%')})" if shown is not None else super()._get_help_string(action)


class _OneConfig(argparse.Action):
    """``--config FILE.toml``, given once: a second file would replace the first, whose values were silently lost."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        if (first := getattr(namespace, self.dest, None)) is not None:
            parser.error(f"{option} given twice ({first}, {values}): one file gives the values, the command line the rest")
        setattr(namespace, self.dest, values)


def build_parser(command: str | None = None, prog: str | None = None, *, options: bool = True) -> argparse.ArgumentParser:
    """The top-level parser; with ``command`` given, only that runner's module is imported, and its usage and
    errors are named ``prog`` where given (else ``neurosym COMMAND``). With ``options=False`` no runner is imported:
    the sub-commands have their summaries only (enough for ``neurosym --help``, ``--version`` and an unknown
    command's error, without loading torch). No parser takes an option abbreviated (``--progres`` is an unknown argument,
    not ``--progress``): a new option would make an abbreviation that worked ambiguous or change its meaning."""
    parser = argparse.ArgumentParser(prog="neurosym", description="neurosym benchmarks and pipelines.", allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in COMMANDS.items():
        child = sub.add_parser(name, help=summary, description=summary, formatter_class=_HelpWithDefaults, allow_abbrev=False)
        named = child.prog  # (neurosym NAME, as the options' docstrings name the command)
        if prog is not None and name == command:
            child.prog = prog
        if options and command in (None, name):
            from neurosym.experiments.options import CONFIG_OPTION, add_options, existing_file

            add_options(child, importlib.import_module(module_name).OPTIONS, named)
            child.add_argument(
                CONFIG_OPTION, action=_OneConfig, type=existing_file, metavar="FILE.toml",
                help="option values from a TOML file (keys: the option names; a relative path in it is relative to "
                "its folder); options given here win",
            )  # fmt: skip
            out = str(Path("results") / name.replace("-", "_"))  # (text: argparse checks it as it checks a given --out)
            child.set_defaults(_runner=module_name, _parser=child, out=out)
    return parser


def _known(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed; an argument the command does not know is a usage error of that command (its program name and
    usage, not ``neurosym``'s), naming the nearest option where one is close."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        from neurosym.experiments.options import nearest

        shown = [action for action in args._parser._actions if action.default != argparse.SUPPRESS]  # (no old spelling)
        flags = [text for action in shown for text in action.option_strings]
        hint = next((nearest(word.split("=")[0], flags) for word in unknown if word.startswith("--")), "")
        args._parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    return args


def _parsed(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed, with the values of a ``--config`` file as the command's defaults."""
    args = _known(parser, argv)
    from neurosym.experiments.options import config_file_values, note_given

    values: dict[str, object] = {}
    if args.config is not None:
        runner = importlib.import_module(args._runner)
        try:
            values = config_file_values(runner.OPTIONS, args.config)
        except ValueError as error:
            args._parser.error(f"--config {error}")  # (the error opens with the file's path)
        args._parser.set_defaults(**values)
        args = _known(parser, argv)
    note_given(args, values)  # (the options the command line gave are noted as parsed)
    return args


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run the command ``argv`` names (``COMMAND [OPTIONS]``; default: the process's arguments) and return its exit
    status; its usage and messages are named ``prog`` where given (else ``neurosym COMMAND``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        parser = build_parser(command, prog, options=command is not None)  # (no command: argparse stops before running)
        args = _parsed(parser, argv)
    except KeyboardInterrupt:  # while torch and the runner load, or a config file is read: nothing began
        print(f"{prog or ' '.join(filter(None, ('neurosym', command)))}: interrupted before it began", file=sys.stderr)
        return INTERRUPTED
    shown, runner = args._parser.prog, importlib.import_module(args._runner)  # (e.g. "neurosym hint")
    from neurosym.experiments import CommandFailed
    from neurosym.experiments.options import TrainingOptions, fresh_start, options_from
    from neurosym.training.checkpoint import CheckpointMismatch  # after the runner: torch is loaded by now
    from neurosym.training.device import out_of_memory
    from neurosym.training.stopping import TrainingInterrupted

    try:
        options: OutputOptions = options_from(runner.OPTIONS, args)
    except ValueError as error:  # the options' own checks, before any work
        args._parser.error(str(error))
    if isinstance(options, TrainingOptions) and (note := fresh_start(options)) is not None:
        print(note, flush=True)  # (a note beside the run's output: its errors stay one line)
    try:
        runner.run(options)
    except TrainingInterrupted as stop:
        print(f"{shown}: {stop}", file=sys.stderr)
        return stop.exit_status
    except CheckpointMismatch as error:  # --resume (the default) over another run's checkpoint
        resumes = getattr(options, "resume", None) is not None and "--no-resume" not in str(error)  # (unless it says)
        afresh = " (--no-resume starts afresh over it)" if resumes else ""
        print(f"{shown}: {error}{afresh}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:  # outside a training loop (data generation, evaluation) or a second Ctrl-C
        print(f"{shown}: {_interrupted(options)}", file=sys.stderr)
        return INTERRUPTED
    except (MemoryError, RuntimeError) as error:  # sizes the machine cannot hold (torch's CPU allocator: a RuntimeError)
        if (what := out_of_memory(error)) is None or os.environ.get(TRACEBACK_VARIABLE):
            raise
        print(f"{shown}: out of memory: {what}; smaller sizes fit ({TRACEBACK_VARIABLE}=1 shows where)", file=sys.stderr)
        return FAILED
    except (CommandFailed, ValueError, KeyError, OSError) as error:  # bad input found once work began, a place not writable
        if os.environ.get(TRACEBACK_VARIABLE):
            raise
        print(f"{shown}: {_one_line(error)} ({TRACEBACK_VARIABLE}=1 shows where)", file=sys.stderr)
        return FAILED
    return 0


def _one_line(error: Exception) -> str:
    """``error``'s message with its notes (what raised it: a rule of one's own semantics, the sentence read); a
    ``KeyError`` of a bare key (a lookup of one's own code: ``'3'``, printed as ``3`` with no note) named as one."""
    text = str(error)
    if isinstance(error, KeyError) and error.args:
        key = error.args[0]
        text = key if isinstance(key, str) and " " in key else f"KeyError: {key!r}"  # (a message, or a missing key)
    return "; ".join([text, *getattr(error, "__notes__", [])])


def _interrupted(options: OutputOptions) -> str:
    """What a Ctrl-C outside a training loop left of the run of ``options``, and what the same command does next."""
    if options.writes_as_it_goes():
        return "interrupted; what it saved is whole (written atomically): the same command continues from there"
    return "interrupted before it wrote its results (it writes them at its end): the same command starts over"


def script(command: str) -> int:
    """:func:`main` for ``benchmarks/SCRIPT.py``: ``command`` with the process's arguments, its usage and messages
    named by the script as it was invoked (as argparse names a program)."""
    return main([command, *sys.argv[1:]], prog=os.path.basename(sys.argv[0]))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
