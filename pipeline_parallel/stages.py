"""The compiled pipeline: each stage trains its layers on a chunk of steps, all stages at once.

A `Stage` holds consecutive layers on one device. `Stage.run_chunk` runs steps first .. first + n - 1
in a `tf.while_loop`: the bottom stage draws each step's batch from its device-resident images (shuffling
order and masking noise of the step's epoch, as greedy draws them), a higher stage reads the step's rows
of the activations the stage below emitted in the previous tick. Within a step every layer of the stage
trains one SGD step on its (corrupted-path input, clean-path target) and hands the next layer its
encoding of both paths, computed with its weights as they were at the start of the step.

`Pipeline.tick` is one `tf.function` holding every stage's `run_chunk`, each in its own nested
`tf.function` under its device: the stages read only the previous tick's outputs and touch disjoint
variables, so nothing orders them and the runtime runs them side by side (the mechanism measured for
model parallel, `common/layerwise_training.py`).
"""

from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from common import autoencoder
from common import data


class Stage:
  """Consecutive layers of the stack on one device, trained step by step on a chunk.

  Args:
    layers: the stage's `DenoisingAutoencoder`s, bottom first, on `device`.
    device: the stage's device.
    emits: whether the stage's top layer hands its encodings to a stage above (False for the top stage).
    images: float32 [N, 784] training images on `device` (bottom stage), or None.
    seed, corruption, batch_size: as for greedy (`autoencoder.LayerTrainer`).
    kernels: the kernel path of each layer's step (`autoencoder.KERNEL_PATHS`).
  """

  def __init__(self, layers: Sequence[autoencoder.DenoisingAutoencoder], device: str, emits: bool,
               images: Optional[tf.Tensor], seed: int, corruption: float, batch_size: int,
               kernels: str):
    self.layers, self.device, self.emits, self.batch_size = list(layers), device, emits, batch_size
    self.batches = data.Batches(images, seed, corruption, batch_size) if images is not None else None
    self.input_units = self.layers[0].input_units
    self.output_units = self.layers[-1].hidden_units
    # The top layer of the whole stack passes nothing up: it needs no clean-path encoding.
    self._steps = [autoencoder.compile_step(self._layer_step(layer, emits or k < len(self.layers) - 1), kernels)
                   for k, layer in enumerate(self.layers)]
    self.run_chunk = tf.function(self._run_chunk)

  @staticmethod
  def _layer_step(layer: autoencoder.DenoisingAutoencoder, passes_up: bool):
    def step(inputs, target, learning_rate):
      # The clean path is encoded before the update, so both encodings use the start-of-step weights.
      clean = layer.encode(target) if passes_up else target
      loss, hidden = layer.sgd_step(inputs, target, learning_rate)
      return loss, hidden, clean
    return step

  def _run_chunk(self, first_step: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor,
                 corrupted_in: tf.Tensor, clean_in: tf.Tensor):
    """Trains the stage on steps first_step .. first_step + num_steps - 1 (graph code).

    Args:
      first_step, num_steps: int32 scalars (global step indices, counted over all epochs).
      learning_rate: float32 scalar (0 changes nothing: used to warm up compilation).
      corrupted_in, clean_in: float32 [num_steps * B, input_units]: the encodings the stage below emitted
        for these steps, B rows per step (ignored by the bottom stage, which may pass [0, 784]).

    Returns:
      (losses float32 [num_steps, layers of the stage], the mean batch loss of each step and layer;
       corrupted_out, clean_out float32 [num_steps * B, output_units], the top layer's encodings for the
       stage above ([0, output_units] when the stage emits nothing);
       start, end float64 wall-clock seconds of the loop on the device, -1 when op determinism forbids
       reading the clock).
    """
    b = self.batch_size
    with tf.device(self.device):
      start = autoencoder.timestamp()
      with tf.control_dependencies([start]):
        first_step = tf.identity(first_step)
      losses = tf.TensorArray(tf.float32, size=num_steps, element_shape=[len(self.layers)])
      out_shape = [b, self.output_units] if self.emits else [0, self.output_units]
      corrupted_out = tf.TensorArray(tf.float32, size=num_steps, element_shape=out_shape)
      clean_out = tf.TensorArray(tf.float32, size=num_steps, element_shape=out_shape)

      def body(i, losses, corrupted_out, clean_out):
        if self.batches is not None:
          inputs, target = self.batches.at_step(first_step + i)
        else:
          inputs = tf.slice(corrupted_in, [i * b, 0], [b, self.input_units])
          target = tf.slice(clean_in, [i * b, 0], [b, self.input_units])
        step_losses = []
        for fn in self._steps:
          loss, inputs, target = fn(inputs, target, learning_rate)
          step_losses.append(loss)
        if not self.emits:
          inputs = target = tf.zeros(out_shape)
        return (i + 1, losses.write(i, tf.stack(step_losses)), corrupted_out.write(i, inputs),
                clean_out.write(i, target))

      _, losses, corrupted_out, clean_out = tf.while_loop(
          lambda i, *_: i < num_steps, body, (tf.constant(0), losses, corrupted_out, clean_out))
      flat = [-1, self.output_units]
      results = (losses.stack(), tf.reshape(corrupted_out.stack(), flat), tf.reshape(clean_out.stack(), flat))
      with tf.control_dependencies(results):
        end = autoencoder.timestamp()
    return results + (start, end)


class Pipeline:
  """Every stage of the stack, and `tick`: one chunk per stage, all stages concurrently.

  Args:
    stages: the `Stage`s, bottom first; stage p + 1 reads what stage p emitted.
  """

  def __init__(self, stages: Sequence[Stage]):
    self.stages = list(stages)
    specs = [tf.TensorSpec([P], tf.int32) for P in (len(self.stages),) * 2] + [tf.TensorSpec([], tf.float32)]
    for stage in self.stages[1:]:
      specs += [tf.TensorSpec([None, stage.input_units], tf.float32)] * 2
    self.tick = tf.function(self._tick, input_signature=specs)

  def empty_inputs(self) -> List[tf.Tensor]:
    """The in-flight activations before the first tick: [0, units] pairs for every stage but the bottom."""
    out = []
    for stage in self.stages[1:]:
      with tf.device(stage.device):
        out += [tf.zeros([0, stage.input_units])] * 2
    return out

  def _tick(self, first_steps: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor, *inputs: tf.Tensor):
    """Stage p trains steps first_steps[p] .. + num_steps[p] - 1 on inputs[2(p-1)], inputs[2(p-1)+1].

    Returns:
      (losses: per stage float32 [num_steps[p], layers of the stage]; outputs: the activations every
       stage but the top emitted, [corrupted, clean] per stage, the next tick's `inputs`; starts, ends:
       float64 [P] loop timestamps per stage).
    """
    losses, outputs, starts, ends = [], [], [], []
    for p, stage in enumerate(self.stages):
      pair = inputs[2 * (p - 1):2 * p] if p > 0 else (tf.zeros([0, stage.input_units]),) * 2
      with tf.device(stage.device):
        loss, corrupted, clean, start, end = stage.run_chunk(first_steps[p], num_steps[p], learning_rate, *pair)
      losses.append(loss)
      if stage.emits:
        outputs += [corrupted, clean]
      starts.append(start)
      ends.append(end)
    return losses, outputs, tf.stack(starts), tf.stack(ends)
