"""SGD steps under a `tf.distribute` strategy: per-replica gradients, all-reduce, one update.

The same code runs under the default strategy (one device: the all-reduce is the identity) and under
`tf.distribute.MirroredStrategy` / `MultiWorkerMirroredStrategy` (G replicas). Each replica takes its
contiguous share of the global batch's positions, so replica r of G processes exactly the examples a
single device would process at positions [r B/G, (r+1) B/G) of the step: with the loss summed over a
replica's examples and divided by the global batch (`tf.nn.compute_average_loss` semantics), the
all-reduced (summed) gradient equals the single-device gradient of the global batch, which is what
makes data parallel equal greedy (docs/design.md).

The replicas' example indices come either from `replica_positions` (computed inside the replica) or
from `distributed_indices`, a `tf.data` pipeline built once and distributed by the strategy
(`distribute_datasets_from_function`); both give every replica the same examples.
"""

from typing import Callable, Optional, Sequence

import tensorflow as tf

from common import data


def check_divisible(global_batch_size: int, replicas: int, flag: str = "batch_size") -> None:
  """Raises ValueError unless the global batch splits evenly over the replicas.

  Args:
    global_batch_size: B, examples per step over all replicas.
    replicas: replicas in sync: G, or G times the workers of a multi-worker run.
    flag: the flag named in the message.
  """
  if global_batch_size % replicas:
    raise ValueError(
        f"--{flag}={global_batch_size} (the global batch) is not divisible by the {replicas} replicas "
        f"(--num_devices, times the workers when started by common.launch): every replica takes an equal share; "
        f"use a multiple of {replicas}, "
        f"e.g. {global_batch_size - global_batch_size % replicas or replicas}.")


def replica_positions(step: tf.Tensor, global_batch_size: int) -> tf.Tensor:
  """int32 [global_batch_size / G]: this replica's positions in the epoch's order at `step`.

  Raises:
    ValueError: the global batch is not divisible by the number of replicas.
  """
  ctx = tf.distribute.get_replica_context()
  replicas = ctx.num_replicas_in_sync
  check_divisible(global_batch_size, replicas)
  per_replica = global_batch_size // replicas
  replica = tf.cast(ctx.replica_id_in_sync_group, tf.int32)
  return step * global_batch_size + replica * per_replica + tf.range(per_replica)


def distributed_indices(strategy: tf.distribute.Strategy, seed: int, num_examples: int, global_batch_size: int,
                        first_epoch: int, num_epochs: int, stream: int = data.PRETRAIN_STREAM,
                        fetch_to_device: bool = True):
  """An iterator giving every replica its example indices for each step of a range of epochs.

  One `tf.data` pipeline per worker (`strategy.distribute_datasets_from_function`) computes the
  shuffled order (`data.epoch_indices`, a pure function of (seed, epoch)) and hands each replica its
  contiguous share of every global batch, step after step: replica r of G gets positions
  [r B/G, (r+1) B/G) of step s, exactly what a single device processing batch B sees at those
  positions. The images themselves are not copied through the pipeline: the replicas gather them
  from the training images held on their device.

  Args:
    strategy: the strategy whose replicas consume the iterator.
    seed: the run's seed.
    num_examples: N, training examples; an epoch is N // B steps.
    global_batch_size: B, divisible by the number of replicas G.
    first_epoch: the first epoch yielded (step 0 of it comes first).
    num_epochs: epochs yielded; the iterator ends after them.
    stream: the order's stream (`data.PRETRAIN_STREAM` or `data.FINETUNE_STREAM`).
    fetch_to_device: prefetch each replica's element onto its device (else they stay on the host).

  Returns:
    A distributed iterator; each `next()` is a per-replica dict {"epoch": int32 scalar, "step": int32
    scalar, "indices": int32 [B / G]}.

  Raises:
    ValueError: B is not divisible by G.
  """
  replicas = strategy.num_replicas_in_sync
  check_divisible(global_batch_size, replicas)
  per_replica = global_batch_size // replicas
  steps = num_examples // global_batch_size

  def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
    # This pipeline feeds `local` replicas, round-robin: element k is step k // local of local replica k % local.
    local = replicas // context.num_input_pipelines
    first_replica = context.input_pipeline_id * local

    def element(k):
      k = tf.cast(k, tf.int32)
      counter = first_epoch * steps + k // local
      epoch, step = counter // steps, counter % steps
      positions = step * global_batch_size + (first_replica + k % local) * per_replica + tf.range(per_replica)
      return {"epoch": epoch, "step": step,
              "indices": data.epoch_indices(positions, seed, epoch, num_examples, stream)}

    return tf.data.Dataset.range(num_epochs * steps * local).map(element).prefetch(2 * local)

  options = tf.distribute.InputOptions(experimental_fetch_to_device=fetch_to_device)
  return iter(strategy.distribute_datasets_from_function(dataset_fn, options))


def element_indices(element, epoch: tf.Tensor, step: tf.Tensor) -> tf.Tensor:
  """This replica's int32 [B / G] indices from a `distributed_indices` element, checked to be (epoch, step)'s.

  Raises (when run):
    tf.errors.InvalidArgumentError: the iterator is not at (epoch, step), i.e. it was consumed out of order.
  """
  check = tf.debugging.assert_equal(
      tf.stack([element["epoch"], element["step"]]), tf.stack([tf.cast(epoch, tf.int32), tf.cast(step, tf.int32)]),
      message="the input pipeline is out of step with the training loop (epoch, step)")
  with tf.control_dependencies([check]):
    return tf.identity(element["indices"])


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
    first_step: tf.Tensor, num_steps: tf.Tensor, iterator: Optional[object] = None) -> tf.Tensor:
  """Runs `replica_step` on every replica for steps first_step .. first_step+num_steps-1.

  Graph code: call it inside a tf.function.

  Args:
    strategy: the distribution strategy.
    replica_step: in replica context, runs one step (typically: indices -> gradients -> `optimizers.apply_update`)
      and returns this replica's share of the batch loss (float32 scalar). Called as
      `replica_step(step)`, or `replica_step(step, element)` with this replica's element of
      `iterator` when one is given.
    first_step, num_steps: int32 scalars.
    iterator: a distributed iterator (e.g. `distributed_indices`) read once per step, or None.

  Returns:
    float32 scalar: the sum over steps of the batch losses (replica shares summed).
  """
  def body(step, total):
    args = (step,) if iterator is None else (step, next(iterator))
    per_replica = strategy.run(replica_step, args=args)
    return step + 1, total + strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

  stop = first_step + num_steps
  _, total = tf.while_loop(lambda step, _: step < stop, body, (first_step, tf.constant(0.0)))
  return total
