"""Estimated wall-clock seconds of each run of a preset, before anything is measured.

Used for the ETA of `experiments.driver` and for the budget table of results/README.md
(estimated vs measured minutes per entry). The estimate is the performance model
(`experiments.perf_model`) fed with per-layer epoch seconds computed from FLOPs
(`common.cost.layer_epoch_flops`) at a per-core rate measured on this project's machines,
plus fixed costs per process. The constants are stated here; results/README.md prints the main ones.
"""

import math
from typing import Dict, Mapping, Sequence

from common import cost
from experiments import perf_model
from experiments import presets

# One 784->2000 layer epoch over 55,000 images on one core: ~7.5 s at batch 100, ~7 s at batch 5000
# (862 GFLOP); a 784->500 layer at batch 100: 0.2 s for 5,500 images (21.6 GFLOP). About 110 GFLOP/s.
CORE_FLOPS_PER_SECOND = 1.1e11
# Python + TensorFlow import, MNIST load, device setup, writing the record.
STARTUP_SECONDS = 9.0
# Tracing + XLA compilation of one layer's epoch function (pretraining) or of finetuning.
WARMUP_SECONDS_PER_LAYER = 0.8
# Data parallel: extra seconds per step (replica dispatch, all-reduce latency), and all-reduce seconds
# per parameter per transfer (perf_model's gamma).
DP_STEP_SECONDS = 0.003
DP_ALLREDUCE_SECONDS_PER_PARAM = 1e-9
# Data parallel fixed costs, measured with 4 x 1000 units, batch 5000, 10,000 examples on 2 cores
# (cpu preset, dp_scaling) while other jobs loaded the machine: ~20 s more start-up (MirroredStrategy),
# then per layer a warm-up (tracing, compilation, input pipeline) of ~2.5, 6, 90 and 70 s for G = 1, 2,
# 3, 4 replicas, and the op profile of layer 1 (~5 s + 1.5 s x G) unless --profile_steps=0. Most of the
# G = 3 and 4 warm-ups was an idle wait on the input iterators, since removed (docs/data_parallel.md, "More
# devices than cores": 4 x 256 units, 2.3 s per layer at G = 4 after the fix), so this over-estimates; the
# constants stay those of the committed cpu-preset records' time.
DP_STARTUP_SECONDS = 20.0
DP_WARMUP_SECONDS_PER_LAYER = {1: 2.5, 2: 6.0, 3: 90.0, 4: 70.0}
DP_PROFILE_SECONDS = 5.0
DP_PROFILE_SECONDS_PER_DEVICE = 1.5
# Side-by-side slowdown of concurrent devices (perf_model's rho): a planning constant above the values fitted
# to the committed 2-core runs (1.1 to 1.5, results/README.md), so that estimates err on the long side.
SLOWDOWN = 1.8


def epoch_seconds(hidden_units: Sequence[int], examples: int) -> list:
  """Estimated t_k: seconds of one pretraining epoch of each layer on one core."""
  return [cost.layer_epoch_flops(hidden_units, k + 1, examples) / CORE_FLOPS_PER_SECOND
          for k in range(len(hidden_units))]


def _finetune_seconds(hidden_units: Sequence[int], examples: int, epochs: int) -> float:
  # Validation (5,000 images) every epoch, test (10,000) at the end: counted as 15,000 per epoch.
  flops = cost.finetune_epoch_flops(hidden_units, examples, evaluated_examples=15_000)
  return epochs * flops / CORE_FLOPS_PER_SECOND + WARMUP_SECONDS_PER_LAYER if epochs else 0.0


def run_seconds(run: presets.RunSpec, cores: int) -> float:
  """Estimated wall-clock seconds of one run on a machine with `cores` cores."""
  hidden = list(run.flag("hidden_units"))
  examples, batch = run.flag("train_examples"), run.flag("batch_size")
  epochs, devices = run.flag("pretrain_epochs"), run.flag("num_devices")
  t = epoch_seconds(hidden, examples)
  steps = examples // batch
  if run.program == "pipeline_parallel":
    pretrain = perf_model.PipelineModel(CORE_FLOPS_PER_SECOND, cores, "").predict(dict(run.flags), devices)
    pretrain *= SLOWDOWN if min(devices, len(hidden)) > 1 else 1.0
  elif run.program == "data_parallel":
    t = [x + (steps * DP_STEP_SECONDS if devices > 1 else 0.0) for x in t]
    pretrain = perf_model.Model("data_parallel", tuple(t), cores, slowdown=SLOWDOWN,
                                allreduce_seconds_per_param=DP_ALLREDUCE_SECONDS_PER_PARAM,
                                steps_per_epoch=steps).predict(hidden, epochs, devices)
  else:
    pretrain = perf_model.Model(run.program, tuple(t), cores, slowdown=SLOWDOWN).predict(hidden, epochs, devices)
  seconds = STARTUP_SECONDS + WARMUP_SECONDS_PER_LAYER * len(hidden) + pretrain
  if run.program == "data_parallel":
    warmup = DP_WARMUP_SECONDS_PER_LAYER.get(devices, DP_WARMUP_SECONDS_PER_LAYER[4] * devices / 4)
    seconds += DP_STARTUP_SECONDS + warmup * len(hidden)
    if "--profile_steps=0" not in run.extra_flags:
      seconds += DP_PROFILE_SECONDS + DP_PROFILE_SECONDS_PER_DEVICE * devices
  if run.launcher:  # e.g. common.launch: worker processes start TensorFlow too.
    seconds += STARTUP_SECONDS
  return seconds + _finetune_seconds(hidden, examples, run.flag("finetune_epochs"))


def entry_seconds(entries: Mapping[str, presets.Entry], cores: int) -> Dict[str, float]:
  """{entry: estimated seconds of its runs}; a shared run counts for the first entry that lists it."""
  seen, out = set(), {}
  for name, entry in entries.items():
    total = 0.0
    for run in entry.runs:
      if (run.home, run.stored_name) not in seen:
        seen.add((run.home, run.stored_name))
        total += run_seconds(run, cores)
    out[name] = total
  return out


def minutes(seconds: float) -> str:
  """Seconds as rounded minutes, e.g. "12 min" (at least "<1 min")."""
  return "<1 min" if seconds < 30 else f"{math.ceil(seconds / 60 - 0.5)} min"
