"""SGD steps under a `tf.distribute` strategy: per-replica gradients, all-reduce, one update.

The same code runs under the default strategy (one device: the all-reduce is the identity) and under
`tf.distribute.MirroredStrategy` / `MultiWorkerMirroredStrategy` (G replicas). Each replica takes its
contiguous share of the global batch's positions, so replica r of G processes exactly the examples a
single device would process at positions [r B/G, (r+1) B/G) of the step: with the loss summed over a
replica's examples and divided by the global batch (`tf.nn.compute_average_loss` semantics), the
all-reduced (summed) gradient equals the single-device gradient of the global batch, which is what
makes data parallel equal greedy (docs/design.md).

Each replica computes its own positions (`replica_positions`, from its replica id) and their example
indices (`data.epoch_indices`, a pure function of seed, epoch and position), inside the step: no input
pipeline and no distributed iterator. (An earlier version fed the indices through
`distribute_datasets_from_function`; with more logical devices than cores, creating a layer's iterator
while the previous layer's was alive or being freed sat idle: 204 s of a 284 s run at 8 devices on 2 cores,
docs/data_parallel.md, "More devices than cores".)
"""

from typing import Any, Callable, Optional, Sequence

import tensorflow as tf

from common.settings import checks


def replica_positions(step: tf.Tensor, global_batch_size: int) -> tf.Tensor:
  """int32 [global_batch_size / G]: this replica's positions in the epoch's order at `step`.

  Raises:
    ValueError: the global batch is not divisible by the number of replicas.
  """
  ctx = tf.distribute.get_replica_context()
  replicas = ctx.num_replicas_in_sync
  checks.check_divisible(global_batch_size, replicas)
  per_replica = global_batch_size // replicas
  replica = tf.cast(ctx.replica_id_in_sync_group, tf.int32)
  return step * global_batch_size + replica * per_replica + tf.range(per_replica)


def replica_resident(strategy: tf.distribute.Strategy, array) -> tf.Variable:
  """A read-only copy of `array` on every replica's device (a non-trainable mirrored variable).

  The training images are loaded once on the host and copied once to each replica device, so every
  step a replica gathers its examples from device-local memory (on logical CPU devices the copies
  share the host's memory bandwidth; on GPUs no image crosses the bus after the start).

  Args:
    strategy: the strategy (the variable is created in its scope).
    array: e.g. float32 [N, 784] images or int32 [N] labels.
  """
  with strategy.scope():
    return tf.Variable(array, trainable=False, name="replica_data",
                       synchronization=tf.VariableSynchronization.ON_WRITE,
                       aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)


def distributed_steps(
    strategy: tf.distribute.Strategy,
    replica_step: Callable[..., tf.Tensor],
    first_step: tf.Tensor, num_steps: tf.Tensor,
    loop_constants: Optional[Callable[[], Any]] = None) -> tf.Tensor:
  """Runs `replica_step` on every replica for steps first_step .. first_step+num_steps-1.

  Graph code: call it inside a tf.function.

  Args:
    strategy: the distribution strategy.
    replica_step: in replica context, `replica_step(step)` runs one step (typically: `replica_positions`
      -> indices -> gradients -> `optimizers.apply_update`) and returns this replica's share of the
      batch loss (float32 scalar); with `loop_constants`, `replica_step(step, constants)`.
    first_step, num_steps: int32 scalars.
    loop_constants: None, or a function run once on every replica before the loop (in replica context) whose
      result (a nest of tensors) every step of that replica receives: values the loop does not change, made once
      instead of once per step (data_parallel's frozen layers' product operands).

  Returns:
    float32 scalar: the sum over steps of the batch losses (replica shares summed).
  """
  constants = () if loop_constants is None else (strategy.run(loop_constants),)

  def body(step, total):
    per_replica = strategy.run(replica_step, args=(step,) + constants)
    return step + 1, total + strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

  stop = first_step + num_steps
  _, total = tf.while_loop(lambda step, _: step < stop, body, (first_step, tf.constant(0.0)))
  return total


def make_strategy(device_names: Sequence[str]) -> tf.distribute.MirroredStrategy:
  """`tf.distribute.MirroredStrategy` over `device_names` (G GPUs or G logical CPU devices).

  On GPUs the all-reduce is TensorFlow's choice (NCCL). On logical CPU devices, which share the host's
  memory, it is `ReductionToOneDevice`: the replicas' gradients are summed on the first device and the
  sum handed back by reference, with no collective launch per step; unlike the collective ring
  all-reduce it lets several strategies live in one process (benchmarks, tests).
  """
  names = list(device_names)
  cross_device_ops = None
  if all(tf.DeviceSpec.from_string(n).device_type == "CPU" for n in names):
    cross_device_ops = tf.distribute.ReductionToOneDevice(reduce_to_device=names[0])
  return tf.distribute.MirroredStrategy(devices=names, cross_device_ops=cross_device_ops)
