"""The linear probe of the pretrained layers (`--linear_probe_epochs`): how linearly separable each layer's codes are.

After pretraining and before finetuning, for each layer n a softmax regression (a [units_n, classes] kernel and a
bias, from zeros) is trained on the clean codes h_n of the training split (the images through layers 1..n, in
float32 whatever the run's precision: the weights are measured, not the run), each unit standardized by its mean and
standard deviation over the training codes (the same shift and scale for the validation and test codes), by plain
SGD at batch `BATCH` and rate `LEARNING_RATE` for the given epochs, each epoch in an order that is a pure function
of (the run's seed, epoch); its accuracy on the validation and test codes is reported. The pretrained layers are not
changed. Local-learning work compares representations this way ("Blockwise self-supervised learning at scale",
Siddiqui et al. 2023: a linear probe per block), beside the held-out reconstruction (`common.model.evaluation`).
(The input-drift measure's "probe" images, `common.model.input_drift`, are another thing.)
"""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from common.data import loader as data_lib
from common.model import graph
from common.model import precision

# Examples per SGD step of the probe.
BATCH = 100
# The probe's plain-SGD rate on standardized codes: one value for every layer, run and program, so that probes compare;
# chosen on validation accuracy (one greedy run per dataset, MNIST and Fashion-MNIST, at the fair frontier's size; rates
# 0.003 to 1, codes raw or standardized: raw codes needed more epochs and oscillated on Fashion-MNIST).
LEARNING_RATE = 0.1
# Added to each unit's standard deviation (a unit saturated over the training codes is not scaled up without bound).
STD_FLOOR = 1e-3
# Examples per encoding call (bounds the memory of the largest activation, [ENCODE_BATCH, units]).
ENCODE_BATCH = 5000


def _encode(layers: Sequence, images: np.ndarray, device: Optional[str]) -> List[np.ndarray]:
  """float32 [n, units_k] clean codes of `images` (float32 [n, input_units]) after each of `layers`, bottom first."""
  out: List[List[np.ndarray]] = [[] for _ in layers]

  def codes(x):
    found = []
    for layer in layers:
      x = layer.encode(x, precision.FLOAT32)
      found.append(x)
    return found

  fn = graph.function(codes)
  for start in range(0, images.shape[0], ENCODE_BATCH):
    with tf.device(device):
      for k, c in enumerate(fn(tf.constant(images[start:start + ENCODE_BATCH]))):
        out[k].append(c.numpy())
  return [np.concatenate(parts) if parts else np.zeros((0, layer.hidden_units), np.float32)
          for parts, layer in zip(out, layers)]


def train_probe(codes: np.ndarray, labels: np.ndarray, num_classes: int, epochs: int, seed: int,
                device: Optional[str] = None) -> tf.Module:
  """A softmax regression trained on float32 [n, units] `codes` with int [n] `labels`: `epochs` epochs of plain SGD,
  batch `BATCH` (the remainder of an epoch dropped), rate `LEARNING_RATE`, from zero weights; the order of epoch e a
  pure function of (seed, e). Returns a module with `kernel` float32 [units, classes] and `bias` [classes].

  Raises:
    ValueError: fewer examples than one batch.
  """
  n, units = codes.shape
  steps = n // BATCH
  if steps < 1:
    raise ValueError(f"the linear probe needs at least {BATCH} training examples, got {n}.")
  with tf.device(device):
    probe = tf.Module(name="linear_probe")
    probe.kernel = tf.Variable(tf.zeros([units, num_classes]), name="kernel")
    probe.bias = tf.Variable(tf.zeros([num_classes]), name="bias")
    x_all, y_all = tf.constant(codes), tf.constant(labels.astype(np.int32))

  def epoch_fn(epoch):
    def body(step, total):
      indices = data_lib.epoch_indices(step * BATCH + tf.range(BATCH), seed, epoch, n, data_lib.LINEAR_PROBE_STREAM)
      x, y = tf.gather(x_all, indices), tf.gather(y_all, indices)
      logits = tf.matmul(x, probe.kernel) + probe.bias
      loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
      d_logits = (tf.nn.softmax(logits) - tf.one_hot(y, num_classes)) / BATCH  # the gradient, written out
      probe.kernel.assign_sub(LEARNING_RATE * tf.matmul(x, d_logits, transpose_a=True))
      probe.bias.assign_sub(LEARNING_RATE * tf.reduce_sum(d_logits, 0))
      return step + 1, total + loss
    return tf.while_loop(lambda step, _: step < steps, body, (tf.constant(0), tf.constant(0.0)))[1]

  fn = graph.function(epoch_fn)
  with tf.device(device):
    for epoch in range(epochs):
      fn(tf.constant(epoch))
  return probe


def accuracy(probe: tf.Module, codes: np.ndarray, labels: np.ndarray) -> float:
  """The fraction of float32 [n, units] `codes` whose arg-max class under `probe` is their int [n] label."""
  logits = codes @ probe.kernel.numpy() + probe.bias.numpy()
  return float(np.mean(np.argmax(logits, axis=1) == labels))


def run(layers: Sequence, dataset: data_lib.Dataset, epochs: int, seed: int,
        device: Optional[str] = None) -> List[Dict[str, Any]]:
  """The run record's "linear_probe": [{"layer" (1-based), "validation_accuracy", "test_accuracy"}], one per layer of
  `layers` (the pretrained stack, bottom first), each probe trained `epochs` epochs on `dataset`'s standardized training
  codes.

  Raises:
    ValueError: `dataset` has no labels, or fewer training examples than one batch.
  """
  if dataset.train_labels is None:
    raise ValueError(f"--dataset={dataset.info.name} has no labels: no linear probe.")
  splits = [_encode(layers, images, device) for images in
            (dataset.train_images, dataset.validation_images, dataset.test_images)]
  out = []
  for n, (train, validation, test) in enumerate(zip(*splits)):
    mean, scale = train.mean(0), train.std(0) + STD_FLOOR
    train, validation, test = ((c - mean) / scale for c in (train, validation, test))
    probe = train_probe(train, dataset.train_labels, dataset.num_classes, epochs, seed, device)
    out.append({"layer": n + 1, "validation_accuracy": accuracy(probe, validation, dataset.validation_labels),
                "test_accuracy": accuracy(probe, test, dataset.test_labels)})
  return out
