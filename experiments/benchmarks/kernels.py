"""Benchmark: every program that can run both with --kernels=xla and --kernels=tf, at one --precision
(docs/kernels_and_threads.md): per program xla seconds / tf seconds per repeat, cores busy, the faster path and
whether every repeat agreed (`choice`: the registry's default per program and precision).
  python -m experiments.benchmarks.kernels --batch_size=100 [--precision=mixed_bfloat16]"""

import statistics
from typing import List, Mapping, Optional, Sequence

from common.settings import programs
from experiments import harness, presets

PROGRAMS = tuple(p for p in programs.PROGRAMS if len(p.kernel_paths) > 1)
PATHS = ("xla", "tf")
F32 = programs.PRECISIONS[0]


def configurations(s: harness.Setting) -> List:
  """Every program with each kernel path, timed: <program>_xla and <program>_tf."""
  return [s.spec(f"{p.name}_{path}", p, p.devices_for(s.num_devices),
                 settings={"kernels": path, "precision": s.options["precision"], **dict(p.timing_settings)})
          for p in PROGRAMS for path in PATHS]


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Per program: seconds and cores busy per path, xla / tf per repeat, the faster path (module docstring)."""
  out = {}
  for p in PROGRAMS:
    ratio = harness.ratio_spread(runs, f"{p.name}_xla", f"{p.name}_tf")
    faster = min(PATHS, key=lambda path: statistics.median(r["pretrain_seconds"] for r in runs[f"{p.name}_{path}"]))
    out[p.name] = {"devices": p.devices_for(s.num_devices), "xla_over_tf": ratio,
                   "cores_busy": {path: harness.cores_busy(runs[f"{p.name}_{path}"]) for path in PATHS},
                   "faster": faster, "all_repeats_agree": all((v > 1) == (faster == "tf") for v in ratio["values"])}
  return {"programs": out, **{f"xla_over_tf_{p.name}": out[p.name]["xla_over_tf"] for p in PROGRAMS}}


def precision_of(summary: Mapping) -> str:
  """The precision a kernels summary measured (summaries before the option: float32)."""
  return summary.get("setting", {}).get("precision", F32)


def choice(summaries: Sequence[Mapping], program: str, precision: str = F32) -> Optional[str]:
  """The default kernel path of `program` at `precision` by the summaries (tests check the registry's): the path faster
  in every repeat of more summaries than the other, None when neither is (no measured difference, or not measured)."""
  mine = [s for s in summaries if precision_of(s) == precision and program in s["programs"]]
  wins = {path: sum(s["programs"][program]["all_repeats_agree"] and s["programs"][program]["faster"] == path
                    for s in mine) for path in PATHS}
  return None if wins["xla"] == wins["tf"] else max(PATHS, key=wins.get)


BENCHMARK = presets.Benchmark(
    name="kernels", runs=configurations, summarize=summarize, defaults={"batch_size": 100},
    options={"precision": (F32, "Precision (--precision) of every run.")},
    folder=lambda s: f"b{s.batch_size}" + ("" if s.options["precision"] == F32 else f"_{s.options['precision']}"),
    columns=tuple((f"xla_over_tf_{p.name}", f"{p.name}: xla s / tf s") for p in PROGRAMS), order=13)

if __name__ == "__main__":
  harness.main(BENCHMARK)
