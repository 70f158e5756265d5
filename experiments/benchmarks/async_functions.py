"""Benchmark: the size of async_data_parallel's scheduled functions (`--steps_per_function`, K): the program on
--num_devices workers and a parameter server (`common.launch`) at each K of --steps_per_function_values (at most a
worker's share of an epoch, as the record says), alternated. Measures per K examples per second, the speedup over the
smallest K (same repeat), the staleness (mean / max; 0 everywhere: no overlap), and the fastest K (`choice`:
async_data_parallel/config.py DEFAULT_STEPS_PER_FUNCTION). Timings are committed.
  python -m experiments.benchmarks.async_functions --batch_size=100"""

import statistics
from typing import Dict, List

from common.settings import programs
from experiments import harness, presets

ASYNC = programs.ASYNC_DATA_PARALLEL


def configurations(s: harness.Setting) -> List:
  """async_data_parallel on W workers and one parameter server at each K."""
  launcher = ("common.launch", f"--workers={s.num_devices}", "--ps=1")
  return [s.spec(f"k{int(k)}", ASYNC, 1, settings={**dict(ASYNC.timing_settings), "steps_per_function": int(k)},
                 launcher=launcher) for k in s.options["steps_per_function_values"]]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per K: examples/s, speedup over the smallest K, staleness, the K a function ran with; the fastest K."""
  ks = [int(k) for k in s.options["steps_per_function_values"]]
  examples = (s.train_examples // s.batch_size) * s.batch_size * s.pretrain_epochs * len(s.hidden_units)
  functions = {f"k{k}": {
      "steps_per_function_requested": k, "steps_per_function": rs[0]["async"]["steps_per_function"],
      "examples_per_second": harness.spread([examples / r["pretrain_seconds"] for r in rs]),
      "speedup_vs_smallest": harness.ratio_spread(found, f"k{min(ks)}", f"k{k}"),
      "staleness_mean": harness.spread([r["staleness"]["mean"] for r in rs]),
      "staleness_max": max(r["staleness"]["max"] for r in rs)} for k in ks for rs in [found[f"k{k}"]]}
  choice = max(ks, key=lambda k: statistics.median(functions[f"k{k}"]["examples_per_second"]["values"]))
  return {"functions": functions, "choice": choice,
          "fastest_vs_smallest": functions[f"k{choice}"]["speedup_vs_smallest"]}


def details(summary: Dict):
  """The README table: per K, examples/s, speedup over the smallest K, staleness; the fastest is the default."""
  return ("async_data_parallel at each steps per function K (same repeats); the fastest is the default", [
      "K requested", "K run", "examples/s", "× smallest K", "staleness mean", "staleness max", "fastest"], [
          [m["steps_per_function_requested"], m["steps_per_function"], m["examples_per_second"],
           m["speedup_vs_smallest"], m["staleness_mean"], m["staleness_max"],
           "yes" if summary["choice"] == m["steps_per_function_requested"] else ""]
          for m in summary["functions"].values()])


BENCHMARK = presets.Benchmark(
    name="async_functions", runs=configurations, summarize=summarize, details=details,
    defaults={"batch_size": 100, "pretrain_epochs": 2},
    options={"steps_per_function_values": (["1", "4", "8", "32"], "The K values compared.")},
    columns=(("fastest_vs_smallest", "fastest K / smallest K"),), order=8)

if __name__ == "__main__":
  harness.main(BENCHMARK)
