"""model_parallel with a group of fewer layers than the stack (H = 3, G = 2) against an independent reference.

The reference is plain Python and NumPy: the model-parallel schedule of the report ("Parallelizing Pretraining
of Deep Neural Networks using Stacked Autoencoders", the "multigpu" schedule), written out loop by loop
without `common.layerwise.schedule`, and the tied-weight denoising autoencoder's SGD step with its gradients
derived by hand (float64). Only the data order and the masking noise come from `common.data.loader` (tested in
test_data.py), so both sides see the same batches. The program runs on 2 logical devices with op determinism
(tests/conftest.py); its exported weights must match the reference's within 1e-5.
"""

import numpy as np
import pytest
import tensorflow as tf

from common.artifacts import runlog
from common.data import loader as data
from common.model import autoencoder
from common.settings import config as config_lib
from common.settings import programs
from model_parallel import pretrain as model_parallel
from conftest import SLICE_EXAMPLES, shared_keys

HIDDEN = (24, 16, 12)
DEVICES = 2
EPOCHS = 2
BATCH = 50
LEARNING_RATE = 0.05
SEED = 3
CORRUPTION = 0.5


def reference_schedule(num_layers, devices, epochs):
  """[(group, step, [(layer, epoch index, {lower layer: epochs it had trained when copied})])], 0-based layers.

  Layers go in groups of `devices`; a group of m layers runs steps s = 0 .. epochs + m - 2; layer j of the
  group (0-based) trains from step j on, each step one epoch keyed by epoch index s, reading copies of the
  lower layers of its group taken at the end of the previous step, and copies of earlier groups' layers as
  they ended. The next group starts when the previous one has finished.
  """
  trained = [0] * num_layers  # epochs each layer has trained so far
  plan = []
  for group, first in enumerate(range(0, num_layers, devices)):
    members = list(range(first, min(first + devices, num_layers)))
    for s in range(epochs + len(members) - 1):
      snapshot = list(trained)  # the frozen copies read during this step
      active = [(k, s, {below: snapshot[below] for below in range(k)}) for j, k in enumerate(members) if j <= s]
      plan.append((group, s, active))
      for k, _, _ in active:
        trained[k] += 1
  return plan


def test_reference_schedule_by_hand():
  # Group [1, 2]: layer 1 alone in epoch-step 0 (its start offset), then both; layer 2 reads layer 1 as it was one
  # epoch earlier. Group [3]: layer 3 alone, on layers 1 and 2 as they ended (3 and 2 epochs).
  assert reference_schedule(3, 2, 2) == [
      (0, 0, [(0, 0, {})]),
      (0, 1, [(0, 1, {}), (1, 1, {0: 1})]),
      (0, 2, [(0, 2, {}), (1, 2, {0: 2})]),
      (1, 0, [(2, 0, {0: 3, 1: 2})]),
      (1, 1, [(2, 1, {0: 3, 1: 2})]),
  ]


def _sigmoid(x):
  return 1.0 / (1.0 + np.exp(-x))


def _dae_step(w, b, c, x, target, lr):
  """One SGD step of a tied-weight sigmoid denoising autoencoder on a batch (float64, in place).

  Loss: mean over the batch of sum over units of the binary cross-entropy between `target` and
  r = sigmoid(sigmoid(x W + b) W^T + c). Returns the batch's loss before the step.
  """
  h = _sigmoid(x @ w + b)
  a = h @ w.T + c
  loss = np.mean(np.sum(np.maximum(a, 0) - a * target + np.log1p(np.exp(-np.abs(a))), axis=1))
  d_a = (_sigmoid(a) - target) / len(x)  # d loss / d logits
  d_z = (d_a @ w) * h * (1.0 - h)  # back through the decoder's use of W, then the encoder's sigmoid
  w -= lr * (d_a.T @ h + x.T @ d_z)  # decoder and encoder uses of the tied kernel
  b -= lr * d_z.sum(axis=0)
  c -= lr * d_a.sum(axis=0)
  return loss


def _batches(images, epoch):
  """(clean, corrupted) float64 batches of one epoch, in the order and with the masks the programs use."""
  n = len(images)
  for step in range(n // BATCH):
    indices = data.epoch_indices(tf.range(step * BATCH, (step + 1) * BATCH), SEED, tf.constant(epoch), n)
    keep = data.keep_mask(indices, SEED, tf.constant(epoch), CORRUPTION, units=784).numpy().astype(np.float64)
    clean = images[indices.numpy()]
    yield clean, clean * keep


def reference_pretraining(images):
  """The reference run: ({"layerN/kernel"|"bias"|"decoder_bias": float64 array}, {layer: [epoch losses]},
  {layer: [epoch indices]})."""
  sizes = [784, *HIDDEN]
  live = [[autoencoder.sigmoid_glorot_uniform(sizes[k], sizes[k + 1], SEED, k + 1).numpy().astype(np.float64),
           np.zeros(sizes[k + 1]), np.zeros(sizes[k])] for k in range(len(HIDDEN))]
  history = {k: [] for k in range(len(HIDDEN))}  # weights (W, b) after each epoch, to serve as frozen copies
  losses = {k: [] for k in range(len(HIDDEN))}
  epoch_indices = {k: [] for k in range(len(HIDDEN))}
  for _, _, active in reference_schedule(len(HIDDEN), DEVICES, EPOCHS):
    done = []
    for k, epoch, frozen in active:
      below = [history[j][frozen[j] - 1] for j in range(k)]  # each lower layer as it was when copied
      total, steps = 0.0, 0
      for clean, corrupted in _batches(images, epoch):
        for w, b in below:
          clean, corrupted = _sigmoid(clean @ w + b), _sigmoid(corrupted @ w + b)
        total += _dae_step(*live[k], corrupted, clean, LEARNING_RATE)
        steps += 1
      losses[k].append(total / steps)
      epoch_indices[k].append(epoch)
      done.append(k)
    for k in done:  # the per-epoch weight copy, after every active layer finished its epoch
      history[k].append((live[k][0].copy(), live[k][1].copy()))
  weights = {}
  for k, (w, b, c) in enumerate(live):
    weights.update({f"layer{k + 1}/kernel": w, f"layer{k + 1}/bias": b, f"layer{k + 1}/decoder_bias": c})
  return weights, losses, epoch_indices


def test_model_parallel_with_a_smaller_last_group_equals_the_reference(tmp_path, mnist):
  assert len(tf.config.list_logical_devices("CPU")) >= DEVICES
  config = config_lib.Config(program=programs.MODEL_PARALLEL.name, hidden_units=HIDDEN, pretrain_epochs=EPOCHS,
                             finetune_epochs=0,
                             train_examples=SLICE_EXAMPLES, batch_size=BATCH, pretrain_learning_rate=LEARNING_RATE,
                             seed=SEED, corruption=CORRUPTION, num_devices=DEVICES, results_dir=str(tmp_path),
                             run_name="mp", export_weights=str(tmp_path / "mp.npz"))
  record = model_parallel.train(config)
  want, losses, epoch_indices = reference_pretraining(mnist.train_images.astype(np.float64))
  got = runlog.load_weights(str(tmp_path / "mp.npz"))
  for key in shared_keys(got, want):
    np.testing.assert_allclose(got[key], want[key], rtol=0, atol=1e-5, err_msg=key)
  # Training moved every layer far from its initial weights, so the comparison means something.
  sizes = [784, *HIDDEN]
  for k in range(len(HIDDEN)):
    initial = autoencoder.sigmoid_glorot_uniform(sizes[k], sizes[k + 1], SEED, k + 1).numpy()
    assert np.abs(want[f"layer{k + 1}/kernel"] - initial).max() > 1e-2, k
  # The same epochs, with the same epoch indices, and the same epoch losses.
  for k, layer in enumerate(record["layers"]):
    assert [e["step"] for e in layer["epochs"]] == epoch_indices[k], k
    assert [e["loss"] for e in layer["epochs"]] == pytest.approx(losses[k], rel=1e-5), k
  assert record["schedule"]["groups"] == [[1, 2], [3]]
