"""MNIST through tensorflow-datasets, and the placement-independent randomness of every schedule.

Splits (as in the report's original implementation): 55,000 training images
(`train[5000:]`), 5,000 validation images (`train[:5000]`), 10,000 test images; pixels scaled by 1/255.

Randomness never depends on where or in which batch an example is processed:
  * the order of epoch e is a pseudorandom permutation that is a pure function of (seed, e)
    (`tf.random.experimental.index_shuffle`, a Philox-keyed bijection computed per batch);
  * the masking-noise mask of example i in epoch e is a pure function of (seed, e, i, pixel)
    (an integer hash, `keep_mask`), so it is the same whether the example is processed by greedy,
    by one layer of a model-parallel group, or by any replica of a data-parallel step.
This is what makes the equivalences between the schedules (docs/design.md) hold exactly.
"""

import dataclasses
import functools
import os
import socket
from typing import Optional, Tuple

import numpy as np
import tensorflow as tf

from common import errors

IMAGE_PIXELS = 784
NUM_CLASSES = 10
VALIDATION_EXAMPLES = 5_000

# Stream identifiers of `epoch_indices`, so pretraining and finetuning orders differ.
PRETRAIN_STREAM = 0
FINETUNE_STREAM = 1
_NUM_STREAMS = 4


@dataclasses.dataclass(frozen=True)
class Mnist:
  """MNIST in memory.

  Attributes:
    train_images: float32 [N, 784] in [0, 1], N = `train_examples` (first N of `train[5000:]`).
    train_labels: int32 [N] in 0..9.
    validation_images: float32 [5000, 784] in [0, 1] (`train[:5000]`).
    validation_labels: int32 [5000].
    test_images: float32 [10000, 784] in [0, 1].
    test_labels: int32 [10000].
  """
  train_images: np.ndarray
  train_labels: np.ndarray
  validation_images: np.ndarray
  validation_labels: np.ndarray
  test_images: np.ndarray
  test_labels: np.ndarray

  @property
  def num_train(self) -> int:
    return int(self.train_images.shape[0])


def load_mnist(data_dir: Optional[str] = None, train_examples: Optional[int] = None) -> Mnist:
  """Loads MNIST with tensorflow-datasets (no network needed when a prepared copy exists).

  Cached per (data_dir, train_examples) within a process: treat the arrays as read-only.

  Args:
    data_dir: TFDS data directory; None uses $TFDS_DATA_DIR, else ~/tensorflow_datasets.
    train_examples: keep the first N of the 55,000 training images; None keeps all.

  Returns:
    An `Mnist` with float32 images in [0, 1] flattened to 784 pixels.

  Raises:
    DataUnavailableError: the data is not on disk and could not be downloaded; the message names
      TFDS_DATA_DIR.
  """
  return _load_mnist(data_dir or os.environ.get("TFDS_DATA_DIR") or None, train_examples)


# Where tfds downloads MNIST from; probed before a download so an offline machine fails in seconds.
_DOWNLOAD_HOST = ("storage.googleapis.com", 443)


def _online(timeout: float = 5.0) -> bool:
  try:
    socket.create_connection(_DOWNLOAD_HOST, timeout=timeout).close()
    return True
  except OSError:
    return False


@functools.lru_cache(maxsize=4)
def _load_mnist(data_dir: Optional[str], train_examples: Optional[int]) -> Mnist:
  import tensorflow_datasets as tfds  # Imported here: only needed once.

  where = data_dir or "~/tensorflow_datasets"
  hint = ("Set TFDS_DATA_DIR (or --data_dir) to a directory holding mnist/3.0.1, e.g. "
          "TFDS_DATA_DIR=../shared/tensorflow_datasets.")
  try:
    prepared = tfds.builder("mnist", data_dir=data_dir).is_prepared()
  except Exception:  # An unreadable directory counts as not prepared.
    prepared = False
  if not prepared and not _online():
    raise errors.DataUnavailableError(f"MNIST is not in {where} and there is no network to download it. {hint}")
  try:
    end = VALIDATION_EXAMPLES + train_examples if train_examples else ""
    splits = tfds.load("mnist", split=[f"train[{VALIDATION_EXAMPLES}:{end}]", f"train[:{VALIDATION_EXAMPLES}]", "test"],
                       data_dir=data_dir, batch_size=-1, as_supervised=True)
  except Exception as e:  # tfds raises many types when offline: DownloadError, OSError, ...
    raise errors.DataUnavailableError(
        f"MNIST could not be loaded from {where} and could not be downloaded ({type(e).__name__}: {e}). {hint}") from e

  def convert(images, labels):
    images = np.asarray(images, dtype=np.float32).reshape(-1, IMAGE_PIXELS) / np.float32(255.0)
    return images, np.asarray(labels, dtype=np.int32)

  return Mnist(*convert(*splits[0]), *convert(*splits[1]), *convert(*splits[2]))


def epoch_indices(positions: tf.Tensor, seed: int, epoch: tf.Tensor, num_examples: int,
                  stream: int = PRETRAIN_STREAM) -> tf.Tensor:
  """Example indices at `positions` of the shuffled order of one epoch.

  The order of an epoch is a pseudorandom permutation of 0..num_examples-1 that is a pure function of
  (seed, epoch, stream).

  Args:
    positions: int32 [b], positions in the epoch's order, each in [0, num_examples).
    seed: the run's seed, a Python int in [0, 2^31).
    epoch: int32 scalar tensor, the epoch index (the model-parallel step index for those schedules).
    num_examples: N, the size of the training set.
    stream: separates independent orders (pretraining, finetuning).

  Returns:
    int32 [b], example indices in [0, num_examples).
  """
  # index_shuffle keys on 32-bit words: fold the stream into the low bits of the epoch word.
  key = tf.stack([tf.constant(seed, tf.int64),
                  tf.cast(epoch, tf.int64) * _NUM_STREAMS + tf.constant(stream, tf.int64)])
  shuffled = tf.random.experimental.index_shuffle(
      tf.cast(positions, tf.int64), seed=key, max_index=num_examples - 1)
  return tf.cast(shuffled, tf.int32)


def _mix32(x: tf.Tensor) -> tf.Tensor:
  """A 32-bit integer finaliser with good avalanche (C. Wellons' "lowbias32"), on uint32 tensors."""
  shift = tf.bitwise.right_shift
  x = tf.bitwise.bitwise_xor(x, shift(x, tf.constant(16, tf.uint32)))
  x = x * tf.constant(0x7FEB352D, tf.uint32)
  x = tf.bitwise.bitwise_xor(x, shift(x, tf.constant(15, tf.uint32)))
  x = x * tf.constant(0x846CA68B, tf.uint32)
  return tf.bitwise.bitwise_xor(x, shift(x, tf.constant(16, tf.uint32)))


def keep_mask(example_indices: tf.Tensor, seed: int, epoch: tf.Tensor, corruption: float) -> tf.Tensor:
  """The masking-noise mask: which pixels of each example survive corruption in this epoch.

  Pixel p of example i in epoch e is kept unless hash(seed, e, i, p) < corruption * 2^32, so each pixel
  is masked with probability `corruption`, independently, and the mask is a pure function of
  (seed, epoch, example index, pixel). Elementwise integer ops: compile it with XLA (the training steps
  do), which fuses them into one pass.

  Args:
    example_indices: int32 [b], indices into the training set (< 5,478,274 so i * 784 fits in 32 bits).
    seed: Python int in [0, 2^31).
    epoch: int32 scalar tensor.
    corruption: fraction masked, in [0, 1).

  Returns:
    float32 [b, 784], 1.0 where the pixel is kept and 0.0 where it is masked.
  """
  epoch_key = _mix32(tf.cast(epoch, tf.uint32) + tf.constant(0x632BE5AB, tf.uint32))
  key = _mix32(tf.constant(seed, tf.uint32) * tf.constant(0x9E3779B9, tf.uint32) + epoch_key)
  counter = (tf.cast(example_indices, tf.uint32)[:, None] * tf.constant(IMAGE_PIXELS, tf.uint32)
             + tf.cast(tf.range(IMAGE_PIXELS), tf.uint32)[None, :])
  h = _mix32(tf.bitwise.bitwise_xor(_mix32(counter + key), key))
  threshold = tf.constant(min(int(round(corruption * 2.0**32)), 2**32 - 1), tf.uint32)
  return tf.cast(h >= threshold, tf.float32)


def corrupt(images: tf.Tensor, example_indices: tf.Tensor, seed: int, epoch: tf.Tensor,
            corruption: float) -> tf.Tensor:
  """Applies masking noise: float32 [b, 784] images with a `corruption` fraction of pixels set to 0.

  Args:
    images: float32 [b, 784] in [0, 1], the clean images of `example_indices`.
    example_indices, seed, epoch, corruption: as in `keep_mask`.

  Returns:
    float32 [b, 784] in [0, 1].
  """
  if corruption == 0.0:
    return images
  return images * keep_mask(example_indices, seed, epoch, corruption)


class Batches:
  """The pretraining batches every program draws: batch `step` of epoch `epoch` is the examples at positions
  [step B, (step + 1) B) of the epoch's shuffling order (`epoch_indices`), masked with the epoch's corruption
  (`corrupt`); a pure function of (seed, epoch, step), so placement never changes what a step sees.

  Args:
    images: float32 [N, 784] in [0, 1], the training images on the device that draws the batches.
    seed: the run's seed.
    corruption: masking-noise fraction in [0, 1).
    batch_size: B, examples per step; an epoch is N // B steps (the rest is dropped, differently each epoch).
  """

  def __init__(self, images: tf.Tensor, seed: int, corruption: float, batch_size: int):
    self.images, self.seed, self.corruption, self.batch_size = images, seed, corruption, batch_size
    self.num_examples = int(images.shape[0])
    self.steps_per_epoch = self.num_examples // batch_size

  def indices(self, positions: tf.Tensor, epoch: tf.Tensor) -> tf.Tensor:
    """int32 [b] example indices at int32 [b] `positions` of epoch `epoch`'s order."""
    return epoch_indices(positions, self.seed, epoch, self.num_examples)

  def corrupted(self, example_indices: tf.Tensor, epoch: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """(corrupted, clean): float32 [b, 784] images of int32 [b] `example_indices`, masked as in `epoch`."""
    clean = tf.gather(self.images, example_indices)
    return corrupt(clean, example_indices, self.seed, epoch, self.corruption), clean

  def at_step(self, step: tf.Tensor, replica: int = 0, replicas: int = 1) -> Tuple[tf.Tensor, tf.Tensor]:
    """(corrupted, clean) float32 [B / replicas, 784]: replica `replica`'s share, rows [replica B/replicas,
    (replica + 1) B/replicas), of global step `step`'s batch (steps counted over all epochs: epoch step // S)."""
    epoch = step // self.steps_per_epoch
    share = self.batch_size // replicas
    positions = (step % self.steps_per_epoch) * self.batch_size + replica * share + tf.range(share)
    return self.corrupted(self.indices(positions, epoch), epoch)
