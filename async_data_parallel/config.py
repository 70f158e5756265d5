"""The async_data_parallel configuration: the shared `Config` plus the size of a scheduled function, the
staleness-aware learning rate, the wait for lost workers, and the benchmark-only straggler."""

import dataclasses
from typing import Any, Mapping

from common.settings import checks
from common.settings import config as config_lib

# Steps per scheduled function, K (at most a worker's share of an epoch: larger values run as that share). Every
# function costs the coordinator a dispatch on its Python thread and the worker a round trip; a larger K amortises
# them but makes the last functions of an epoch longer. The fastest by median of the async_functions benchmark
# (batch 100, 4 x 1000 units, 2 workers; docs/async_data_parallel.md, "Steps per function"): 1.61x K = 1, its
# spread overlapping K = 8's (1.45x) but apart from K = 1's and 4's.
DEFAULT_STEPS_PER_FUNCTION = 32
DEFAULT_WORKER_RECOVERY_SECONDS = 60.0


def _tf_kernels_only(values: Mapping[str, Any]) -> None:
  """Refuses --kernels=xla in one line: the asynchronous steps run TensorFlow's kernels only."""
  if values.get("kernels") == "xla":
    raise ValueError("--kernels=xla: async_data_parallel runs TensorFlow's default kernels only (XLA cannot compile "
                     "a step that reads the per-worker copies of the images and frozen layers); use --kernels=tf or "
                     "auto.")

@dataclasses.dataclass(frozen=True)
class AsyncConfig(config_lib.Config):
  """`Config` plus the asynchronous program's own settings (staleness-aware rate: Zhang et al. 2016,
  "Staleness-aware async-SGD for distributed deep learning", section 3)."""
  TOGETHER = config_lib.Config.TOGETHER + ("kernels",)
  RULES = (_tf_kernels_only,)

  steps_per_function: int = config_lib.setting(
      DEFAULT_STEPS_PER_FUNCTION, "SGD steps in each function the coordinator schedules on a free worker (K); larger "
      "amortises the dispatch, smaller balances the workers' last functions of an epoch (docs/async_data_parallel.md).",
      check=checks.counts("SGD steps per scheduled function"))
  staleness_aware_lr: bool = config_lib.setting(
      False, "Divide each update's learning rate by its staleness + 1 (Zhang et al. 2016, staleness-aware async-SGD).")
  worker_recovery_seconds: float = config_lib.setting(
      DEFAULT_WORKER_RECOVERY_SECONDS, "End the run with an error once no worker has accepted a connection for this "
      "many seconds (a lost worker's functions run on the others meanwhile; TensorFlow alone would wait an hour).",
      check=checks.number_in(0, float("inf"), "a positive number of seconds", low_open=True), training=False)
  benchmark_slow_worker_delay_seconds: float = config_lib.slow_worker_delay()
  ps: int = config_lib.setting(
      1, "Parameter-server tasks under Slurm (srun -n K: task 0 is the chief, the next --ps tasks hold the variables, "
      "the rest are workers; docs/multi_host.md); ignored with TF_CONFIG, whose cluster says, and in one process.",
      check=checks.counts("parameter-server tasks under Slurm"), training=False)
