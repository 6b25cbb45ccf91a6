"""Data generators take a numpy Generator or the int seed of one, and name anything else."""

import numpy as np
import pytest

from neurosym.data.hint.build import random_sentences
from neurosym.data.pvr import VectorPVR, vector_rule
from neurosym.data.randomness import as_generator
from neurosym.tasks.hwf import random_formulas


def test_an_int_seed_draws_what_a_generator_of_that_seed_draws():
    assert random_sentences(2, 5, 7) == random_sentences(2, 5, np.random.default_rng(7))
    assert random_formulas(4, 3) == random_formulas(4, np.random.default_rng(3))
    digits, labels = VectorPVR(vector_rule(0)).sample(6, 11)
    again, same = VectorPVR(vector_rule(0)).sample(6, np.random.default_rng(11))
    assert (digits == again).all() and (labels == same).all()
    generator = np.random.default_rng(0)
    assert as_generator(generator) is generator  # its state goes on


@pytest.mark.parametrize(("rng", "error", "message"), [
    (-1, ValueError, "a seed must be an int of at least 0, got -1"),
    (1.5, TypeError, "expected a numpy Generator .* or an int seed, got float"),
    (True, TypeError, "got bool"),
    (np.random.RandomState(0), TypeError, "got RandomState"),
])  # fmt: skip
def test_anything_else_is_named(rng, error, message):
    with pytest.raises(error, match=message):
        random_sentences(2, 5, rng)
