"""Benchmark: model_parallel on a cluster of H local workers (`common.launch`, gRPC on loopback, one layer each)
against in-process on H devices (docs/multi_host.md): the cluster's overhead per repeat (goal <= 10%), each run's
phases, and the bytes that cross the network (`common.measure.cost.network_bytes`) beside data parallel's.
  python -m experiments.benchmarks.cluster"""

from typing import List

from common.measure import cost
from common.settings import programs
from experiments import harness, presets

MP = programs.MODEL_PARALLEL


def configurations(s: harness.Setting) -> List:
  """In process on H logical devices; on a cluster of H local workers with one device each."""
  h = len(s.hidden_units)
  return [s.spec("in_process", MP, h), s.spec("cluster", MP, 1, launcher=("common.launch", f"--workers={h}"))]


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """The cluster's overhead and the bytes it moves (see the module docstring)."""
  moved = cost.network_bytes(s.hidden_units, s.batch_size, s.train_examples)
  steps, mp = len(runs["cluster"][0]["schedule"]["steps"]), moved[MP.network]
  return {
      "cluster_overhead": harness.spread([x - 1 for x in
                                          harness.ratio_spread(runs, "cluster", "in_process")["values"]]),
      "network_bytes": {
          "model_parallel_per_epoch_step": mp["bytes_per_epoch_step"], "model_parallel_copies": mp["copies"],
          "model_parallel_per_run": mp["bytes_per_epoch_step"] * steps, "epoch_steps": steps,
          "data_parallel_gradient_bytes_per_epoch_same_batch":
              moved[programs.DATA_PARALLEL.network]["gradient_bytes_per_epoch"],
          "method": "from the parameter shapes, float32 (common.measure.cost.network_bytes); data parallel: per "
                    "worker with a ring all-reduce over 2 workers"},
      "phases": {name: [harness.phases(r) for r in rs] for name, rs in runs.items()}}


BENCHMARK = presets.Benchmark(
    name="cluster", runs=configurations, summarize=summarize, folder=lambda s: "records",
    defaults={"hidden_units": "1000,1000", "pretrain_epochs": 4, "train_examples": 11_000},
    columns=(("cluster_overhead", "cluster overhead (cluster / in-process - 1)"),), order=11)

if __name__ == "__main__":
  harness.main(BENCHMARK)
