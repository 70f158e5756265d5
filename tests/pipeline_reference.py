"""The layer-pipelined schedule's definition in float64 NumPy, one step after another, every layer in turn, with its
schedule settings (`common.pipeline.schedule`: each layer's window and rate multiplier; the polish after): what the
program must compute on any devices; and greedy's, with the layer warm-up (`greedy_weights`)."""

import math

import numpy as np
import tensorflow as tf

from common.data import loader as data
from common.model import autoencoder


def _sigmoid(z):
  return 1 / (1 + np.exp(-z))


def _batch(images, batch, seed, corruption, epoch, position):
  """(corrupted, clean) float64 [batch, 784]: batch `position` of epoch `epoch`, as every program draws it."""
  n = images.shape[0]
  indices = data.epoch_indices(tf.constant(position * batch + np.arange(batch), tf.int32), seed, tf.constant(epoch),
                               n).numpy()
  clean = images[indices].astype(np.float64)
  mask = data.keep_mask(tf.constant(indices), seed, tf.constant(epoch), corruption, units=784).numpy()
  return clean * mask, clean


def _sgd(layer, x, y, lr, batch):
  """One SGD step of a tied-weight layer [w, b, c] on (input x, target y), in place; returns its encodings of x."""
  w, b, c = layer
  h = _sigmoid(x @ w + b)  # the step's forward pass, with the weights at the start of the step
  dz = (_sigmoid(h @ w.T + c) - y) / batch  # d(mean over batch of summed cross-entropy) / d logits
  da = (dz @ w) * h * (1 - h)
  grad_w = x.T @ da + dz.T @ h
  w -= lr * grad_w
  b -= lr * da.sum(0)
  c -= lr * dz.sum(0)
  return h


def weights(images, hidden, epochs, batch, seed, corruption, lr, schedule=None, polish_epochs=0):
  """The exported weights {"layerN/kernel", ...} of the pipeline with these flags.

  At global step t every layer n, in turn, trains one step at rate lr x schedule.multiplier(n, t) when the schedule
  says it trains (`schedule` None: always, at lr) and passes up its encodings of both paths, computed with its weights
  at the start of the step. Then, with `polish_epochs`, each layer n > 1 in turn trains that many epochs at lr on the
  final layers below, on the data's epochs after the pipelined ones."""
  steps = images.shape[0] // batch
  sizes = [784] + list(hidden)
  layers = [[autoencoder.sigmoid_glorot_uniform(sizes[i], sizes[i + 1], seed, i + 1).numpy().astype(np.float64),
             np.zeros(sizes[i + 1]), np.zeros(sizes[i])] for i in range(len(hidden))]
  total = schedule.total_steps if schedule else epochs * steps
  for t in range(total):
    x, y = _batch(images, batch, seed, corruption, *divmod(t, steps))
    for i, layer in enumerate(layers):
      w, b, _ = layer
      h_clean = _sigmoid(y @ w + b)
      if schedule is None or schedule.trains(i, t):
        h = _sgd(layer, x, y, lr * (schedule.multiplier(i, t) if schedule else 1.0), batch)
      else:
        h = _sigmoid(x @ w + b)
      x, y = h, h_clean
  first = math.ceil(total / steps)
  for i in range(1, len(layers)):
    for e in range(polish_epochs):
      for position in range(steps):
        x, y = _batch(images, batch, seed, corruption, first + e, position)
        for w, b, _ in layers[:i]:
          x, y = _sigmoid(x @ w + b), _sigmoid(y @ w + b)
        _sgd(layers[i], x, y, lr, batch)
  return {f"layer{i + 1}/{name}": v for i, layer in enumerate(layers)
          for name, v in zip(("kernel", "bias", "decoder_bias"), layer)}


def greedy_weights(images, hidden, epochs, batch, seed, corruption, lr, warmup_epochs=0.0):
  """The exported weights of greedy layer-wise pretraining with these flags, in float64: layer n trains its E epochs
  on the frozen layers below, its own step tau at rate lr x min(1, (tau + 1) / W_n), W_n = round((n - 1) w S)
  (`common.model.layer_warmup`; the full rate when W_n = 0)."""
  steps = images.shape[0] // batch
  sizes = [784] + list(hidden)
  layers = [[autoencoder.sigmoid_glorot_uniform(sizes[i], sizes[i + 1], seed, i + 1).numpy().astype(np.float64),
             np.zeros(sizes[i + 1]), np.zeros(sizes[i])] for i in range(len(hidden))]
  for i in range(len(layers)):
    warmup = int(round(i * warmup_epochs * steps))
    for tau in range(epochs * steps):
      x, y = _batch(images, batch, seed, corruption, *divmod(tau, steps))
      for w, b, _ in layers[:i]:
        x, y = _sigmoid(x @ w + b), _sigmoid(y @ w + b)
      _sgd(layers[i], x, y, lr * (min(1.0, (tau + 1) / warmup) if warmup else 1.0), batch)
  return {f"layer{i + 1}/{name}": v for i, layer in enumerate(layers)
          for name, v in zip(("kernel", "bias", "decoder_bias"), layer)}
