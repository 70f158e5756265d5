"""Benchmark: the cpu preset's `strategy_comparison` (the baseline and every multi-device program at that study's
size, on its devices and threads), pretraining only, alternated repeat after repeat: each program's speedup over
the baseline in the same repeat, the study's single runs with a spread. Timings are committed: run alone.
  python -m experiments.benchmarks.strategies"""

import dataclasses
from typing import Dict, List

from common.settings import programs
from experiments import presets
from experiments.benchmarks import harness


def configurations(s: harness.Setting) -> List:
  """The strategy_comparison study's runs at the setting's sizes (the cpu preset's by default)."""
  return [s.spec(r.name, programs.get(r.program), r.config.num_devices, {
      k: v for k, v in dataclasses.asdict(r.config).items() if k not in presets.SHARED + ("program",)})
          for r in presets.build("cpu")["strategy_comparison"].runs]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Every program's speedup over the baseline, repeat by repeat."""
  return {"speedup_vs_greedy": harness.speedups(found, programs.baseline().run_name)}


BENCHMARK = presets.Study(
    name="strategies", runs=configurations, summarize=summarize,
    defaults={"batch_size": 5000, "pretrain_epochs": 10, "train_examples": 10_000}, order=1)
STUDIES = (BENCHMARK,)

if __name__ == "__main__":
  harness.main(BENCHMARK)
