"""DeepMind Mathematics benchmark (Saxton et al., 2019): Transformer, attentional LSTM, symbolic route.

Data come from DeepMind's generator (run in its own environment, see :mod:`neurosym.data.mathematics`)
or from a released dataset folder (``--data-root``). Models train on the ``train-easy/medium/hard``
files of the chosen modules and are scored by exact match per module on ``interpolate`` and on the
matching ``extrapolate`` modules; the split score is the mean over modules, as in the paper. The
symbolic route (grammar + exact execution, :mod:`neurosym.semantics.mathematics_arithmetic`) answers the
same test questions without training.
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from einops import rearrange
from torch import nn
from tqdm import tqdm

from neurosym.data.mathematics import (
    BOS,
    EOS,
    MAX_ANSWER_LENGTH,
    PAD,
    VOCAB_SIZE,
    MathExample,
    decode,
    encode,
    encode_batch,
    generate,
    generated_root,
    load_split,
    pad_sequences,
)
from neurosym.experiments.options import (
    add_compile_option,
    add_preset_option,
    add_run_options,
    apply_threads,
    comma_list,
    existing_folder,
    positive_float,
    positive_int,
)
from neurosym.experiments.published import MATHEMATICS, MATHEMATICS_TRANSFORMER_MODULES
from neurosym.experiments.report import format_table, pyplot, save_json
from neurosym.metrics.mathematics import mean_over_modules, module_accuracies
from neurosym.models.seq2seq import Seq2Seq, build_front_end, build_seq2seq
from neurosym.semantics.mathematics_arithmetic import (
    ARITHMETIC_MODULES,
    symbolic_answers,
)
from neurosym.training import DistributedContext, TrainConfig, resolve_device, train
from neurosym.training.compile import compile_for_training
from neurosym.training.device import mixed_precision
from neurosym.training.stopping import minutes_to_seconds

EXTRAPOLATION_MODULES: dict[str, tuple[str, ...]] = {
    "arithmetic__add_or_sub": ("arithmetic__add_or_sub_big",),
    "arithmetic__add_sub_multiple": ("arithmetic__add_sub_multiple_longer",),
    "arithmetic__mul": ("arithmetic__mul_big",),
    "arithmetic__div": ("arithmetic__div_big",),
    "arithmetic__mixed": ("arithmetic__mixed_longer",),
    "arithmetic__mul_div_multiple": ("arithmetic__mul_div_multiple_longer",),
    "comparison__closest": ("comparison__closest_more",),
    "comparison__kth_biggest": ("comparison__kth_biggest_more",),
    "comparison__sort": ("comparison__sort_more",),
    "numbers__place_value": ("numbers__place_value_big",),
    "numbers__round_number": ("numbers__round_number_big",),
}
"""The extrapolation modules that test each training module (none for the other modules)."""
DEFAULT_MODULES = tuple(module for module in EXTRAPOLATION_MODULES if module.startswith("arithmetic__"))
"""The six arithmetic modules that have extrapolation versions."""

TRAIN_REGIMES = ("train-easy", "train-medium", "train-hard")
NEURAL_MODELS = ("transformer", "lstm_att", "lstm_att_bi")
"""The Transformer, the attentional LSTM with a unidirectional and with a bidirectional encoder."""
MODELS = ("symbolic", *NEURAL_MODELS)


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and schedule of the neural baselines."""

    dim: int
    heads: int
    ff_dim: int
    encoder_layers: int
    decoder_layers: int
    lstm_hidden: int
    lstm_encoder_layers: int
    batch_size: int
    steps: int
    dropout: float


CONFIGS = {
    # The paper: d_model 512, 8 heads, d_ff 2048, batch 1024, 500k steps; the depth is not stated there,
    # so the 6 + 6 layers of Vaswani et al.'s base model are used. LSTM decoder of 2048 units.
    "paper": ModelConfig(512, 8, 2048, 6, 6, 2048, 1, 1024, 500_000, 0.1),
    # Sized so that both models train within about ten minutes each on two CPU cores.
    "cpu": ModelConfig(128, 4, 512, 2, 2, 256, 1, 64, 1200, 0.0),
    "smoke": ModelConfig(32, 2, 64, 1, 1, 32, 1, 16, 20, 0.0),
}
PRESET_MEANINGS = {
    "smoke": "tiny models, 30 training and 10 test questions per module: checks that everything runs (a minute)",
    "cpu": "d_model 128, 2 + 2 layers, 1,200 steps of batch 64: about ten minutes per model on 2 cores",
    "paper": "the paper's d_model 512, batch 1024, 500k steps (meant for GPUs)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models", type=comma_list(str, what="model", choices=MODELS), default=list(MODELS),
        help=f"comma-separated models to evaluate from {', '.join(MODELS)}",
    )  # fmt: skip
    parser.add_argument(
        "--modules", type=comma_list(str, what="module"), default=list(DEFAULT_MODULES),
        help="comma-separated training/interpolation modules (file stems)",
    )  # fmt: skip
    add_preset_option(parser, PRESET_MEANINGS, default="cpu")
    parser.add_argument("--steps", type=positive_int, default=None, help="training steps (default: the config's)")
    parser.add_argument("--batch-size", type=positive_int, default=None, help="batch size (default: the config's)")
    parser.add_argument("--lr", type=positive_float, default=6e-4, help="Adam learning rate (paper: 6e-4)")
    parser.add_argument("--clip", type=positive_float, default=0.1, help="absolute gradient-value clipping (paper: 0.1)")
    parser.add_argument(
        "--train-per-module",
        type=positive_int,
        default=30_000,
        help="training questions per module (split over easy/medium/hard)",
    )
    parser.add_argument(
        "--test-per-module", type=positive_int, default=500, help="test questions per interpolation/extrapolation module"
    )
    parser.add_argument(
        "--data-root", type=existing_folder, default=None, help="a released dataset folder to read instead of generating"
    )
    parser.add_argument("--eval-batch-size", type=positive_int, default=256, help="questions per greedy-decoding batch")
    parser.add_argument("--checkpoint-every", type=positive_int, default=250, help="steps between checkpoints")
    add_compile_option(parser)
    add_run_options(parser, out="results/mathematics")


def run(args: argparse.Namespace) -> dict:
    config = CONFIGS[args.preset]
    steps = args.steps if args.steps is not None else config.steps
    batch_size = args.batch_size if args.batch_size is not None else config.batch_size
    train_count = 30 if args.preset == "smoke" else args.train_per_module
    test_count = 10 if args.preset == "smoke" else args.test_per_module
    device = resolve_device(args.device)
    apply_threads(args.threads)
    neural = [name for name in args.models if name != "symbolic"]
    try:  # an unknown module or an unreadable --data-root: the message names it
        data = load_data(args.modules, train_count if neural else 0, test_count, args.seed, args.data_root, args.progress)
    except (RuntimeError, ValueError, FileNotFoundError) as error:
        raise SystemExit(f"neurosym mathematics: {error}") from None
    if neural and not data["train"]:
        raise SystemExit(
            "neurosym mathematics: no training questions left for the neural models (all of them occur in the test sets)"
        )

    results: dict = {
        "config": {**asdict(config), "steps": steps, "batch_size": batch_size, "lr": args.lr, "clip": args.clip},
        "device": str(device),
        "threads": torch.get_num_threads(),
        "train_questions": len(data["train"]),
        "test_questions_per_module": test_count,
        "modules": {regime: sorted({e.module for e in data[regime]}) for regime in ("interpolate", "extrapolate")},
        "published": MATHEMATICS,
        "models": {},
    }
    for name in args.models:
        started = time.perf_counter()
        if name == "symbolic":  # scored only on the modules whose question language it covers
            answer = symbolic_answers
            extra: dict = {}
            tests = {r: [e for e in data[r] if e.module in ARITHMETIC_MODULES[r]] for r in ("interpolate", "extrapolate")}
        else:
            model, extra = train_model(name, config, data["train"], steps, batch_size, args, device)
            answer = functools.partial(greedy_answers, model, device=device, batch_size=args.eval_batch_size)
            tests = data
        scores = {regime: score(answer, tests[regime]) for regime in ("interpolate", "extrapolate")}
        results["models"][name] = {**scores, **extra, "seconds": time.perf_counter() - started}

    print(format_table(*result_table(results)))
    args.out.mkdir(parents=True, exist_ok=True)
    save_json(results, args.out / "results.json")
    plot(results, args.out / "accuracy.png")
    return results


def load_data(
    modules: Sequence[str], train_count: int, test_count: int, seed: int, data_root: Path | None, progress: bool = False
) -> dict[str, list[MathExample]]:
    """Train examples (``train_count`` per module, a third per difficulty; none when 0) and test examples.

    As in the released dataset, training questions that also occur in a test set are dropped.
    """
    extrapolate = [m for module in modules for m in EXTRAPOLATION_MODULES.get(module, ())]
    per_regime = train_count // len(TRAIN_REGIMES)
    train_regimes = TRAIN_REGIMES if per_regime else ()
    if data_root is None:
        tests = [("interpolate", m) for m in modules] + [("extrapolate", m) for m in extrapolate]
        generate(tests, test_count, seed=seed, progress=progress)
        if train_regimes:
            generate(
                [(regime, module) for regime in train_regimes for module in modules], per_regime, seed=seed, progress=progress
            )
        data_root = generated_root(seed)
    tests = {
        "interpolate": load_split(data_root, "interpolate", list(modules), test_count),
        "extrapolate": load_split(data_root, "extrapolate", extrapolate, test_count),
    }
    seen = {e.question for split in tests.values() for e in split}
    train = [e for regime in train_regimes for e in load_split(data_root, regime, list(modules), per_regime)]
    return {"train": [e for e in train if e.question not in seen], **tests}


def score(answer, examples: Sequence[MathExample]) -> dict:
    """Per-module exact match and the mean over modules for one test regime."""
    if not examples:
        return {"per_module": {}, "mean": None}
    predictions = answer([e.question for e in examples])
    per_module = module_accuracies([e.module for e in examples], predictions, [e.answer for e in examples])
    return {"per_module": per_module, "mean": mean_over_modules(per_module)}


def build_model(name: str, config: ModelConfig) -> Seq2Seq:
    """One of :data:`NEURAL_MODELS` over characters: the paper's Transformer, or the attentional LSTM whose
    encoder is unidirectional (``"lstm_att"``) or bidirectional (``"lstm_att_bi"``, ``lstm_hidden / 2``
    units per direction)."""
    if name not in NEURAL_MODELS:
        raise ValueError(f"unknown model {name!r}: use one of {', '.join(NEURAL_MODELS)}")
    transformer = name == "transformer"
    return build_seq2seq(
        name.removesuffix("_bi"),
        build_front_end("symbol", config.dim, vocab_size=VOCAB_SIZE),
        VOCAB_SIZE,
        hidden=config.ff_dim if transformer else config.lstm_hidden,
        heads=config.heads,
        encoder_layers=config.encoder_layers if transformer else config.lstm_encoder_layers,
        decoder_layers=config.decoder_layers if transformer else 1,
        dropout=config.dropout,
        bidirectional=name == "lstm_att_bi",
    )


PAPER_ADAM = {"optimizer": "adam", "betas": (0.9, 0.995), "eps": 1e-9, "clip_norm": None}
"""The paper's Adam settings; the learning rate and the gradient-value clip come from the command line."""


def collate(examples: Sequence[MathExample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Examples -> ``(questions [B, S], question padding mask [B, S], answers [B, T])`` (BOS ... EOS answers)."""
    batch = encode_batch(examples)
    return batch.questions, batch.questions == PAD, batch.answers


def answer_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of the answer characters under teacher forcing (padding ignored)."""
    questions, mask, answers = batch
    logits = model(questions, mask, answers[:, :-1])
    return nn.functional.cross_entropy(
        rearrange(logits.float(), "b t v -> (b t) v"), rearrange(answers[:, 1:], "b t -> (b t)"), ignore_index=PAD
    )


def train_model(
    name: str,
    config: ModelConfig,
    train_examples: Sequence[MathExample],
    steps: int,
    batch_size: int,
    args: argparse.Namespace,
    device: torch.device,
) -> tuple[Seq2Seq, dict]:
    """Teacher-forced training with :func:`neurosym.training.train`: Adam (β = 0.9, 0.995; ε = 1e-9),
    learning rate ``args.lr``, gradient values clipped to ``args.clip``, no norm clipping, no validation.

    Checkpoints every ``args.checkpoint_every`` steps to ``<out>/<name>/checkpoint.pt`` and resumes from it
    (a larger ``steps`` continues training on the same batch order). ``<out>/<name>/settings.json`` records
    the model configuration, batch size, learning rate, clip and seed; resuming with other ones raises.
    """
    folder = args.out / name
    if not args.resume:
        (folder / "checkpoint.pt").unlink(missing_ok=True)
    settings = {"model": asdict(config), "batch_size": batch_size, "lr": args.lr, "clip": args.clip, "seed": args.seed}
    _check_settings(folder, settings)
    torch.manual_seed(args.seed)
    model = build_model(name, config)
    if args.compile:
        compile_for_training(model)
    train_config = TrainConfig(
        max_steps=steps,
        batch_size=batch_size,
        lr=args.lr,
        clip_value=args.clip,
        eval_every=args.checkpoint_every,
        checkpoint=folder / "checkpoint.pt",
        seed=args.seed,
        progress=args.progress,
        time_limit=minutes_to_seconds(args.time_limit),
        **PAPER_ADAM,
    )
    print(f"training {name} ({sum(p.numel() for p in model.parameters()):,} parameters) for {steps} steps")
    outcome = train(model, train_examples, answer_loss, train_config, DistributedContext(0, 1, 0, device), collate_fn=collate)
    model.eval()
    losses = [(entry["step"], entry["loss"]) for entry in outcome.history]
    return model, {
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": outcome.steps,
        "losses": losses,
        "final_loss": losses[-1][1],
    }


def _check_settings(folder: Path, settings: dict) -> None:
    """Write ``settings.json`` for a fresh run; refuse to resume a checkpoint written with other settings."""
    recorded = folder / "settings.json"
    if (folder / "checkpoint.pt").exists():
        if not recorded.exists() or json.loads(recorded.read_text()) != json.loads(json.dumps(settings)):
            raise ValueError(
                f"{folder / 'checkpoint.pt'} was written with other settings than {settings} (see {recorded}); "
                "remove it or choose another --out"
            )
        return
    save_json(settings, recorded)


@torch.no_grad()
def greedy_answers(model: Seq2Seq, questions: Sequence[str], device: torch.device, batch_size: int) -> list[str]:
    """Greedy decoding of at most 30 answer characters for every question."""
    answers = []
    for start in tqdm(range(0, len(questions), batch_size), desc="decoding", unit="batch", leave=False):
        src = pad_sequences([encode(q, eos=True) for q in questions[start : start + batch_size]]).to(device)
        mask = src == PAD
        with mixed_precision(device):
            tokens = model.greedy_decode(src, mask, max_len=MAX_ANSWER_LENGTH + 1, bos=BOS, eos=EOS)
        answers.extend(decode(row) for row in tokens.tolist())
    return answers


def _or_na(value: float | None) -> float | str:
    return "n/a" if value is None else value


def result_table(results: dict) -> tuple[list[str], list[list]]:
    """Rows ``(regime, module, one accuracy per model, published Transformer)`` then the two means; a
    model not scored on a module (the symbolic route outside arithmetic) shows ``n/a``."""
    names = list(results["models"])
    headers = ["regime", "module", *names, "published Transformer"]
    rows = []
    for regime in ("interpolate", "extrapolate"):
        for module in results["modules"][regime]:
            accuracies = [results["models"][n][regime]["per_module"].get(module, "n/a") for n in names]
            rows.append(
                [regime, module.removeprefix("arithmetic__"), *accuracies, MATHEMATICS_TRANSFORMER_MODULES.get(module, "")]
            )
    for regime in (r for r in ("interpolate", "extrapolate") if results["modules"][r]):
        means = [_or_na(results["models"][n][regime]["mean"]) for n in names]
        rows.append([regime, "mean over modules", *means, f"{MATHEMATICS['transformer'][regime]} (all modules)"])
        published = [MATHEMATICS.get(n, {}).get(regime, "") for n in names]
        rows.append([regime, "published mean (all modules)", *published, MATHEMATICS["transformer"][regime]])
    return headers, rows


def plot(results: dict, path: Path) -> Path:
    """Grouped bars: accuracy per module and model, interpolation and extrapolation side by side."""
    plt = pyplot()
    names = list(results["models"])
    figure, axes = plt.subplots(1, 2, figsize=(13, 4.5), sharey=True)
    for axis, regime in zip(axes, ("interpolate", "extrapolate")):
        modules = results["modules"][regime]
        width = 0.8 / max(1, len(names))
        for offset, name in enumerate(names):
            values = [results["models"][name][regime]["per_module"].get(m, 0.0) for m in modules]
            positions = [i + (offset - (len(names) - 1) / 2) * width for i in range(len(modules))]
            axis.bar(positions, values, width, label=name)
        axis.axhline(MATHEMATICS["transformer"][regime], color="black", linestyle="--", linewidth=1,
                     label="paper Transformer (mean, all modules)")  # fmt: skip
        axis.set_xticks(range(len(modules)), [m.removeprefix("arithmetic__") for m in modules], rotation=30, ha="right")
        axis.set_title(regime)
        axis.set_ylim(0, 1.05)
    axes[0].set_ylabel("exact-match accuracy")
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
