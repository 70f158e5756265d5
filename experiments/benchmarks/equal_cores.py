"""Benchmark: every program given the same N = --cores cores (default: the machine's) in every devices x threads
per device that uses them all (each of its `thread_pools` on several devices): each program's fastest
configuration, the baseline on all N cores / it, and the seconds until every layer reached the baseline's final
held-out loss (+1%).
  python -m experiments.benchmarks.equal_cores --batch_size=100"""

import os
import re
from typing import Dict, List

from common.settings import programs
from experiments import presets
from experiments import records
from experiments.benchmarks import harness

HELDOUT = {"heldout_every_epoch": True}
_NAME = re.compile(r"^(?P<program>.+)_g(?P<devices>\d+)_t(?P<threads>\d+)(?P<shared>_shared)?$")


def _cores(s: harness.Setting) -> int:
  return int(s.options["cores"]) or os.cpu_count() or 1


def baseline(s: harness.Setting) -> str:
  """The reference configuration: the baseline program, one device with every core as its threads."""
  return f"{programs.baseline().name}_g1_t{_cores(s)}"


def program_of(name: str) -> str:
  """The program of a configuration name, e.g. "model_parallel" of "model_parallel_g2_t1_shared"."""
  return _NAME.match(name)["program"]


def flags_of(name: str) -> str:
  """"model_parallel_g2_t1_shared" -> "--num_devices=2 --threads_per_device=1 --thread_pool=shared"."""
  m = _NAME.match(name)
  if not m:
    raise ValueError(f"not an equal-cores configuration name: {name!r}")
  pools = programs.get(m["program"]).thread_pools
  pool = "shared" if m["shared"] else "per_device" if len(pools) > 1 and int(m["devices"]) > 1 else ""
  return f"--num_devices={m['devices']} --threads_per_device={m['threads']}" + (f" --thread_pool={pool}" if pool else "")


def configurations(s: harness.Setting) -> List:
  """Every program x (devices, threads) with devices x threads = N (a batch split over the devices: a multiple of
  them), each of its thread pools on several devices named on the command line."""
  n, runs = _cores(s), []
  for p in programs.PROGRAMS:
    for g in (d for d in range(1, n + 1) if n % d == 0 and p.devices_for(d) == d
              and not (p.splits_batch and s.batch_size % d)):
      pools = p.thread_pools if g > 1 and len(p.thread_pools) > 1 else ("",)
      runs += [s.spec(f"{p.name}_g{g}_t{n // g}" + ("" if pool in ("", "per_device") else f"_{pool}"), p, g,
                      settings={**HELDOUT, **({"thread_pool": pool} if pool else {})}, threads=n // g) for pool in pools]
  return runs


def summarize(s: harness.Setting, runs: harness.Records) -> Dict:
  """Fastest configuration per program, ratios to the baseline on all cores, time to its held-out loss."""
  seconds = {name: harness.spread([r["pretrain_seconds"] for r in rs])["median"] for name, rs in runs.items()}
  best: Dict[str, str] = {}
  for name in runs:
    p = program_of(name)
    best[p] = name if p not in best or seconds[name] < seconds[best[p]] else best[p]
  base, reference = baseline(s), runs[baseline(s)]
  out = {"cores": _cores(s), "baseline": base, "fastest_configuration": best,
         "speedup_vs_greedy_all_cores": {p: harness.ratio_spread(runs, base, name) for p, name in best.items()},
         "fastest_program": min(best.values(), key=lambda name: seconds[name])}
  if all(records.has_heldout_curves(r) for r in reference):
    out["seconds_to_greedy_heldout_loss"] = {name: [harness.seconds_to_loss_of(r, g) for r, g in zip(rs, reference)]
                                             for name, rs in runs.items()}
  return out


BENCHMARK = presets.Study(
    name="equal_cores", runs=configurations, summarize=summarize,
    defaults={"batch_size": 100, "pretrain_epochs": 3},
    options={"cores": (0, "N, the cores every configuration uses (devices x threads per device); 0: all of the "
                          "machine's.")},
    folder=lambda s: f"n{_cores(s)}_b{s.batch_size}", campaign=tuple({"batch_size": b} for b in (100, 1000, 5000)), order=12)
STUDIES = (BENCHMARK,)

if __name__ == "__main__":
  harness.main(BENCHMARK)
