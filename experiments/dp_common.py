"""Helpers shared by the benchmarks (experiments/bench_*.py)."""

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spread(values: Sequence[float]) -> Dict[str, object]:
  """{"min", "median", "max", "values"} of `values` (seconds, ratios, ...)."""
  return {"min": min(values), "median": statistics.median(values), "max": max(values), "values": list(values)}


def run_program(args: Sequence[str], record_path: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
  """Runs `python <args>` from the repository root (args: e.g. ["-m", "greedy.train", ...]) and returns the
  run record it wrote to `record_path`, printing its pretraining seconds.

  Raises:
    RuntimeError: the program failed (with the end of its stderr).
  """
  print(" ".join(args), flush=True)
  env = dict(os.environ if env is None else env, PYTHONPATH=ROOT)
  proc = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env)
  if proc.returncode != 0:
    raise RuntimeError(f"{os.path.basename(record_path)} failed:\n{proc.stderr[-3000:]}")
  with open(record_path) as f:
    record = json.load(f)
  print(f"  pretraining {record['pretrain_seconds']:.2f} s", flush=True)
  return record


def _busy_cpu_seconds() -> float:
  """CPU seconds the whole machine has spent busy since boot (/proc/stat: all but idle and iowait)."""
  with open("/proc/stat") as f:
    fields = [float(x) for x in f.readline().split()[1:]]
  return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
  """CPU seconds of this process and its finished children."""
  own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
  return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class MachineLoad:
  """Measures how busy the rest of the machine was while a benchmark ran (others' CPU use skews timings).

  Usage: load = MachineLoad(); ...benchmark...; load.report() -> {"wall_seconds", "other_processes_cores",
  "load_average_start", "load_average_end"}, where other_processes_cores is the CPU time used by every
  process but this one and its children, divided by the wall time (0: the machine was ours alone).
  """

  def __init__(self):
    self._start = (time.perf_counter(), _busy_cpu_seconds(), _own_cpu_seconds(), os.getloadavg())

  def report(self) -> Dict[str, object]:
    wall0, busy0, own0, load0 = self._start
    wall = time.perf_counter() - wall0
    others = (_busy_cpu_seconds() - busy0) - (_own_cpu_seconds() - own0)
    return {"wall_seconds": wall, "other_processes_cores": max(others, 0.0) / wall,
            "load_average_start": list(load0), "load_average_end": list(os.getloadavg())}
