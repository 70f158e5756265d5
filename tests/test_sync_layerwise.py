"""Synchronized layer-wise pretraining: the schedule's semantics against a direct step-by-step
reference built from common/ parts, and how it differs from greedy."""

import numpy as np
import tensorflow as tf

from common.artifacts import runlog
from common.model import autoencoder
from common.model import graph
from common.settings import config as config_lib
from common.settings import programs
from sync_layerwise import pretrain as sync_layerwise
from conftest import SLICE_EXAMPLES

# Start the runtime now with conftest's logical devices: a program's `devices.setup` called before the
# runtime is initialised would otherwise replace them with its own --num_devices.
assert len(tf.config.list_logical_devices("CPU")) >= 3

HIDDEN = (64, 32)
EPOCHS, BATCH, LR, SEED, CORRUPTION = 2, 100, 0.05, 4, 0.5


def _reference_weights(mnist):
  """Santara et al.'s schedule written out directly for 2 layers and E = 2: step s trains layer 1 on
  epoch s and (from step 1) layer 2 on epoch s through a copy of layer 1 taken at the end of step s - 1."""
  images = tf.constant(mnist.train_images)
  layers = autoencoder.build_stack(HIDDEN, SEED, 784)
  copy_of_layer1 = autoencoder.FrozenEncoder(layers[0])
  trainers = [autoencoder.LayerTrainer(layers[0], [], images, SEED, CORRUPTION, BATCH),
              autoencoder.LayerTrainer(layers[1], [copy_of_layer1], images, SEED, CORRUPTION, BATCH)]
  steps_fns = [graph.function(t.run_steps) for t in trainers]
  steps = tf.constant(trainers[0].steps_per_epoch)
  for step in range(EPOCHS + 1):  # E + H - 1 steps.
    steps_fns[0](tf.constant(step), tf.constant(0), steps, tf.constant(LR))
    if step >= 1:
      steps_fns[1](tf.constant(step), tf.constant(0), steps, tf.constant(LR))
    copy_of_layer1.assign_from(layers[0])
  weights = {}
  for layer in layers:
    weights.update(layer.numpy_weights())
  return weights


def test_sync_layerwise_matches_the_schedule_written_out_and_differs_from_greedy(tmp_path, mnist):
  config = config_lib.Config(
      program=programs.SYNC_LAYERWISE.name, hidden_units=HIDDEN, pretrain_epochs=EPOCHS, finetune_epochs=0,
      train_examples=SLICE_EXAMPLES, batch_size=BATCH, pretrain_learning_rate=LR, seed=SEED,
      corruption=CORRUPTION, results_dir=str(tmp_path), run_name="sync",
      export_weights=str(tmp_path / "sync.npz"))
  record = sync_layerwise.train(config)
  got = runlog.load_weights(str(tmp_path / "sync.npz"))
  want = _reference_weights(mnist)
  for key in want:
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-5, err_msg=key)
  # Layer 1 trains E + 1 epochs (steps 0..2), layer 2 E epochs (steps 1..2), both on the one device.
  assert [[e["step"] for e in l["epochs"]] for l in record["layers"]] == [[0, 1, 2], [1, 2]]
  device = record["environment"]["devices"][0]
  assert {l["device"] for l in record["layers"]} == {device}
  assert record["schedule"]["num_devices"] == 1 and record["schedule"]["groups"] == [[1, 2]]
  assert all(list(s["busy_seconds"]) == [device] for s in record["schedule"]["steps"])
  assert record["strategy"] == programs.SYNC_LAYERWISE.name
  # Not greedy: layer 2 of the reference trained on a layer 1 that was still changing; had it trained on
  # the final layer 1 from the start (greedy with epochs 1..2), it would differ.
  images = tf.constant(mnist.train_images)
  layers = autoencoder.build_stack(HIDDEN, SEED, 784)
  layers[0].kernel.assign(want["layer1/kernel"])
  layers[0].bias.assign(want["layer1/bias"])
  trainer = autoencoder.LayerTrainer(layers[1], [layers[0]], images, SEED, CORRUPTION, BATCH)
  fn = graph.function(trainer.run_steps)
  for step in (1, 2):
    fn(tf.constant(step), tf.constant(0), tf.constant(trainer.steps_per_epoch), tf.constant(LR))
  assert np.abs(layers[1].kernel.numpy() - want["layer2/kernel"]).max() > 1e-3
