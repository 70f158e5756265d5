"""Regenerates every figure and table of the report: runs the training programs of a preset, then draws
<output_dir>/figures/<entry>.png and writes <output_dir>/README.md from the run records alone.

Usage:
  python -m experiments.reproduce --preset=cpu                      # everything, about an hour on 2 cores
  python -m experiments.reproduce --preset=paper --only=dp_accuracy # one entry at the report's size
  python -m experiments.reproduce --preset=cpu --only=mp_scaling_b100/h4_g2,dp_scaling
  python -m experiments.reproduce --preset=cpu --dry_run            # the plan with estimated minutes
  python -m experiments.reproduce --figures_only                    # redraw from existing records

Records go to <output_dir>/runs/<entry>/<preset>_<run>.json; a record that exists is not run again.
Program logs (and checkpoints of the long accuracy runs) go to --work_dir.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # budget estimates import TensorFlow (FLOP counts)

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

from experiments import budget  # noqa: E402
from experiments import driver  # noqa: E402
from experiments import figures  # noqa: E402
from experiments import presets  # noqa: E402
from experiments import results_readme  # noqa: E402

_PRESET = flags.DEFINE_enum("preset", "cpu", list(presets.PRESETS),
                            "Experiment sizes: the report's (paper), shrunk to ~1 hour on 2 cores (cpu), or seconds (smoke).")
_ONLY = flags.DEFINE_list("only", [], "Entries (or ENTRY/RUN) to run; default all: " + ", ".join(presets.ENTRIES))
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results", "Where runs/, figures/ and README.md go.")
_WORK_DIR = flags.DEFINE_string("work_dir", "scratch/reproduce", "Program logs and checkpoints of resumable runs.")
_JOBS = flags.DEFINE_integer("jobs", 1, "Runs at once; more than 1 distorts timings, so only with --preset=smoke.",
                             lower_bound=1)
_DRY_RUN = flags.DEFINE_bool("dry_run", False, "Print the runs with estimated minutes; run nothing.")
_FIGURES_ONLY = flags.DEFINE_bool("figures_only", False, "Run nothing; draw figures and README from existing records.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
  preset = _PRESET.value
  if _JOBS.value > 1 and preset != "smoke":
    print("error: --jobs > 1 runs programs side by side and distorts their timings; use it only with --preset=smoke.",
          file=sys.stderr)
    sys.exit(1)
  try:
    entries = presets.select(presets.build(preset), _ONLY.value)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(1)
  cores = os.cpu_count() or 1
  jobs = driver.plan(entries, preset, _OUTPUT_DIR.value, _WORK_DIR.value, cores)
  if _DRY_RUN.value:
    estimates = budget.entry_seconds(entries, cores)
    for name, entry in entries.items():
      print(f"{name}: {len(entry.runs)} runs, estimated {budget.minutes(estimates[name])}")
      for job in (j for j in jobs if j.entry == name):
        print(f"  {job.run.stored_name}: {job.run.summary()} ~{job.estimate:.0f} s -> {job.record}")
    print(f"total estimated {budget.minutes(sum(estimates.values()))} on {cores} cores")
    return
  if not _FIGURES_ONLY.value:
    try:
      driver.Driver(preset, _OUTPUT_DIR.value, _JOBS.value).run(jobs)
    except driver.RunFailedError as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(1)
  drawn = _ONLY.value and [name for name in presets.ENTRIES if name in entries] or list(presets.ENTRIES)
  figures.draw(_OUTPUT_DIR.value, drawn)
  print(f"[reproduce] wrote {results_readme.write(_OUTPUT_DIR.value)}")


if __name__ == "__main__":
  app.run(main)
