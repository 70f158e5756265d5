"""MNIST loading, shuffling order and masking noise: shapes, ranges, fractions, determinism, disjoint splits."""

import concurrent.futures
import hashlib

import numpy as np
import pytest
import tensorflow as tf

from common.data import decoded_cache
from common.data import loader as data


def test_mnist_slice_shapes_and_ranges(mnist):
  assert mnist.train_images.shape == (2000, 784) and mnist.train_images.dtype == np.float32
  assert mnist.train_labels.shape == (2000,) and mnist.train_labels.dtype == np.int32
  assert mnist.validation_images.shape == (5000, 784)
  assert mnist.test_images.shape == (10000, 784) and mnist.test_labels.shape == (10000,)
  for images in (mnist.train_images, mnist.validation_images, mnist.test_images):
    assert images.min() == 0.0 and images.max() == 1.0
  assert set(np.unique(mnist.test_labels)) == set(range(10))


def test_missing_data_names_tfds_data_dir(tmp_path, monkeypatch):
  # An empty directory and no network (or no MNIST there): the error must say where to point.
  monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))
  import tensorflow_datasets as tfds
  monkeypatch.setattr(tfds, "load", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
  from common.base import errors
  with pytest.raises(errors.DataUnavailableError, match="TFDS_DATA_DIR"):
    data.load_mnist()



def test_decoded_splits_are_kept_between_runs_and_are_what_tfds_decodes(tmp_path, monkeypatch):
  """Two loads that start together (as two runs would: the lock is per open file) decode once, with
  tensorflow-datasets, and keep the splits in $SDAE_DATA_CACHE; a later load (a later run: the in-process cache
  cleared) reads them there without decoding and gives the images and labels that tensorflow-datasets gives for the
  splits' slices; an unreadable cache file is decoded again; "off": no cache."""
  import tensorflow_datasets as tfds
  v, n = 5000, 300
  sliced = [[np.asarray(a) for a in split] for split in tfds.load(
      "mnist", split=[f"train[{v}:{v + n}]", f"train[:{v}]", "test"], batch_size=-1, as_supervised=True)]
  monkeypatch.setenv(decoded_cache.CACHE_ENV, str(tmp_path / "cache"))

  def load():
    data._load_tfds.cache_clear()
    loaded = data.load_mnist(train_examples=n)
    for (images, labels), split in zip(sliced, ("train", "validation", "test")):
      assert np.array_equal(getattr(loaded, f"{split}_images"), images.reshape(len(images), -1) / np.float32(255))
      assert np.array_equal(getattr(loaded, f"{split}_labels"), labels), split
  decodes, real_load = [], tfds.load
  monkeypatch.setattr(tfds, "load", lambda *a, **k: decodes.append(a) or real_load(*a, **k))
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    together = list(pool.map(lambda _: data._decoded("mnist", None), range(2)))
  assert len(decodes) == 1 and all(np.array_equal(a, b) for a, b in zip(*together))
  monkeypatch.setattr(tfds, "load", real_load)
  load()
  kept = sorted((tmp_path / "cache").iterdir())  # the arrays, and the lock that lets one run decode at a time
  assert [p.name for p in kept] == [kept[0].name, kept[0].name + ".lock"]
  assert kept[0].name.startswith("mnist_") and kept[0].suffix == ".npz"
  with monkeypatch.context() as m:
    m.setattr(tfds, "load", lambda *a, **k: (_ for _ in ()).throw(AssertionError("decoded again")))
    load()
  whole = decoded_cache.read(str(kept[0]))
  kept[0].write_bytes(kept[0].read_bytes()[:4096])  # a truncated file is no cache: decoded again
  assert decoded_cache.read(str(kept[0])) is None
  decoded_cache.write(str(kept[0]), whole)
  assert all(np.array_equal(a, b) for a, b in zip(decoded_cache.read(str(kept[0])), whole))
  assert sorted((tmp_path / "cache").iterdir()) == kept  # written again, nothing left beside it
  data._load_tfds.cache_clear()
  monkeypatch.setenv(decoded_cache.CACHE_ENV, "off")
  assert decoded_cache.cache_dir() is None


def test_epoch_order_is_a_permutation_and_a_pure_function_of_seed_and_epoch():
  n = 1000
  order = data.epoch_indices(tf.range(n), seed=3, epoch=tf.constant(5), num_examples=n).numpy()
  assert sorted(order.tolist()) == list(range(n))
  again = data.epoch_indices(tf.range(n), seed=3, epoch=tf.constant(5), num_examples=n).numpy()
  np.testing.assert_array_equal(order, again)
  # Positions computed piecewise (any batch size, any replica split) give the same order.
  pieces = np.concatenate([data.epoch_indices(tf.range(a, a + 250), 3, tf.constant(5), n).numpy()
                           for a in range(0, n, 250)])
  np.testing.assert_array_equal(order, pieces)
  other_epoch = data.epoch_indices(tf.range(n), seed=3, epoch=tf.constant(6), num_examples=n).numpy()
  other_seed = data.epoch_indices(tf.range(n), seed=4, epoch=tf.constant(5), num_examples=n).numpy()
  finetune = data.epoch_indices(tf.range(n), 3, tf.constant(5), n, data.FINETUNE_STREAM).numpy()
  for other in (other_epoch, other_seed, finetune):
    assert np.mean(order == other) < 0.05


@pytest.mark.parametrize("corruption", [0.1, 0.5, 0.9])
def test_mask_fraction(corruption):
  keep = data.keep_mask(tf.range(2000), seed=0, epoch=tf.constant(0), corruption=corruption, units=784).numpy()
  assert keep.shape == (2000, 784) and set(np.unique(keep)) <= {0.0, 1.0}
  masked = 1.0 - keep
  # 1.57M Bernoulli draws: the standard error of the fraction is below 0.0004.
  assert abs(masked.mean() - corruption) < 0.003
  # Every example and every pixel position is masked at about the same rate.
  assert np.abs(masked.mean(axis=1) - corruption).max() < 0.1
  assert np.abs(masked.mean(axis=0) - corruption).max() < 0.05


def test_mask_is_a_pure_function_of_seed_epoch_and_example():
  idx = tf.constant([7, 3, 11, 5])
  mask = data.keep_mask(idx, 1, tf.constant(2), 0.5, units=784).numpy()
  # Example 11's mask does not depend on which batch or position it is processed in.
  alone = data.keep_mask(tf.constant([11]), 1, tf.constant(2), 0.5, units=784).numpy()
  np.testing.assert_array_equal(mask[2], alone[0])
  np.testing.assert_array_equal(mask, data.keep_mask(idx, 1, tf.constant(2), 0.5, units=784).numpy())
  other_epoch = data.keep_mask(idx, 1, tf.constant(3), 0.5, units=784).numpy()
  other_seed = data.keep_mask(idx, 2, tf.constant(2), 0.5, units=784).numpy()
  for other in (other_epoch, other_seed):
    assert 0.4 < np.mean(mask != other) < 0.6  # independent masks differ in about half the pixels
  # Neighbouring examples and pixels are not correlated.
  big = data.keep_mask(tf.range(4000), 0, tf.constant(0), 0.5, units=784).numpy() - 0.5
  assert abs(np.mean(big[1:] * big[:-1])) < 0.005
  assert abs(np.mean(big[:, 1:] * big[:, :-1])) < 0.005


def test_corrupt_zeroes_exactly_the_masked_pixels():
  images = tf.fill([3, 784], 0.7)
  idx = tf.constant([0, 1, 2])
  out = data.corrupt(images, idx, 0, tf.constant(0), 0.5).numpy()
  keep = data.keep_mask(idx, 0, tf.constant(0), 0.5, units=784).numpy()
  np.testing.assert_allclose(out, 0.7 * keep)
  np.testing.assert_array_equal(data.corrupt(images, idx, 0, tf.constant(0), 0.0).numpy(), images.numpy())


def _row_hashes(images):
  """One hash per image (its pixels as bytes): equal images, equal hashes."""
  return [hashlib.sha1(row.tobytes()).hexdigest() for row in (images * 255).round().astype(np.uint8)]


def test_train_validation_and_test_splits_are_disjoint(mnist):
  # Validation (the first 5,000 training images, used to choose recipes) must never be trained on, and
  # neither split may hold a test image. MNIST holds no duplicate images, so equal hashes mean shared examples.
  full = data.load_mnist()
  splits = {"train": _row_hashes(full.train_images), "validation": _row_hashes(full.validation_images),
            "test": _row_hashes(full.test_images)}
  assert [len(splits[s]) for s in splits] == [55_000, 5_000, 10_000]
  sets = {name: set(h) for name, h in splits.items()}
  assert all(len(sets[name]) == len(splits[name]) for name in splits)
  assert not sets["train"] & sets["validation"]
  assert not sets["train"] & sets["test"]
  assert not sets["validation"] & sets["test"]
  # A slice of the training data (--train_examples) is the start of the full training split, after validation.
  assert _row_hashes(mnist.train_images) == splits["train"][:len(mnist.train_images)]
  assert _row_hashes(mnist.validation_images) == splits["validation"]
