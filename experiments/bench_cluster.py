"""Benchmark: model_parallel on a 2-worker TensorFlow cluster (gRPC on loopback) against in-process
model_parallel on 2 logical CPU devices, same configuration, side by side in one run.

The cluster run is `python -m common.launch --workers=2 model_parallel.train --num_devices=1 ...` (two
tf.distribute.Server processes, one layer each, plus the client); the in-process run is
`python -m model_parallel.train --num_devices=2 ...`. Both: pretraining only, 1 intra-op thread per
device; the two are interleaved repeat after repeat (the order alternates) so drifts of the shared
machine hit them alike. Reported from the run records:
  * pretraining seconds (steady state: warm-up and tracing excluded) of each, min/median/max;
  * the cluster's overhead per repeat: cluster / in-process - 1 (goal <= 10%), and its weight-copy
    and per-step overhead seconds (wall - busiest device);
  * bytes that cross the network per epoch-step (`common.cluster.network_bytes`, from the shapes),
    and what data parallel would move per epoch at the same batch, for comparison;
  * how busy the rest of the machine was (`experiments.dp_common.MachineLoad`).

Usage (timings are reported: exclusive CPU lock):
  flock -x /work/cpu.lock .venv/bin/python -m experiments.bench_cluster
Writes <output_dir>/records/<name>_r<k>.json (run records) and <output_dir>/summary.json.
"""

import json
import os
import sys

from absl import app
from absl import flags

from common import cluster
from experiments import dp_common
from experiments.dp_common import MachineLoad, spread

_HIDDEN = flags.DEFINE_list("hidden_units", ["1000", "1000"], "Hidden units per layer (one worker per layer).")
_BATCH = flags.DEFINE_integer("batch_size", 1000, "Batch size.")
_EPOCHS = flags.DEFINE_integer("pretrain_epochs", 4, "Pretraining epochs E.")
_EXAMPLES = flags.DEFINE_integer("train_examples", 11_000, "Training images.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Runs of each setting (interleaved).")
_OUTPUT = flags.DEFINE_string("output_dir", "results/benchmarks/cluster", "Where records and the summary go.")

SETTINGS = ("in_process", "cluster")


def _run(setting: str, repeat: int, records_dir: str) -> dict:
  name = f"{setting}_r{repeat}"
  layers = len(_HIDDEN.value)
  program = [f"--hidden_units={','.join(_HIDDEN.value)}", f"--pretrain_epochs={_EPOCHS.value}", "--finetune_epochs=0",
             f"--batch_size={_BATCH.value}", f"--train_examples={_EXAMPLES.value}", "--threads_per_device=1",
             "--progress=log", f"--results_dir={records_dir}", f"--run_name={name}"]
  if setting == "cluster":
    command = ["-m", "common.launch", f"--workers={layers}", "model_parallel.train", "--num_devices=1", *program]
  else:
    command = ["-m", "model_parallel.train", f"--num_devices={layers}", *program]
  env = dict(os.environ)
  env.pop(cluster.TF_CONFIG, None)
  return dp_common.run_program(command, os.path.join(records_dir, f"{name}.json"), env)


def _phases(record: dict) -> dict:
  steps = record["schedule"]["steps"]
  return {"pretrain_seconds": record["pretrain_seconds"], "step_wall_seconds": record["timing"]["pretrain_train"],
          "weight_copy_seconds": record["timing"]["weight_copy"],
          "overhead_seconds": sum(s["wall_seconds"] - max(s["busy_seconds"].values()) for s in steps),
          "devices": record["environment"]["devices"]}


def main(argv):
  del argv
  records_dir = os.path.join(_OUTPUT.value, "records")
  os.makedirs(records_dir, exist_ok=True)
  load = MachineLoad()
  records = {s: [] for s in SETTINGS}
  for r in range(_REPEATS.value):
    for k in range(len(SETTINGS)):
      setting = SETTINGS[(k + r) % len(SETTINGS)]
      records[setting].append(_run(setting, r, records_dir))
  seconds = {s: [rec["pretrain_seconds"] for rec in records[s]] for s in SETTINGS}
  overhead = [c / i - 1 for c, i in zip(seconds["cluster"], seconds["in_process"])]
  hidden = [int(u) for u in _HIDDEN.value]
  steps = len(records["cluster"][0]["schedule"]["steps"])
  moved = cluster.network_bytes(hidden, _BATCH.value, _EXAMPLES.value)
  summary = {
      "command": "python -m experiments.bench_cluster " + " ".join(sys.argv[1:]),
      "setting": {"hidden_units": hidden, "batch_size": _BATCH.value, "pretrain_epochs": _EPOCHS.value,
                  "train_examples": _EXAMPLES.value, "repeats": _REPEATS.value, "threads_per_device": 1,
                  "workers": len(hidden), "cpu_count": records["cluster"][0]["environment"]["cpu_count"],
                  "in_process": f"model_parallel.train --num_devices={len(hidden)} (logical CPU devices)",
                  "cluster": f"common.launch --workers={len(hidden)} model_parallel.train --num_devices=1 "
                             "(tf.distribute.Server per worker, gRPC on loopback)"},
      "pretrain_seconds": {s: spread(v) for s, v in seconds.items()},
      "cluster_overhead": spread(overhead),
      "goal_overhead": 0.10,
      "network_bytes": {
          "model_parallel_per_epoch_step": moved["model_parallel"]["bytes_per_epoch_step"],
          "model_parallel_copies": moved["model_parallel"]["copies"],
          "model_parallel_per_run": moved["model_parallel"]["bytes_per_epoch_step"] * steps,
          "epoch_steps": steps,
          "data_parallel_gradient_bytes_per_epoch_same_batch": moved["data_parallel"]["gradient_bytes_per_epoch"],
          "method": "from the parameter shapes, float32 (common.cluster.network_bytes); data parallel: per "
                    "worker with a ring all-reduce over 2 workers"},
      "phases": {s: [_phases(rec) for rec in records[s]] for s in SETTINGS},
      "machine_load": load.report(),
      "records": {s: [os.path.join(records_dir, f"{s}_r{r}.json") for r in range(_REPEATS.value)] for s in SETTINGS},
  }
  path = os.path.join(_OUTPUT.value, "summary.json")
  with open(path, "w") as f:
    json.dump(summary, f, indent=1)
  o = summary["cluster_overhead"]
  print(f"cluster overhead: median {o['median']:+.1%} (min {o['min']:+.1%}, max {o['max']:+.1%}); "
        f"{moved['model_parallel']['bytes_per_epoch_step']:,} bytes per epoch-step over the network")
  print(f"Summary: {path}")


if __name__ == "__main__":
  app.run(main)
