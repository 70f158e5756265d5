"""The layer warm-up (`--layer_warmup_epochs`), a setting of every program: layer n's pretraining rate rises
linearly over its own first steps.

With S steps per epoch and w = --layer_warmup_epochs, layer n (1-based) has W_n = round((n - 1) w S) warm-up steps,
and at its own step tau (0 at the first step the layer trains, counted over its epochs; for asynchronous SGD the
updates applied to the layer so far) its rate is

  rate x min(1, (tau + 1) / W_n)        (the rate itself when W_n = 0: layer 1 always, and every layer when w = 0).

w is in epochs of the data whatever the run's length. The layers warm up in order, as decoupled greedy learning does
after each rate drop (Belilovsky et al. 2020, "Decoupled Greedy Learning of CNNs", section 4). Each program defines
tau on the layer's own steps, so the equivalences between the programs hold with a warm-up on (docs/design.md).
When W_n = 0 the rate is passed through untouched, so the default (w = 0) gives the weights of a run without the
setting exactly.
"""

from typing import Union

import tensorflow as tf


def warmup_steps(layer: int, warmup_epochs: float, steps_per_epoch: int) -> int:
  """W of 0-based `layer`: round(layer x `warmup_epochs` x `steps_per_epoch`) steps (0: no warm-up)."""
  return int(round(layer * warmup_epochs * steps_per_epoch))


def multiplier(tau: int, steps: int) -> float:
  """The rate multiplier min(1, (tau + 1) / W) at the layer's own step `tau` (Python; 1.0 when `steps` W is 0)."""
  return min(1.0, (tau + 1) / steps) if steps else 1.0


def multiplier_tensor(tau: tf.Tensor, steps: int) -> tf.Tensor:
  """`multiplier` in graph code: float32 scalar of the layer's own step `tau` (an int or float scalar tensor)."""
  if not steps:
    return tf.constant(1.0)
  return tf.minimum(1.0, (tf.cast(tau, tf.float32) + 1.0) / float(steps))


def scaled_rate(learning_rate: tf.Tensor, tau: Union[tf.Tensor, int], steps: int) -> tf.Tensor:
  """float32 scalar: `learning_rate` x `multiplier_tensor(tau, steps)`, or `learning_rate` itself (the same tensor,
  no op added) when `steps` is 0."""
  return learning_rate * multiplier_tensor(tau, steps) if steps else learning_rate
