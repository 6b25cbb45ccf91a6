"""The options of ``neurosym hint``: the data, the training, the seq2seq baselines' models and the
neuro-symbolic pipeline's (``--model neurosym``), written once as dataclasses from which the command line is
generated. The unlisted options are study knobs: set them in a ``--config`` file (their flags still work).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from neurosym.data.hint import FEWSHOT_CONCEPTS
from neurosym.data.mnist import MNIST_VARIABLE, given_mnist
from neurosym.experiments.hint_sources import BANKS, MNIST_BANKS, bank_choice
from neurosym.experiments.options import (
    COMPILE_HELP,
    TrainingOptions,
    comma_list,
    curriculum_stages,
    curriculum_text,
    existing_folder,
    fraction_up_to_one,
    non_negative_float,
    non_negative_int,
    option,
    option_path,
    positive_float,
    positive_int,
    probability_below_one,
    reject_unused,
    seed_int,
    setup_value,
    unit_interval,
)
from neurosym.models.seq2seq import CNN_NAMES, MODEL_NAMES
from neurosym.models.seq2seq.factory import MODEL_OPTIONS, RNN_HIDDEN
from neurosym.models.seq2seq.hint_baseline import BASELINE_OPTIONS, default_learning_rate
from neurosym.pipelines.adapt import AdaptConfig
from neurosym.pipelines.concepts import ROLES
from neurosym.pipelines.trainer import HINT_PSEUDO_LABELS, LEARNING_RULES
from neurosym.training.checkpoint import Setup
from neurosym.training.loop import SCHEDULES

DEFAULT_CURRICULUM = "1:150,3:350,7:500,15:1000,all"


def _roles(text: str) -> tuple[str, ...]:
    return () if text == "none" else tuple(comma_list(str, what="role", choices=ROLES)(text))


def _fewshot_scales(text: str) -> list[float]:
    """``--fewshot-scales``: comma-separated scales in ``(0, 1]``, or ``none`` (1.5 failed after the main training)."""
    return [] if text.strip().lower() == "none" else comma_list(fraction_up_to_one, what="scale", distinct=True)(text)


_fewshot_concepts = comma_list(str, what="concept", choices=FEWSHOT_CONCEPTS, distinct=True)
"""``--fewshot-concepts``: comma-separated concepts among :data:`FEWSHOT_CONCEPTS`."""


def _fewshot_steps(text: str) -> tuple[int, int]:
    """``--fewshot-steps``: ``GLYPH,ABDUCTION`` positive step counts."""
    steps = comma_list(positive_int, what="step count")(text)
    if len(steps) != 2:
        raise argparse.ArgumentTypeError(f"expected two positive step counts 'GLYPH,ABDUCTION', got {text!r}")
    return steps[0], steps[1]


@dataclass(frozen=True)
class HintPipelineOptions(TrainingOptions):
    """The neuro-symbolic pipeline's options (--model neurosym); the unlisted ones are study knobs for a --config file."""

    semantics: str = option(
        "given", "neurosym: 'given': the grammar, precedence and HINT's operator table are given (image input learns the "
        "perception; symbol input induces the operators with the digits known); 'learned': only the grammar's shape "
        "is given, every symbol is an anonymous class whose role, value or program and precedence are learned from "
        "results, then the few-shot concepts", choices=("given", "learned"),
    )  # fmt: skip
    curriculum: tuple[tuple[int, int], ...] = option(
        curriculum_stages(DEFAULT_CURRICULUM), "neurosym: stages 'max_length:steps,...,all' from short to long expressions",
        parse=curriculum_stages, shown=curriculum_text,
    )  # fmt: skip
    lr_schedule: str = option(
        "constant", "neurosym: learning-rate schedule over --steps (cosine decays to zero at the last step)", choices=SCHEDULES
    )
    fewshot_scales: list[float] = option(
        None, "neurosym: few-shot split scales (1 = 1,000 training sentences per operator) to learn the concepts x y a b c d "
        "from after the main task, comma-separated, or 'none'", parse=_fewshot_scales, factory=lambda: [0.01, 0.1, 1.0],
    )  # fmt: skip
    classes: int = option(16, "neurosym --semantics learned --input image: anonymous classes", parse=positive_int, listed=False)
    augment_shift: int = option(0, "neurosym: shift training windows up to N px", parse=non_negative_int, listed=False)
    augment_style: float = option(0.0, "neurosym: restyle training glyphs (0 to 1)", parse=unit_interval, listed=False)
    stroke_width: int | None = option(None, "neurosym: redraw each glyph's skeleton at N px", parse=positive_int, listed=False)
    learning_rule: str = option(
        "abduction", "neurosym: abduction or the REINFORCE baseline", choices=LEARNING_RULES, listed=False
    )
    pseudo_labels: str = option(
        "all", "neurosym: train on the symbols of a pseudo-label that the result pins down, or on all of them",
        choices=HINT_PSEUDO_LABELS, listed=False,
    )  # fmt: skip
    abduction_changes: int = option(2, "neurosym: most symbols an abduction changes", parse=positive_int, listed=False)
    classifier_features: int = option(64, "neurosym: the encoder's output width", parse=positive_int, listed=False)
    classifier_width: int = option(16, "neurosym: channels of the CNN's first stage", parse=positive_int, listed=False)
    checkpoint_every: int = option(100, "neurosym: steps between checkpoints", parse=positive_int, listed=False)
    test_scale: float | None = option(
        None, "neurosym: validate and test on the splits generated at this scale (default: --scale); larger ones narrow "
        "the accuracies' intervals and rank choices better", parse=fraction_up_to_one, listed=False,
    )  # fmt: skip
    score_test: bool = option(
        True, "neurosym (image input): score the test splits too; --no-score-test scores validation alone (the "
        "few-shot concepts' too), for the runs that choose a configuration before its one test", listed=False,
    )  # fmt: skip
    extra_test_bank: str | None = option(
        None, "neurosym (image input): test the same model again on this bank's test images, as trained and with the "
        "batch-norm statistics of --adapt-examples expressions of its unlabelled training images (a --bank value: "
        "'other-writers', or an .npz; a bank without brackets borrows the main bank's)", parse=bank_choice, listed=False,
    )  # fmt: skip
    adapt: str | None = option(
        None, "neurosym (image input): after training, adapt to this bank's writer(s) from results alone: learn from "
        "--adapt-examples expressions rendered with its training images (and --adapt-replay with the first bank's) for "
        "--adapt-steps steps of the main run's curriculum and --lr-schedule, then test on its test images and the first "
        "bank's (the --adapt-* defaults were chosen on validation: benchmarks/RESULTS.md)", parse=bank_choice,
        metavar="BANK", listed=False,
    )  # fmt: skip
    ensemble: list[Path] | None = option(
        None, "neurosym (image input): train nothing; read with the mean probability of the readers these runs trained "
        "(their --out folders) with this command's data and reader options and, on generated data, its --data-seed "
        "(which draws the image pools; members may differ in --seed)", parse=option_path, nargs="+", metavar="RUN", listed=False,
    )  # fmt: skip
    adapt_examples: int = option(AdaptConfig.examples, "neurosym: new writer's expressions", parse=positive_int, listed=False)
    adapt_steps: int = option(AdaptConfig.steps, "neurosym: training steps of --adapt", parse=positive_int, listed=False)
    adapt_replay: int | None = option(
        None, "neurosym: first-bank expressions replayed (default: as many)", parse=positive_int, listed=False
    )
    adapt_lr: float | None = option(
        None, "neurosym: peak learning rate of --adapt (default: --learning-rate's)", parse=positive_float, listed=False
    )
    adapt_distill: float = option(
        AdaptConfig.distill, "neurosym: weight of keeping the trained reader's reading of the replayed windows (KL; "
        "learning without forgetting); 0 = off", parse=non_negative_float, listed=False,
    )  # fmt: skip
    adapt_refit: int = option(
        AdaptConfig.refit_steps, "neurosym: after --adapt, steps fitting the reader to the abduced readings of the new "
        "writer's and the replayed windows (128 windows a step); 0 = off", parse=non_negative_int, listed=False,
    )  # fmt: skip
    adapt_route: int = option(
        AdaptConfig.route_steps, "neurosym: after --adapt, read each expression with the trained reader or the adapted "
        "one as a router trained this many steps to tell the first bank's windows from the new writer's weighs them "
        "(--adapt-refit then fits the new writer's only); 0 = off", parse=non_negative_int, listed=False,
    )  # fmt: skip
    fewshot_bank: str | None = option(
        None, "neurosym (image input): a bank (.npz) whose new-concept glyphs replace the main bank's in few-shot "
        "learning and testing", parse=bank_choice, listed=False,
    )  # fmt: skip
    fewshot_concepts: list[str] = option(
        None, "neurosym: which few-shot concepts to learn, comma-separated", parse=_fewshot_concepts,
        factory=lambda: list(FEWSHOT_CONCEPTS), listed=False,
    )  # fmt: skip
    fewshot_steps: tuple[int, int] = option(
        (150, 100), "neurosym (image input): steps spent on a new glyph's perception, then on abduction with its learned "
        "meaning, 'GLYPH,ABDUCTION'", parse=_fewshot_steps, listed=False,
    )  # fmt: skip
    fewshot_replay: int = option(
        200, "neurosym (image input): main-task expressions replayed while a new glyph is learned", parse=positive_int,
        listed=False,
    )  # fmt: skip
    fewshot_only_new_class: tuple[str, ...] = option(
        ("operator", "number"), "neurosym: roles ('number', 'operator', comma-separated, or 'none') whose new glyph trains "
        "only its own output row", parse=_roles, listed=False,
    )  # fmt: skip
    speed_samples: int = option(300, "neurosym: corrupted expressions timed for abduction", parse=positive_int, listed=False)


DEFAULT_STEPS = {"seq2seq": 100_000, "neurosym": 2_000}
"""Training steps when ``--steps`` is not given: the HINT release's budget, and the pipeline's."""


@dataclass(frozen=True)
class HintOptions(HintPipelineOptions):
    """The options of neurosym hint: the data and the training, the seq2seq baselines' models (unlisted ones for a --config file)."""

    model: str = option(
        "transformer_rel_uni",
        "which model to train: a seq2seq baseline, or neurosym (the pipeline)",
        choices=(*MODEL_NAMES, "neurosym"),
    )
    input: Literal["symbol", "image"] = option("symbol", "symbol ids or handwritten images", choices=("symbol", "image"))
    scale: float = option(1.0, "fraction of the released split sizes (1 = Table A1)", parse=fraction_up_to_one)
    steps: int | None = option(
        None, "maximum training steps (default: 100k for the seq2seq models as in HINT, 2,000 for neurosym)", parse=positive_int
    )
    batch_size: int = option(128, "global batch size (HINT: 128)", parse=positive_int)
    learning_rate: float | None = option(
        None, "Adam learning rate (default: 1e-3 RNNs and neurosym, 1e-4 Transformers)", parse=positive_float, aliases=["--lr"]
    )
    seed: int = option(
        0, "seed of the initial weights, the training batches and windows, and --semantics learned's anonymous ids; of the "
        "data too unless --data-seed is given", parse=seed_int,
    )  # fmt: skip
    data_seed: int | None = option(
        None, "seed of the data (default: --seed): the generated splits, the bank's image pools and drawn digits, a "
        "release's sub-sampling, and the validation and test images; --seed then draws the reader's initial weights and "
        "its training batches, so that runs of one --data-seed and several --seed are scored on the same images (and "
        "may be read as one: --ensemble)", parse=seed_int, metavar="N",
    )  # fmt: skip
    data: Path | None = option(
        None, "an official HINT release folder (expr_{train,val,test}.json, fewshot_dataset.json, symbol_images/): train, "
        "validate and test on it; --scale then sub-samples each split, drawn with --data-seed", parse=existing_folder, metavar="PATH",
    )  # fmt: skip
    bank: str = option(
        "default", "symbol images of generated expressions: " + "; ".join(f"'{k}': {v}" for k, v in BANKS.items())
        + "; or an .npz archive (images uint8 [N, H, W] white on black, labels [N], optional splits [N])", parse=bank_choice,
    )  # fmt: skip
    cnn: str = option("resnet18", "image window encoder (image input)", choices=CNN_NAMES)
    eval_every: int = option(1000, "steps between validation evaluations", parse=positive_int)
    patience: int = option(50, "evaluations without improvement before stopping (HINT release: 50)", parse=positive_int)
    num_workers: int = option(0, "data-loading worker processes", parse=non_negative_int)
    compile: bool = option(False, COMPILE_HELP)
    dim: int = option(
        512, "Transformer width; embeddings are mapped to it by a linear layer when it differs from --embedding",
        parse=positive_int,
    )  # fmt: skip
    heads: int = option(8, "attention heads of the Transformers", parse=positive_int)
    hidden: int | None = option(
        None, f"RNN hidden units (default {RNN_HIDDEN}) / Transformer feed-forward size (default 4 × --dim)", parse=positive_int
    )
    encoder_layers: int | None = option(None, "encoder depth (default: 3 RNNs, 6 Transformers)", parse=positive_int)
    dropout: float | None = option(
        None, "dropout of every recurrent layer and sub-layer (default: 0.5 RNNs, 0.1 Transformers)", parse=probability_below_one
    )
    drawn_digits: int = option(
        0, "add N drawn images of each digit, in shapes one writer set may lack (flagged 1, open 4, crossed 7, hooked 9, "
        "...), to the training images of --bank (generated expressions only)", parse=non_negative_int, metavar="N",
        listed=False,
    )  # fmt: skip
    clip: float = option(5.0, "gradient-norm clipping threshold", parse=positive_float, listed=False)
    eval_batch_size: int = option(256, "batch size of greedy decoding", parse=positive_int, listed=False)
    embedding: int = option(128, "size of the source and target embeddings", parse=positive_int, listed=False)
    decoder_layers: int = option(1, "decoder depth", parse=positive_int, listed=False)
    norm: str = option("post", "LayerNorm after (HINT release) or before each sub-layer", choices=("post", "pre"), listed=False)
    step_embedding: bool = option(
        False, "transformer_rel_uni: add a sinusoidal step embedding before every application of the shared layer (not in "
        "the HINT release)", listed=False,
    )  # fmt: skip
    relative: str = option(
        "xl_clipped", "relative position encoding: Transformer-XL with distances clipped at ±15 (the HINT release), "
        "unclipped XL, or Shaw's learned vectors per clipped distance", choices=("xl_clipped", "xl", "shaw"), listed=False,
    )  # fmt: skip
    source_boundaries: bool = option(
        True, "frame every source with learned start and end vectors, as the HINT release's START and END tokens", listed=False
    )
    init: str = option(
        "release", "Transformer initialisation: the HINT release's (Xavier-uniform feed-forward, absolute-attention and "
        "output weights) or PyTorch's defaults", choices=("release", "torch"), listed=False,
    )  # fmt: skip
    attention_bias: bool = option(
        False, "biases in the Transformers' attention projections (the HINT release has none)", listed=False
    )
    embedding_dropout: bool | None = option(
        None, "dropout on the Transformers' input embeddings (default: as the HINT release, only in the vanilla transformer, "
        "where it follows the absolute positions)", listed=False,
    )  # fmt: skip

    def __post_init__(self) -> None:
        if self.ensemble and (self.model, self.input, self.semantics) != ("neurosym", "image", "given"):
            raise ValueError("--ensemble reads with trained symbol readers: --model neurosym --input image only")
        if self.ensemble and (self.adapt is not None or self.fewshot_scales):
            raise ValueError("--ensemble reads with readers trained apart; --adapt and the few-shot stage train one "
                             "reader: adapt each run, or pass --fewshot-scales none")  # fmt: skip
        if self.model.startswith("transformer") and self.dim % self.heads:
            raise ValueError(f"--dim ({self.dim}) must be a multiple of --heads ({self.heads})")
        if self.adapt_route and self.fewshot_scales:
            raise ValueError("--adapt-route reads with two readers, the few-shot stage trains one: add --fewshot-scales none")
        if not self.score_test and (self.model, self.input, self.semantics) != ("neurosym", "image", "given"):
            raise ValueError("--no-score-test scores validation alone: --model neurosym --input image with the given "
                             "semantics")  # fmt: skip
        if self.drawn_digits and self.data is not None:
            raise ValueError("--drawn-digits adds to --bank's images; a release's expressions name theirs")
        if self.data is not None and (other := [name for name in OTHER_BANKS if getattr(self, name) is not None]):
            raise ValueError(f"--{other[0].replace('_', '-')} shows the expressions with another bank's images; a "
                             "release's expressions name their own (--data): use generated expressions (--bank)")  # fmt: skip
        if self.model == "neurosym":
            reject_unused(self, SEQ2SEQ_ONLY, "the seq2seq baselines (--model other than neurosym)")
        else:
            reject_unused(self, PIPELINE_ONLY, "--model neurosym")
        if self.input == "symbol":
            reject_unused(self, IMAGE_ONLY + (PIPELINE_IMAGE_ONLY if self.model == "neurosym" else ()), "--input image")
        if self.data is not None:
            reject_unused(self, ("bank",), "generated expressions (a release's expressions name their images)")
        if self.model != "neurosym" and not self.model.startswith("transformer"):
            reject_unused(self, TRANSFORMER_ONLY, "the Transformers")
        elif self.model != "neurosym":  # --relative, --step-embedding: some Transformers only
            for name in sorted(set(TRANSFORMER_ONLY) - set(MODEL_OPTIONS[self.model]) - {"norm"}):  # (norm: pre_norm there)
                reject_unused(self, (name,), ", ".join(m for m, read in MODEL_OPTIONS.items() if name in read))
        if self.ensemble:  # nothing is trained
            reject_unused(self, ENSEMBLE_UNUSED, "a run that trains its reader (not --ensemble)")
        if self.adapt is None:  # (--extra-test-bank re-estimates its statistics on --adapt-examples expressions too)
            reject_unused(self, ADAPT_ONLY, "--adapt")
            if self.extra_test_bank is None:
                reject_unused(self, ("adapt_examples",), "--adapt or --extra-test-bank")
        if self.semantics == "learned" and self.input == "image":  # its grounding reads --classes, --steps, --batch-size
            reject_unused(self, GIVEN_SEMANTICS_IMAGE_ONLY, "--semantics given")
        if self.semantics == "given":
            reject_unused(self, ("classes",), "--semantics learned")
        if not self.fewshot_scales:  # --fewshot-scales none: no few-shot stage
            reject_unused(self, FEWSHOT_ONLY, "the few-shot stage (--fewshot-scales other than none)")
            if self.semantics == "learned" and self.input == "image":  # its grounding draws windows as they are
                reject_unused(self, ("augment_shift", "augment_style"), "--semantics given or the few-shot stage")
            if self._searches_only():
                reject_unused(self, ("time_limit",), "a run that trains (a baseline, --input image or the few-shot stage)")

    def data_seed_or_seed(self) -> int:
        """The seed of the run's data: ``--data-seed``, else ``--seed``. It draws the splits, every bank's image pools
        and drawn digits, a release's sub-sampling, the images the pipeline validates and tests on, and the baselines'
        images of every split (a fixed dataset they see every epoch); ``--seed`` draws the initial weights, the
        training batches and windows, and the anonymous ids of ``--semantics learned``."""
        return self.seed if self.data_seed is None else self.data_seed

    def mnist_file(self) -> Path | None:
        """The MNIST file or idx folder whose digits the run's images include, resolved: ``$NEUROSYM_MNIST``'s
        (:func:`~neurosym.data.mnist.given_mnist`) where image input on generated expressions reads a bank of MNIST
        digits (:data:`~neurosym.experiments.hint_sources.MNIST_BANKS`: its ``--bank``, ``--adapt``,
        ``--extra-test-bank`` or ``--fewshot-bank``); ``None`` where it reads none, or the packaged default's."""
        banks = [getattr(self, name) for name in ("bank", *OTHER_BANKS)]
        reads = self.input == "image" and self.data is None and any(bank in MNIST_BANKS for bank in banks)
        given = given_mnist() if reads else None
        return None if given is None else given.resolve()

    def checkpoints(self) -> Path | None:
        """A baseline's checkpoint, ``MODEL_INPUT.pt`` in ``--out`` (which the other baselines' share); the folder
        ``--out`` of ``--model neurosym``, whose stages checkpoint there; none for ``--ensemble``, and for symbol input
        without the few-shot stage (a search for the symbols' meanings): they train nothing."""
        if self.ensemble or self._searches_only():
            return None
        return self.out if self.model == "neurosym" else self.out / f"{self.model}_{self.input}.pt"

    def _searches_only(self) -> bool:
        """Whether the run trains nothing but searches: the pipeline on symbol input (a search for the symbols'
        meanings) without the few-shot stage."""
        return self.model == "neurosym" and self.input == "symbol" and not self.fewshot_scales

    def training_steps(self) -> int:
        """``--steps``, else the budget of the model: the HINT release's, or the pipeline's."""
        return self.steps or DEFAULT_STEPS["neurosym" if self.model == "neurosym" else "seq2seq"]

    def training_learning_rate(self) -> float:
        """``--learning-rate``, else the model's: the HINT release's for a baseline, :data:`PIPELINE_LEARNING_RATE`
        for ``--model neurosym``."""
        if self.learning_rate is not None:
            return self.learning_rate
        return PIPELINE_LEARNING_RATE if self.model == "neurosym" else default_learning_rate(self.model)


class RunSetup:
    """What one run under ``options`` builds its model and training data from, as its checkpoints keep it so that a
    resume under other options, or on data rewritten since, is refused
    (:func:`~neurosym.training.checkpoint.check_setup`): each option as
    :func:`~neurosym.experiments.options.setup_value` gives it, a path with the stamp of its files, and the MNIST file
    that the run's digits come from (``$NEUROSYM_MNIST``: :meth:`HintOptions.mnist_file`), so that a resume under
    another one, or after it was rewritten, is refused too. Make one when the run starts and hand it to each stage: an
    option's value is taken once (the data's, :data:`DATA_OPTIONS`, and the MNIST file, on construction), so that a
    release's files are walked once per run, not at every checkpoint, and every checkpoint
    of the run records the same stamps. ``data_seed`` is kept as given (``None``: ``--seed``'s); its default,
    :meth:`defaults`, lets a checkpoint written before it was kept resume under the data it was trained on."""

    def __init__(self, options: HintOptions) -> None:
        self._options = options
        self._values: dict[str, Any] = {MNIST_VARIABLE: setup_value(options.mnist_file(), options.out)}
        self.of(())

    def of(self, names: Iterable[str], defaults: Mapping[str, Any] | None = None) -> Setup:
        """The options ``names`` together with the data's (:data:`DATA_OPTIONS`) and the MNIST file (key
        ``NEUROSYM_MNIST``, ``None`` for none), each as this run first took it, with :meth:`defaults` and ``defaults`` (a
        key's default where a setup lacks it or holds ``None``)."""
        chosen = (*DATA_OPTIONS, MNIST_VARIABLE, *names)
        for name in chosen:
            if name not in self._values:
                self._values[name] = setup_value(getattr(self._options, name), self._options.out)
        return Setup({name: self._values[name] for name in chosen}, {**self.defaults(), **(defaults or {})})

    def defaults(self) -> dict[str, Any]:
        """The setup's defaults: ``data_seed`` not given (or not kept, by a checkpoint written before it was) is
        ``--seed``, which drew the data then."""
        return {"data_seed": self._options.seed}


PIPELINE_LEARNING_RATE = 1e-3
"""``--model neurosym``'s Adam learning rate where ``--learning-rate`` is left out."""

DATA_OPTIONS = ("model", "input", "scale", "data", "bank", "drawn_digits", "data_seed")
"""The options that choose a run's training data (and the model kind)."""

SEQ2SEQ_ONLY = (*(name for name in BASELINE_OPTIONS if name != "cnn"), "clip", "eval_every", "patience", "num_workers", "compile")
"""The options that only the seq2seq baselines read."""
PIPELINE_ONLY = tuple(
    item.name for item in fields(HintPipelineOptions) if item.name not in {f.name for f in fields(TrainingOptions)}
)
"""The options that only ``--model neurosym`` reads."""
OTHER_BANKS = ("extra_test_bank", "adapt", "fewshot_bank")
"""The options that show a run's expressions with the images of another bank than the run's."""
IMAGE_ONLY = ("cnn", "bank", "drawn_digits")
"""The options that only image input reads."""
GIVEN_SEMANTICS_IMAGE_ONLY = (
    "cnn", "learning_rate", "lr_schedule", "curriculum", "stroke_width", "learning_rule", "pseudo_labels", "abduction_changes",
    "classifier_features", "classifier_width", "checkpoint_every", "adapt", "extra_test_bank",
)  # fmt: skip
"""The reader and training options of image input that ``--semantics learned`` (its own grounding) does not read."""
PIPELINE_IMAGE_ONLY = (
    "steps", "batch_size", "learning_rate", "lr_schedule", "curriculum", "augment_shift", "augment_style", "stroke_width",
    "learning_rule", "pseudo_labels", "abduction_changes", "classifier_features", "classifier_width", "checkpoint_every",
    "extra_test_bank", "adapt", "adapt_examples", "adapt_steps", "adapt_replay", "adapt_lr", "adapt_distill", "adapt_refit",
    "adapt_route", "fewshot_bank", "fewshot_steps", "fewshot_replay", "fewshot_only_new_class", "eval_batch_size", "classes",
)  # fmt: skip
"""The options that ``--model neurosym`` reads on image input only (symbol input trains and reads with no reader)."""
TRANSFORMER_ONLY = ("dim", "heads", "relative", "norm", "step_embedding", "attention_bias", "embedding_dropout", "init")
"""The baseline options that only the Transformers read."""
ENSEMBLE_UNUSED = (
    "steps", "batch_size", "learning_rate", "lr_schedule", "curriculum", "augment_shift", "augment_style", "learning_rule",
    "pseudo_labels", "checkpoint_every", "time_limit",
)  # fmt: skip
"""The training options of ``--model neurosym`` that ``--ensemble`` (readers trained apart, read as one) does not use
(nothing trains, so a ``--time-limit`` has nothing to stop)."""
ADAPT_ONLY = ("adapt_steps", "adapt_replay", "adapt_lr", "adapt_distill", "adapt_refit", "adapt_route")
"""The ``--adapt-*`` options that only ``--adapt`` reads (``--adapt-examples``: ``--extra-test-bank`` too)."""
FEWSHOT_ONLY = ("fewshot_bank", "fewshot_concepts", "fewshot_steps", "fewshot_replay", "fewshot_only_new_class")
"""The ``--fewshot-*`` options that only the few-shot stage reads (none runs with ``--fewshot-scales none``)."""
