"""Benchmark: the cpu preset's strategy comparison, alternated and repeated: every program of the
`strategy_comparison` entry (greedy and every multi-device program) at that entry's size, on its default devices and
threads, pretraining only, repeat after repeat (`harness`). Measures each program's speedup over greedy in the same
repeat: the entry's single runs, with a spread.

Usage (timings are committed: run alone on the machine):
  python -m experiments.benchmarks.strategies
"""

from typing import Dict, List

from common import programs
from experiments import presets
from experiments.benchmarks import harness


def configurations(s: harness.Setting) -> List:
  """The strategy_comparison entry's runs at the setting's sizes (the cpu preset's by default)."""
  return [s.run(r.name, programs.get(r.program), r.flag("num_devices"), extra=r.extra_flags)
          for r in presets.build("cpu")["strategy_comparison"].runs]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Every program's speedup over greedy, repeat by repeat."""
  base = programs.GREEDY.run_name
  return {"speedup_vs_greedy": {n: harness.ratio_spread(found, base, n) for n in found if n != base}}


BENCHMARK = harness.Benchmark(
    name="strategies", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "1000,1000,1000,1000", "batch_size": 5000, "pretrain_epochs": 10,
              "train_examples": 10_000, "num_devices": 2, "repeats": 3},
    folder=lambda s: f"b{s.batch_size}", summary_file=lambda s: f"summary_b{s.batch_size}.json")

if __name__ == "__main__":
  harness.main(BENCHMARK)
