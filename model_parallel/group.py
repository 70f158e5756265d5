"""One group of layers of the model-parallel schedule: a trainer per layer on its device, the compiled
epoch-step that runs the active layers, and the per-epoch weight copy into the frozen copies.

Placement (the report's "multigpu" branch): layer j of the group
(0-based) lives on device j together with its own copy of the training images and frozen copies of
every layer below it. Copies of layers of earlier groups hold final weights and are made once when the
group starts; copies of lower layers of the same group are refreshed from the live layers at the end of
every step (`copy_weights`), so in step s every layer reads the layers below as they were at the end of
step s - 1, and no variable is shared between devices while a step runs.

Concurrency (chosen by measurement, docs/model_parallel.md): one `tf.function` per group holds
every layer's epoch loop (`LayerTrainer.run_steps`), each wrapped in its own nested `tf.function`.
The runtime runs the device subgraphs side by side because nothing orders them: the nested calls touch
disjoint variables. Without the nesting, automatic control dependencies chain the stateful
`tf.timestamp` ops of all layers in program order (start 1, end 1, start 2, ...), so the layers run one
after another. That chaining is exactly what the synchronized layer-wise schedule (`concurrent=False`)
needs, so there the loops are called directly: layer j + 1's loop and its start timestamp come after
layer j's end. (A control dependency on a nested call would order its loop but not reliably its start
timestamp, which has no inputs, and the busy seconds would then include the wait.)
"""

from typing import Dict, List, Sequence, Tuple

import tensorflow as tf

from common import autoencoder


class GroupTrainer:
  """The compiled training of one group of layers.

  Args:
    layers: the whole stack, bottom first (`DenoisingAutoencoder`s already on their devices).
    group: 0-based global indices of the group's layers, bottom first and consecutive.
    devices: device name of each layer of the group (same length as `group`).
    images: {device name: float32 [N, 784] training images on that device}.
    seed, corruption, batch_size: as in `LayerTrainer`.
    concurrent: run the layers' epochs concurrently (model parallel) or one after another (sync).
    kernels: the kernel path of the layers' steps (`autoencoder.KERNEL_PATHS`).
  """

  def __init__(self, layers: Sequence[autoencoder.DenoisingAutoencoder], group: Sequence[int],
               devices: Sequence[str], images: Dict[str, tf.Tensor], seed: int, corruption: float,
               batch_size: int, concurrent: bool, kernels: str = "tf"):
    self.group = list(group)
    self.devices = list(devices)
    self.concurrent = concurrent
    self._copies: List[Tuple[autoencoder.FrozenEncoder, autoencoder.DenoisingAutoencoder]] = []
    self._epoch_fns = []
    for layer_index, device in zip(self.group, self.devices):
      with tf.device(device):
        frozen = [autoencoder.FrozenEncoder(layers[k]) for k in range(layer_index)]
      self._copies += [(frozen[k], layers[k]) for k in range(self.group[0], layer_index)]
      trainer = autoencoder.LayerTrainer(layers[layer_index], frozen, images[device], seed, corruption,
                                         batch_size, device, kernels)
      self._epoch_fns.append(tf.function(trainer.run_steps) if concurrent else trainer.run_steps)
    self.steps_per_epoch = trainer.steps_per_epoch
    self.run_steps = tf.function(self._run_steps)
    self.copy_weights = tf.function(self._copy_weights)

  def _run_steps(self, epoch: tf.Tensor, first_step: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor,
                 active: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Steps first_step .. first_step + num_steps - 1 of epoch `epoch` for every active layer.

    Args:
      epoch: int32 scalar, the step index s of the schedule (keys order and masks for all layers).
      first_step, num_steps: int32 scalars, a range of mini-batch steps of the epoch.
      learning_rate: float32 scalar.
      active: int32 [g], 1 for the layers that train in this step, 0 for those not started yet.

    Returns:
      (loss sums float32 [g], start and end timestamps float64 [g] in seconds; -1 when op determinism
      forbids the clock). An inactive layer runs zero steps: loss 0, end - start ~ 0.
    """
    losses, starts, ends = [], [], []
    for j, (fn, device) in enumerate(zip(self._epoch_fns, self.devices)):
      with tf.device(device):
        loss, start, end = fn(epoch, first_step, num_steps * active[j], learning_rate)
      losses.append(loss)
      starts.append(start)
      ends.append(end)
    return tf.stack(losses), tf.stack(starts), tf.stack(ends)

  def _copy_weights(self) -> None:
    """The per-epoch weight copy: every in-group frozen copy := its live layer (cross-device copies)."""
    for frozen, layer in self._copies:
      frozen.assign_from(layer)
