"""Benchmark: data_parallel and model_parallel with more logical devices than cores.

A run with G one-thread devices on C < G cores cannot be G times faster than one device; it should be at
most G / C times slower per epoch than on C devices (the devices take turns on the cores), and it must
progress. Before the fix of docs/data_parallel.md ("More devices than cores") data_parallel did not: each
layer built a distributed input iterator, and building layer 2's while layer 1's was alive or being freed
sat idle for minutes (64 devices on 2 cores: no epoch in 300 s). Each program runs on every G of --devices
(model_parallel only up to its layer count), one run per G (the stall is minutes, not percent), pretraining
only, without data_parallel's op profile. Measures, from the run records:
  * seconds per layer-epoch (steady state), its growth over the run on C devices, and the oversubscription
    G / C it may grow by;
  * compile (warm-up) seconds, the seconds of the run outside every timed phase (the stall sat there:
    building a layer's input iterator was in no phase), and the whole run's seconds;
  * cores busy while training (process CPU seconds / training seconds).

Usage (timings are committed: run alone on the machine):
  python -m experiments.benchmarks.devices_beyond_cores --code=after_fix
and the same command with --code=before_fix from a checkout of the code before the fix (commit f0f06ab),
with --output_dir pointing at this repository's results/benchmarks/devices_beyond_cores.
Writes <output_dir>/b<batch>_<code>/<program>_g<G>_r0.json and <output_dir>/summary_b<batch>_<code>.json.
"""

import os
import subprocess
from typing import Dict, List, Optional

from experiments.benchmarks import harness

PROGRAMS = {"data_parallel": "dp", "model_parallel": "mp"}


def _devices(s: harness.Setting) -> List[int]:
  return sorted({int(g) for g in s.options["devices"]})


def configurations(s: harness.Setting) -> List:
  """Every program on every G of --devices (model_parallel: G <= layers; data_parallel: G divides the batch)."""
  runs = []
  for program, short in PROGRAMS.items():
    for g in _devices(s):
      if (program == "model_parallel" and g > len(s.hidden_units)) or (program == "data_parallel" and s.batch_size % g):
        continue
      extra = ("--profile_steps=0",) if program == "data_parallel" else ()
      runs.append(s.run(f"{short}_g{g}", program, g, extra))
  return runs


def outside_phases(record: dict) -> float:
  """Seconds of the whole run spent in none of its timed phases (start-up, building each layer's trainer and
  inputs, writing the record): where the stall showed, since it sat between the phases."""
  phases = sum(v for k, v in record["timing"].items() if "/" not in k)  # "profile/<phase>" are estimates
  return (record["run_seconds"] if "run_seconds" in record else record["total_seconds"]) - phases


def _commit() -> Optional[str]:
  try:
    return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
  except (OSError, subprocess.CalledProcessError):
    return None


def summarize(s: harness.Setting, runs: harness.Records) -> Dict:
  """Per configuration: epoch seconds and growth vs G = cores, compile, gap, whole run, cores busy."""
  cores = os.cpu_count() or 1
  out: Dict[str, Dict] = {}
  for name, (record, *_) in runs.items():
    program, g = name.rsplit("_g", 1)
    g = int(g)
    reference = runs.get(f"{program}_g{cores}")
    epoch = harness.seconds_per_layer_epoch(record)
    out[name] = {
        "devices": g, "oversubscription": g / cores, "epoch_seconds": epoch,
        "epoch_growth_vs_cores": epoch / harness.seconds_per_layer_epoch(reference[0]) if reference else None,
        "allowed_growth": max(1.0, g / cores),
        "warmup_seconds": record["timing"].get("warmup"), "outside_phases_seconds": outside_phases(record),
        "run_seconds": record.get("run_seconds", record.get("total_seconds")),
        "cores_busy_training": record.get("pretrain_cpu_seconds", 0.0) / record["pretrain_seconds"],
    }
  return {"cores": cores, "code_commit": _commit(), "per_configuration": out}


BENCHMARK = harness.Benchmark(
    name="devices_beyond_cores", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "256,256,256,256", "batch_size": 640, "pretrain_epochs": 2, "train_examples": 12_800,
              "repeats": 1},
    options={"devices": ([1, 2, 4, 8, 16, 64], "Device counts G to run (model_parallel: up to its layer count)."),
             "code": (["current"], "A label of the code measured (e.g. before_fix when run from an older checkout); "
                      "it names the records' folder and the summary.")},
    folder=lambda s: f"b{s.batch_size}_{s.options['code'][0]}",
    summary_file=lambda s: f"summary_b{s.batch_size}_{s.options['code'][0]}.json")


if __name__ == "__main__":
  harness.main(BENCHMARK)
