"""Plain SGD steps under a `tf.distribute` strategy: per-replica gradients, all-reduce, one update.

The same code runs under the default strategy (one device: the all-reduce is the identity) and under
`tf.distribute.MirroredStrategy` / `MultiWorkerMirroredStrategy` (G replicas). Each replica takes its
contiguous share of the global batch's positions, so replica r of G processes exactly the examples a
single device would process at positions [r B/G, (r+1) B/G) of the step: with the loss summed over a
replica's examples and divided by the global batch (`tf.nn.compute_average_loss` semantics), the
all-reduced (summed) gradient equals the single-device gradient of the global batch, which is what
makes data parallel equal greedy (DESIGN.md, "The four schedules").
"""

from typing import Callable, List, Sequence, Tuple

import tensorflow as tf


def apply_sgd(variables: Sequence[tf.Variable], gradients: Sequence[tf.Tensor], learning_rate: tf.Tensor) -> None:
  """In replica context: sums `gradients` over replicas (all-reduce) and applies var -= lr * grad once.

  Args:
    variables: the model's variables (MirroredVariables under a mirrored strategy).
    gradients: this replica's gradients, already divided by the global batch size.
    learning_rate: float32 scalar.
  """
  ctx = tf.distribute.get_replica_context()
  summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, list(gradients))

  def update(strategy, grads):
    for var, grad in zip(variables, grads):
      strategy.extended.update(var, lambda v, g: v.assign_sub(learning_rate * g), args=(grad,))

  ctx.merge_call(update, args=(summed,))


def replica_positions(step: tf.Tensor, global_batch_size: int) -> tf.Tensor:
  """int32 [global_batch_size / G]: this replica's positions in the epoch's order at `step`.

  Raises:
    ValueError: the global batch is not divisible by the number of replicas.
  """
  ctx = tf.distribute.get_replica_context()
  replicas = ctx.num_replicas_in_sync
  if global_batch_size % replicas:
    raise ValueError(f"global batch {global_batch_size} is not divisible by {replicas} replicas")
  per_replica = global_batch_size // replicas
  replica = tf.cast(ctx.replica_id_in_sync_group, tf.int32)
  return step * global_batch_size + replica * per_replica + tf.range(per_replica)


def distributed_steps(
    strategy: tf.distribute.Strategy,
    replica_step: Callable[[tf.Tensor], tf.Tensor],
    first_step: tf.Tensor, num_steps: tf.Tensor) -> tf.Tensor:
  """Runs `replica_step(step)` on every replica for steps first_step .. first_step+num_steps-1.

  Graph code: call it inside a tf.function.

  Args:
    strategy: the distribution strategy.
    replica_step: in replica context, runs one step (typically: positions -> indices -> gradients ->
      `apply_sgd`) and returns this replica's share of the batch loss (float32 scalar).
    first_step, num_steps: int32 scalars.

  Returns:
    float32 scalar: the sum over steps of the batch losses (replica shares summed).
  """
  def body(step, total):
    per_replica = strategy.run(replica_step, args=(step,))
    return step + 1, total + strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

  stop = first_step + num_steps
  _, total = tf.while_loop(lambda step, _: step < stop, body, (first_step, tf.constant(0.0)))
  return total
