"""The function the coordinator schedules: K steps of asynchronous SGD of one layer, on whichever worker is free.

Asynchronous SGD as in Dean et al. 2012, "Large scale distributed deep networks", section 4.1 (Downpour SGD
with a push and a fetch every step): the layer's variables live on the parameter server(s); step t of an epoch,
on whichever worker runs it,

  1. reads the version counter v0 (an int64 variable on a parameter server), then the layer's three variables
     (kernel, bias, decoder bias) once each: three reads, not atomic together, so another worker's update may
     land between them;
  2. draws the batch and the masking noise of step t exactly as greedy does (`common.data.loader.Batches`: a pure
     function of seed, epoch and step, passed in as the step index, so the data a step sees never depends on
     which worker runs it), passes it through this worker's copies of the frozen layers below, and computes the
     loss and the written-out gradient at the weights it read (`DenoisingAutoencoder.loss_and_gradients`);
  3. applies the gradient at once to the variables on the parameter server (`ResourceApplyGradientDescent`,
     atomic per variable, not across the three), then increments the version counter: v1 = assign_add(1).

The staleness of the update is v1 - 1 - v0: the updates of other workers applied between this step's first
read and its own apply (0 for one worker: plain sequential SGD). Such a gradient, computed at weights that
are now s updates old, is what the study's lecture material writes W_103 = W_102 - lambda dW_100.
With `staleness_aware` the learning rate is divided by s' + 1 (Zhang et al. 2016, "Staleness-aware async-SGD for
distributed deep learning", section 3), s' = (the counter read just before the apply) - v0: an update landing
between that read and the apply is missed by s' but counted by s.

The training images and the frozen layers below are per-worker variables (a copy on every worker, made once per
layer), so a step moves only the layer's weights and gradient over the network. A counter of function starts on
the parameter server tells how many functions ran more than once (`common.distribute.parameter_server`).
"""

import os
from typing import List, Optional, Sequence, Tuple

import tensorflow as tf

from common.measure import timing
from common.model import autoencoder
from common.model import graph
from common.model import layer_warmup

HOLD_ENV = "SDAE_TEST_HOLD_WORKER"  # the test hook of `_hold_from_environment`
HOLD_SECONDS = 3600


def _hold_from_environment() -> Optional[Tuple[int, int, str]]:
  """The test hook HOLD_ENV="<worker>:<N>:<path>", as (worker, N, path); None when it is unset (then nothing is
  added to the graph).

  Worker <worker>, right after an update of its own takes the version counter past N in a function that trains (a
  learning rate above 0: not a compile phase's), writes <path> and then sleeps HOLD_SECONDS inside that function, its
  updates so far applied: a test that sees <path> kills a worker that is certainly in the middle of an epoch's
  function (tests/test_async_data_parallel.py, tests/test_slurm.py). Read on the coordinator, when a layer's function
  is built.
  """
  spec = os.environ.get(HOLD_ENV)
  if not spec:
    return None
  worker, updates, path = spec.split(":", 2)
  return int(worker), int(updates), path


def _held(worker: tf.Tensor, learning_rate: tf.Tensor, after: tf.Tensor, hold: Tuple[int, int, str]) -> tf.Tensor:
  """Graph code: `after` (the version counter after a step's update), passed on after the hold of `hold`
  (`_hold_from_environment`) when it applies to this update."""
  index, updates, path = hold

  def pause():
    with tf.control_dependencies([tf.io.write_file(path, tf.strings.as_string(after))]):
      return timing.sleep(HOLD_SECONDS)

  applies = tf.logical_and(tf.logical_and(tf.equal(worker, index), after > updates), learning_rate > 0)
  held = tf.cond(applies, pause, lambda: tf.constant(0, tf.int64))
  with tf.control_dependencies([held]):
    return tf.identity(after)


class Counters(tf.Module):
  """The counters on the parameter server(s), created in the strategy's scope.

  Attributes:
    version: int64, +1 after every applied update (every step of every function run, reruns included).
    starts: int64, +1 whenever a function starts on a worker (a rescheduled function counts again).
  """

  def __init__(self):
    super().__init__(name="async_counters")
    self.version = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="version")
    self.starts = tf.Variable(tf.constant(0, tf.int64), trainable=False, name="starts")

  def read(self) -> Tuple[int, int]:
    """(version, starts) now, read on the coordinator."""
    return int(self.version.numpy()), int(self.starts.numpy())


def per_worker_copies(strategy: tf.distribute.Strategy, make):
  """`make()` with every variable it creates made a per-worker variable: one copy on each worker, initialised
  there (lazily, when a scheduled function first uses it) from the initial value given, never synchronised.

  `tf.Variable(..., per_worker_variable=True)` in the scope of a `ParameterServerStrategy` (TensorFlow 2.21's
  `ps_values.PerWorkerVariable`, experimental; reading them in scheduled functions is what this program does).
  """
  def creator(next_creator, **kwargs):
    return next_creator(**dict(kwargs, per_worker_variable=True))

  with strategy.scope(), tf.variable_creator_scope(creator):
    return make()


class LayerSteps(tf.Module):
  """The scheduled function of one layer (`function`) and what it runs.

  Args:
    layer: the layer in training, its variables on the parameter server(s).
    frozen: per-worker `FrozenEncoder` copies of the layers below, bottom first (`per_worker_copies`).
    images: float32 [N, 784] in [0, 1], a per-worker variable holding the training images.
    counters: the `Counters`.
    seed, corruption, batch_size: as every program's (greedy's batches: `common.data.loader.Batches`).
    kernels: the kernel path of the gradient: "tf" (XLA cannot compile reads of per-worker variables).
    staleness_aware: divide the learning rate of each update by its staleness + 1.
    slow_worker_delay: benchmark-only seconds worker `timing.SLOW_WORKER` sleeps in each step between its gradient and
      its apply; 0 for none (nothing is added to the step then).
    warmup_steps: W of the layer warm-up (`common.model.layer_warmup`; 0: none), on the layer's own steps: here the
      updates applied to the layer before this one (the version counter read at the step's start minus `origin`).
  """

  def __init__(self, layer: autoencoder.DenoisingAutoencoder, frozen: Sequence, images: tf.Variable,
               counters: Counters, seed: int, corruption: float, batch_size: int, kernels: str,
               staleness_aware: bool = False, slow_worker_delay: float = 0.0, warmup_steps: int = 0):
    super().__init__(name=f"async_steps{layer.index}")
    self.layer = layer
    self.trainer = autoencoder.LayerTrainer(layer, frozen, images, seed, corruption, batch_size, kernels=kernels)
    self.counters = counters
    self.staleness_aware = staleness_aware
    self.slow_worker_delay = slow_worker_delay
    self.warmup_steps = warmup_steps
    self._hold = _hold_from_environment()
    self.steps_per_epoch = self.trainer.steps_per_epoch
    self.gradient = autoencoder.compile_step(self._gradient, kernels)
    self.function = graph.function(self._steps)

  def _gradient(self, indices: tf.Tensor, epoch: tf.Tensor, weights: List[tf.Tensor]
                ) -> Tuple[tf.Tensor, List[tf.Tensor]]:
    """The loss (float32, mean over the batch) and gradients of the batch int32 [B] `indices` of `epoch` at
    `weights`, compiled on the kernel path (the indices are drawn outside it, as the other programs do)."""
    t = self.trainer
    corrupted, clean = t.through_frozen(*t.corrupted_batch(indices, epoch))
    loss, _, grads = self.layer.loss_and_gradients(corrupted, clean, t.batch_size, weights)
    return loss, grads

  def _step(self, worker: tf.Tensor, epoch: tf.Tensor, step: tf.Tensor, learning_rate: tf.Tensor,
            origin: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
    """One asynchronous SGD step; returns (the batch's mean loss float32, the update's staleness int64)."""
    version = self.counters.version
    with tf.control_dependencies([step]):  # After the previous step's apply (the step index waits for it).
      before = version.read_value()
    with tf.control_dependencies([before]):
      weights = [v.read_value() for v in self.layer.weights]
    t = self.trainer
    loss, grads = self.gradient(t.batches.indices(step * t.batch_size + tf.range(t.batch_size), epoch), epoch, weights)
    grads = timing.straggle(worker, grads, self.slow_worker_delay)
    rate = layer_warmup.scaled_rate(learning_rate, before - origin, self.warmup_steps)
    if self.staleness_aware:
      with tf.control_dependencies(grads):
        seen = version.read_value()
      rate = rate / tf.cast(seen - before + 1, tf.float32)
    updates = [tf.raw_ops.ResourceApplyGradientDescent(var=v.handle, alpha=rate, delta=g)
               for v, g in zip(self.layer.weights, grads)]
    with tf.control_dependencies(updates):
      after = version.assign_add(1, read_value=True)
    if self._hold:
      after = _held(worker, learning_rate, after, self._hold)
    return loss, after - 1 - before

  def _steps(self, epoch: tf.Tensor, first_step: tf.Tensor, num_steps: tf.Tensor, learning_rate: tf.Tensor,
             origin: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Steps first_step .. first_step + num_steps - 1 of `epoch` (int32 scalars; learning_rate float32; origin int64,
    the version counter's value from which the layer's updates count, for the layer warm-up).

    Returns:
      (the sum of the steps' mean batch losses float32, int64 [num_steps] staleness of each step's update,
      int64 index of the worker that ran them).
    """
    worker = tf.distribute.coordinator.experimental_get_current_worker_index()
    started = self.counters.starts.assign_add(1, read_value=True)
    with tf.control_dependencies([started]):
      first_step = tf.identity(first_step)
    stop = first_step + num_steps

    def body(step, total, staleness):
      loss, stale = self._step(worker, epoch, step, learning_rate, origin)
      with tf.control_dependencies([stale]):
        following = step + 1
      return following, total + loss, staleness.write(step - first_step, stale)

    _, total, staleness = tf.while_loop(
        lambda step, *_: step < stop, body,
        (first_step, tf.constant(0.0), tf.TensorArray(tf.int64, size=num_steps)), parallel_iterations=1)
    return total, staleness.stack(), worker
