"""Benchmark: the cpu preset's `strategy_comparison` (the baseline and every multi-device program at that study's
size, on its devices and threads), pretraining only, alternated repeat after repeat: each program's speedup over
the baseline in the same repeat, the study's single runs with a spread. Timings are committed: run alone.
  python -m experiments.benchmarks.strategies"""

import os
from typing import Dict, List

from common.settings import programs
from experiments import harness, presets, records
from experiments.render import cells

NAME = "strategies"
GREEDY, MP, DP = programs.GREEDY, programs.MODEL_PARALLEL, programs.DATA_PARALLEL
REPORTED = presets.COMPARISON_REPORTED  # the report's seconds per program (strategy_comparison's)


def configurations(s: harness.Setting) -> List:
  """The strategy_comparison study's runs at the setting's sizes (the cpu preset's by default)."""
  return [s.spec(r.name, programs.get(r.program), r.config.num_devices, {
      k: v for k, v in vars(r.config).items() if k not in presets.SHARED + ("program",)})
          for r in presets.comparison_runs(dict(presets.COMPARISON_SIZES["cpu"], dp_settings={}))]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Every program's speedup over the baseline, repeat by repeat."""
  return {"speedup_vs_greedy": harness.speedups(found, programs.baseline().run_name)}


def speedups(output_dir: str, names: List[str], used: List[dict]) -> str:
  """The headline's cell: the speedups over greedy of the configurations `names` at batch 5000, with spreads."""
  if not (s := cells.summary(output_dir, NAME, "summary_b5000.json", used)):
    return "not measured yet"
  labels = {p.run_name: p.name for p in programs.PROGRAMS}
  found = records.records_of(os.path.join(output_dir, "benchmarks", NAME), s)
  return ", ".join(f"{cells.short(labels[n])} {cells.spread(s['speedup_vs_greedy'][n])}"
                   f"{cells.staleness(found.get(n, []))}"
                   for n in names if n in s["speedup_vs_greedy"]) + cells.noisy_note(s)


HEADLINE = (
    presets.Headline(1, "Speedup over greedy, 2 devices, 4 × 1000 units, batch 5000, 3 repeats",
                     f"4 GPUs, 4 × 2000: model parallel {REPORTED[GREEDY.name] / REPORTED[MP.name]:.2f}×, "
                     f"data parallel {REPORTED[GREEDY.name] / REPORTED[DP.name]:.2f}×",
                     lambda output_dir, data, used: speedups(output_dir, ["mp", "dp"], used)),
    presets.Headline(2, "Beyond the report, same benchmark", "—",
                     lambda output_dir, data, used: speedups(output_dir, ["pp", "adp"], used)))

BENCHMARK = presets.Benchmark(
    name=NAME, headline=HEADLINE, runs=configurations, summarize=summarize,
    defaults={"batch_size": 5000, "pretrain_epochs": 10, "train_examples": 10_000}, order=1)

if __name__ == "__main__":
  harness.main(BENCHMARK)
