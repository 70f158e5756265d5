"""Data-parallel SGD of one autoencoder layer over the replicas of a `tf.distribute` strategy.

Each step (the report's "dataparallel" branch; Goyal et al. 2017, section 3): the global batch of B examples is
split over the G replicas, replica r taking positions [r B/G, (r+1) B/G) of the epoch's order, which it computes
itself (`common.distribute.replica_steps.replica_positions`, `common.data.loader.epoch_indices`: no input pipeline);
every replica gathers its examples from its copy of the training images, corrupts them (masks keyed by seed, epoch
and example index), runs the frozen layers below (their product operands made once per loop of steps, not once per
step) and computes the loss summed over its examples divided by B (`tf.nn.compute_average_loss` semantics) and its
gradients in one step function (`LayerTrainer.loss_and_gradients`, on the trainer's kernel path); the gradients are
summed over the replicas (all-reduce) and applied once to the mirrored weights (`common.model.optimizers.apply_update`).
The summed gradient is the gradient of the global batch, so G replicas compute what greedy computes at batch B, up to
float rounding.
"""

from typing import Callable, Optional, Tuple

import tensorflow as tf

from common.data import loader as data
from common.distribute import replica_steps
from common.measure import timing
from common.model import autoencoder
from common.model import graph
from common.model import layer_warmup
from common.model import optimizers
from common.settings import checks


class DataParallelTrainer:
  """Runs data-parallel SGD steps of one layer.

  Args:
    strategy: the strategy; the layer's variables were created in its scope (mirrored).
    trainer: the layer's `LayerTrainer`, built with the global batch B as `batch_size` and images that
      every replica can read (`common.distribute.replica_steps.replica_resident`); its `warmup_steps` (the layer
      warm-up, `common.model.layer_warmup`) scale the rate of each step as greedy's do.
    lr_multiplier: None, or the learning-rate warm-up: a function of the step index counted from the
      layer's first step (int32) returning the factor of the learning rate (float32).
    slow_replica_delay: benchmark-only seconds replica 0 sleeps in every step before the all-reduce (0: none).

  Raises:
    ValueError: B is not divisible by the number of replicas.
  """

  def __init__(self, strategy: tf.distribute.Strategy, trainer: autoencoder.LayerTrainer,
               lr_multiplier: Optional[Callable[[tf.Tensor], tf.Tensor]] = None, slow_replica_delay: float = 0.0):
    checks.check_divisible(trainer.batch_size, strategy.num_replicas_in_sync)
    self.strategy = strategy
    self.trainer = trainer
    self.lr_multiplier = lr_multiplier
    self.slow_replica_delay = slow_replica_delay
    self.steps_per_epoch = trainer.steps_per_epoch
    self._compiled = graph.function(self._steps)

  def replica_indices(self, epoch: tf.Tensor, step: tf.Tensor) -> tf.Tensor:
    """In replica context: int32 [B / G], this replica's example indices at (epoch, step), its share
    [r B/G, (r+1) B/G) of the positions a single device processes at that step."""
    t = self.trainer
    return data.epoch_indices(replica_steps.replica_positions(step, t.batch_size), t.seed, epoch, t.num_examples)

  def _steps(self, epoch, first_step, num_steps, learning_rate):
    t = self.trainer

    def frozen_kernels():  # once per loop on each replica: the frozen layers do not change in it
      return [tf.convert_to_tensor(encoder.kernel_operand()) for encoder in t.frozen]

    def replica_step(step, kernels):
      loss, grads = t.loss_and_gradients(self.replica_indices(epoch, step), epoch, t.batch_size, kernels)
      replica = tf.distribute.get_replica_context().replica_id_in_sync_group
      grads = timing.straggle(replica, grads, self.slow_replica_delay)
      index = epoch * self.steps_per_epoch + step  # the layer's own step: greedy order, from its first epoch
      rate = optimizers.learning_rate_at(learning_rate, self.lr_multiplier, index)
      optimizers.apply_update(t.layer.weights, grads, layer_warmup.scaled_rate(rate, index, t.warmup_steps))
      return loss

    return replica_steps.distributed_steps(self.strategy, replica_step, first_step, num_steps, frozen_kernels)

  def compile(self) -> None:
    """Traces and compiles the step function with one step at learning rate 0 (changes nothing)."""
    self._compiled(tf.constant(0), tf.constant(0), tf.constant(1), tf.constant(0.0)).numpy()

  def steps_function(self) -> Callable[..., Tuple[tf.Tensor]]:
    """`fn(epoch, first_step, num_steps, learning_rate) -> (sum of the steps' batch losses,)` for
    `common.training.epochs.run_epoch`; any (epoch, step range) may be run, in any order."""
    return lambda epoch, first_step, num_steps, lr: (self._compiled(epoch, first_step, num_steps, lr),)
