"""The async_data_parallel configuration: the shared `Config` plus the size of a scheduled function, the
staleness-aware learning rate, the wait for lost workers, and the benchmark-only straggler."""

import dataclasses
import math
from typing import Any, Mapping

from common import config as config_lib
from common import programs

# Steps per scheduled function, K. Every function costs the coordinator a dispatch on its Python thread and the
# worker a round trip; a larger K amortises them but makes the last functions of an epoch (whatever work is left
# when one worker is done) longer. Chosen by a short sanity comparison (docs/async_data_parallel.md, "Steps per
# function"): 1 function per step was much slower, and 8 about as fast as 16 or 32 at batch 100.
DEFAULT_STEPS_PER_FUNCTION = 8
DEFAULT_WORKER_RECOVERY_SECONDS = 60.0


@dataclasses.dataclass(frozen=True)
class AsyncConfig(config_lib.Config):
  """`Config` plus the asynchronous program's own flags (same names).

  Attributes:
    steps_per_function: K, the SGD steps of one function the coordinator schedules on a free worker.
    staleness_aware_lr: divide each update's learning rate by its staleness + 1 (Zhang et al. 2016,
      "Staleness-aware async-SGD for distributed deep learning", section 3).
    worker_recovery_seconds: how long the run waits while no worker is alive before it ends with an error.
    benchmark_slow_worker_delay_seconds: benchmark-only: worker 0 sleeps this long in every step, between
      computing its gradient and applying it (a straggler); 0 for none.
  """
  strategy: str = programs.ASYNC_DATA_PARALLEL.name
  steps_per_function: int = DEFAULT_STEPS_PER_FUNCTION
  staleness_aware_lr: bool = False
  # Does not change the mathematics: a resumed run may change it.
  worker_recovery_seconds: float = dataclasses.field(default=DEFAULT_WORKER_RECOVERY_SECONDS,
                                                     metadata=config_lib.NOT_TRAINING)
  benchmark_slow_worker_delay_seconds: float = 0.0

  def __post_init__(self):
    super().__post_init__()
    check(self.to_dict())  # A Config built directly is refused as the flags are.


def check(values: Mapping[str, Any]) -> None:
  """Raises ValueError, one line naming the flag, for a bad value of the program's own fields in `values`
  ({field or flag name: value}; absent names are not checked), or --kernels=xla."""
  if values.get("kernels") == "xla":
    raise ValueError("--kernels=xla: async_data_parallel runs TensorFlow's default kernels only (XLA cannot compile "
                     "a step that reads the per-worker copies of the images and frozen layers); use --kernels=tf or "
                     "auto.")
  if "steps_per_function" in values:
    v = values["steps_per_function"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"--steps_per_function must be a positive integer (SGD steps per scheduled function), "
                       f"got {v!r}.")
  if "worker_recovery_seconds" in values:
    v = values["worker_recovery_seconds"]
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
      raise ValueError(f"--worker_recovery_seconds must be a positive number of seconds, got {v!r}.")

