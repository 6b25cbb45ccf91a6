"""The neuro-symbolic HINT pipeline (``neurosym hint --model neurosym``): its options and its two modes.

* ``--input image`` (:mod:`.image`): a symbol classifier trained from scratch with no symbol labels: each
  batch is read with grammar-constrained decoding and corrected by abduction (top-down back-search)
  towards the known results, on a curriculum from short to long expressions. What is given: the grammar,
  the precedence levels and HINT's operator table; what is learned from results: the perception.
* ``--input symbol`` (:mod:`.symbol`): the digits are known; the meanings of ``+ - * /`` are induced from
  results by program search.

Both then learn the few-shot concepts x, y (numbers), a, b, c, d (operators) from their few-shot training
sets (:mod:`.fewshot`), and time abduction on corrupted 7-symbol expressions. Generic options (``--data``,
``--bank``, ``--scale``, ``--seed``, ``--steps``, ``--batch-size``, ``--lr``, ``--cnn``, ``--device``,
``--out``, ``--resume``, ``--progress``, ``--threads``, ``--eval-batch-size``) come from
:mod:`neurosym.experiments.hint`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from neurosym.benchmarking.abduction_speed import abduction_speed
from neurosym.data.hint import FEWSHOT_CONCEPTS
from neurosym.experiments.hint_sources import bank_choice, load_hint_data
from neurosym.experiments.options import (
    comma_list,
    curriculum_stages,
    fraction_up_to_one,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    unit_interval,
)
from neurosym.pipelines.concepts import ROLES
from neurosym.pipelines.trainer import HINT_PSEUDO_LABELS, LEARNING_RULES
from neurosym.training.checkpoint import save_json
from neurosym.training.loop import SCHEDULES

DEFAULT_CURRICULUM = "1:150,3:350,7:500,15:1000,all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of the neuro-symbolic pipeline (the generic ones are added by the ``hint`` runner)."""
    parser.add_argument(
        "--semantics",
        choices=("given", "learned"),
        default="given",
        help="neurosym: 'given': the grammar, precedence and HINT's operator table are given (image input learns the "
        "perception; symbol input induces the operators with the digits known); 'learned': only the grammar's shape "
        "is given, every symbol is an anonymous class whose role, value or program and precedence are learned from "
        "results, then the few-shot concepts",
    )
    parser.add_argument("--classes", type=positive_int, default=16, help="neurosym --semantics learned: anonymous classes")
    parser.add_argument("--curriculum", type=curriculum_stages, default=DEFAULT_CURRICULUM,
                        help="neurosym: stages 'max_length:steps,...,all' from short to long expressions")  # fmt: skip
    parser.add_argument("--lr-schedule", choices=SCHEDULES, default="constant",
                        help="neurosym: learning-rate schedule over --steps (cosine decays to zero at the last step)")  # fmt: skip
    parser.add_argument("--augment-shift", type=non_negative_int, default=0, help="neurosym: shift training windows up to N px")
    parser.add_argument("--augment-style", type=unit_interval, default=0.0, help="neurosym: restyle training glyphs (0 to 1)")
    parser.add_argument("--stroke-width", type=positive_int, help="neurosym: redraw each glyph's skeleton at N px")
    parser.add_argument("--learning-rule", choices=LEARNING_RULES, default="abduction",
                        help="neurosym: abduction or the REINFORCE baseline")  # fmt: skip
    parser.add_argument("--pseudo-labels", choices=HINT_PSEUDO_LABELS, default="all",
                        help="neurosym: train on the symbols of a pseudo-label that the result pins down, or on all of them")  # fmt: skip
    parser.add_argument("--abduction-changes", type=positive_int, default=2, help="neurosym: most symbols an abduction changes")
    parser.add_argument("--classifier-features", type=positive_int, default=64, help="neurosym: the encoder's output width")
    parser.add_argument("--classifier-width", type=positive_int, default=16, help="neurosym: channels of the CNN's first stage")
    parser.add_argument("--checkpoint-every", type=positive_int, default=100, help="neurosym: steps between checkpoints")
    parser.add_argument("--test-scale", type=fraction_up_to_one, help="neurosym: validate and test on the splits generated at "
                        "this scale (default: --scale); larger ones narrow the accuracies' intervals and rank choices better")  # fmt: skip
    parser.add_argument("--extra-test-bank", type=bank_choice, help="neurosym (image input): test the same model again on "
                        "this bank's test images, as trained and with the batch-norm statistics of --adapt-examples expressions "
                        "of its unlabelled training images (a --bank value: 'other-writers', or an .npz; a bank without "
                        "brackets borrows the main bank's)")  # fmt: skip
    parser.add_argument("--adapt", type=bank_choice, metavar="BANK", help="neurosym (image input): after training, adapt to "
                        "this bank's writer(s) from results alone: learn from --adapt-examples expressions rendered with its "
                        "training images (and --adapt-replay with the first bank's) for --adapt-steps steps of the main run's "
                        "curriculum and --lr-schedule, then test on its test images and the first bank's")  # fmt: skip
    parser.add_argument("--ensemble", nargs="+", metavar="RUN", help="neurosym (image input): train nothing; read with the mean "
                        "probability of the readers these runs trained (their --out folders, this command's reader options)")  # fmt: skip
    parser.add_argument("--adapt-examples", type=positive_int, default=1000, help="neurosym: new writer's expressions")
    parser.add_argument("--adapt-steps", type=positive_int, default=1600, help="neurosym: training steps of --adapt")
    parser.add_argument("--adapt-replay", type=positive_int, help="neurosym: first-bank expressions replayed (default: as many)")
    parser.add_argument("--adapt-lr", type=positive_float, help="neurosym: peak learning rate of --adapt (default: --lr's)")
    parser.add_argument("--adapt-distill", type=non_negative_float, default=0.0, help="neurosym: weight of keeping the trained reader's "
                        "reading of the replayed windows (KL; learning without forgetting); 0 = off")  # fmt: skip
    parser.add_argument("--adapt-refit", type=non_negative_int, default=0, help="neurosym: after --adapt, steps fitting the reader to "
                        "the abduced readings of the new writer's and the replayed windows (128 windows a step); 0 = off")  # fmt: skip
    parser.add_argument("--adapt-route", type=non_negative_int, default=0, help="neurosym: after --adapt, read each expression with "
                        "the trained reader or the adapted one as a router trained this many steps to tell the first bank's "
                        "windows from the new writer's weighs them (--adapt-refit then fits the new writer's only); 0 = off")  # fmt: skip
    parser.add_argument(
        "--fewshot-scales",
        type=_fewshot_scales,
        default="0.01,0.1,1",
        help="neurosym: few-shot split scales (1 = 1,000 training sentences per operator) to learn the "
        "concepts x y a b c d from after the main task, comma-separated, or 'none'",
    )
    parser.add_argument("--fewshot-bank", type=bank_choice, help="neurosym (image input): a bank (.npz) whose new-concept "
                        "glyphs replace the main bank's in few-shot learning and testing")  # fmt: skip
    parser.add_argument("--fewshot-concepts", type=_fewshot_concepts, default=",".join(FEWSHOT_CONCEPTS),
                        help="neurosym: which few-shot concepts to learn, comma-separated")  # fmt: skip
    parser.add_argument("--fewshot-steps", type=_fewshot_steps, default="150,100", help="neurosym (image input): steps spent "
                        "on a new glyph's perception, then on abduction with its learned meaning, 'GLYPH,ABDUCTION'")  # fmt: skip
    parser.add_argument("--fewshot-replay", type=non_negative_int, default=200,
                        help="neurosym (image input): main-task expressions replayed while a new glyph is learned")  # fmt: skip
    parser.add_argument("--fewshot-only-new-class", type=_roles, default=("operator",), help="neurosym: roles ('number', "
                        "'operator', comma-separated, or 'none') whose new glyph trains only its own output row")  # fmt: skip
    parser.add_argument(
        "--speed-samples", type=positive_int, default=300, help="neurosym: corrupted expressions timed for abduction"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    from neurosym.experiments.hint_pipeline.image import run_image
    from neurosym.experiments.hint_pipeline.learned import run_learned_image, run_learned_symbol
    from neurosym.experiments.hint_pipeline.symbol import run_symbol

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "input": args.input,
        "scale": args.scale,
        "test_scale": args.test_scale or args.scale,
        "seed": args.seed,
    }
    if args.semantics == "learned":
        data = load_hint_data(args, args.input == "image", bool(args.fewshot_scales), args.test_scale, args.progress)
        results.update((run_learned_image if args.input == "image" else run_learned_symbol)(args, out, data))
    else:
        results.update((run_image if args.input == "image" else run_symbol)(args, out))
    results["abduction_speed"] = abduction_speed(args.speed_samples, args.seed)
    speed = results["abduction_speed"]
    print(
        f"\nabduction on wrong 7-symbol expressions: median {speed['median_ms']:.2f} ms, "
        f"90th percentile {speed['p90_ms']:.2f} ms, corrected {speed['corrected']:.1%} of {speed['samples']}"
    )
    save_json(results, out / "results.json")
    return results


def _roles(text: str) -> tuple[str, ...]:
    return () if text == "none" else tuple(comma_list(str, what="role", choices=ROLES)(text))


def _fewshot_scales(text: str) -> list[float]:
    """``--fewshot-scales``: comma-separated positive scales, or ``none``."""
    return [] if text.strip().lower() == "none" else comma_list(positive_float, what="scale")(text)


_fewshot_concepts = comma_list(str, what="concept", choices=FEWSHOT_CONCEPTS)
"""``--fewshot-concepts``: comma-separated concepts among :data:`FEWSHOT_CONCEPTS`."""


def _fewshot_steps(text: str) -> tuple[int, int]:
    """``--fewshot-steps``: ``GLYPH,ABDUCTION`` positive step counts."""
    steps = comma_list(positive_int, what="step count")(text)
    if len(steps) != 2:
        raise argparse.ArgumentTypeError(f"expected two positive step counts 'GLYPH,ABDUCTION', got {text!r}")
    return steps[0], steps[1]
