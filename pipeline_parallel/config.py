"""The pipeline_parallel configuration: the shared `Config` plus the chunk size of the pipeline."""

import dataclasses
import os
from typing import Any, Mapping

from common import config as config_lib
from common import programs

# Steps per chunk, K: the fastest of 1..32 at the default batch (100) in the sweep of docs/pipeline_parallel.md,
# "Speed" (at batch 1000, K = 1 was fastest). A smaller K shortens
# the fill and drain (P - 1 chunks each) and the in-flight activations ([K x batch, units] per stage
# boundary); a larger K means fewer ticks, each of which waits for its slowest stage and costs a call.
DEFAULT_CHUNK_STEPS = 4


@dataclasses.dataclass(frozen=True)
class PipelineConfig(config_lib.Config):
  """`Config` plus the pipeline's own fields.

  Attributes:
    pipeline_chunk_steps: K, the steps a stage trains between two exchanges of activations with its neighbours
      (clamped to the steps of one epoch). The weights do not depend on it.
    replicas_per_stage: R, the devices each stage is replicated on, splitting every batch (num_devices and the
      batch must be multiples of R). The weights do not depend on it.
  """
  strategy: str = programs.PIPELINE_PARALLEL.name
  pipeline_chunk_steps: int = DEFAULT_CHUNK_STEPS
  replicas_per_stage: int = 1

  def __post_init__(self):
    super().__post_init__()
    check(dataclasses.asdict(self))


def check(values: Mapping[str, Any]) -> None:
  """Validates the pipeline's own fields.

  Raises:
    ValueError: one line naming the flag.
  """
  if "pipeline_chunk_steps" in values:
    v = values["pipeline_chunk_steps"]
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
      raise ValueError(f"--pipeline_chunk_steps must be a positive integer (steps per chunk), got {v!r}.")
  r = values.get("replicas_per_stage")
  if r is None:
    return
  if isinstance(r, bool) or not isinstance(r, int) or r < 1:
    raise ValueError(f"--replicas_per_stage must be a positive integer (devices per stage), got {r!r}.")
  b = values.get("batch_size")
  if isinstance(b, int) and b >= 1 and b % r:
    raise ValueError(f"--batch_size={b} is not divisible by --replicas_per_stage={r}: each replica takes an equal "
                     f"share of every batch; use e.g. --batch_size={b - b % r or r}.")
  # In a cluster the devices are the workers' (num_devices each): `check_devices` checks them once known.
  g = values.get("num_devices")
  if isinstance(g, int) and g >= 1 and not os.environ.get("TF_CONFIG"):
    check_devices(g, r)


def check_devices(devices: int, replicas_per_stage: int) -> None:
  """Raises ValueError (one line) unless the devices are a multiple of the replicas per stage."""
  r = replicas_per_stage
  if devices % r:
    raise ValueError(f"{devices} device(s) are not a multiple of --replicas_per_stage={r}: every stage needs {r} "
                     f"devices (--num_devices, times the workers when started by common.launch); use "
                     f"--num_devices={r * max(1, devices // r)}.")
