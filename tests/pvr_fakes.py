"""A tiny stand-in for MNIST in the official ``mnist.pkl.gz`` format, so that no test downloads data."""

import gzip
import pickle

import numpy as np


def write_fake_mnist(path, per_class=3, seed=0, test_per_class=None):
    """Write ``((train_x, train_y), (valid_x, valid_y), (test_x, test_y))``, x float32 ``[N, 784]`` in
    ``[0, 1)``, ``per_class`` training and ``test_per_class`` (else ``per_class``) test images of each class
    and one validation image; an image of class ``c`` is faint noise plus ``2c + 2`` bright pixels in row ``2c + 4``. The
    pickle is stored uncompressed inside the gzip (level 0): compressing the noise of 10,000 digits took seconds."""
    rng = np.random.default_rng(seed)

    def part(n):
        labels = np.tile(np.arange(10), n)
        images = rng.random((len(labels), 28, 28)).astype(np.float32) * 0.1
        bar = np.arange(28) < 2 * labels[:, None] + 2
        images[np.arange(len(labels)), 2 * labels + 4] = np.where(bar, 0.99, 0.05)
        return images.reshape(len(labels), 784), labels

    with gzip.open(path, "wb", compresslevel=0) as handle:
        pickle.dump((part(per_class), part(1), part(test_per_class or per_class)), handle)
    return path


def fake_digit_class(cell):
    """Read back the class of a fake digit anywhere inside a uint8 image."""
    return int((cell > 128).sum()) // 2 - 1
