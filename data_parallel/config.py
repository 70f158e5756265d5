"""The data-parallel configuration: the shared `Config` plus the large-batch recipe and the op profile.

The large-batch recipe (off by default, so the report's recipe stays reproducible) follows Goyal et
al. 2017, "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour": when the global batch B is k
times the reference batch (100, the report's), multiply the learning rate by k (linear scaling rule,
their section 2.1) or by sqrt(k) (Krizhevsky 2014, "One weird trick for parallelizing convolutional
neural networks", section 5), and reach that rate by a gradual warm-up that starts at the reference
rate and grows linearly, step by step, over the first `warmup_epochs` epochs (Goyal et al. section 2.2).
Finetuning may also use SGD with momentum m (`--finetune_momentum`, Goyal et al. section 2.1 use 0.9):
its effective step is lr / (1 - m), so the warm-up then starts at the reference rate * (1 - m). Or Adam
(`--finetune_optimizer=adam`, Kingma & Ba 2015), whose rate is then the one given for the reference batch
(e.g. 4e-4), scaled by the square root of k (the scaling rule for adaptive methods of Malladi et al. 2022,
"On the SDEs and Scaling Rules for Adaptive Gradient Algorithms") and warmed up the same way.
"""

import dataclasses
import math
from typing import Any, Mapping

from common import config as config_lib
from common import programs

SCALINGS = ("none", "linear", "sqrt")
OPTIMIZERS = ("sgd", "adam")

# The large-batch recipe, chosen by measurement (docs/data_parallel.md; results/large_batch/): the
# pretraining learning rate scaled linearly with the batch, finetuning with Adam at 4e-4 for the reference
# batch scaled by the square root, both reached by a linear warm-up over 2 epochs.
LARGE_BATCH_RECIPE = ("--pretrain_lr_scaling=linear", "--finetune_optimizer=adam", "--finetune_learning_rate=0.0004",
                      "--finetune_lr_scaling=sqrt", "--warmup_epochs=2")

# The phases of the op profile of layer 1 (`data_parallel.profile`), in the order of its record.
PROFILE_PHASES = ("input", "forward_loss", "gradients", "allreduce", "apply")



@dataclasses.dataclass(frozen=True)
class DataParallelConfig(config_lib.Config):
  """`Config` plus the data-parallel program's own flags (same names).

  Attributes:
    pretrain_lr_scaling: "none", "linear" or "sqrt": how the pretraining learning rate grows with
      batch_size / reference_batch_size.
    finetune_lr_scaling: the same for the finetuning learning rate and the finetuning batch.
    reference_batch_size: the batch the given learning rates are meant for.
    warmup_epochs: epochs of linear warm-up from the given to the scaled learning rate, at the start of
      every layer's pretraining and of finetuning (0: none).
    finetune_momentum: momentum of finetuning's SGD in [0, 1) (0: plain SGD, the report's).
    finetune_optimizer: "sgd" (plain or with momentum) or "adam".
    profile_steps: steps timed per phase in the op profile of layer 1 (0: no profile).
    profile_repeats: timed repetitions of each phase of the op profile.
    benchmark_slow_worker_delay_seconds: benchmark-only: replica 0 sleeps this long in every step between its
      gradient and the all-reduce (a straggler that every replica waits for; `common.timing.straggle`).
  """
  strategy: str = programs.DATA_PARALLEL.name
  pretrain_lr_scaling: str = "none"
  finetune_lr_scaling: str = "none"
  reference_batch_size: int = 100
  warmup_epochs: float = 0.0
  finetune_momentum: float = 0.0
  finetune_optimizer: str = "sgd"
  # Settings that do not change the mathematics (a resumed run may change them).
  profile_steps: int = dataclasses.field(default=20, metadata=config_lib.NOT_TRAINING)
  profile_repeats: int = dataclasses.field(default=3, metadata=config_lib.NOT_TRAINING)
  benchmark_slow_worker_delay_seconds: float = dataclasses.field(default=0.0, metadata=config_lib.NOT_TRAINING)

  def __post_init__(self):
    super().__post_init__()
    check(dataclasses.asdict(self))

  def pretrain_learning_rate_after_warmup(self) -> float:
    """The pretraining learning rate reached after the warm-up (the given one when not scaled)."""
    return self.pretrain_learning_rate * scale(self.pretrain_lr_scaling, self.batch_size, self.reference_batch_size)

  def finetune_learning_rate_after_warmup(self) -> float:
    """The finetuning learning rate reached after the warm-up (the given one when not scaled)."""
    return self.finetune_learning_rate * scale(self.finetune_lr_scaling, self.effective_finetune_batch_size,
                                               self.reference_batch_size)

  def finetune_update_rule(self) -> "optimizers.UpdateRule":
    """Finetuning's update rule: Adam, SGD with momentum, or plain SGD."""
    from common import optimizers  # imports TensorFlow: not while the flags are parsed
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


def check(values: Mapping[str, Any]) -> None:
  """Validates the data-parallel fields (and that each global batch splits evenly over the replicas).

  Raises:
    ValueError: one line naming the flag.
  """
  for name in ("pretrain_lr_scaling", "finetune_lr_scaling"):
    if name in values and values[name] not in SCALINGS:
      raise ValueError(f"--{name} must be one of {', '.join(SCALINGS)}, got {values[name]!r}.")
  if "reference_batch_size" in values:
    v = values["reference_batch_size"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"--reference_batch_size must be a positive integer, got {v!r}.")
  if "warmup_epochs" in values and not values["warmup_epochs"] >= 0:
    raise ValueError(f"--warmup_epochs must be >= 0, got {values['warmup_epochs']}.")
  if "finetune_momentum" in values and not 0 <= values["finetune_momentum"] < 1:
    raise ValueError(f"--finetune_momentum must be in [0, 1), got {values['finetune_momentum']}.")
  if "finetune_optimizer" in values:
    if values["finetune_optimizer"] not in OPTIMIZERS:
      raise ValueError(f"--finetune_optimizer must be one of {', '.join(OPTIMIZERS)}, "
                       f"got {values['finetune_optimizer']!r}.")
    if values["finetune_optimizer"] == "adam" and values.get("finetune_momentum"):
      raise ValueError("--finetune_momentum applies to --finetune_optimizer=sgd only, not to adam.")
  if "profile_steps" in values:
    v = values["profile_steps"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
      raise ValueError(f"--profile_steps must be a non-negative integer (0: no op profile), got {v!r}.")
  if "profile_repeats" in values:
    v = values["profile_repeats"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"--profile_repeats must be a positive integer, got {v!r}.")
  g = values.get("num_devices")
  if isinstance(g, int) and 1 <= g <= config_lib.MAX_LOGICAL_CPU_DEVICES:  # Other values: the shared check.
    for name in ("batch_size", "finetune_batch_size"):
      b = values.get(name)
      if isinstance(b, int) and b >= 1:
        config_lib.check_divisible(b, g, name)
