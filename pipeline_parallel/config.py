"""The pipeline_parallel configuration: the shared `Config` (which holds the layer warm-up, a setting of every program)
plus the chunk size, the replicas per stage, and the schedule settings that address input drift
(docs/pipeline_parallel.md, "Schedules"): each one's default is the original pipeline, which trains every layer at
the constant rate from the first step to the last."""

import dataclasses
import os
from typing import Any, Mapping

from common.settings import checks
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

# The pretraining rate over each layer's steps (`common.pipeline.schedule`).
LR_SCHEDULES = ("constant", "cosine")


@dataclasses.dataclass(frozen=True)
class PipelineConfig(config_lib.Config):
  """`Config` plus the pipeline's own settings: the chunk size and the replicas per stage (the weights depend on
  neither), and the schedule settings (`common.pipeline.schedule`; each default is the original schedule)."""
  TOGETHER = config_lib.Config.TOGETHER + ("replicas_per_stage", "num_devices")
  RULES = (_replicas_split_evenly,)

  pipeline_chunk_steps: int = config_lib.setting(
      DEFAULT_CHUNK_STEPS, "Steps each stage trains between two exchanges of activations with the neighbouring stages "
      "(K, clamped to the steps of one epoch); smaller shortens the fill and drain, larger means fewer exchanges; the "
      "weights do not depend on it (the sweep over K: docs/pipeline_parallel.md, 'Speed').",
      check=checks.counts("steps per chunk"))
  replicas_per_stage: int = config_lib.setting(
      1, "Devices per stage, R: each stage is replicated on R devices that split every batch and all-reduce their "
      "gradients (pipeline x data parallelism), on P = min(devices / R, layers) stages; --num_devices and "
      "--batch_size must be multiples of R; the weights do not depend on it (docs/pipeline_parallel.md).",
      check=checks.counts("devices per stage"))
  pretrain_lr_schedule: str = config_lib.setting(
      LR_SCHEDULES[0], "The pretraining rate of each layer over its own steps: constant, or cosine (from "
      "--pretrain_learning_rate down to 0 at the layer's last step: Loshchilov and Hutter 2017, 'SGDR', without "
      "restarts), so that the layers below settle while the layers above still learn on them.",
      choices=LR_SCHEDULES, recipe=True)
  stagger_epochs: float = config_lib.setting(
      0.0, "Layer n starts (n - 1) x this many epochs after layer 1 and still trains --pretrain_epochs epochs: the run "
      "is (layers - 1) x this many epochs longer, and a layer that has finished only encodes for the layers above.",
      check=checks.number_in(0, 1000, "in [0, 1000] epochs"), recipe=True)
  polish_epochs: int = config_lib.setting(
      0, "After the pipelined steps, each layer n > 1 in turn, bottom first, trains this many more epochs on the "
      "final, frozen layers below it (greedy's step, at --pretrain_learning_rate, on the epochs after the pipelined "
      "ones).", check=checks.at_most(config_lib.MAX_EPOCHS, checks.non_negative_int("")), recipe=True)
