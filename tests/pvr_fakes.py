"""Tiny stand-ins for MNIST in the ``mnist.pkl.gz`` format and in MNIST's own idx files, so that no test downloads
data."""

import gzip
import pickle

import numpy as np

from neurosym.data.mnist import IDX_FILES, MNIST


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


def idx_bytes(array):
    """The bytes of an idx file of the uint8 ``array``: magic ``0x0000080D`` (D: its dimensions), its shape as big-endian
    uint32 sizes, then its values."""
    return (0x800 + array.ndim).to_bytes(4, "big") + np.asarray(array.shape, ">u4").tobytes() + array.astype(np.uint8).tobytes()


def write_idx_mnist(folder, mnist, gzipped=False):
    """Write ``mnist`` (an :class:`~neurosym.data.mnist.MNIST`) as MNIST's four idx files into ``folder`` (made),
    gzipped (``NAME.gz``) or not; the folder's path."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = (mnist.train_images, mnist.train_labels, mnist.test_images, mnist.test_labels)
    for name, array in zip(IDX_FILES, arrays):
        data = idx_bytes(array)
        (folder / f"{name}.gz" if gzipped else folder / name).write_bytes(gzip.compress(data, mtime=0) if gzipped else data)
    return folder


def write_mnist_pickle(path, mnist, valid):
    """Write ``mnist`` as the ``mnist.pkl.gz`` that holds the same digits: its last ``valid`` training digits as the
    validation part, each pixel ``p`` as the intensity ``p / 256``."""

    def part(images, labels):
        return (images.reshape(len(images), 784) / np.float32(256)).astype(np.float32), labels

    held = len(mnist.train_images) - valid
    parts = (
        part(mnist.train_images[:held], mnist.train_labels[:held]),
        part(mnist.train_images[held:], mnist.train_labels[held:]),
        part(mnist.test_images, mnist.test_labels),
    )
    with gzip.open(path, "wb") as handle:
        pickle.dump(parts, handle)
    return path


def uint8_mnist(train=7, test=4, seed=0):
    """An :class:`~neurosym.data.mnist.MNIST` of ``train`` and ``test`` random uint8 images with random digits; the first
    training image holds every pixel value 0-255."""
    rng = np.random.default_rng(seed)
    train_images = rng.integers(0, 256, (train, 28, 28), dtype=np.uint8)
    train_images[0].reshape(-1)[:256] = np.arange(256)
    return MNIST(
        train_images, rng.integers(0, 10, train), rng.integers(0, 256, (test, 28, 28), dtype=np.uint8), rng.integers(0, 10, test)
    )
