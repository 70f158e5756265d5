"""Update rules: how a step's summed gradient changes the weights (plain SGD, SGD with momentum, Adam), applied
once per step after the all-reduce under any `tf.distribute` strategy, and the learning rate of a step under a
learning-rate warm-up.

Pretraining always uses plain SGD (the report's); momentum and Adam serve data-parallel finetuning at a large
global batch (docs/data_parallel.md).
"""

from typing import Callable, Optional, Sequence

import tensorflow as tf


class UpdateRule:
  """How a step's summed gradient changes the weights: plain SGD, SGD with momentum, or Adam.

  * "sgd": var -= lr * grad (TensorFlow's fused `ResourceApplyGradientDescent`).
  * "momentum": heavy ball (Polyak 1964) in the form of Sutskever et al. 2013 used by Goyal et al.
    2017, section 2.1: v = momentum * v + grad, var -= lr * v (`ResourceApplyMomentum`).
  * "adam": Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization", Algorithm 1, with the
    bias corrections of step t (`ResourceApplyAdam`).

  Args:
    name: "sgd", "momentum" or "adam".
    momentum: the momentum coefficient in [0, 1) ("momentum").
    beta_1, beta_2, epsilon: Adam's moment decay rates and the denominator's epsilon ("adam").

  Raises:
    ValueError: an unknown name or a momentum outside [0, 1).
  """

  NAMES = ("sgd", "momentum", "adam")

  def __init__(self, name: str = "sgd", momentum: float = 0.9, beta_1: float = 0.9, beta_2: float = 0.999,
               epsilon: float = 1e-7):
    if name not in self.NAMES:
      raise ValueError(f"unknown update rule {name!r}; one of {', '.join(self.NAMES)}")
    if name == "momentum" and not 0 <= momentum < 1:
      raise ValueError(f"momentum must be in [0, 1), got {momentum}")
    self.name, self.momentum, self.beta_1, self.beta_2, self.epsilon = name, momentum, beta_1, beta_2, epsilon

  @property
  def num_slots(self) -> int:
    """Slot variables per weight: 0 (sgd), 1 (velocity), 2 (Adam's first and second moments)."""
    return {"sgd": 0, "momentum": 1, "adam": 2}[self.name]

  def describe(self) -> dict:
    """The rule and its constants, for run records."""
    if self.name == "momentum":
      return {"name": self.name, "momentum": self.momentum}
    if self.name == "adam":
      return {"name": self.name, "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon}
    return {"name": self.name}

  def apply(self, var: tf.Variable, grad: tf.Tensor, learning_rate: tf.Tensor, slots: Sequence[tf.Variable],
            step_number: Optional[tf.Tensor] = None):
    """Updates one copy of `var` in place. `slots`: this rule's slot variables of `var` (same shape,
    zeros at the start); `step_number`: float32, 1 for the first step of training (Adam's t; None for
    the other rules)."""
    if self.name == "sgd":
      return tf.raw_ops.ResourceApplyGradientDescent(var=var.handle, alpha=learning_rate, delta=grad)
    if self.name == "momentum":
      return tf.raw_ops.ResourceApplyMomentum(var=var.handle, accum=slots[0].handle, lr=learning_rate, grad=grad,
                                              momentum=tf.constant(self.momentum, tf.float32))
    return tf.raw_ops.ResourceApplyAdam(
        var=var.handle, m=slots[0].handle, v=slots[1].handle, beta1_power=self.beta_1 ** step_number,
        beta2_power=self.beta_2 ** step_number, lr=learning_rate, beta1=tf.constant(self.beta_1, tf.float32),
        beta2=tf.constant(self.beta_2, tf.float32), epsilon=tf.constant(self.epsilon, tf.float32), grad=grad)


SGD = UpdateRule("sgd")


def apply_update(variables: Sequence[tf.Variable], gradients: Sequence[tf.Tensor], learning_rate: tf.Tensor,
              rule: UpdateRule = SGD, slots: Sequence[Sequence[tf.Variable]] = (),
              step_index: Optional[tf.Tensor] = None) -> None:
  """In replica context: sums `gradients` over replicas (all-reduce) and applies the update once.

  The update (`rule`, plain SGD by default) runs once per variable copy (one per replica device) by
  `strategy.extended.update`.

  Args:
    variables: the model's variables (MirroredVariables under a mirrored strategy).
    gradients: this replica's gradients, already divided by the global batch size.
    learning_rate: float32 scalar.
    rule: the update rule.
    slots: per variable, the rule's `num_slots` slot variables, created in the strategy's scope.
    step_index: int32 index of the step counted from 0 at the start of training (Adam's bias correction).
  """
  ctx = tf.distribute.get_replica_context()
  summed = ctx.all_reduce(tf.distribute.ReduceOp.SUM, list(gradients))
  step_number = None
  if rule.name == "adam":  # Only Adam's bias correction needs the step: nothing more per step for SGD.
    step_number = tf.cast((0 if step_index is None else step_index) + 1, tf.float32)
  ctx.merge_call(update_variables, args=(variables, summed, learning_rate, rule, slots, step_number))


def update_variables(strategy: tf.distribute.Strategy, variables: Sequence[tf.Variable], gradients,
                     learning_rate: tf.Tensor, rule: UpdateRule = SGD, slots: Sequence[Sequence[tf.Variable]] = (),
                     step_number: Optional[tf.Tensor] = None) -> None:
  """In cross-replica context (`merge_call`): the update of `apply_update` on every copy of every variable.

  Args:
    strategy: the strategy (passed by `merge_call`).
    variables: the variables.
    gradients: one (mirrored or per-replica) gradient per variable, the same shapes.
    learning_rate: float32 scalar (or one per replica, all equal).
    rule, slots: as in `apply_update`.
    step_number: float32, 1 for the first step (or one per replica, all equal); Adam only.
  """
  # Only what the rule reads goes to each replica's device: (grad, lr) for SGD, as on the hot path.
  step = () if step_number is None else (step_number,)

  def update(var, grad, lr, *rest):
    return rule.apply(var, grad, lr, rest[len(step):], rest[0] if step else None)

  for k, (var, grad) in enumerate(zip(variables, gradients)):
    strategy.extended.update(var, update, args=(grad, learning_rate) + step + tuple(slots[k] if rule.num_slots else ()))


def learning_rate_at(learning_rate: tf.Tensor, lr_multiplier: Optional[Callable[[tf.Tensor], tf.Tensor]],
                     step_index: tf.Tensor) -> tf.Tensor:
  """The learning rate of step `step_index` (int32, counted from the start of training): `learning_rate`
  times `lr_multiplier(step_index)` (the learning-rate warm-up), or `learning_rate` itself when
  `lr_multiplier` is None."""
  return learning_rate if lr_multiplier is None else learning_rate * lr_multiplier(step_index)
