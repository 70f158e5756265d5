"""Benchmark: data_parallel on G and 1 replicas against greedy, one layer (docs/data_parallel.md): speedups, op
profiles (`data_parallel.profile`); several --kernels: both replica counts on each (`kernel_variants`).
  python -m experiments.benchmarks.data_parallel --batch_size=5000 [--kernels=xla,tf]"""

from typing import Dict, List

from common.settings import programs
from data_parallel import config as dp_config
from experiments import harness, presets

GREEDY, DP = programs.GREEDY, programs.DATA_PARALLEL


def _suffixes(s: harness.Setting) -> Dict[str, str]:
  """{kernel path: the suffix of its configurations' names}: "" for the first path, "_<kernels>" for the others."""
  kernels = list(s.options.get("kernels", ["auto"]))
  return {k: "" if k == kernels[0] else f"_{k}" for k in kernels}


def configurations(s: harness.Setting) -> List:
  """greedy; data_parallel on 1 and on s.num_devices replicas (per kernel path), each profiling layer 1."""
  return [s.spec(GREEDY.name, GREEDY, 1)] + [
      s.spec(f"dp_g{g}{suffix}", DP, g, {"profile_steps": s.options["profile_steps"], "kernels": k})
      for k, suffix in _suffixes(s).items() for g in (1, s.num_devices)]


def _profile(runs: List[dict]) -> Dict[str, object]:
  return {"seconds_per_epoch": {p: harness.spread([r["profile"]["seconds_per_epoch"][p] for r in runs])
                                for p in dp_config.PROFILE_PHASES},
          "total_seconds_per_epoch": harness.spread([r["profile"]["total_seconds_per_epoch"] for r in runs]),
          "measured_seconds_per_epoch": harness.spread([  # pretraining seconds per layer-epoch
              r["pretrain_seconds"] / sum(len(layer["epochs"]) for layer in r["layers"]) for r in runs]),
          "method": runs[0]["profile"]["method"]}


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Speedups and the op profiles (see the module docstring)."""
  g, many = s.num_devices, f"dp_g{s.num_devices}"
  return {
      f"speedup_{g}_vs_1_replica": harness.ratio_spread(runs, "dp_g1", many),
      f"speedup_{g}_replicas_vs_greedy": harness.ratio_spread(runs, GREEDY.name, many),
      "one_replica_vs_greedy_slowdown": harness.ratio_spread(runs, "dp_g1", GREEDY.name),
      "profile": {"1_replica": _profile(runs["dp_g1"]), f"{g}_replicas": _profile(runs[many])},
      "kernel_variants": {k: {
          f"speedup_{g}_vs_1_replica": harness.ratio_spread(runs, f"dp_g1{suffix}", f"{many}{suffix}"),
          f"speedup_{g}_replicas_vs_greedy": harness.ratio_spread(runs, GREEDY.name, f"{many}{suffix}"),
          "cores_busy": harness.cores_busy(runs[f"{many}{suffix}"])} for k, suffix in _suffixes(s).items()}}


BENCHMARK = presets.Benchmark(
    name=DP.name, runs=configurations, summarize=summarize,
    defaults={"hidden_units": "2000", "batch_size": 5000, "train_examples": 55_000},
    options={"profile_steps": (5, "Steps per timed loop of data_parallel's op profile."),
             "kernels": (["auto"], "Kernel paths (--kernels) of the data_parallel configurations (several: a "
                                   "comparison).")},
    folder=lambda s: f"b{s.batch_size}" + ("_kernels" if len(_suffixes(s)) > 1 else ""),
    columns=(("speedup_2_vs_1_replica", "speedup 2 vs 1 replica"),
             ("speedup_2_replicas_vs_greedy", "2 replicas vs greedy"),
             ("one_replica_vs_greedy_slowdown", "1 replica / greedy time")), order=6)

if __name__ == "__main__":
  harness.main(BENCHMARK)
