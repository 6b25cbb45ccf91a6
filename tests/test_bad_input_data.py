"""Bad input to the data, perception, semantics, metrics and training helpers is named where it is given."""

import math
import re

import numpy as np
import pytest
import torch

from neurosym.data.hint.splits import SplitRules
from neurosym.data.pvr.visual import DigitBank, VisualPVR, block_rule, render_blocks, render_sequence
from neurosym.data.symbol_images import SymbolBank, default_bank, draw_symbols, merge_banks, with_drawn_digits
from neurosym.data.symbol_images.normalise import normalise_glyphs
from neurosym.data.symbol_images.render import render_strip, render_windows, resize_images, sliding_windows
from neurosym.metrics.noise_sensitivity import noise_sensitivity, noise_sensitivity_curve
from neurosym.perception.augment import random_shift
from neurosym.semantics.induction import induce_operator
from neurosym.training import TrainConfig


def _bank() -> SymbolBank:
    labels = np.array(list("0123456789"))
    images = np.random.default_rng(0).integers(0, 256, (10, 28, 28), dtype=np.uint8)
    return SymbolBank(images, labels, np.full(10, "train"), np.array([f"{label}/a.jpg" for label in labels]))


def test_a_path_names_one_image_and_drawn_digits_are_numbered_after_the_banks_own():
    bank = _bank()
    with pytest.raises(ValueError, match="paths must name one image each, but '0/a.jpg' names 2"):
        merge_banks(bank, bank)  # index_of read the last of the two
    twice = with_drawn_digits(with_drawn_digits(bank, 1), 1, seed=1)
    assert len(set(twice.paths.tolist())) == len(twice.paths) == 30
    with pytest.raises(ValueError, match="per_digit must be an int of at least 1, got 1.5"):
        with_drawn_digits(bank, 1.5)


def test_image_functions_of_numpy_pixels_name_a_list_or_a_tensor():
    """A list failed on ``.ndim`` (AttributeError); a uint8 tensor was refused as "must be uint8 pixels, got
    torch.uint8", as if its dtype were wrong."""
    images, strip = np.zeros((2, 28, 28), np.uint8), np.zeros((32, 64), np.uint8)
    calls = [
        (lambda x: resize_images(x, (14, 14)), images, "images"),
        (render_strip, images, "symbol images"),
        (render_windows, images, "symbol images"),
        (normalise_glyphs, images, "images"),
        (sliding_windows, strip, "strip"),
    ]
    for call, good, what in calls:
        for bad, kind in ((good.tolist(), "list"), (torch.from_numpy(good), r"Tensor \(images.numpy\(\)")):
            with pytest.raises(TypeError, match=rf"^{what} must be a numpy array of uint8 pixels, got {kind}"):
                call(bad)
        call(good)


def test_images_must_be_uint8_pixels_where_they_are_drawn_into_uint8_canvases():
    floats = np.random.default_rng(0).random((20, 28, 28))  # intensities in [0, 1] became black images
    with pytest.raises(ValueError, match="images must be uint8 pixels"):
        resize_images(floats, (14, 14))
    with pytest.raises(ValueError, match="symbol images must be uint8 pixels, got float64"):
        render_strip(floats)
    with pytest.raises(ValueError, match=r"images must be uint8 pixels \(as MNIST's\), got float64"):
        DigitBank(floats, np.arange(20) % 10)
    with pytest.raises(ValueError, match="digit images must be uint8 pixels"):
        render_blocks(floats[:4][None], 2, 40, 0)
    bank = DigitBank((floats * 255).astype(np.uint8), np.arange(20) % 10)
    with pytest.raises(ValueError, match=r"classes must be integers in 0..9, got int64 \[-1\]"):
        bank.draw(np.array([-1]), 0)  # wrapped around to class 9


def test_pvr_grids_blocks_and_digit_images_are_named_where_they_are_given():
    digits = np.zeros((1, 4, 28, 28), np.uint8)
    assert render_blocks(digits, np.int64(2), 40, 0).shape == (1, 80, 80)
    for grid, block, named in ((2.0, 40, r"grid \(cells a side\) must be an int of at least 1, got 2.0"),
                               ("2", 40, r"grid \(cells a side\) must be an int of at least 1, got '2'"),
                               (2, 40.5, r"block \(pixels a side of a cell\) must be an int of at least 28, got 40.5"),
                               (2, 20, r"block \(pixels a side of a cell\) must be an int of at least 28, got 20")):  # fmt: skip
        with pytest.raises(ValueError, match=f"^{named}$"):  # (TypeErrors inside numpy, or a product of strings)
            render_blocks(digits, grid, block, 0)
    bank = DigitBank(np.zeros((10, 28, 28), np.uint8), np.arange(10))
    with pytest.raises(ValueError, match=r"^grid \(cells a side\) must be an int of at least 1, got 2.0$"):
        VisualPVR(bank, block_rule(), grid=2.0)  # (was built, and failed in einops once sampled)
    with pytest.raises(ValueError, match=r"^digit images must be \[N, grid \* grid, 28, 28\], got shape \[4, 28, 28\]$"):
        render_blocks(digits[0], 2, 40, 0)  # ("28 digit images do not fill a 2x2 grid")
    with pytest.raises(ValueError, match=r"^digit images must be \[N, L, 28, 28\], got shape \[4, 28, 28\]$"):
        render_sequence(digits[0])  # (failed in einops)
    assert render_sequence(digits).shape == (1, 28, 112)


def test_induction_takes_integer_triples_only():
    assert str(induce_operator([(1, 2, 3), (2, 2, 4)], max_size=3)) == "(i + j)"
    for bad in (1.5, float("nan"), True):  # 1.5 was truncated ("(i + j)" for 1.5 + 2 = 3.5), NaN and True accepted
        with pytest.raises(ValueError, match="triples of non-negative integers"):
            induce_operator([(bad, 2, 3), (2, 2, 4)], max_size=3)
    with pytest.raises(ValueError, match="max_search_examples must be an int of at least 1, got 0"):
        induce_operator([(1, 2, 3)], max_size=3, max_search_examples=0)


def test_sizes_and_seeds_are_ints_where_they_are_given():
    with pytest.raises(ValueError, match=r"train_per_op_small\[0\] must be an int of at least 1, got -100"):
        SplitRules(train_per_op_small={0: -100, 1: 2})  # became 1
    with pytest.raises(ValueError, match="seed must be an int of at least 0, got 1.5"):
        TrainConfig(3, 4, seed=1.5)  # failed in torch.manual_seed
    with pytest.raises(ValueError, match="num_workers must be an int of at least 0, got -1"):
        TrainConfig(3, 4, num_workers=-1)
    with pytest.raises(ValueError, match="max_shift must be an int >= 0, got True"):
        random_shift(torch.rand(2, 8, 8), True)  # failed in F.pad


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"seed": -1}, "seed must be an int of at least 0, got -1"),  # numpy's "expected non-negative integer"
        ({"seed": 1.5}, "seed must be an int of at least 0, got 1.5"),
        ({"seed": "1"}, "seed must be an int of at least 0, got '1'"),  # drew as seed 1
        ({"count": 2.5}, "count must be an int of at least 0, got 2.5"),
        ({"count": True}, "count must be an int of at least 0, got True"),
        ({"size": 8.5}, "size must be an int of at least 8, got 8.5"),
    ],
)
def test_drawn_symbols_name_a_count_size_or_seed_that_is_no_int(options, named):
    with pytest.raises(ValueError, match=f"^{named}$"):
        draw_symbols("+", **{"count": 3, **options})
    assert draw_symbols("+", 3, seed=np.int64(2)).shape == (3, 28, 28)


def test_symbol_banks_name_a_seed_that_is_no_int_before_any_work(tmp_path):
    for seed in (-1, True, "0"):  # failed in numpy's seeding, or after every drawn image was drawn
        with pytest.raises(ValueError, match=f"^seed must be an int of at least 0, got {seed!r}$"):
            default_bank(seed=seed, mnist_path=tmp_path / "not read.pkl.gz", cache=False)
    with pytest.raises(ValueError, match="^seed must be an int of at least 0, got -1$"):
        with_drawn_digits(_bank(), 2, seed=-1)


def test_noise_sensitivity_takes_a_seed_and_names_a_delta_that_is_no_probability():
    first = noise_sensitivity(lambda digits: digits[:, 0], 3, 10, 0.1, 200, rng=0)
    assert first == noise_sensitivity(lambda digits: digits[:, 0], 3, 10, 0.1, 200, rng=0) > 0  # (an int seed failed)
    for delta, named in ((True, "True"), (np.bool_(True), re.escape(repr(np.bool_(True)))), ("0.1", "'0.1'"), (math.nan, "nan")):
        with pytest.raises(ValueError, match=rf"^delta is a probability, got {named}$"):
            noise_sensitivity(lambda digits: digits[:, 0], 3, 10, delta, 200, rng=0)
    with pytest.raises(ValueError, match="deltas must be a 1-D sequence of probabilities"):
        noise_sensitivity_curve(lambda digits: digits[:, 0], 3, 10, 0.1, 200, 2, rng=0)
