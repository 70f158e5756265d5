"""Benchmark: data_parallel on 2 replicas against 1 replica and greedy, side by side.

Each run sets up its own devices (G logical CPU devices with 1 intra-op thread each, so "1 vs 2 replicas"
is "1 vs 2 cores"); one layer of 2000 units, pretraining only, the three alternated repeat after repeat
(`harness`). Measures, from the run records:
  * speedup of 2 replicas over 1 replica and over greedy's fused single-device step, per repeat;
  * the op profile of each data-parallel run (`data_parallel.profile`): seconds per epoch in input,
    forward+loss, gradients, all-reduce and apply, spread over repeats, and each phase's speedup.

Usage (timings are committed: run alone on the machine, e.g. under an exclusive lock):
  python -m experiments.benchmarks.data_parallel --batch_size=5000
  python -m experiments.benchmarks.data_parallel --batch_size=100
Writes <output_dir>/b<batch>/<configuration>_r<k>.json and <output_dir>/summary_b<batch>.json.
"""

from typing import Dict, List

from data_parallel import profile
from experiments.benchmarks import harness


def configurations(s: harness.Setting) -> List:
  """greedy; data_parallel on 1 and on s.num_devices replicas, each profiling layer 1."""
  profile = (f"--profile_steps={s.options['profile_steps']}",)
  return [s.run("greedy", "greedy", 1), s.run("dp_g1", "data_parallel", 1, profile),
          s.run(f"dp_g{s.num_devices}", "data_parallel", s.num_devices, profile)]


def _profile(runs: List[dict]) -> Dict[str, object]:
  return {"seconds_per_epoch": {p: harness.spread([r["profile"]["seconds_per_epoch"][p] for r in runs])
                                for p in profile.PHASES},
          "total_seconds_per_epoch": harness.spread([r["profile"]["total_seconds_per_epoch"] for r in runs]),
          "measured_seconds_per_epoch": harness.spread([harness.seconds_per_layer_epoch(r) for r in runs]),
          "method": runs[0]["profile"]["method"]}


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Speedups and the op profiles (see the module docstring)."""
  many = f"dp_g{s.num_devices}"
  g1, gn = _profile(runs["dp_g1"]), _profile(runs[many])
  return {
      "epoch_seconds": {n: harness.spread([harness.seconds_per_layer_epoch(r) for r in rs]) for n, rs in runs.items()},
      f"speedup_{s.num_devices}_vs_1_replica": harness.ratio_spread(runs, "dp_g1", many),
      f"speedup_{s.num_devices}_replicas_vs_greedy": harness.ratio_spread(runs, "greedy", many),
      "one_replica_vs_greedy_slowdown": harness.ratio_spread(runs, "dp_g1", "greedy"),
      "profile": {"1_replica": g1, f"{s.num_devices}_replicas": gn,
                  "phase_speedup": {p: g1["seconds_per_epoch"][p]["median"] /
                                    max(gn["seconds_per_epoch"][p]["median"], 1e-12) for p in profile.PHASES}},
  }


BENCHMARK = harness.Benchmark(
    name="data_parallel", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "2000", "batch_size": 5000, "pretrain_epochs": 2, "train_examples": 55_000},
    options={"profile_steps": (5, "Steps per timed loop of data_parallel's op profile.")},
    columns=(("speedup_2_vs_1_replica", "speedup 2 vs 1 replica"),
             ("speedup_2_replicas_vs_greedy", "2 replicas vs greedy"),
             ("one_replica_vs_greedy_slowdown", "1 replica / greedy time")))

if __name__ == "__main__":
  harness.main(BENCHMARK)
