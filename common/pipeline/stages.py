"""The compiled pipeline: each stage trains its layers on a chunk of steps, all stages at once; each stage may be
replicated over R devices that split every batch (hybrid pipeline x data parallelism).

A `Stage` holds consecutive layers, one copy per replica device. `Stage.run_chunk` runs steps first .. first + n - 1
in one `tf.while_loop`: the bottom stage draws each step's batch from its device-resident images (shuffling order
and masking noise of the step's epoch, as greedy draws them), a higher stage reads the step's rows of the
activations the stage below emitted in the previous tick. Within a step every layer of the stage trains one SGD
step on its (corrupted-path input, clean-path target) and hands the next layer its encoding of both paths,
computed with its weights as they were at the start of the step.

With R > 1 replicas (`--replicas_per_stage`), replica r takes rows [r B/R, (r+1) B/R) of every batch (the bottom
stage draws them; a higher stage's replica r reads what replica r of the stage below emitted: no reshuffling);
each replica computes its share's gradient divided by the global batch B, the replicas sum the gradients with
TensorFlow's collective all-reduce (`CollectiveReduceV2`, each collective ordered by its device's variable) and
apply the same update, so the replicas stay identical and the mathematics is the R = 1 schedule's (Krizhevsky
2014, "One weird trick for parallelizing convolutional neural networks", combines model and data parallelism
this way). All R replicas of a stage run in the one loop (one loop per replica deadlocks in the collectives).

`Pipeline.tick` is one `tf.function` holding every stage's `run_chunk`, each in its own nested `tf.function`
under its device: the stages read only the previous tick's outputs and touch disjoint variables, so nothing orders
them and the runtime runs them side by side (the mechanism measured for model parallel,
`common/layerwise/training.py`).
"""

import itertools
from typing import List, Optional, Sequence

import tensorflow as tf

from common.data import loader as data
from common.model import autoencoder
from common.model import graph
from common.pipeline import schedule as schedule_lib

# Group and instance keys of the stages' collectives: one process-wide sequence, so that pipelines built one
# after another in a process (tests) never reuse a key; far above the keys tf.distribute allocates itself.
_COLLECTIVE_KEYS = itertools.count(1 << 20)


def all_reduce(gradient: tf.Tensor, variable: tf.Variable, group_size: int, group_key: int,
               instance_key: int) -> tf.Tensor:
  """The sum of `gradient` over the `group_size` replicas of a group (in replica context of one device): a
  `CollectiveReduceV2` ordered by the replica's own `variable` (an empty ordering token deadlocks)."""
  return tf.raw_ops.CollectiveReduceV2(
      input=gradient, group_size=tf.constant(group_size), group_key=tf.constant(group_key),
      instance_key=tf.constant(instance_key), ordering_token=[variable.handle], merge_op="Add", final_op="Id")


class Stage:
  """Consecutive layers of the stack, one copy per replica device, trained step by step on a chunk.

  Args:
    replicas: per replica, the stage's `DenoisingAutoencoder`s, bottom first, on that replica's device (replica
      0's are the run's layers; the others start from the same weights).
    devices: the replicas' devices, R of them.
    emits: whether the stage's top layer hands its encodings to a stage above (False for the top stage).
    images: per replica, float32 [N, 784] training images on its device (bottom stage), or None.
    seed, corruption, batch_size: as for greedy (`autoencoder.LayerTrainer`); batch_size is the global batch B,
      divisible by R.
    kernels: the kernel path of each layer's step (`autoencoder.KERNEL_PATHS`).
    schedule: when each layer trains and at which rate (`common.pipeline.schedule`); None: the original schedule
      (every layer at the given rate on every step).
    first_layer: the 0-based index in the stack of the stage's bottom layer (the schedule is per layer).
  """

  def __init__(self, replicas: Sequence[Sequence[autoencoder.DenoisingAutoencoder]], devices: Sequence[str],
               emits: bool, images: Optional[Sequence[tf.Tensor]], seed: int, corruption: float, batch_size: int,
               kernels: str, schedule: Optional[schedule_lib.LayerSchedule] = None, first_layer: int = 0):
    self.replicas, self.devices, self.emits = [list(c) for c in replicas], list(devices), emits
    self.schedule = None if schedule is None or schedule.is_original else schedule
    self.first_layer = first_layer
    self.layers, self.device, self.batch_size = self.replicas[0], self.devices[0], batch_size
    self.share = batch_size // len(self.devices)
    self.batches = [data.Batches(i, seed, corruption, batch_size) for i in images] if images is not None else None
    self.input_units = self.layers[0].input_units
    self.output_units = self.layers[-1].hidden_units
    # The top layer of the whole stack passes nothing up: it needs no clean-path encoding.
    passes_up = [emits or k < len(self.layers) - 1 for k in range(len(self.layers))]
    if len(self.devices) == 1:
      self._steps = [[autoencoder.compile_step(self._layer_step(layer, up), kernels)
                      for layer, up in zip(self.layers, passes_up)]]
      # A staggered layer outside its window only encodes (one device: the replicas' collectives run every step).
      self._forwards = [autoencoder.compile_step(self._layer_forward(layer, up), kernels)
                        for layer, up in zip(self.layers, passes_up)] if self.schedule and self.schedule.staggered else None
    else:
      self._steps = [[autoencoder.compile_step(self._layer_gradients(layer, up, batch_size), kernels)
                      for layer, up in zip(copies, passes_up)] for copies in self.replicas]
      self._group_key = next(_COLLECTIVE_KEYS)
      self._instance_keys = [[next(_COLLECTIVE_KEYS) for _ in layer.weights] for layer in self.layers]
    self.run_chunk = graph.function(self._run_chunk)

  @staticmethod
  def _layer_step(layer: autoencoder.DenoisingAutoencoder, passes_up: bool):
    def step(inputs, target, learning_rate):
      # The clean path is encoded with the start-of-step weights too, from the step's own product operand.
      if not passes_up:
        return (*layer.sgd_step(inputs, target, learning_rate), target)
      return layer.sgd_step(inputs, target, learning_rate, also_encode=target)
    return step

  @staticmethod
  def _layer_forward(layer: autoencoder.DenoisingAutoencoder, passes_up: bool):
    def forward(inputs, target, learning_rate):
      del learning_rate  # The layer does not train: it only encodes both paths for the layers above.
      return tf.constant(0.0), layer.encode(inputs), layer.encode(target) if passes_up else target
    return forward

  @staticmethod
  def _layer_gradients(layer: autoencoder.DenoisingAutoencoder, passes_up: bool, global_batch: int):
    def gradients(inputs, target):
      if not passes_up:
        loss, hidden, grads = layer.loss_and_gradients(inputs, target, global_batch)
        return loss, hidden, target, grads
      loss, hidden, grads, clean = layer.loss_and_gradients(inputs, target, global_batch, also_encode=target)
      return loss, hidden, clean, grads
    return gradients

  def _train_layer(self, k: int, inputs: List[tf.Tensor], targets: List[tf.Tensor], learning_rate: tf.Tensor,
                   step: tf.Tensor):
    """One SGD step of layer k of the stage at global `step` on every replica: (the batch's mean loss, encodings
    per replica of the corrupted path, of the clean path). Under a schedule the rate is the layer's at that step; a
    staggered layer outside its window does not train (loss 0 on one device; rate 0 with replicas)."""
    if self.schedule is not None:
      learning_rate = learning_rate * self.schedule.multiplier_tensor(self.first_layer + k, step)
    if len(self.devices) == 1:
      if self._forwards is None:
        loss, hidden, clean = self._steps[0][k](inputs[0], targets[0], learning_rate)
      else:
        loss, hidden, clean = tf.cond(
            self.schedule.trains_tensor(self.first_layer + k, step),
            lambda: self._steps[0][k](inputs[0], targets[0], learning_rate),
            lambda: self._forwards[k](inputs[0], targets[0], learning_rate))
      return loss, [hidden], [clean]
    results = []
    for r, device in enumerate(self.devices):
      with tf.device(device):
        results.append(self._steps[r][k](inputs[r], targets[r]))
    for r, device in enumerate(self.devices):
      with tf.device(device):
        for var, grad, key in zip(self.replicas[r][k].weights, results[r][3], self._instance_keys[k]):
          summed = all_reduce(grad, var, len(self.devices), self._group_key, key)
          tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=learning_rate, delta=summed)
    return tf.add_n([loss for loss, *_ in results]), [h for _, h, _, _ in results], [c for _, _, c, _ in results]

  def _run_chunk(self, first_step: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor, *inputs: tf.Tensor):
    """Trains the stage on steps first_step .. first_step + num_steps - 1 (graph code).

    Args:
      first_step, num_steps: int32 scalars (global step indices, counted over all epochs).
      learning_rate: float32 scalar (0 changes nothing: used to warm up compilation).
      *inputs: per replica r, corrupted_in and clean_in, float32 [num_steps * B/R, input_units]: the encodings
        replica r of the stage below emitted for these steps, B/R rows per step (ignored by the bottom stage,
        which may pass [0, 784] tensors).

    Returns:
      (losses float32 [num_steps, layers of the stage], the mean batch loss of each step and layer;
       per replica corrupted_out, clean_out float32 [num_steps * B/R, output_units], the top layer's encodings
       for the stage above ([0, output_units] when the stage emits nothing);
       start, end float64 wall-clock seconds of the loop, -1 when op determinism forbids reading the clock).
    """
    b, replicas = self.share, len(self.devices)
    with tf.device(self.device):
      start = autoencoder.timestamp()
      with tf.control_dependencies([start]):
        first_step = tf.identity(first_step)
      losses = tf.TensorArray(tf.float32, size=num_steps, element_shape=[len(self.layers)])
      out_shape = [b, self.output_units] if self.emits else [0, self.output_units]
      outs = [tf.TensorArray(tf.float32, size=num_steps, element_shape=out_shape) for _ in range(2 * replicas)]

      def body(i, losses, *outs):
        if self.batches is not None:
          pairs = [self.batches[r].at_step(first_step + i, r, replicas) for r in range(replicas)]
        else:
          pairs = [(tf.slice(inputs[2 * r], [i * b, 0], [b, self.input_units]),
                    tf.slice(inputs[2 * r + 1], [i * b, 0], [b, self.input_units])) for r in range(replicas)]
        corrupted, clean = [p[0] for p in pairs], [p[1] for p in pairs]
        step_losses = []
        for k in range(len(self.layers)):
          loss, corrupted, clean = self._train_layer(k, corrupted, clean, learning_rate, first_step + i)
          step_losses.append(loss)
        written = []
        for r in range(replicas):
          pair = (corrupted[r], clean[r]) if self.emits else (tf.zeros(out_shape),) * 2
          written += [outs[2 * r].write(i, pair[0]), outs[2 * r + 1].write(i, pair[1])]
        return (i + 1, losses.write(i, tf.stack(step_losses)), *written)

      _, losses, *outs = tf.while_loop(lambda i, *_: i < num_steps, body, (tf.constant(0), losses, *outs))
      results = (losses.stack(), *[tf.reshape(o.stack(), [-1, self.output_units]) for o in outs])
      with tf.control_dependencies(results):
        end = autoencoder.timestamp()
    return results + (start, end)


class Pipeline:
  """Every stage of the stack, and `tick`: one chunk per stage, all stages concurrently.

  Args:
    stages: the `Stage`s, bottom first, all with the same number of replicas R; replica r of stage p + 1 reads
      what replica r of stage p emitted.
  """

  def __init__(self, stages: Sequence[Stage]):
    self.stages = list(stages)
    self.replicas = len(self.stages[0].devices)
    specs = [tf.TensorSpec([P], tf.int32) for P in (len(self.stages),) * 2] + [tf.TensorSpec([], tf.float32)]
    for stage in self.stages[1:]:
      specs += [tf.TensorSpec([None, stage.input_units], tf.float32)] * (2 * self.replicas)
    self.tick = graph.function(self._tick, input_signature=specs)

  def empty_inputs(self) -> List[tf.Tensor]:
    """The in-flight activations before the first tick: [0, units] pairs per replica of every stage but the
    bottom."""
    out = []
    for stage in self.stages[1:]:
      for device in stage.devices:
        with tf.device(device):
          out += [tf.zeros([0, stage.input_units])] * 2
    return out

  def _tick(self, first_steps: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor, *inputs: tf.Tensor):
    """Stage p trains steps first_steps[p] .. + num_steps[p] - 1 on the 2R tensors of inputs that stage p - 1
    emitted (corrupted and clean per replica).

    Returns:
      (losses: per stage float32 [num_steps[p], layers of the stage]; outputs: the activations every
       stage but the top emitted, [corrupted, clean] per replica per stage, the next tick's `inputs`; starts,
       ends: float64 [P] loop timestamps per stage).
    """
    losses, outputs, starts, ends = [], [], [], []
    width = 2 * self.replicas
    for p, stage in enumerate(self.stages):
      mine = inputs[width * (p - 1):width * p] if p > 0 else (tf.zeros([0, stage.input_units]),) * width
      with tf.device(stage.device):
        loss, *emitted, start, end = stage.run_chunk(first_steps[p], num_steps[p], learning_rate, *mine)
      losses.append(loss)
      if stage.emits:
        outputs += emitted
      starts.append(start)
      ends.append(end)
    return losses, outputs, tf.stack(starts), tf.stack(ends)
