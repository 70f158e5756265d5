"""Benchmark: data_parallel on 2 replicas against 1 replica (and greedy), side by side in one run.

Each program runs as its own subprocess (each sets up its own devices: G logical CPU devices with 1
intra-op thread each, so "1 vs 2 replicas" is "1 vs 2 cores"), one layer of 2000 units, pretraining
only; the three are interleaved repeat after repeat (the order rotates) so that drifts of the shared
machine hit them alike. Reported from the run records:
  * pretraining seconds (steady state: tracing, compilation and the profile excluded), min/median/max;
  * speedup of 2 replicas over 1 replica, and over greedy's fused single-device step, per repeat (runs
    of the same repeat), min/median/max;
  * the op profile of each data-parallel run (`data_parallel.profile`): seconds per epoch in input,
    forward+loss, gradients, all-reduce and apply, medians over repeats, and each phase's speedup.

Usage (timings are reported: exclusive CPU lock):
  flock -x /work/cpu.lock .venv/bin/python -m experiments.bench_data_parallel --batch_size=5000
  flock -x /work/cpu.lock .venv/bin/python -m experiments.bench_data_parallel --batch_size=100
Writes <output_dir>/b<batch>/<run>_r<k>.json (run records) and <output_dir>/summary_b<batch>.json.
"""

import json
import os
import sys
from typing import Dict, List, Sequence

from absl import app
from absl import flags

from experiments import dp_common
from experiments.dp_common import spread

_HIDDEN = flags.DEFINE_list("hidden_units", ["2000"], "Hidden units per layer.")
_BATCH = flags.DEFINE_integer("batch_size", 5000, "Global batch size.")
_EPOCHS = flags.DEFINE_integer("pretrain_epochs", 2, "Pretraining epochs timed per run.")
_EXAMPLES = flags.DEFINE_integer("train_examples", 55_000, "Training images.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Runs of each program (interleaved).")
_PROFILE_STEPS = flags.DEFINE_integer("profile_steps", 5, "Steps per timed loop of data_parallel's op profile.")
_OUTPUT = flags.DEFINE_string("output_dir", "results/benchmarks/data_parallel", "Where records and summary go.")

# (run name, program, replicas)
RUNS = (("greedy", "greedy", 1), ("dp_g1", "data_parallel", 1), ("dp_g2", "data_parallel", 2))
PHASES = ("input", "forward_loss", "gradients", "allreduce", "apply")


def _run(name: str, program: str, replicas: int, repeat: int, records_dir: str) -> dict:
  run_name = f"{name}_r{repeat}"
  command = ["-m", f"{program}.train", f"--hidden_units={','.join(_HIDDEN.value)}",
             f"--pretrain_epochs={_EPOCHS.value}", "--finetune_epochs=0", f"--batch_size={_BATCH.value}",
             f"--train_examples={_EXAMPLES.value}", "--threads_per_device=1", "--progress=log",
             f"--num_devices={replicas}", f"--results_dir={records_dir}", f"--run_name={run_name}"]
  if program == "data_parallel":
    command.append(f"--profile_steps={_PROFILE_STEPS.value}")
  return dp_common.run_program(command, os.path.join(records_dir, f"{run_name}.json"))


def _epoch_seconds(record: dict) -> float:
  return record["pretrain_seconds"] / sum(len(layer["epochs"]) for layer in record["layers"])


def _profile(records: List[dict]) -> Dict[str, object]:
  phases = {p: spread([r["profile"]["seconds_per_epoch"][p] for r in records]) for p in PHASES}
  return {"seconds_per_epoch": phases,
          "total_seconds_per_epoch": spread([r["profile"]["total_seconds_per_epoch"] for r in records]),
          "measured_seconds_per_epoch": spread([_epoch_seconds(r) for r in records]),
          "method": records[0]["profile"]["method"]}


def main(argv):
  del argv
  name = f"b{_BATCH.value}"
  records_dir = os.path.join(_OUTPUT.value, name)
  os.makedirs(records_dir, exist_ok=True)
  load = dp_common.MachineLoad()
  records: Dict[str, List[dict]] = {run[0]: [] for run in RUNS}
  for r in range(_REPEATS.value):
    for k in range(len(RUNS)):
      run_name, program, replicas = RUNS[(k + r) % len(RUNS)]
      records[run_name].append(_run(run_name, program, replicas, r, records_dir))
  machine = load.report()
  seconds = {n: [rec["pretrain_seconds"] for rec in recs] for n, recs in records.items()}
  g1, g2 = _profile(records["dp_g1"]), _profile(records["dp_g2"])
  summary = {
      "command": "python -m experiments.bench_data_parallel " + " ".join(sys.argv[1:]),
      "setting": {"hidden_units": [int(u) for u in _HIDDEN.value], "batch_size": _BATCH.value,
                  "steps_per_epoch": _EXAMPLES.value // _BATCH.value, "pretrain_epochs": _EPOCHS.value,
                  "train_examples": _EXAMPLES.value, "repeats": _REPEATS.value, "threads_per_device": 1,
                  "device_kind": records["dp_g2"][0]["environment"]["device_kind"],
                  "cpu_count": records["dp_g2"][0]["environment"]["cpu_count"]},
      "machine_load": machine,
      "pretrain_seconds": {n: spread(v) for n, v in seconds.items()},
      "epoch_seconds": {n: spread([_epoch_seconds(rec) for rec in recs]) for n, recs in records.items()},
      "speedup_2_vs_1_replica": spread([a / b for a, b in zip(seconds["dp_g1"], seconds["dp_g2"])]),
      "speedup_2_replicas_vs_greedy": spread([a / b for a, b in zip(seconds["greedy"], seconds["dp_g2"])]),
      "one_replica_vs_greedy_slowdown": spread([a / b for a, b in zip(seconds["dp_g1"], seconds["greedy"])]),
      "profile": {"1_replica": g1, "2_replicas": g2,
                  "phase_speedup": {p: g1["seconds_per_epoch"][p]["median"] / max(g2["seconds_per_epoch"][p]["median"],
                                                                                  1e-12) for p in PHASES}},
      "records": {n: [os.path.join(records_dir, f"{n}_r{r}.json") for r in range(_REPEATS.value)] for n in records},
  }
  path = os.path.join(_OUTPUT.value, f"summary_{name}.json")
  with open(path, "w") as f:
    json.dump(summary, f, indent=1)
  for key in ("speedup_2_vs_1_replica", "speedup_2_replicas_vs_greedy", "one_replica_vs_greedy_slowdown"):
    s = summary[key]
    print(f"{key}: median {s['median']:.3f} (min {s['min']:.3f}, max {s['max']:.3f})")
  for label, prof in (("1 replica", g1), ("2 replicas", g2)):
    print(f"profile {label}: " + ", ".join(f"{p} {prof['seconds_per_epoch'][p]['median']:.3f}" for p in PHASES)
          + f" | sum {prof['total_seconds_per_epoch']['median']:.2f}, measured {prof['measured_seconds_per_epoch']['median']:.2f}"
          " s/epoch")
  print(f"Other processes used {machine['other_processes_cores']:.2f} cores on average during the benchmark.")
  print(f"Summary: {path}")


if __name__ == "__main__":
  app.run(main)
