"""The table of what `auto` chooses per processor class (`common.settings.processor_defaults.TABLE`), made from the
committed benchmark summaries under results/benchmarks/, each summary's class from its provenance's CPU flags:
  kernels             per program and precision: `experiments.benchmarks.kernels.choice` over the class's summaries
                      (the path faster in every repeat of more summaries; none where neither is);
  thread_pool         pipeline_parallel's, per precision: of the limit benchmark's two pools at batch 100, the one
                      with the shorter median pretraining + finetuning seconds (each pool with the finetuning
                      placement `auto` gives it);
  finetune_placement  per precision: the finetune benchmark's fastest placement at batch 100 (`choice`).
  python -m experiments.defaults_table            # prints the table
  python -m experiments.defaults_table --write    # writes it into common/settings/processor_defaults.py"""

import os
import pprint
import statistics
import sys
from typing import Dict, List, Mapping

from common.measure import provenance
from common.settings import processor_defaults
from common.settings import programs
from experiments import ROOT
from experiments import records
from experiments.benchmarks import kernels as bench_kernels
from experiments.benchmarks import limit as bench_limit

TARGET = os.path.join(ROOT, "common", "settings", "processor_defaults.py")
BEGIN, END = "# BEGIN TABLE\n", "# END TABLE\n"


def _by_class(output_dir: str, benchmark: str) -> Dict[str, List[Mapping]]:
  """{class: [summary, ...]} of a benchmark's summaries (those that recorded the CPU flags)."""
  out = {}
  for summary in records.load_summaries(output_dir, benchmark).values():
    isa = provenance.instruction_set(summary.get("provenance", {}).get("cpu_flags"))
    if isa:
      out.setdefault(isa, []).append(summary)
  return out


def _pool_seconds(output_dir: str, summary: Mapping, precision: str) -> Dict[str, float]:
  """{pool: median over repeats of pretraining + finetuning seconds} of pipeline_parallel in a limit summary."""
  folder = os.path.join(output_dir, "benchmarks", bench_limit.BENCHMARK.name)
  found, out = records.records_of(folder, summary), {}
  for pool in bench_limit.POOLS:
    rs = found.get(f"pipeline_{pool}_{precision}") or (
        found.get(f"pipeline_{pool}") if summary["setting"].get("precision") == precision else None)
    if rs and all(rs):
      out[pool] = statistics.median(r["pretrain_seconds"] + r["finetune"]["seconds"] for r in rs)
  return out


def table(output_dir: str = "results") -> Dict[str, Dict[str, dict]]:
  """The table (module docstring) from the summaries under <output_dir>/benchmarks/."""
  rows: Dict[str, Dict[str, dict]] = {}
  for isa, summaries in _by_class(output_dir, bench_kernels.BENCHMARK.name).items():
    for p in bench_kernels.PROGRAMS:
      for precision in programs.PRECISIONS:
        chosen = bench_kernels.choice(summaries, p.name, precision)
        if chosen:
          rows.setdefault(isa, {}).setdefault("kernels", {}).setdefault(p.name, {})[precision] = chosen
  for isa, summaries in _by_class(output_dir, bench_limit.BENCHMARK.name).items():
    for summary in (s for s in summaries if s["setting"]["batch_size"] == 100):
      for precision in programs.PRECISIONS:
        seconds = _pool_seconds(output_dir, summary, precision)
        if len(seconds) == 2:
          rows.setdefault(isa, {}).setdefault("thread_pool", {}).setdefault(programs.PIPELINE_PARALLEL.name, {})[
              precision] = min(seconds, key=seconds.get)
  for isa, summaries in _by_class(output_dir, "finetune").items():
    for summary in (s for s in summaries if s["setting"]["batch_size"] == 100 and "placements" in s):
      for precision, measured in summary["placements"].items():
        rows.setdefault(isa, {}).setdefault("finetune_placement", {})[precision] = measured["choice"]
  return {isa: rows[isa] for isa in processor_defaults.CLASS_ORDER if isa in rows}


def source(rows: Mapping) -> str:
  """The table as the Python between the markers of processor_defaults.py."""
  return "TABLE: Dict[str, Dict[str, dict]] = " + pprint.pformat(dict(rows), width=116, sort_dicts=False) + "\n"


def write(rows: Mapping, path: str = TARGET) -> None:
  """Replaces the table between the markers of `path`."""
  with open(path) as f:
    text = f.read()
  head, rest = text.split(BEGIN)
  _, tail = rest.split(END)
  with open(path, "w") as f:
    f.write(head + BEGIN + source(rows) + END + tail)


if __name__ == "__main__":
  made = table(os.path.join(ROOT, "results"))
  if "--write" in sys.argv[1:]:
    write(made)
    print(f"wrote the table into {TARGET}")
  else:
    print(source(made), end="")
