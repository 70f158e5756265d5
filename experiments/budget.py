"""Estimated wall seconds of a run (the driver's ETA, the budget table): fixed_p + FLOPs / rate_p for program p,
FLOPs by `common.cost`, fixed_p and rate_p fitted by least squares to the driver log (<output_dir>/runs/
driver_log.jsonl, else results/'s); without two logged runs of p the fit over all programs; no log: `FALLBACK`.
"""

import math
import os
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from common import cost
from common import programs
from experiments import ROOT
from experiments import presets
from experiments import records

# Validation (5,000 images) every finetuning epoch and test (10,000) at the end: counted as 15,000 per epoch.
EVALUATED_EXAMPLES = 15_000
POOLED = "all programs"


class Rate(NamedTuple):
  """seconds = fixed_seconds + FLOPs / flops_per_second, fitted on `runs` logged runs (0: not fitted)."""
  fixed_seconds: float
  flops_per_second: float
  runs: int

  def seconds(self, flops: float) -> float:
    return self.fixed_seconds + flops / self.flops_per_second


# Used only when no driver log exists: 10 s start-up, 100 GFLOP/s.
FALLBACK = Rate(10.0, 1e11, 0)
Rates = Mapping[str, Rate]


def flops(program: str, flags: Mapping) -> float:
  """FLOPs of a run of `program` with shared `flags` (hidden_units, epochs, train_examples), by `common.cost`."""
  hidden, examples = list(flags["hidden_units"]), int(flags["train_examples"])
  pretrain = cost.pretraining_flops(hidden, int(flags["pretrain_epochs"]), examples,
                                    pipelined=program == programs.PIPELINE_PARALLEL.name)
  return pretrain + int(flags["finetune_epochs"]) * cost.finetune_epoch_flops(hidden, examples, EVALUATED_EXAMPLES)


def _logged(folder: str) -> List[Tuple[str, float, float]]:
  """(program, FLOPs, wall seconds) of every run in the driver log under `folder` (the last line of a run)."""
  modules, last = {p.module: p.name for p in programs.PROGRAMS}, {}
  for line in records.driver_log(folder):
    module = next((m for m in line["command"] if m in modules), None)
    if module is not None:
      args = dict(a[2:].split("=", 1) for a in line["command"] if a.startswith("--") and "=" in a)
      args["hidden_units"] = [int(u) for u in args["hidden_units"].split(",")]
      last[(line["entry"], line["run"])] = (modules[module], flops(modules[module], args), line["wall_seconds"])
  return list(last.values())


def _least_squares(points: Sequence[Tuple[float, float]]) -> Optional[Rate]:
  """The line seconds = a + FLOPs / rate through (FLOPs, seconds) points; None unless a >= 0 and rate > 0."""
  n = len(points)
  mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
  sxx = sum((x - mx) ** 2 for x, _ in points)
  slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0
  return Rate(my - slope * mx, 1.0 / slope, n) if slope > 0 and my - slope * mx >= 0 else None


def fit(output_dir: str) -> Dict[str, Rate]:
  """{program name or POOLED: Rate} fitted to the driver log under `output_dir` (else results/'s)."""
  logged = _logged(output_dir) or _logged(os.path.join(ROOT, "results"))
  rates = {POOLED: (len(logged) > 1 and _least_squares([(x, y) for _, x, y in logged])) or FALLBACK}
  for p in programs.PROGRAMS:
    mine = [(x, y) for name, x, y in logged if name == p.name]
    rates[p.name] = (len(mine) > 1 and _least_squares(mine)) or rates[POOLED]
  return rates


def run_seconds(run: presets.RunSpec, rates: Rates) -> float:
  """Estimated wall-clock seconds of one run."""
  return rates.get(run.program, rates[POOLED]).seconds(flops(run.program, dict(run.flags)))


def entry_seconds(entries: Mapping[str, presets.EntryRuns], rates: Rates) -> Dict[str, float]:
  """{entry: estimated seconds of its runs}; a shared run counts for the first entry that lists it."""
  seen, out = set(), {}
  for name, entry in entries.items():
    mine = [r for r in entry.runs if (r.home, r.stored_name) not in seen]
    seen.update((r.home, r.stored_name) for r in mine)
    out[name] = sum(run_seconds(r, rates) for r in mine)
  return out


def minutes(seconds: float) -> str:
  """Seconds as rounded minutes, e.g. "12 min" (at least "<1 min")."""
  return "<1 min" if seconds < 30 else f"{math.ceil(seconds / 60 - 0.5)} min"


def describe(rates: Rates) -> str:
  """The fitted rates in one line, e.g. "greedy 9.1 s + FLOPs at 95 GFLOP/s (20 runs); ..."."""
  return "; ".join(f"{name} as {POOLED}" if name != POOLED and r is rates[POOLED] else
                   f"{name} {r.fixed_seconds:.1f} s + FLOPs at {r.flops_per_second / 1e9:.3g} GFLOP/s "
                   f"({f'{r.runs} runs' if r.runs else 'not fitted: no driver log'})" for name, r in rates.items())
