"""The data-parallel configuration: the shared `Config` plus the large-batch recipe and the op profile.

The large-batch recipe (`--recipe=large_batch`, `common.settings.recipes`; off by default, so the report's recipe stays
reproducible) follows Goyal et
al. 2017, "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour": when the global batch B is k
times the reference batch (100, the report's), multiply the learning rate by k (linear scaling rule,
their section 2.1) or by sqrt(k) (Krizhevsky 2014, "One weird trick for parallelizing convolutional
neural networks", section 5), and reach that rate by a gradual warm-up that starts at the reference
rate and grows linearly, step by step, over the first `lr_warmup_epochs` epochs (Goyal et al. section 2.2).
Finetuning may also use SGD with momentum m (`--finetune_momentum`, Goyal et al. section 2.1 use 0.9):
its effective step is lr / (1 - m), so the warm-up then starts at the reference rate * (1 - m). Or Adam
(`--finetune_optimizer=adam`, Kingma & Ba 2015), whose rate is then the one given for the reference batch
(e.g. 4e-4), scaled by the square root of k (the scaling rule for adaptive methods of Malladi et al. 2022,
"On the SDEs and Scaling Rules for Adaptive Gradient Algorithms") and warmed up the same way.
"""

import dataclasses
import math
from typing import Any, Mapping

from common.settings import checks
from common.settings import config as config_lib

SCALINGS = ("none", "linear", "sqrt")
OPTIMIZERS = ("sgd", "adam")


# The phases of the op profile of layer 1 (`data_parallel.profile`), in the order of its record.
PROFILE_PHASES = ("input", "forward_loss", "gradients", "allreduce", "apply")



def _warmup(name: str, value: Any) -> None:
  if not value >= 0:
    raise ValueError(f"--{name} must be >= 0, got {value}.")


def _momentum(name: str, value: Any) -> None:
  if not 0 <= value < 1:
    raise ValueError(f"--{name} must be in [0, 1), got {value}.")


def _adam_without_momentum(values: Mapping[str, Any]) -> None:
  """Refuses --finetune_momentum with Adam (one line)."""
  if values.get("finetune_optimizer") == "adam" and values.get("finetune_momentum"):
    raise ValueError("--finetune_momentum applies to --finetune_optimizer=sgd only, not to adam.")

def _batches_split_evenly(values: Mapping[str, Any]) -> None:
  """Refuses a global batch that the replicas cannot split evenly (one line)."""
  g = values.get("num_devices")
  if isinstance(g, int) and 1 <= g <= config_lib.MAX_LOGICAL_CPU_DEVICES:  # Other values: the shared check.
    for name in ("batch_size", "finetune_batch_size"):
      b = values.get(name)
      if isinstance(b, int) and b >= 1:
        checks.check_divisible(b, g, name)

@dataclasses.dataclass(frozen=True)
class DataParallelConfig(config_lib.Config):
  """`Config` plus the data-parallel program's own settings (module docstring: the large-batch recipe; the op
  profile of layer 1, `data_parallel.profile`; the benchmark-only straggler, `common.measure.timing.straggle`)."""
  TOGETHER = config_lib.Config.TOGETHER + ("num_devices", "finetune_optimizer", "finetune_momentum")
  RULES = (_adam_without_momentum, _batches_split_evenly)

  pretrain_lr_scaling: str = config_lib.setting(
      "none", "Multiply --pretrain_learning_rate by k (linear) or sqrt(k) (sqrt), k = batch / --reference_batch_size.",
      choices=SCALINGS, recipe=True)
  finetune_lr_scaling: str = config_lib.setting(
      "none", "The same for --finetune_learning_rate, with k from the finetuning batch.", choices=SCALINGS,
      recipe=True)
  reference_batch_size: int = config_lib.setting(
      100, "The batch the given learning rates are tuned for (the report's 100).", check=checks.positive_int)
  lr_warmup_epochs: float = config_lib.setting(
      0.0, "Epochs of the rate warm-up: linear from the given to the scaled learning rate, per layer and for "
      "finetuning (Goyal et al. 2017, section 2.2; not the layer warm-up, --layer_warmup_epochs).",
      check=_warmup, recipe=True, old_names=("warmup_epochs",))
  finetune_momentum: float = config_lib.setting(
      0.0, "Momentum of finetuning's SGD, in [0, 1) (0: plain SGD as in the report).", check=_momentum, recipe=True)
  finetune_optimizer: str = config_lib.setting(
      "sgd", "Finetuning's update rule: sgd (plain, or with --finetune_momentum) or adam (Kingma and Ba 2015).",
      choices=OPTIMIZERS, recipe=True)
  profile_steps: int = config_lib.setting(
      20, "Steps timed per phase in the op profile of layer 1 (0: no profile).", check=checks.non_negative_int(" (0: no op profile)"),
      training=False)
  profile_repeats: int = config_lib.setting(
      3, "Timed repetitions of each phase of the op profile.", check=checks.positive_int, training=False)
  benchmark_slow_worker_delay_seconds: float = config_lib.slow_worker_delay()

  def pretrain_learning_rate_after_warmup(self) -> float:
    """The pretraining learning rate reached after the warm-up (the given one when not scaled)."""
    return self.pretrain_learning_rate * scale(self.pretrain_lr_scaling, self.batch_size, self.reference_batch_size)

  def finetune_learning_rate_after_warmup(self) -> float:
    """The finetuning learning rate reached after the warm-up (the given one when not scaled)."""
    return self.finetune_learning_rate * scale(self.finetune_lr_scaling, self.effective_finetune_batch_size,
                                               self.reference_batch_size)

  def finetune_update_rule(self) -> "optimizers.UpdateRule":
    """Finetuning's update rule: Adam, SGD with momentum, or plain SGD."""
    from common.model import optimizers  # imports TensorFlow: not while the flags are parsed
    if self.finetune_optimizer == "adam":
      return optimizers.UpdateRule("adam")
    return optimizers.UpdateRule("momentum", self.finetune_momentum) if self.finetune_momentum else optimizers.SGD

  def finetune_warmup_factor(self) -> float:
    """Effective finetuning step after the warm-up over the reference one, lr / (1 - momentum) over the
    given rate: the warm-up multiplier starts at its inverse."""
    return self.finetune_learning_rate_after_warmup() / (self.finetune_learning_rate * (1 - self.finetune_momentum))


def scale(scaling: str, batch_size: int, reference_batch_size: int) -> float:
  """The learning-rate factor for `batch_size`: 1, k or sqrt(k) with k = batch_size / reference_batch_size."""
  k = batch_size / reference_batch_size
  return {"none": 1.0, "linear": k, "sqrt": math.sqrt(k)}[scaling]


def lr_warmup(factor: float, warmup_epochs: float, steps_per_epoch: int):
  """The warm-up as a function of the step index (int32 scalar tensor, counted from the start) giving the
  float32 multiplier of the scaled learning rate: 1/factor at step 0 growing linearly to 1 after
  `warmup_epochs` epochs (Goyal et al. 2017, section 2.2), then 1. Returns None when there is no warm-up.

  Args:
    factor: scaled / given learning rate (>= 1 grows; <= 1 would shrink, which no recipe here does).
    warmup_epochs: length of the warm-up in epochs (may be fractional).
    steps_per_epoch: steps of one epoch.
  """
  warmup_steps = warmup_epochs * steps_per_epoch
  if warmup_steps <= 0 or factor == 1.0:
    return None
  start = 1.0 / factor

  import tensorflow as tf  # not while the flags are parsed

  def multiplier(step: tf.Tensor) -> tf.Tensor:
    progress = tf.minimum(tf.cast(step, tf.float32) / warmup_steps, 1.0)
    return start + (1.0 - start) * progress

  return multiplier
