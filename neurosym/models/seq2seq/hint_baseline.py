"""The HINT seq2seq baselines of Li et al. (Tables 2–3): the models as the HINT release configures them,
and their training with early stopping on validation exact match, scored per test subset."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm.auto import tqdm

from neurosym.data.hint import EVAL_SUBSETS, collate_hint
from neurosym.models.seq2seq.base import Seq2Seq
from neurosym.models.seq2seq.factory import MODEL_OPTIONS, RNN_HIDDEN, build_front_end, build_seq2seq
from neurosym.models.seq2seq.hint_task import TARGET_VOCAB, exact_match_by_subset, sequence_loss
from neurosym.training import DistributedContext, StopSafeLoader, TrainConfig, TrainResult, train

BASELINE_OPTIONS = (
    "embedding", "dim", "hidden", "heads", "encoder_layers", "decoder_layers", "dropout", "relative", "norm",
    "step_embedding", "attention_bias", "embedding_dropout", "init", "cnn", "source_boundaries",
)  # fmt: skip
"""The keyword arguments of :func:`build_baseline` (the ``neurosym hint`` options of the same names)."""


def is_rnn(name: str) -> bool:
    """Whether baseline ``name`` is a GRU or LSTM (else a Transformer)."""
    return name.startswith(("gru", "lstm"))


def default_learning_rate(name: str) -> float:
    """The HINT release's Adam learning rate: 1e-3 for the RNNs, 1e-4 for the Transformers."""
    return 1e-3 if is_rnn(name) else 1e-4


def release_defaults(name: str, dim: int) -> dict[str, Any]:
    """What each option of :func:`build_baseline` whose default is ``None`` builds in baseline ``name`` of width
    ``dim``: the HINT release's ``hidden`` (RNNs 512 units, Transformers a feed-forward of 4 × ``dim``),
    ``encoder_layers`` (3, 6), ``dropout`` (0.5, 0.1) and ``embedding_dropout`` (the vanilla Transformer's alone)."""
    rnn = is_rnn(name)
    return {
        "hidden": RNN_HIDDEN if rnn else 4 * dim, "encoder_layers": 3 if rnn else 6, "dropout": 0.5 if rnn else 0.1,
        "embedding_dropout": name == "transformer",
    }  # fmt: skip


def build_baseline(
    name: str,
    input_type: Literal["symbol", "image"],
    source_vocab: int,
    *,
    embedding: int = 128,
    dim: int = 512,
    hidden: int | None = None,
    heads: int = 8,
    encoder_layers: int | None = None,
    decoder_layers: int = 1,
    dropout: float | None = None,
    relative: Literal["xl", "xl_clipped", "shaw"] = "xl_clipped",
    norm: Literal["post", "pre"] = "post",
    step_embedding: bool = False,
    attention_bias: bool = False,
    embedding_dropout: bool | None = None,
    init: Literal["torch", "release"] = "release",
    cnn: Literal["small", "resnet18"] = "resnet18",
    source_boundaries: bool = True,
) -> Seq2Seq:
    """The baseline ``name`` over ``input_type`` (``"symbol"`` ids of ``source_vocab``, or ``"image"`` windows
    read by ``cnn``). The defaults are the HINT release's (``sweeps/transformer.yaml`` and ``rnn.yaml``):
    embeddings of 128; Transformers of width 512, 8 heads, feed-forward 2,048, post-norm, dropout 0.1, the
    release's initialisation, attention projections without biases, no embedding dropout in the relative
    models; RNNs of 512 units, dropout 0.5; every source framed by start and end vectors. A model is built with the
    options it reads (:data:`~neurosym.models.seq2seq.factory.MODEL_OPTIONS`): an RNN ignores the Transformer ones, a
    symbol front end ``cnn``, an image one ``source_vocab``. A
    ``norm`` other than ``"post"`` or ``"pre"`` raises ``ValueError``."""
    if norm not in ("post", "pre"):  # ("Pre" or "prenorm" built a post-norm Transformer without a word)
        raise ValueError(f"norm must be 'post' or 'pre', got {norm!r}")
    reads: dict[str, Any] = {"vocab_size": source_vocab} if input_type == "symbol" else {"cnn": cnn}
    front_end = build_front_end(input_type, embedding, boundaries=source_boundaries, **reads)
    given = dict(hidden=hidden, encoder_layers=encoder_layers, dropout=dropout, embedding_dropout=embedding_dropout)
    options: dict[str, Any] = dict(
        dim=dim,
        heads=heads,
        decoder_layers=decoder_layers,
        relative=relative,
        pre_norm=norm == "pre",
        step_embedding=step_embedding,
        attention_bias=attention_bias,
        init=init,
    ) | {key: default if given[key] is None else given[key] for key, default in release_defaults(name, dim).items()}
    used = MODEL_OPTIONS.get(name, ())  # the release's Transformer settings are no RNN's (build_seq2seq refuses them)
    return build_seq2seq(name, front_end, TARGET_VOCAB, **{key: value for key, value in options.items() if key in used})


def train_baseline(
    model: Seq2Seq,
    datasets: Mapping[str, Dataset],
    image_input: bool,
    config: TrainConfig,
    context: DistributedContext,
    eval_batch_size: int,
    num_workers: int = 0,
    progress: bool = False,
    setup: Mapping[str, Any] | None = None,
) -> tuple[TrainResult, dict[str, float]]:
    """Train ``model`` on ``datasets["train"]`` with the shared loop (early stopping on the exact match of
    ``datasets["val"]``), then score it on ``datasets["test"]`` by greedy decoding: exact match in % per
    test subset and ``"avg"``, the exact match over the whole test set, as the HINT paper's "Avg." column (its release
    scores every test example alike, so a larger subset weighs more than in a mean of the five) (an empty dict off
    the main process). ``setup``: what the model
    and data were built from, kept in the checkpoint (:func:`~neurosym.training.train`)."""

    def loader(dataset: Dataset) -> DataLoader:  # (its workers leave Ctrl-C and SIGTERM to this process, as train's do)
        return StopSafeLoader(dataset, batch_size=eval_batch_size, collate_fn=collate_hint, num_workers=num_workers)

    val_loader = loader(datasets["val"])

    def validate(trained: nn.Module) -> float:
        assert isinstance(trained, Seq2Seq)  # the loop evaluates the model it trains, unwrapped
        return exact_match_by_subset(trained, val_loader, image_input, context.device)["all"]

    def loss(trained: nn.Module, batch: dict) -> torch.Tensor:
        return sequence_loss(trained, batch, image_input)

    outcome = train(model, datasets["train"], loss, config, context, evaluate=validate, collate_fn=collate_hint, setup=setup)
    if not context.is_main:
        return outcome, {}
    model.eval()
    test_batches = tqdm(loader(datasets["test"]), desc="test", disable=not progress)
    scores = exact_match_by_subset(model, test_batches, image_input, context.device)
    accuracy = {subset: scores.get(subset, float("nan")) for subset in EVAL_SUBSETS}
    accuracy["avg"] = scores["all"]  # (the mean of the five subsets is not the paper's Avg.: 48.2 against 47.4 for
    # its vanilla Transformer on symbols)
    return outcome, accuracy
