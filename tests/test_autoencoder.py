"""The autoencoder layer, its frozen copy, the classifier: exact sizes, initialisation, learning."""

import math

import numpy as np
import pytest
import tensorflow as tf

from common.measure import cost
from common.model import autoencoder
from common.model import graph
from common.training import finetune


def _count(variables):
  return sum(int(np.prod(v.shape)) for v in variables)


def test_default_stack_shapes_and_parameter_counts():
  layers = autoencoder.build_stack([2000, 2000, 2000, 2000], seed=0, input_units=784)
  assert [tuple(l.kernel.shape) for l in layers] == [(784, 2000), (2000, 2000), (2000, 2000), (2000, 2000)]
  assert [tuple(l.decoder_bias.shape) for l in layers] == [(784,), (2000,), (2000,), (2000,)]
  assert [_count(l.weights) for l in layers] == [1_570_784, 4_004_000, 4_004_000, 4_004_000]
  assert sum(_count(l.weights) for l in layers) == 13_582_784
  assert set(layers[0].numpy_weights()) == {"layer1/kernel", "layer1/bias", "layer1/decoder_bias"}
  classifier = finetune.Classifier([2000, 2000, 2000, 2000], seed=0, input_units=784, num_classes=10)
  assert _count(classifier.weights) == 13_596_010  # hidden weights and biases + 2000x10 + 10
  assert tuple(classifier.logits(tf.zeros([3, 784])).shape) == (3, 10)


def test_config2_shapes():
  layers = autoencoder.build_stack([2000, 1000, 500, 100], seed=0, input_units=784)
  assert [tuple(l.kernel.shape) for l in layers] == [(784, 2000), (2000, 1000), (1000, 500), (500, 100)]
  assert tuple(layers[3].encode(tf.zeros([5, 500])).shape) == (5, 100)


def test_sigmoid_glorot_initialisation():
  w = autoencoder.sigmoid_glorot_uniform(784, 2000, seed=0, layer_index=1).numpy()
  limit = 4 * math.sqrt(6 / 2784)
  assert w.min() >= -limit and w.max() <= limit
  assert abs(w.min() + limit) < 0.01 * limit and abs(w.max() - limit) < 0.01 * limit
  assert abs(w.std() - limit / math.sqrt(3)) < 0.01 * limit
  np.testing.assert_array_equal(w, autoencoder.sigmoid_glorot_uniform(784, 2000, 0, 1).numpy())
  assert not np.array_equal(w, autoencoder.sigmoid_glorot_uniform(784, 2000, 0, 2).numpy())
  layer = autoencoder.DenoisingAutoencoder(784, 2000, 1, seed=0)
  assert not np.any(layer.bias.numpy()) and not np.any(layer.decoder_bias.numpy())


def test_loss_is_summed_cross_entropy():
  layer = autoencoder.DenoisingAutoencoder(4, 3, 1, seed=0)
  x = tf.constant([[0.0, 0.2, 0.9, 1.0], [0.5, 0.5, 0.1, 0.0]])
  h = 1 / (1 + np.exp(-(x.numpy() @ layer.kernel.numpy())))
  r = 1 / (1 + np.exp(-(h @ layer.kernel.numpy().T)))
  want = -np.sum(x.numpy() * np.log(r) + (1 - x.numpy()) * np.log(1 - r), axis=1)
  np.testing.assert_allclose(layer.per_example_loss(x, x).numpy(), want, rtol=1e-5)


def test_frozen_copy_follows_assign_only():
  layer = autoencoder.DenoisingAutoencoder(6, 4, 1, seed=0)
  frozen = autoencoder.FrozenEncoder(layer)
  x = tf.random.stateless_uniform([2, 6], seed=[0, 1])
  np.testing.assert_array_equal(frozen.encode(x).numpy(), layer.encode(x).numpy())
  layer.kernel.assign_add(tf.ones_like(layer.kernel))
  assert not np.allclose(frozen.encode(x).numpy(), layer.encode(x).numpy())
  frozen.assign_from(layer)
  np.testing.assert_array_equal(frozen.encode(x).numpy(), layer.encode(x).numpy())
  assert not frozen.trainable_variables


def test_training_lowers_the_loss_on_a_fixed_batch(mnist):
  images = tf.constant(mnist.train_images)
  layers = autoencoder.build_stack([64, 32], seed=0, input_units=784)
  idx = tf.range(100)
  for i, layer in enumerate(layers):
    trainer = autoencoder.LayerTrainer(layer, layers[:i], images, seed=0, corruption=0.5, batch_size=100)
    before = trainer.train_step(idx, tf.constant(0), tf.constant(0.0)).numpy()
    for _ in range(30):
      trainer.train_step(idx, tf.constant(0), tf.constant(0.01))
    after = trainer.train_step(idx, tf.constant(0), tf.constant(0.0)).numpy()
    assert after < 0.9 * before, (i, before, after)


def test_zero_learning_rate_changes_nothing(mnist):
  images = tf.constant(mnist.train_images)
  layer = autoencoder.DenoisingAutoencoder(784, 16, 1, seed=0)
  before = [w.numpy() for w in layer.weights]
  trainer = autoencoder.LayerTrainer(layer, [], images, seed=0, corruption=0.5, batch_size=100)
  graph.function(trainer.run_steps)(tf.constant(0), tf.constant(0), tf.constant(3), tf.constant(0.0))
  for b, w in zip(before, layer.weights):
    np.testing.assert_array_equal(b, w.numpy())


def test_epoch_flops():
  # Layer 1 of 784-2000: five 784x2000 products; layer 2 adds two frozen 784x2000 forward products.
  assert cost.layer_epoch_flops([2000, 2000], 1, 10) == 2 * 10 * 5 * 784 * 2000
  assert cost.layer_epoch_flops([2000, 2000], 2, 10) == 2 * 10 * (5 * 2000 * 2000 + 2 * 784 * 2000)


def test_pipeline_flops_and_params():
  # Pipelined: own 5 products plus the clean forward it emits; the top layer emits nothing.
  assert cost.pipeline_layer_epoch_flops([2000, 2000], 1, 10) == 2 * 10 * 6 * 784 * 2000
  assert cost.pipeline_layer_epoch_flops([2000, 2000], 2, 10) == 2 * 10 * 5 * 2000 * 2000
  assert cost.layer_params([2000, 10]) == [784 * 2000 + 2000 + 784, 2000 * 10 + 10 + 2000]
  # The variables of a built layer have exactly the counted parameters.
  layer = autoencoder.DenoisingAutoencoder(784, 30, 1, seed=0)
  assert sum(int(np.prod(w.shape)) for w in layer.weights) == cost.layer_params([30])[0]


def _tape_gradients(layer, inputs, target, divisor):
  """The loss (summed cross-entropy over the batch / divisor) and its gradients by automatic differentiation."""
  with tf.GradientTape() as tape:
    loss = tf.reduce_sum(layer.per_example_loss(inputs, target)) / tf.cast(divisor, tf.float32)
  return loss, tape.gradient(loss, layer.weights)


def test_written_out_gradient_equals_automatic_differentiation():
  """`loss_and_gradients` writes the gradient out (the tied kernel's two terms in one product): it equals
  `tf.GradientTape`'s in float32 on random inputs, for a whole batch (divisor = batch) and for one replica's
  share of a larger global batch (divisor = the global batch)."""
  rng = np.random.default_rng(7)
  layer = autoencoder.DenoisingAutoencoder(37, 23, 1, seed=5)
  layer.bias.assign(rng.normal(0, 0.5, 23).astype(np.float32))
  layer.decoder_bias.assign(rng.normal(0, 0.5, 37).astype(np.float32))
  inputs = tf.constant(rng.uniform(0, 1, (16, 37)) * (rng.uniform(0, 1, (16, 37)) > 0.5), tf.float32)
  target = tf.constant(rng.uniform(0, 1, (16, 37)), tf.float32)
  for divisor in (16, 64):
    loss, _, grads = layer.loss_and_gradients(inputs, target, tf.constant(divisor))
    want_loss, want = _tape_gradients(layer, inputs, target, divisor)
    np.testing.assert_allclose(loss.numpy(), want_loss.numpy(), rtol=1e-4, atol=1e-6)
    for name, got, expected in zip(("kernel", "bias", "decoder_bias"), grads, want):
      assert got.shape == expected.shape, name
      np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


def test_graph_functions_run_tensor_control_flow_only_as_graph_ops():
  """`graph.function` traces without AutoGraph: a Python `if` on a tensor is refused at trace time, `tf.cond` works."""
  with pytest.raises(TypeError, match="bool"):
    graph.function(lambda x: x + 1 if x > 0 else x - 1)(tf.constant(1.0))
  assert float(graph.function(lambda x: tf.cond(x > 0, lambda: x + 1, lambda: x - 1))(tf.constant(1.0))) == 2.0
