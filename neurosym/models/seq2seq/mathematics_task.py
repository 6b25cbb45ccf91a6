"""The DeepMind Mathematics benchmark (Saxton et al., 2019) as a character-level seq2seq task: the
module lists, the model sizes of each budget, the data of a run, the Transformer and attentional-LSTM
baselines, their teacher-forced training and greedy answers, and exact-match scores per module."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict

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
from neurosym.metrics.mathematics import mean_over_modules, module_accuracies
from neurosym.models.seq2seq.base import Seq2Seq
from neurosym.models.seq2seq.factory import build_front_end, build_seq2seq
from neurosym.training import DistributedContext, TrainConfig, train
from neurosym.training.checkpoint import Setup
from neurosym.training.checks import int_at_least
from neurosym.training.compile import compile_for_training
from neurosym.training.device import at_least_float32, mixed_precision
from neurosym.training.modes import evaluation_mode
from neurosym.training.seeding import seeded

EXTRAPOLATION_MODULES: dict[str, tuple[str, ...]] = {
    "algebra__polynomial_roots": ("algebra__polynomial_roots_big",),
    "arithmetic__add_or_sub": ("arithmetic__add_or_sub_big",),
    "arithmetic__add_sub_multiple": ("arithmetic__add_sub_multiple_longer",),
    "arithmetic__mul": ("arithmetic__mul_big",),
    "arithmetic__div": ("arithmetic__div_big",),
    "arithmetic__mixed": ("arithmetic__mixed_longer",),
    "arithmetic__mul_div_multiple": ("arithmetic__mul_div_multiple_longer",),
    "comparison__closest": ("comparison__closest_more",),
    "comparison__kth_biggest": ("comparison__kth_biggest_more",),
    "comparison__sort": ("comparison__sort_more",),
    "measurement__conversion": ("measurement__conversion",),  # (the release's extrapolate file keeps the name)
    "numbers__place_value": ("numbers__place_value_big",),
    "numbers__round_number": ("numbers__round_number_big",),
    "probability__swr_p_level_set": ("probability__swr_p_level_set_more_samples",),
    "probability__swr_p_sequence": ("probability__swr_p_sequence_more_samples",),
}
"""The extrapolation modules that test each training module (none for the other modules): the release's 15
``extrapolate`` files (Saxton et al., Appendix B)."""
DEFAULT_MODULES = tuple(module for module in EXTRAPOLATION_MODULES if module.startswith("arithmetic__"))
"""The six arithmetic modules that have extrapolation versions."""

TRAIN_REGIMES = ("train-easy", "train-medium", "train-hard")
NEURAL_MODELS = ("transformer", "lstm_att", "lstm_att_bi")
"""The Transformer, the attentional LSTM with a unidirectional and with a bidirectional encoder."""


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


def load_data(
    modules: Sequence[str], train_count: int, test_count: int, seed: int, data_root: Path | None, progress: bool = False
) -> dict[str, list[MathExample]]:
    """Train examples (``train_count`` per module, a third per difficulty, rounded down; none when 0) and test examples
    (``test_count`` per module and regime).

    Training questions that also occur in a test set are dropped (the released dataset keeps them: the paper bounds
    their share of a test set at 2 %); a module whose file holds fewer examples than asked for raises ``ValueError``. ``ValueError`` names a
    count that is no int of at least 0, and a ``train_count`` of 1 or 2, which gives no difficulty an example.
    """
    train_count, test_count = int_at_least(train_count, "train_count", 0), int_at_least(test_count, "test_count", 0)
    if 0 < train_count < len(TRAIN_REGIMES):
        raise ValueError(
            f"train_count {train_count} gives each of the {len(TRAIN_REGIMES)} difficulties {TRAIN_REGIMES} no example: "
            f"give 0 (no training) or at least {len(TRAIN_REGIMES)}"
        )
    extrapolate = [m for module in modules for m in EXTRAPOLATION_MODULES.get(module, ())]
    per_regime = train_count // len(TRAIN_REGIMES)
    train_regimes = TRAIN_REGIMES if per_regime else ()
    if data_root is None:
        test_modules = [("interpolate", m) for m in modules] + [("extrapolate", m) for m in extrapolate]
        generate(test_modules, test_count, seed=seed, progress=progress)
        if train_regimes:
            generate(
                [(regime, module) for regime in train_regimes for module in modules], per_regime, seed=seed, progress=progress
            )
        data_root = generated_root(seed)
    tests = {
        "interpolate": _examples(data_root, "interpolate", list(modules), test_count),
        "extrapolate": _examples(data_root, "extrapolate", extrapolate, test_count),
    }
    seen = {e.question for split in tests.values() for e in split}
    train = [e for regime in train_regimes for e in _examples(data_root, regime, list(modules), per_regime)]
    return {"train": [e for e in train if e.question not in seen], **tests}


def _examples(root: Path, regime: str, modules: list[str], count: int) -> list[MathExample]:
    """The first ``count`` examples of each of ``modules`` in ``root``'s ``regime`` (none read without modules: a
    release without an ``extrapolate`` folder serves modules that have no extrapolation version); ``ValueError`` naming
    the modules whose files hold fewer (a release's test files hold 10,000 questions each: a larger count was scored on
    those while the results said otherwise)."""
    examples = load_split(root, regime, modules, count) if modules else []
    held = Counter(example.module for example in examples)
    if short := [module for module in modules if held[module] < count]:
        raise ValueError(
            f"{root / regime}: {count} questions per module asked for, but {', '.join(f'{m}.txt holds {held[m]}' for m in short)}: "
            f"ask for at most {min(held[m] for m in short)}"
        )
    return examples


def score(answer: Callable[[list[str]], list[str]], examples: Sequence[MathExample]) -> dict:
    """Per-module exact match of ``answer(questions) -> answers`` and the mean over modules for one test regime."""
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
    # each model gets the options it reads (build_seq2seq refuses the others): heads the Transformer, bidirectional the LSTMs
    options: dict[str, Any] = {"heads": config.heads} if transformer else {"bidirectional": name == "lstm_att_bi"}
    return build_seq2seq(
        name.removesuffix("_bi"),
        build_front_end("symbol", config.dim, vocab_size=VOCAB_SIZE),
        VOCAB_SIZE,
        hidden=config.ff_dim if transformer else config.lstm_hidden,
        encoder_layers=config.encoder_layers if transformer else config.lstm_encoder_layers,
        decoder_layers=config.decoder_layers if transformer else 1,
        dropout=config.dropout,
        **options,
    )


class OptimizerSettings(TypedDict):
    """Optimiser options of :class:`~neurosym.training.TrainConfig`."""

    optimizer: Literal["adam", "sgd"]
    betas: tuple[float, float]
    eps: float
    clip_norm: float | None


PAPER_ADAM: OptimizerSettings = {"optimizer": "adam", "betas": (0.9, 0.995), "eps": 1e-9, "clip_norm": None}
"""The paper's Adam settings; the learning rate and the gradient-value clip come from the command line."""


def collate(examples: Sequence[MathExample]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Examples -> ``(questions [B, S], question padding mask [B, S], answers [B, T])`` (BOS ... EOS answers)."""
    batch = encode_batch(examples)
    return batch.questions, batch.questions == PAD, batch.answers


def answer_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy of the answer characters under teacher forcing (padding ignored; ids int64 or int32), in
    float32, or in the logits' dtype where it is wider (a float64 model's loss was rounded to float32)."""
    questions, mask, answers = batch
    logits = at_least_float32(model(questions, mask, answers[:, :-1]))
    return nn.functional.cross_entropy(
        rearrange(logits, "b t v -> (b t) v"), rearrange(answers[:, 1:].long(), "b t -> (b t)"), ignore_index=PAD
    )


def train_model(
    name: str,
    config: ModelConfig,
    train_examples: Sequence[MathExample],
    steps: int,
    batch_size: int,
    device: torch.device,
    folder: Path,
    *,
    lr: float,
    clip: float,
    seed: int,
    checkpoint_every: int,
    resume: bool = True,
    compile: bool = False,
    progress: bool = False,
    time_limit: float | None = None,
    data: Mapping[str, Any] | None = None,
) -> tuple[Seq2Seq, dict]:
    """Teacher-forced training with :func:`neurosym.training.train`: Adam (β = 0.9, 0.995; ε = 1e-9),
    learning rate ``lr``, gradient values clipped to ``clip``, no norm clipping, no validation; ``compile``
    trains through ``torch.compile``, ``time_limit`` (seconds) stops with a checkpoint.

    Checkpoints every ``checkpoint_every`` steps to ``folder/checkpoint.pt`` and resumes from it unless
    ``resume`` is false (a larger ``steps`` continues training on the same batch order).
    The checkpoint keeps the model configuration and ``data`` (what the training questions were made from: modules,
    counts, a release folder; a :class:`~neurosym.training.checkpoint.Setup` brings the values that entries missing
    from older checkpoints stand for) as its setup, beside the loop's batch size, learning rate, clip and
    seed; resuming with other ones raises :class:`~neurosym.training.checkpoint.CheckpointMismatch`. Returns the model (in eval mode) and its record: ``parameters``,
    ``steps``, ``losses`` (``[step, loss]`` pairs) and ``final_loss``.
    """
    if not resume:
        (folder / "checkpoint.pt").unlink(missing_ok=True)
    with seeded(seed, device):  # (initial weights, dropout; the caller's stream goes on untouched)
        model = build_model(name, config)
        if compile:
            compile_for_training(model)
        train_config = TrainConfig(
            max_steps=steps,
            batch_size=batch_size,
            lr=lr,
            clip_value=clip,
            eval_every=checkpoint_every,
            checkpoint=folder / "checkpoint.pt",
            seed=seed,
            progress=progress,
            time_limit=time_limit,
            **PAPER_ADAM,
        )
        context = DistributedContext(0, 1, 0, device)
        setup = Setup({"model": asdict(config), "data": dict(data or {})}, _data_defaults(data))
        outcome = train(model, train_examples, answer_loss, train_config, context, collate_fn=collate, setup=setup)
    model.eval()
    losses = [(entry["step"], entry["loss"]) for entry in outcome.history]
    return model, {
        "parameters": sum(p.numel() for p in model.parameters()),
        "steps": outcome.steps,
        "losses": losses,
        "final_loss": losses[-1][1],
    }


def _data_defaults(data: Mapping[str, Any] | None) -> dict[str, Any]:
    """The defaults of a run's setup that come with its ``data`` setup (nested under ``"data"``), if it has any."""
    return {"data": dict(data.defaults)} if isinstance(data, Setup) and data.defaults else {}


@torch.no_grad()
def greedy_answers(
    model: Seq2Seq, questions: Sequence[str], device: torch.device, batch_size: int, progress: bool = False
) -> list[str]:
    """Greedy decoding of at most 30 answer characters for every question (``batch_size`` questions at a time, an int
    of at least 1, else ``ValueError``); a PAD or BOS predicted before EOS is kept as a character no answer holds
    (:func:`~neurosym.data.mathematics.decode`). Decoding runs in evaluation mode (no dropout: the same answers at every
    call); each module's train/eval mode is restored after."""
    if isinstance(questions, str):  # (each character would be read as a question of its own)
        raise TypeError(f"greedy_answers takes a list of questions, got one str {questions!r:.40}: give [question]")
    batch_size = int_at_least(batch_size, "batch_size", 1)  # (a negative one answered no question, 0 failed in range())
    answers: list[str] = []
    batches = tqdm(range(0, len(questions), batch_size), desc="decoding", unit="batch", leave=False, disable=not progress)
    with evaluation_mode(model):
        for start in batches:
            src = pad_sequences([encode(q, eos=True) for q in questions[start : start + batch_size]]).to(device)
            with mixed_precision(device):
                tokens = model.greedy_decode(src, src == PAD, max_len=MAX_ANSWER_LENGTH + 1, bos=BOS, eos=EOS)
            answers.extend(decode(row, show_special=True) for row in tokens.tolist())  # a PAD or BOS is no character
    return answers
