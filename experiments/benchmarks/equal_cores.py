"""Benchmark: every program given the same N = --cores cores (default: the machine's) in every devices x threads
per device that uses them all (two-level programs with both thread pools): each program's fastest configuration,
greedy on all N cores / it, and the seconds until every layer reached greedy's final held-out loss x 1.01.
  python -m experiments.benchmarks.equal_cores --batch_size=100"""

import os
import re
from typing import Dict, List

from common import programs
from experiments import records
from experiments.benchmarks import harness

PROGRAMS = programs.PROGRAMS
# Programs whose devices can share one intra-op pool (--thread_pool=shared).
TWO_LEVEL = (programs.MODEL_PARALLEL.name, programs.PIPELINE_PARALLEL.name)
HELDOUT = "--heldout_every_epoch"
LOSS_TOLERANCE = 0.01
_NAME = re.compile(r"^(?P<program>.+)_g(?P<devices>\d+)_t(?P<threads>\d+)(?P<shared>_shared)?$")


def _cores(s: harness.Setting) -> int:
  return int(s.options["cores"]) or os.cpu_count() or 1


def baseline(s: harness.Setting) -> str:
  """The reference configuration: greedy, one device with every core as its threads."""
  return f"{programs.GREEDY.name}_g1_t{_cores(s)}"


def program_of(name: str) -> str:
  """The program of a configuration name, e.g. "model_parallel" of "model_parallel_g2_t1_shared"."""
  return _NAME.match(name)["program"]


def flags_of(name: str) -> str:
  """"model_parallel_g2_t1_shared" -> "--num_devices=2 --threads_per_device=1 --thread_pool=shared"."""
  m = _NAME.match(name)
  if not m:
    raise ValueError(f"not an equal-cores configuration name: {name!r}")
  pool = "shared" if m["shared"] else "per_device" if m["program"] in TWO_LEVEL and int(m["devices"]) > 1 else ""
  return f"--num_devices={m['devices']} --threads_per_device={m['threads']}" + (f" --thread_pool={pool}" if pool else "")


def configurations(s: harness.Setting) -> List:
  """Every program x (devices, threads) with devices x threads = N, plus shared pools for the two-level ones."""
  n, runs = _cores(s), []
  for p in PROGRAMS:
    for g in (d for d in range(1, n + 1) if n % d == 0 and (d == 1 or not p.one_device)
              and not (p is programs.DATA_PARALLEL and s.batch_size % d)):
      name, two_level = f"{p.name}_g{g}_t{n // g}", p.name in TWO_LEVEL and g > 1
      runs.append(s.run(name, p, g, extra=(HELDOUT, "--thread_pool=per_device") if two_level else (HELDOUT,),
                        threads=n // g))
      if two_level:
        runs.append(s.run(f"{name}_shared", p, g, extra=(HELDOUT, "--thread_pool=shared"), threads=n // g))
  return runs


def summarize(s: harness.Setting, runs: harness.Records) -> Dict:
  """Fastest configuration per program, ratios to greedy on all cores, time to greedy's held-out loss."""
  seconds = {name: harness.spread([r["pretrain_seconds"] for r in rs])["median"] for name, rs in runs.items()}
  best: Dict[str, str] = {}
  for name in runs:
    p = program_of(name)
    best[p] = name if p not in best or seconds[name] < seconds[best[p]] else best[p]
  base, greedy = baseline(s), runs[baseline(s)]
  out = {"cores": _cores(s), "baseline": base, "fastest_configuration": best,
         "speedup_vs_greedy_all_cores": {p: harness.ratio_spread(runs, base, name) for p, name in best.items()},
         "fastest_program": min(best.values(), key=lambda name: seconds[name])}
  if all(records.has_heldout_curves(r) for r in greedy):
    targets = [[layer["epochs"][-1]["heldout_loss"] * (1 + LOSS_TOLERANCE) for layer in r["layers"]] for r in greedy]
    out["seconds_to_greedy_heldout_loss"] = {name: [
        records.time_to_loss(records.loss_curves(r, "heldout_loss"), t)[0] if records.has_heldout_curves(r) else None
        for r, t in zip(rs, targets)] for name, rs in runs.items()}
  return out


BENCHMARK = harness.Benchmark(
    name="equal_cores", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "1000,1000,1000,1000", "batch_size": 100, "pretrain_epochs": 3,
              "train_examples": 22_000, "num_devices": 2, "repeats": 3},
    options={"cores": (0, "N, the cores every configuration uses (devices x threads per device); 0: all of the "
                          "machine's.")},
    folder=lambda s: f"n{_cores(s)}_b{s.batch_size}", summary_file=lambda s: f"summary_n{_cores(s)}_b{s.batch_size}.json",
    campaign=tuple({"batch_size": b} for b in (100, 1000, 5000)))

if __name__ == "__main__":
  harness.main(BENCHMARK)
