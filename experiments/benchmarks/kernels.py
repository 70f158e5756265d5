"""Benchmark: every program with XLA and with TensorFlow's default kernels, side by side.

The measurement behind each program's kernel path (its registry entry in `common/programs.py`,
docs/kernels_and_threads.md): greedy and sync_layerwise on one device, model_parallel, data_parallel and
pipeline_parallel on --num_devices devices with their default thread pool, each program once with
`--kernels=xla` and once with `--kernels=tf`, pretraining only, 1 intra-op thread per device, all alternated
repeat after repeat (`harness`). Measures, per program, from the run records:
  * pretraining seconds with each path, and xla seconds / tf seconds per repeat (> 1: TF's kernels were faster);
  * cores busy with each path (CPU seconds / wall seconds of pretraining): a multi-device program whose XLA steps
    run one after another on the logical devices keeps fewer cores busy than with TF's kernels;
  * the faster path (lower median seconds) and whether every repeat agreed (`all_repeats_agree`).

Usage (timings are committed: run alone on the machine, e.g. under an exclusive lock):
  python -m experiments.benchmarks.kernels --batch_size=100
  python -m experiments.benchmarks.kernels --batch_size=1000
Writes <output_dir>/b<batch>/<program>_<kernels>_r<k>.json and <output_dir>/summary_b<batch>.json.
"""

import statistics
from typing import Dict, List, Mapping, Optional, Sequence

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


def _cores_busy(runs: List[dict]) -> Dict[str, object]:
  return harness.spread([r["pretrain_cpu_seconds"] / r["pretrain_seconds"] for r in runs])


def summarize(s: harness.Setting, runs: harness.Records) -> dict:
  """Per program: seconds and cores busy per path, xla / tf per repeat, the faster path (module docstring)."""
  out = {}
  for p in PROGRAMS:
    program, xla, tf = p.name, f"{p.name}_xla", f"{p.name}_tf"
    ratio = harness.ratio_spread(runs, xla, tf)
    medians = {p: statistics.median(r["pretrain_seconds"] for r in runs[f"{program}_{p}"]) for p in PATHS}
    faster = min(PATHS, key=medians.get)
    out[program] = {
        "devices": 1 if p.one_device else s.num_devices,
        "xla_over_tf": ratio,
        "cores_busy": {p: _cores_busy(runs[f"{program}_{p}"]) for p in PATHS},
        "faster": faster,
        "all_repeats_agree": all((v > 1) == (faster == "tf") for v in ratio["values"]),
    }
  return {"programs": out, **{f"xla_over_tf_{p.name}": out[p.name]["xla_over_tf"] for p in PROGRAMS}}


def choice(summaries: Sequence[Mapping], program: str) -> Optional[str]:
  """The kernel path `program` should take by default, by the kernels benchmark's summaries.

  A path wins a summary when it was faster in every repeat of it; the choice is the path that won more
  summaries (over batch sizes, machines), None when neither did (no measured difference: either is right).
  Every program's registered default is tested against it (tests/test_reproduce.py).
  """
  wins = {p: 0 for p in PATHS}
  for summary in summaries:
    measured = summary["programs"][program]
    if measured["all_repeats_agree"]:
      wins[measured["faster"]] += 1
  if wins["xla"] == wins["tf"]:
    return None
  return max(PATHS, key=wins.get)


BENCHMARK = harness.Benchmark(
    name="kernels", configurations=configurations, summarize=summarize,
    defaults={"hidden_units": "1000,1000,1000,1000", "batch_size": 100, "pretrain_epochs": 2,
              "train_examples": 22_000, "num_devices": 2, "repeats": 3},
    columns=tuple((f"xla_over_tf_{p.name}", f"{p.name}: xla s / tf s") for p in PROGRAMS))

if __name__ == "__main__":
  harness.main(BENCHMARK)
