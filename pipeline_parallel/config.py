"""The pipeline_parallel configuration: the shared `Config` plus the chunk size and the replicas per stage."""

import dataclasses
import os
from typing import Any, Mapping

from common.settings import config as config_lib

# Steps per chunk, K: the fastest of 1..32 at the default batch (100) in the sweep of docs/pipeline_parallel.md,
# "Speed" (at batch 1000, K = 1 was fastest). A smaller K shortens
# the fill and drain (P - 1 chunks each) and the in-flight activations ([K x batch, units] per stage
# boundary); a larger K means fewer ticks, each of which waits for its slowest stage and costs a call.
DEFAULT_CHUNK_STEPS = 4


def check_devices(devices: int, replicas_per_stage: int) -> None:
  """Raises ValueError (one line) unless the devices are a multiple of the replicas per stage."""
  r = replicas_per_stage
  if devices % r:
    raise ValueError(f"{devices} device(s) are not a multiple of --replicas_per_stage={r}: every stage needs {r} "
                     f"devices (--num_devices, times the workers when started by common.launch); use "
                     f"--num_devices={r * max(1, devices // r)}.")

def _replicas_split_evenly(values: Mapping[str, Any]) -> None:
  """Refuses a batch or a device count that is not a multiple of the replicas per stage (one line)."""
  r = values.get("replicas_per_stage")
  if isinstance(r, bool) or not isinstance(r, int) or r < 1:
    return  # Its own check reports it.
  b = values.get("batch_size")
  if isinstance(b, int) and b >= 1 and b % r:
    raise ValueError(f"--batch_size={b} is not divisible by --replicas_per_stage={r}: each replica takes an equal "
                     f"share of every batch; use e.g. --batch_size={b - b % r or r}.")
  # In a cluster the devices are the workers' (num_devices each): `check_devices` checks them once known.
  g = values.get("num_devices")
  if isinstance(g, int) and g >= 1 and not os.environ.get("TF_CONFIG"):
    check_devices(g, r)

@dataclasses.dataclass(frozen=True)
class PipelineConfig(config_lib.Config):
  """`Config` plus the pipeline's own settings; the weights depend on neither."""
  TOGETHER = config_lib.Config.TOGETHER + ("replicas_per_stage", "num_devices")
  RULES = (_replicas_split_evenly,)

  pipeline_chunk_steps: int = config_lib.setting(
      DEFAULT_CHUNK_STEPS, "Steps each stage trains between two exchanges of activations with the neighbouring stages "
      "(K, clamped to the steps of one epoch); smaller shortens the pipeline fill, larger means fewer exchanges; the "
      "weights do not depend on it (the sweep over K: docs/pipeline_parallel.md, 'Speed').",
      check=config_lib.counts("steps per chunk"))
  replicas_per_stage: int = config_lib.setting(
      1, "Devices per stage, R: each stage is replicated on R devices that split every batch and all-reduce their "
      "gradients (pipeline x data parallelism), on P = min(devices / R, layers) stages; --num_devices and "
      "--batch_size must be multiples of R; the weights do not depend on it (docs/pipeline_parallel.md).",
      check=config_lib.counts("devices per stage"))
