"""Published numbers that the benchmark commands print beside their own, each with its source.

One table per benchmark; a command reads its rows from here, so a number is written down once.
"""

from __future__ import annotations


def published_data(input_type: str) -> str:
    """What the paper's HINT rows of ``input_type`` (``"image"`` or ``"symbol"``) were measured on: the label of
    their row beside ours."""
    return f"paper: official HINT {'images' if input_type == 'image' else 'symbol sequences'}, full scale"


HINT_SEQ2SEQ: dict[tuple[str, str], dict[str, float]] = {
    ("symbol", "gru"): dict(I=74.9, SS=68.1, LS=42.1, SL=10.5, LL=14.0, avg=41.3),
    ("symbol", "gru_att"): dict(I=76.2, SS=69.5, LS=42.8, SL=10.5, LL=15.1, avg=42.5),
    ("symbol", "lstm"): dict(I=84.3, SS=79.6, LS=63.7, SL=11.7, LL=22.1, avg=52.3),
    ("symbol", "lstm_att"): dict(I=92.9, SS=90.9, LS=74.9, SL=12.1, LL=24.3, avg=58.9),
    ("symbol", "transformer"): dict(I=93.9, SS=91.0, LS=33.2, SL=11.5, LL=11.5, avg=47.4),
    ("symbol", "transformer_rel"): dict(I=96.6, SS=95.1, LS=72.1, SL=11.8, LL=22.3, avg=59.4),
    ("symbol", "transformer_rel_uni"): dict(I=98.0, SS=96.8, LS=78.2, SL=11.7, LL=22.4, avg=61.5),
    ("image", "gru"): dict(I=61.3, SS=53.3, LS=30.5, SL=9.2, LL=11.9, avg=33.2),
    ("image", "gru_att"): dict(I=66.7, SS=58.7, LS=33.1, SL=9.4, LL=12.8, avg=35.9),
    ("image", "lstm"): dict(I=80.0, SS=76.2, LS=55.7, SL=10.9, LL=19.8, avg=48.6),
    ("image", "lstm_att"): dict(I=83.9, SS=79.7, LS=62.0, SL=11.2, LL=21.0, avg=51.5),
    ("image", "transformer"): dict(I=20.9, SS=9.3, LS=5.7, SL=1.5, LL=2.9, avg=8.3),
    ("image", "transformer_rel"): dict(I=86.2, SS=83.1, LS=60.1, SL=10.9, LL=19.4, avg=51.7),
    ("image", "transformer_rel_uni"): dict(I=88.4, SS=86.0, LS=62.5, SL=10.9, LL=19.0, avg=53.1),
}
"""HINT (Li et al.), exact match in % on the official images and full-scale data: medians of 5 runs
(Table 3: symbol input; Table 2: image input with a ResNet-18 perception)."""

HINT_NSR_IMAGE_AVERAGE = 76.0
"""NSR (Li et al., ICLR 2024): perception, dependency parser and programs learned jointly from results;
average exact match in % over HINT's test subsets on the official images (the paper gives the average only)."""

HINT_FEWSHOT: dict[str, float] = {"x": 52.8, "y": 50.7, "a": 46.4, "b": 42.6, "c": 27.3, "d": 30.4, "avg": 41.7}
"""HINT Table 4: few-shot learning of new concepts, Transformer rel. uni., median of 5 runs, accuracy in %
on each concept's whole test set (its training sentences, HINT's I subset, included)."""

ARITHMETIC: dict[tuple[str, str], float] = {
    ("mul", "NMU"): 0.98, ("mul", "NAC•"): 0.31, ("mul", "NALU"): 0.0,
    ("div", "NAC•"): 0.0, ("div", "NALU"): 0.0,
    ("add", "NAU"): 1.0, ("add", "NAC+"): 1.0, ("add", "Linear"): 1.0, ("add", "NALU"): 0.14,
    ("sub", "NAU"): 1.0, ("sub", "NAC+"): 1.0, ("sub", "Linear"): 0.07, ("sub", "NALU"): 0.14,
}  # fmt: skip
"""Success rates of the simple function task (100 seeds, 5·10⁶ iterations): Madsen & Johansen 2019
Table 1; NAU and NMU from Madsen & Johansen 2020."""

MATHEMATICS: dict[str, dict[str, float]] = {
    "transformer": {"interpolate": 0.76, "extrapolate": 0.50},
    "simple_lstm": {"interpolate": 0.57, "extrapolate": 0.41},
    "lstm_att": {"interpolate": 0.57, "extrapolate": 0.38},
    "lstm_att_bi": {"interpolate": 0.58, "extrapolate": 0.42},
}
"""Saxton et al. (2019), the table of Figure 3: means over all modules of the dataset (not only arithmetic); ``lstm_att``
is their attentional LSTM with an LSTM encoder, ``lstm_att_bi`` with a bidirectional LSTM encoder."""

MATHEMATICS_TRANSFORMER_MODULES: dict[str, str] = {
    "arithmetic__add_sub_multiple": ">= 0.90",
    "arithmetic__mul_div_multiple": ">= 0.90",
    "arithmetic__mixed": "~0.50",
}
"""Per-module Transformer results stated in Saxton et al.'s text (Section 4.2)."""

PVR: dict[str, str] = {
    "block": "ResNet-18 / VGG-11-BN: high iid accuracy; on holdout shift accuracy falls from chance to about 0% "
    "(Figure 7); dshift in between",
    "vector": "MLP: training accuracy 100% everywhere, test accuracy jumps from chance only with enough data "
    "(Figure 9); MLP-Mixer solves complexity m with 5x10^(m+3) examples (Figure 12)",
    "holdout_i": "m = 1, 2: runs that train reach 100% on the holdout-i test set (Figure 13)",
    "noise": "mod_sum: NS grows with m; median/majority not monotone; min/max get easier with m (Figure 10)",
    "sequential": "no accuracy reported for the sequential MNIST task; the block-style CNN results are the anchor",
}
"""Pointer Value Retrieval (Zhang et al. 2021): the published findings each sweep is compared with (the
paper reports them as figures, not tables)."""
