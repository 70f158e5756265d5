"""Benchmark: every program with --kernels=xla and --kernels=tf (docs/kernels_and_threads.md): per program xla
seconds / tf seconds per repeat, cores busy, the faster path and whether every repeat agreed (`choice`).
  python -m experiments.benchmarks.kernels --batch_size=100"""

import statistics
from typing import List, Mapping, Optional, Sequence

from common import programs
from experiments.benchmarks import harness

# Every registered program: on one device, or on --num_devices.
PROGRAMS = programs.PROGRAMS
PATHS = ("xla", "tf")


def configurations(s: harness.Setting) -> List:
  """Every program with each kernel path: <program>_xla and <program>_tf."""
  return [s.run(f"{p.name}_{path}", p, 1 if p.one_device else s.num_devices,
                extra=(f"--kernels={path}",) + (("--profile_steps=0",) if p is programs.DATA_PARALLEL else ()))
          for p in PROGRAMS for path in PATHS]


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Per program: seconds and cores busy per path, xla / tf per repeat, the faster path (module docstring)."""
  out = {}
  for p in PROGRAMS:
    ratio = harness.ratio_spread(runs, f"{p.name}_xla", f"{p.name}_tf")
    faster = min(PATHS, key=lambda path: statistics.median(r["pretrain_seconds"] for r in runs[f"{p.name}_{path}"]))
    out[p.name] = {"devices": 1 if p.one_device else s.num_devices, "xla_over_tf": ratio,
                   "cores_busy": {path: harness.cores_busy(runs[f"{p.name}_{path}"]) for path in PATHS},
                   "faster": faster, "all_repeats_agree": all((v > 1) == (faster == "tf") for v in ratio["values"])}
  return {"programs": out, **{f"xla_over_tf_{p.name}": out[p.name]["xla_over_tf"] for p in PROGRAMS}}


def choice(summaries: Sequence[Mapping], program: str) -> Optional[str]:
  """The default kernel path of `program` by the summaries: the path faster in every repeat of more summaries than
  the other, None when neither is (no measured difference); tests/test_reproduce.py checks the registry against it."""
  wins = {path: sum(s["programs"][program]["all_repeats_agree"] and s["programs"][program]["faster"] == path
                    for s in summaries) for path in PATHS}
  return None if wins["xla"] == wins["tf"] else max(PATHS, key=wins.get)


BENCHMARK = harness.Benchmark(
    name="kernels", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "1000,1000,1000,1000", "batch_size": 100, "pretrain_epochs": 2,
              "train_examples": 22_000, "num_devices": 2, "repeats": 3},
    columns=tuple((f"xla_over_tf_{p.name}", f"{p.name}: xla s / tf s") for p in PROGRAMS))

if __name__ == "__main__":
  harness.main(BENCHMARK)
