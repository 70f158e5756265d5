"""The op-level profile of a data-parallel step: seconds per epoch in each phase, each timed on its own.

As the report measured its data-parallel code ("we run one op after another several times to get an
estimate of time taken by every op", the report, "Baselines and Model Correctness checks"), every phase of a step runs alone,
for `steps` steps over all replicas inside one compiled loop, and is timed `repeats` times after an
untimed call that traces and compiles it (`common.measure.timing.time_repeated`):

  input         the replica's positions and example indices (`DataParallelTrainer.replica_indices`),
                gather of its images from its copy of the training set, corruption mask
  forward_loss  frozen layers below, encoder, decoder, reconstruction loss, on a prepared batch
  gradients     (forward, loss and gradients) minus forward_loss: the backward pass alone
  allreduce     the replicas' gradients summed by the strategy's all-reduce
  apply         the SGD update of every copy of the weights (learning rate 0, so nothing changes)

The input, forward and gradient phases run on the training step's kernel path (the trainer's `kernels`:
XLA-compiled or TensorFlow's default kernels). Seconds per epoch = median seconds per loop / steps * steps
per epoch. Training runs input, forward, loss and gradients as one function (one fused computation with
XLA), so the phases add up to somewhat more than a measured epoch; the record keeps both.
"""

from typing import Any, Callable, Dict

import tensorflow as tf

from common.measure import timing
from common.model import autoencoder
from common.model import graph
from common.model import optimizers
from data_parallel import config as config_lib
from data_parallel import replicas

PHASES = config_lib.PROFILE_PHASES

METHOD = ("each phase run alone for {steps} steps on all {replicas} replica(s) in one compiled loop, timed "
          "{repeats} times after an untimed compile; median x steps per epoch / steps; gradients = "
          "(forward+loss+gradients) - (forward+loss)")


class Phases(tf.Module):
  """The pieces of `LayerTrainer.loss_and_gradients`, separately, each compiled on the trainer's kernel path."""

  def __init__(self, trainer: autoencoder.LayerTrainer):
    super().__init__(name="profile_phases")
    self.t = trainer
    self.prepare = autoencoder.compile_step(self._prepare, trainer.kernels)
    self.forward_loss = autoencoder.compile_step(self._forward_loss, trainer.kernels)
    self.forward_loss_gradients = autoencoder.compile_step(self._forward_loss_gradients, trainer.kernels)

  def _prepare(self, indices, epoch):
    """The replica's (corrupted, clean) images, float32 [b, 784] each."""
    return self.t.corrupted_batch(indices, epoch)

  def loss(self, corrupted, clean):
    """The replica's share of the batch loss (summed over its examples, divided by the global batch)."""
    layer_input, target = self.t.through_frozen(corrupted, clean)
    per_example = self.t.layer.per_example_loss(layer_input, target)
    return tf.reduce_sum(per_example) / tf.cast(self.t.batch_size, tf.float32)

  def _forward_loss(self, corrupted, clean):
    return self.loss(corrupted, clean)

  def _forward_loss_gradients(self, corrupted, clean):
    """The training step's own loss and gradients (`DenoisingAutoencoder.loss_and_gradients`)."""
    loss, _, grads = self.t.layer.loss_and_gradients(*self.t.through_frozen(corrupted, clean), self.t.batch_size)
    return loss, grads

  def timed_forward_loss_gradients(self, corrupted, clean) -> tf.Tensor:
    """float32 scalar: the loss plus the first element of every gradient, so that nothing of the backward pass
    is pruned from a timed loop (TensorFlow's graph optimizer drops ops no output needs; returning the loss
    alone timed the forward pass twice on TensorFlow's kernels)."""
    loss, grads = self.forward_loss_gradients(corrupted, clean)
    return loss + needs_every(grads)


def needs_every(tensors) -> tf.Tensor:
  """float32 scalar: the sum of each tensor's first element, an output that needs every tensor computed."""
  return tf.add_n([tf.reshape(t, [-1])[0] for t in tensors])


def _loop(strategy: tf.distribute.Strategy, replica_fn: Callable[..., tf.Tensor], args=(), pass_step=False
          ) -> Callable:
  """A compiled loop running `replica_fn(*args)` (or `replica_fn(i)` at loop index i, with `pass_step`) on
  every replica `n` times; returns fn(n) -> float32 (the sum of the replicas' outputs, so nothing is pruned)."""
  @graph.function
  def loop(n):
    def body(i, total):
      out = strategy.run(replica_fn, args=(i,) if pass_step else args)
      return i + 1, total + strategy.reduce(tf.distribute.ReduceOp.SUM, out, axis=None)
    return tf.while_loop(lambda i, _: i < n, body, (tf.constant(0), tf.constant(0.0)))[1]
  return loop


def profile_layer(dp: replicas.DataParallelTrainer, steps: int, repeats: int) -> Dict[str, Any]:
  """Profiles one layer's data-parallel step, phase by phase; leaves the weights unchanged.

  Args:
    dp: the layer's data-parallel trainer.
    steps: steps per timed loop (at most an epoch's).
    repeats: timed loops per phase.

  Returns:
    {"seconds_per_epoch": {phase: seconds}, "total_seconds_per_epoch": sum of the phases, "repeats",
     "steps_timed", "spread": {phase: [min, max] seconds per epoch}, "method": one sentence}.
  """
  strategy, t = dp.strategy, dp.trainer
  per_epoch = dp.steps_per_epoch
  steps = max(1, min(steps, per_epoch))
  phases = Phases(t)
  epoch = tf.constant(0)

  def input_step(step):
    corrupted, clean = phases.prepare(dp.replica_indices(epoch, step % per_epoch), epoch)
    return corrupted[0, 0] + clean[0, 0]

  batch = strategy.run(lambda: phases.prepare(dp.replica_indices(epoch, tf.constant(0)), epoch))
  grads = strategy.run(lambda c, x: phases.forward_loss_gradients(c, x)[1], args=batch)
  weights = t.layer.weights

  def allreduce_step(g):
    summed = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, g)
    return needs_every(summed)

  def apply_step(g):
    tf.distribute.get_replica_context().merge_call(optimizers.update_variables, args=(weights, g, tf.constant(0.0)))
    return tf.constant(0.0)

  loops = {
      "input": _loop(strategy, input_step, pass_step=True),
      "forward_loss": _loop(strategy, lambda c, x: phases.forward_loss(c, x), batch),
      "forward_loss_gradients": _loop(strategy, phases.timed_forward_loss_gradients, batch),
      "allreduce": _loop(strategy, allreduce_step, (grads,)),
      "apply": _loop(strategy, apply_step, (grads,)),
  }
  n = tf.constant(steps)
  measured = {name: timing.time_repeated(lambda fn=fn: fn(n), repeats=repeats) for name, fn in loops.items()}
  scale = per_epoch / steps
  seconds = {name: m["median"] * scale for name, m in measured.items()}
  spread = {name: [m["min"] * scale, m["max"] * scale] for name, m in measured.items()}
  seconds["gradients"] = max(seconds.pop("forward_loss_gradients") - seconds["forward_loss"], 0.0)
  spread["gradients"] = [max(lo - seconds["forward_loss"], 0.0) for lo in spread.pop("forward_loss_gradients")]
  seconds = {p: seconds[p] for p in PHASES}
  return {"seconds_per_epoch": seconds, "total_seconds_per_epoch": sum(seconds.values()), "repeats": repeats,
          "steps_timed": steps, "spread": {p: spread[p] for p in PHASES},
          "method": METHOD.format(steps=steps, replicas=strategy.num_replicas_in_sync, repeats=repeats)}
