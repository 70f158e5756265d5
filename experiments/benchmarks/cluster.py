"""Benchmark: model_parallel on a TensorFlow cluster of local worker processes (gRPC on loopback) against
in-process model_parallel on logical CPU devices, same configuration, side by side.

The cluster run is `python -m common.launch --workers=H model_parallel.train --num_devices=1 ...` (H
tf.distribute.Server processes, one layer each, plus the client); the in-process run is
`python -m model_parallel.train --num_devices=H ...`; both pretraining only, 1 intra-op thread per device,
alternated repeat after repeat (`harness`). Measures, from the run records:
  * the cluster's overhead per repeat: cluster / in-process - 1 (goal <= 10%), and its weight-copy and
    per-step overhead seconds (wall - busiest device);
  * bytes that cross the network per epoch-step (`common.cost.network_bytes`, from the shapes), and
    what data parallel would move per epoch at the same batch, for comparison.

Usage (timings are committed: run alone on the machine, e.g. under an exclusive lock):
  python -m experiments.benchmarks.cluster
Writes <output_dir>/records/<configuration>_r<k>.json and <output_dir>/summary.json.
"""

from typing import List

from common import cost
from common import programs
from experiments.benchmarks import harness

MP = programs.MODEL_PARALLEL


def configurations(s: harness.Setting) -> List:
  """In process on H logical devices; on a cluster of H local workers with one device each."""
  h = len(s.hidden_units)
  return [s.run("in_process", MP, h), s.run("cluster", MP, 1, launcher=("common.launch", f"--workers={h}"))]


def _phases(record: dict) -> dict:
  steps = record["schedule"]["steps"]
  return {"pretrain_seconds": record["pretrain_seconds"], "step_wall_seconds": record["timing"]["pretrain_train"],
          "weight_copy_seconds": record["timing"]["weight_copy"],
          "overhead_seconds": sum(s["wall_seconds"] - max(s["busy_seconds"].values()) for s in steps),
          "devices": record["environment"]["devices"]}


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """The cluster's overhead and the bytes it moves (see the module docstring)."""
  overhead = harness.ratio_spread(runs, "cluster", "in_process")
  moved = cost.network_bytes(s.hidden_units, s.batch_size, s.train_examples)
  steps = len(runs["cluster"][0]["schedule"]["steps"])
  return {
      "cluster_overhead": harness.spread([x - 1 for x in overhead["values"]]),
      "goal_overhead": 0.10,
      "network_bytes": {
          "model_parallel_per_epoch_step": moved[MP.name]["bytes_per_epoch_step"],
          "model_parallel_copies": moved[MP.name]["copies"],
          "model_parallel_per_run": moved[MP.name]["bytes_per_epoch_step"] * steps,
          "epoch_steps": steps,
          "data_parallel_gradient_bytes_per_epoch_same_batch": moved[programs.DATA_PARALLEL.name]["gradient_bytes_per_epoch"],
          "method": "from the parameter shapes, float32 (common.cost.network_bytes); data parallel: per "
                    "worker with a ring all-reduce over 2 workers"},
      "phases": {name: [_phases(r) for r in rs] for name, rs in runs.items()},
  }


BENCHMARK = harness.Benchmark(
    name="cluster", configurations=configurations, summarize=summarize,
    folder=lambda s: "records", summary_file=lambda s: "summary.json",
    columns=(("cluster_overhead", "cluster overhead (cluster / in-process - 1)"),))

if __name__ == "__main__":
  harness.main(BENCHMARK)
