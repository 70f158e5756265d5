"""Benchmark: the speed side of the pipeline's schedule frontier (docs/pretraining.md): greedy on one device and
pipeline_parallel on G devices with each schedule arm of `experiments.schedules` (--arms: a subset), pretraining only,
alternated; each arm's speedup over greedy and over the original pipeline.
  python -m experiments.benchmarks.pipeline_schedules --batch_size=100 [--arms=pp,pp_cosine --repeats=1]"""

from typing import Dict, List

from experiments import presets
from experiments import schedules
from experiments import harness


def configurations(s: harness.Setting) -> List[presets.Run]:
  """Greedy on one device, then every pipeline arm of --arms on G devices."""
  wanted = set(s.options["arms"])
  name, greedy, own = schedules.BASELINE
  return [s.spec(name, greedy, 1, own)] + [s.spec(arm, program, s.num_devices, settings)
                                           for arm, program, settings in schedules.PIPELINE_ARMS if arm in wanted]


def summarize(s: harness.Setting, runs: harness.Records) -> Dict:
  """Every pipeline arm's speedup over greedy and over the original pipeline (seconds of one repeat's runs)."""
  base, original = schedules.BASELINE[0], schedules.PIPELINE_ARMS[0][0]
  arms = [name for name in runs if name != base]
  return {"speedup_vs_greedy": {name: harness.ratio_spread(runs, base, name) for name in arms},
          "speedup_vs_original": {name: harness.ratio_spread(runs, original, name) for name in arms
                                  if original in runs and name != original}}


def details(summary) -> tuple:
  """The table under the benchmark's row: each arm's speedup over greedy and over the original pipeline."""
  rows = [[f"`{name}`", spread, summary.get("speedup_vs_original", {}).get(name, "—")]
          for name, spread in summary["speedup_vs_greedy"].items()]
  return "Speedup of each arm", ["arm", "over greedy", "over the original pipeline"], rows


BENCHMARK = presets.Benchmark(
    name="pipeline_schedules", runs=configurations, summarize=summarize, details=details,
    defaults={"pretrain_epochs": 12, "train_examples": 11_000, "batch_size": 100},
    options={"arms": ([arm for arm, _, _ in schedules.PIPELINE_ARMS],
                      "The pipeline arms to time (experiments.schedules).")},
    folder=lambda s: f"b{s.batch_size}" + ("" if len(s.options["arms"]) == len(schedules.PIPELINE_ARMS) else
                                           "_" + "_".join(sorted(s.options["arms"]))) + f"_r{s.repeats}",
    order=16)

if __name__ == "__main__":
  harness.main(BENCHMARK)
