"""Benchmark: finetuning on one device against every device of the run, at the full-size finetuning batch.

pipeline_parallel (one thread per device by default) with --num_devices=1 and with --num_devices=G, alternated
repeat after repeat (`harness`), in each precision of --precisions; finetuning runs on all the run's devices
(`common.lifecycle`: a MirroredStrategy over them). Measures, per precision: finetuning seconds on 1 device / on G
devices in the same repeat (the short pretraining is not compared).

Usage (timings are committed: run alone on the machine):
  python -m experiments.benchmarks.finetune
"""

from typing import Dict, List

from common import programs
from experiments.benchmarks import harness


def _name(devices: int, precision: str) -> str:
  return f"g{devices}_{precision}"


def configurations(s: harness.Setting) -> List:
  """pipeline_parallel on 1 and on G devices, finetuning --finetune_epochs epochs, in each precision."""
  return [s.run(_name(g, precision), programs.PIPELINE_PARALLEL, g,
                extra=(f"--finetune_epochs={s.options['finetune_epochs']}", f"--precision={precision}"))
          for precision in s.options["precisions"] for g in (1, s.num_devices)]


def summarize(s: harness.Setting, found: harness.Records) -> Dict:
  """Per precision: finetuning seconds on each device count, and 1 device / G devices (same repeat)."""
  out = {}
  for precision in s.options["precisions"]:
    one, many = found[_name(1, precision)], found[_name(s.num_devices, precision)]
    out[f"finetune_speedup_{precision}"] = harness.spread(
        [a["finetune"]["seconds"] / b["finetune"]["seconds"] for a, b in zip(one, many)])
    out[f"finetune_seconds_{precision}"] = {
        str(g): harness.spread([r["finetune"]["seconds"] for r in rs]) for g, rs in ((1, one), (s.num_devices, many))}
    out[f"finetune_replicas_{precision}"] = [r["finetune"].get("replicas", 1) for r in many]
  return out


BENCHMARK = harness.Benchmark(
    name="finetune", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "2000,2000,2000,2000", "batch_size": 100, "pretrain_epochs": 1,
              "train_examples": 22_000, "num_devices": 2, "repeats": 3},
    options={"finetune_epochs": (2, "Finetuning epochs of every run."),
             "precisions": (list(programs.PRECISIONS), "Precisions to compare the device counts in.")},
    folder=lambda s: "records", summary_file=lambda s: "summary.json",
    columns=tuple((f"finetune_speedup_{p}", f"finetuning 1 device / all devices, {p}") for p in programs.PRECISIONS),
    campaign=({"precisions": list(programs.PRECISIONS)},))

if __name__ == "__main__":
  harness.main(BENCHMARK)
