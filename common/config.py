"""The training configuration shared by every program, and the one set of rules that validates it.

The absl flags of `common.flags` are checked with `check()` before any work starts, and libraries
validate the `Config` they are given with the same rules, so a test or an experiment that builds a
`Config` directly gets the same one-line errors as the command line.
"""

import dataclasses
import datetime
import math
from typing import Any, Mapping, Optional, Tuple

from common import programs
from common import provenance

MNIST_TRAIN_EXAMPLES = 55_000
# More logical CPU devices than this only oversubscribes the cores further.
MAX_LOGICAL_CPU_DEVICES = 64
# More epochs than this is a typo (the report trains 30 to 60); the epoch also keys the int32 corruption seeds.
MAX_EPOCHS = 100_000

# Config fields that do not change the mathematics of a run: they may differ when a run resumes.
NON_TRAINING_FIELDS = frozenset({
    "data_dir", "model_dir", "results_dir", "run_name", "export_weights", "profile_dir",
    "show_progress", "heldout_every_epoch", "tensorboard_dir", "thread_pool",
})
# A program's own Config field that does not change the mathematics either:
# `name: float = dataclasses.field(default=..., metadata=NOT_TRAINING)`.
NOT_TRAINING = {"training": False}
# Kernel paths of the pretraining steps (`common.autoencoder.KERNEL_PATHS`), or "auto": the program's own
# default (docs/kernels_and_threads.md says which and why).
KERNELS = ("auto", "xla", "tf")
# The intra-op pool of logical CPU devices (`common.devices.THREAD_POOLS`), or "auto": the program's default.
THREAD_POOLS = ("auto", "per_device", "shared")


@dataclasses.dataclass(frozen=True)
class Config:
  """Every setting of a training run; field names and meanings match the command-line flags.

  Defaults mirror the report's original implementation: four hidden layers of 2000 sigmoid units,
  masking corruption 0.5, SGD with learning rate 1e-4 for pretraining and 0.1 for finetuning, batch 100.
  """
  strategy: str = programs.GREEDY.name
  hidden_units: Tuple[int, ...] = (2000, 2000, 2000, 2000)
  pretrain_epochs: int = 30
  finetune_epochs: int = 30
  batch_size: int = 100  # global batch: all devices together
  finetune_batch_size: Optional[int] = None  # None: same as batch_size
  num_devices: int = 1
  threads_per_device: int = 1
  corruption: float = 0.5
  pretrain_learning_rate: float = 1e-4
  finetune_learning_rate: float = 0.1
  train_examples: int = MNIST_TRAIN_EXAMPLES
  seed: int = 0
  data_dir: Optional[str] = None
  model_dir: Optional[str] = None
  results_dir: Optional[str] = None
  run_name: Optional[str] = None
  export_weights: Optional[str] = None
  profile_dir: Optional[str] = None
  show_progress: bool = False  # a progress bar on stderr (the programs turn it on for a terminal)
  precision: str = programs.PRECISIONS[0]  # of the matrix products: "float32" or "mixed_bfloat16"
  kernels: str = "auto"  # kernel path of the pretraining steps: "xla", "tf", or the program's default
  thread_pool: str = "auto"  # intra-op pool of logical CPU devices: "per_device", "shared", or the default
  heldout_every_epoch: bool = False  # evaluate the held-out reconstruction after every layer-epoch
  tensorboard_dir: Optional[str] = None  # write TensorBoard scalars under <tensorboard_dir>/<run name>

  def __post_init__(self):
    object.__setattr__(self, "hidden_units", tuple(int(u) for u in self.hidden_units))
    check(dataclasses.asdict(self))

  @property
  def effective_finetune_batch_size(self) -> int:
    """The finetuning global batch: `finetune_batch_size`, or `batch_size` when that is None."""
    return self.finetune_batch_size or self.batch_size

  @property
  def effective_run_name(self) -> str:
    """`run_name`, or `<strategy>_<UTC timestamp>` when it is None."""
    if self.run_name:
      return self.run_name
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{self.strategy}_{stamp}"

  def kernel_path(self, program_default: str) -> str:
    """The kernel path of the pretraining steps: `kernels`, or `program_default` when it is "auto"."""
    return program_default if self.kernels == "auto" else self.kernels

  def thread_pool_setting(self, program_default: str) -> str:
    """The intra-op pool setting: `thread_pool`, or `program_default` when it is "auto"."""
    return program_default if self.thread_pool == "auto" else self.thread_pool

  def to_dict(self) -> dict:
    """All fields as JSON-ready values (tuples become lists)."""
    d = dataclasses.asdict(self)
    d["hidden_units"] = list(self.hidden_units)
    return d

  def training_fingerprint(self) -> dict:
    """The fields that must match for a checkpoint to be resumed by this configuration: all but
    `NON_TRAINING_FIELDS` and a subclass's fields declared with `NOT_TRAINING` metadata."""
    own = {f.name for f in dataclasses.fields(self) if f.metadata.get("training", True) is False}
    return {k: v for k, v in self.to_dict().items() if k not in NON_TRAINING_FIELDS | own}


def _positive_int(name: str, value: Any) -> None:
  if isinstance(value, bool) or not isinstance(value, int) or value < 1:
    raise ValueError(f"--{name} must be a positive integer, got {value!r}.")


def check(values: Mapping[str, Any]) -> None:
  """Validates configuration values (a `Config` as a dict, or parsed flag values).

  Args:
    values: mapping from field/flag name to value; names that are absent are not checked.

  Raises:
    ValueError: with a one-line message naming the flag, for the first bad value found.
  """
  if "hidden_units" in values:
    units = values["hidden_units"]
    if not units:
      raise ValueError("--hidden_units must list at least one layer size, e.g. 2000,2000.")
    for u in units:
      try:
        u = int(u)
      except (TypeError, ValueError):
        raise ValueError(f"--hidden_units must be positive integers separated by commas, got {u!r}.") from None
      if u < 1:
        raise ValueError(f"--hidden_units must be positive integers, got {u}.")
  for name in ("pretrain_epochs", "batch_size", "num_devices", "threads_per_device", "train_examples"):
    if name in values:
      _positive_int(name, values[name])
  if values.get("finetune_batch_size") is not None:
    _positive_int("finetune_batch_size", values["finetune_batch_size"])
  if "finetune_epochs" in values:
    v = values["finetune_epochs"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
      raise ValueError(f"--finetune_epochs must be a non-negative integer (0 skips finetuning), got {v!r}.")
  for name in ("pretrain_epochs", "finetune_epochs"):
    if isinstance(values.get(name), int) and values[name] > MAX_EPOCHS:
      raise ValueError(f"--{name} must be at most {MAX_EPOCHS:,}, got {values[name]}.")
  if "seed" in values:
    v = values["seed"]
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**31:
      raise ValueError(f"--seed must be an integer in [0, 2^31), got {v!r}.")
  if "corruption" in values:
    v = values["corruption"]
    if not 0.0 <= v < 1.0:
      raise ValueError(f"--corruption must be in [0, 1) (the fraction of pixels masked), got {v}.")
  if "thread_pool" in values and values["thread_pool"] not in THREAD_POOLS:
    raise ValueError(f"--thread_pool must be one of {', '.join(THREAD_POOLS)}, got {values['thread_pool']!r}.")
  if "precision" in values and values["precision"] not in programs.PRECISIONS:
    raise ValueError(f"--precision must be one of {', '.join(programs.PRECISIONS)}, got {values['precision']!r}.")
  if "kernels" in values and values["kernels"] not in KERNELS:
    raise ValueError(f"--kernels must be one of {', '.join(KERNELS)}, got {values['kernels']!r}.")
  for name in ("pretrain_learning_rate", "finetune_learning_rate"):
    if name in values and not values[name] > 0:
      raise ValueError(f"--{name} must be positive, got {values[name]}.")
  if "benchmark_slow_worker_delay_seconds" in values:  # data_parallel's and async_data_parallel's straggler
    v = values["benchmark_slow_worker_delay_seconds"]
    if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 3600):
      raise ValueError(f"--benchmark_slow_worker_delay_seconds must be in [0, 3600] seconds, got {v!r}.")
  n = values.get("train_examples")
  if n is not None and not 1 <= n <= MNIST_TRAIN_EXAMPLES:
    raise ValueError(f"--train_examples must be in 1..{MNIST_TRAIN_EXAMPLES}, got {n}.")
  n = n or MNIST_TRAIN_EXAMPLES
  for name in ("batch_size", "finetune_batch_size"):
    b = values.get(name)
    if b is not None and b > n:
      raise ValueError(f"--{name}={b} is larger than the training data ({n} examples).")
  g = values.get("num_devices")
  if g is not None and g > MAX_LOGICAL_CPU_DEVICES:
    raise ValueError(f"--num_devices must be at most {MAX_LOGICAL_CPU_DEVICES}, got {g}.")


def check_threads(threads_per_device: int, cores: Optional[int] = None) -> None:
  """Raises ValueError when `threads_per_device` exceeds the cores this process may use.

  More threads than cores in one device cannot run at once; a very large count only grows memory (each
  thread has a stack). Devices x threads beyond the cores stays allowed (`common.devices.oversubscription`).
  """
  cores = cores or provenance.usable_cores()
  if threads_per_device > cores:
    raise ValueError(f"--threads_per_device must be at most {cores} (the cores this process may use), "
                     f"got {threads_per_device}.")


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
