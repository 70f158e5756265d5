"""The data of a run (`--dataset`, `common.data.sources`): tensorflow-datasets or your own arrays, in memory; and the
placement-independent randomness of every schedule.

Splits (`common.data.sources`): MNIST as in the report's original implementation, 55,000 training images
(`train[5000:]`), 5,000 validation images (`train[:5000]`), 10,000 test images; any dataset's inputs flattened to
D values in [0, 1] (images scaled by 1/255).

Randomness never depends on where or in which batch an example is processed:
  * the order of epoch e is a pseudorandom permutation that is a pure function of (seed, e)
    (`tf.random.experimental.index_shuffle`, a Philox-keyed bijection computed per batch);
  * the masking-noise mask of example i in epoch e is a pure function of (seed, e, i, input)
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

from common.base import errors
from common.data import decoded_cache
from common.data import sources as datasets

# Stream identifiers of `epoch_indices`, so pretraining and finetuning orders differ.
PRETRAIN_STREAM = 0
FINETUNE_STREAM = 1
LINEAR_PROBE_STREAM = 2
_NUM_STREAMS = 4


@dataclasses.dataclass(frozen=True)
class Dataset:
  """A run's data in memory.

  Attributes:
    info: what it is (`common.data.sources.Info`: name, example shape, classes, split sizes, source).
    train_images: float32 [N, D] in [0, 1], N = --train_examples (the first N of the training split).
    train_labels: int32 [N] in 0..K-1, or None for data without labels.
    validation_images, validation_labels: the validation split, likewise.
    test_images, test_labels: the test split, likewise.
  """
  info: datasets.Info
  train_images: np.ndarray
  train_labels: Optional[np.ndarray]
  validation_images: np.ndarray
  validation_labels: Optional[np.ndarray]
  test_images: np.ndarray
  test_labels: Optional[np.ndarray]

  @property
  def num_train(self) -> int:
    """Training examples (the rows of `train_images`)."""
    return int(self.train_images.shape[0])

  @property
  def input_units(self) -> int:
    """D, the inputs of one example."""
    return self.info.input_units

  @property
  def num_classes(self) -> Optional[int]:
    """K, or None without labels."""
    return self.info.num_classes

  def describe(self) -> dict:
    """The run record's "dataset" (`common.data.sources.Info.describe`) with the training examples used."""
    return self.info.describe(self.num_train)


def load(dataset: str = datasets.DEFAULT, data_dir: Optional[str] = None,
         train_examples: Optional[int] = None) -> Dataset:
  """Loads a dataset (tensorflow-datasets needs no network when a prepared copy exists).

  Cached within a process (tfds: per dataset, data_dir and train_examples; npz: per version of the file): treat
  the arrays as read-only.

  Args:
    dataset: a tensorflow-datasets name or "npz:PATH" (`common.data.sources`).
    data_dir: TFDS data directory; None uses $TFDS_DATA_DIR, else ~/tensorflow_datasets.
    train_examples: keep the first N training examples; None keeps all.

  Returns:
    A `Dataset` with float32 inputs in [0, 1] flattened to D values.

  Raises:
    DataUnavailableError: a tfds dataset is not on disk and could not be downloaded; the message names
      TFDS_DATA_DIR.
    DataError: the name is unknown, the data is malformed, or --train_examples exceeds it (one line).
  """
  if dataset.startswith(datasets.NPZ_PREFIX):
    info, arrays = datasets.load_npz(dataset)
    n = _first(info, train_examples)
    arrays = dict(arrays, train_images=arrays["train_images"][:n])
    if arrays["train_labels"] is not None:
      arrays["train_labels"] = arrays["train_labels"][:n]
    return Dataset(info, **arrays)
  return _load_tfds(dataset, data_dir or os.environ.get("TFDS_DATA_DIR") or None, train_examples)


def describe(dataset: str = datasets.DEFAULT, data_dir: Optional[str] = None) -> datasets.Info:
  """What a dataset is (`common.data.sources.Info`), read from its metadata (tfds' builder info, or the `.npz` itself,
  checked in full) without starting TensorFlow's runtime, so devices can still be set up after it.

  Raises:
    DataUnavailableError, DataError: as `load`.
  """
  data_dir = data_dir or os.environ.get("TFDS_DATA_DIR") or None
  if dataset.startswith(datasets.NPZ_PREFIX):
    return datasets.load_npz(dataset)[0]
  return _tfds_info(dataset, data_dir)


def load_mnist(data_dir: Optional[str] = None, train_examples: Optional[int] = None) -> Dataset:
  """MNIST with the report's splits (`load("mnist", ...)`)."""
  return load(datasets.DEFAULT, data_dir, train_examples)


# Where tfds downloads from; probed before a download so an offline machine fails in seconds.
_DOWNLOAD_HOST = ("storage.googleapis.com", 443)


def _online(timeout: float = 5.0) -> bool:
  try:
    socket.create_connection(_DOWNLOAD_HOST, timeout=timeout).close()
    return True
  except OSError:
    return False


def _first(info: datasets.Info, train_examples: Optional[int]) -> int:
  n = train_examples or info.train
  if n > info.train:
    raise errors.DataError(f"--train_examples={n} is more than the {info.train:,} training examples of "
                           f"--dataset={info.name}.")
  datasets.check_fits(info, n)
  return n


@functools.lru_cache(maxsize=4)
def _load_tfds(dataset: str, data_dir: Optional[str], train_examples: Optional[int]) -> Dataset:
  info = _tfds_info(dataset, data_dir)
  n, v = _first(info, train_examples), info.validation
  train_images, train_labels, test_images, test_labels = _decoded(dataset, data_dir)

  def convert(images, labels):
    images = np.asarray(images, dtype=np.float32).reshape(-1, info.input_units) / np.float32(255.0)
    return images, np.asarray(labels, dtype=np.int32)

  return Dataset(info, *convert(train_images[v:v + n], train_labels[v:v + n]),
                 *convert(train_images[:v], train_labels[:v]), *convert(test_images, test_labels))


def _decoded(dataset: str, data_dir: Optional[str]) -> Tuple[np.ndarray, ...]:
  """Every image and label of the train and test splits as tensorflow-datasets gives them (in its order), read from
  the cache (`common.data.decoded_cache`) when a run kept them there, else decoded by tensorflow-datasets (every
  image is a PNG: a second or more per run) and kept there for the next run; runs that start together decode once.
  DataUnavailableError: tensorflow-datasets cannot load it."""
  import tensorflow_datasets as tfds  # Imported here: only needed once.
  try:
    path = decoded_cache.path_for(dataset, tfds.builder(dataset, data_dir=data_dir).data_dir)
    with decoded_cache.one_at_a_time(path):
      arrays = decoded_cache.read(path)
      if arrays is None:
        (train_images, train_labels), (test_images, test_labels) = tfds.load(
            dataset, split=["train", "test"], data_dir=data_dir, batch_size=-1, as_supervised=True)
        arrays = tuple(np.asarray(a) for a in (train_images, train_labels, test_images, test_labels))
        decoded_cache.write(path, arrays)
  except Exception as e:  # tfds raises many types when offline: DownloadError, OSError, ...
    raise errors.DataUnavailableError(
        f"{dataset} could not be loaded from {data_dir or '~/tensorflow_datasets'} and could not be downloaded "
        f"({type(e).__name__}: {e}). {_hint(dataset)}") from e
  return arrays


def _hint(dataset: str) -> str:
  return (f"Set TFDS_DATA_DIR (or --data_dir) to a directory holding a prepared {dataset}, e.g. "
          "TFDS_DATA_DIR=../shared/tensorflow_datasets.")


def _tfds_info(dataset: str, data_dir: Optional[str]) -> datasets.Info:
  """The `Info` of a tensorflow-datasets dataset from its builder's metadata (read, not downloaded); DataError or
  DataUnavailableError (one line) when it is unknown, not prepared offline, or has no image, label or test split."""
  import tensorflow_datasets as tfds  # Imported here: only needed once.
  where = data_dir or "~/tensorflow_datasets"
  try:
    builder = tfds.builder(dataset, data_dir=data_dir)
  except Exception as e:  # DatasetNotFoundError lists every dataset tfds knows: one line instead.
    known = "; the datasets prepared here: " + ", ".join(sorted(datasets.KNOWN)) if datasets.KNOWN else ""
    raise errors.DataError(f"--dataset={dataset}: tensorflow-datasets has no dataset of that name "
                           f"({type(e).__name__}){known}; or give your own arrays as npz:PATH.") from None
  try:
    prepared = builder.is_prepared()
  except Exception:  # An unreadable directory counts as not prepared.
    prepared = False
  if not prepared and not _online():
    raise errors.DataUnavailableError(f"--dataset={dataset} is not in {where} and there is no network to download "
                                      f"it. {_hint(dataset)}")
  if not prepared:
    builder.download_and_prepare()
  features = builder.info.features
  if "image" not in features or "label" not in features:
    raise errors.DataError(f"--dataset={dataset} has no \"image\" and \"label\" features (it has "
                           f"{', '.join(features.keys())}); give such data as npz:PATH.")
  shape = tuple(features["image"].shape)
  if None in shape:
    raise errors.DataError(f"--dataset={dataset}: its images vary in size ({list(shape)}); give them resized to one "
                           "size as npz:PATH.")
  splits = builder.info.splits
  if "train" not in splits or "test" not in splits:
    raise errors.DataError(f"--dataset={dataset} has no train and test split (it has {', '.join(splits.keys())}); "
                           "give it as npz:PATH with x_test.")
  n = splits["train"].num_examples
  v = datasets.validation_size(n)
  return datasets.Info(dataset, shape, int(features["label"].num_classes), n - v, v, splits["test"].num_examples,
                       {"tfds": dataset, "version": str(builder.info.version)})


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


def keep_mask(example_indices: tf.Tensor, seed: int, epoch: tf.Tensor, corruption: float,
              units: int) -> tf.Tensor:
  """The masking-noise mask: which inputs (pixels) of each example survive corruption in this epoch.

  Input p of example i in epoch e is kept unless hash(seed, e, i, p) < corruption * 2^32 (the counter i D + p), so
  each input is masked with probability `corruption`, independently, and the mask is a pure function of
  (seed, epoch, example index, input). Elementwise integer ops: compile it with XLA (the training steps
  do), which fuses them into one pass.

  Args:
    example_indices: int32 [b], indices into the training set (N x D < 2^32: `datasets.check_fits`).
    seed: Python int in [0, 2^31).
    epoch: int32 scalar tensor.
    corruption: fraction masked, in [0, 1).
    units: D, the inputs of one example.

  Returns:
    float32 [b, D], 1.0 where the input is kept and 0.0 where it is masked (D = `units`).
  """
  epoch_key = _mix32(tf.cast(epoch, tf.uint32) + tf.constant(0x632BE5AB, tf.uint32))
  key = _mix32(tf.constant(seed, tf.uint32) * tf.constant(0x9E3779B9, tf.uint32) + epoch_key)
  counter = (tf.cast(example_indices, tf.uint32)[:, None] * tf.constant(units, tf.uint32)
             + tf.cast(tf.range(units), tf.uint32)[None, :])
  h = _mix32(tf.bitwise.bitwise_xor(_mix32(counter + key), key))
  threshold = tf.constant(min(int(round(corruption * 2.0**32)), 2**32 - 1), tf.uint32)
  return tf.cast(h >= threshold, tf.float32)


def corrupt(images: tf.Tensor, example_indices: tf.Tensor, seed: int, epoch: tf.Tensor,
            corruption: float) -> tf.Tensor:
  """Applies masking noise: float32 [b, D] inputs with a `corruption` fraction of them set to 0.

  Args:
    images: float32 [b, D] in [0, 1], the clean images of `example_indices`.
    example_indices, seed, epoch, corruption: as in `keep_mask`.

  Returns:
    float32 [b, D] in [0, 1].
  """
  if corruption == 0.0:
    return images
  return images * keep_mask(example_indices, seed, epoch, corruption, int(images.shape[-1]))


class Batches:
  """The pretraining batches every program draws: batch `step` of epoch `epoch` is the examples at positions
  [step B, (step + 1) B) of the epoch's shuffling order (`epoch_indices`), masked with the epoch's corruption
  (`corrupt`); a pure function of (seed, epoch, step), so placement never changes what a step sees.

  Args:
    images: float32 [N, D] in [0, 1], the training images on the device that draws the batches.
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
    """(corrupted, clean): float32 [b, D] images of int32 [b] `example_indices`, masked as in `epoch`."""
    clean = tf.gather(self.images, example_indices)
    return corrupt(clean, example_indices, self.seed, epoch, self.corruption), clean

  def at_step(self, step: tf.Tensor, replica: int = 0, replicas: int = 1) -> Tuple[tf.Tensor, tf.Tensor]:
    """(corrupted, clean) float32 [B / replicas, D]: replica `replica`'s share, rows [replica B/replicas,
    (replica + 1) B/replicas), of global step `step`'s batch (steps counted over all epochs: epoch step // S)."""
    epoch = step // self.steps_per_epoch
    share = self.batch_size // replicas
    positions = (step % self.steps_per_epoch) * self.batch_size + replica * share + tf.range(share)
    return self.corrupted(self.indices(positions, epoch), epoch)
