"""Regenerates every figure and table: runs a preset's missing records, then draws <output_dir>/figures/ and writes
<output_dir>/README.md from the records alone (for results/, also the headline of the top README.md).
  python -m experiments.reproduce --preset=cpu [--only=STUDY[/RUN],...] [--dry_run]  # ~1 hour on 2 cores
  python -m experiments.reproduce --figures_only                                    # redraw from the records"""

import importlib
import os
import pkgutil
import sys

from absl import app, flags

from experiments import ROOT, benchmarks, driver, presets, records
from experiments import studies as study_files
from experiments.report import draw, readme


def discover() -> presets.Registry:
  """Every study (the `STUDIES` of each module of experiments/studies/) and benchmark (each experiments/benchmarks/
  module's `BENCHMARK`): the one place the study files are found; ValueError for two of one name or order."""
  def modules(package):
    return [importlib.import_module(f"{package.__name__}.{m.name}") for m in pkgutil.iter_modules(package.__path__)]
  return presets.Registry(tuple(e for m in modules(study_files) for e in getattr(m, "STUDIES", ())), tuple(
      m.BENCHMARK for m in modules(benchmarks) if hasattr(m, "BENCHMARK"))).check()


REGISTRY = discover()

_PRESET = flags.DEFINE_enum("preset", "cpu", list(presets.PRESETS),
                            "Sizes: the report's (paper), ~1 hour on 2 cores (cpu), seconds (smoke), or a study "
                            "(mid: large_batch, full: full_size, pretraining: the pretraining studies).")
_ONLY = flags.DEFINE_list("only", [], "Studies (or STUDY/RUN) to run; default all of the preset's: "
                          + ", ".join(REGISTRY.names))
_OUTPUT_DIR = flags.DEFINE_string("output_dir", "results", "Where the records, figures/ and README.md go.")
_WORK_DIR = flags.DEFINE_string("work_dir", "scratch/reproduce", "Program logs and checkpoints of resumable runs.")
_JOBS = flags.DEFINE_integer("jobs", 1, "Runs at once; more than 1 distorts timings, so only with --preset=smoke.",
                             lower_bound=1)
_DRY_RUN = flags.DEFINE_bool("dry_run", False, "List the runs (with the seconds and machine of those that have a "
                              "record); run nothing.")
_FIGURES_ONLY = flags.DEFINE_bool("figures_only", False, "Run nothing; draw every figure and table from the records.")


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f"Unexpected positional arguments: {' '.join(argv[1:])}")
  preset, output_dir = _PRESET.value, _OUTPUT_DIR.value
  untimed = _ONLY.value and all(name.partition("/")[0] in REGISTRY.names and REGISTRY.get(
      name.partition("/")[0]).timed is False for name in _ONLY.value)
  if _JOBS.value > 1 and preset != "smoke" and not untimed:
    sys.exit("error: --jobs > 1 runs programs side by side and distorts their timings; use it only with "
             "--preset=smoke or with --only naming studies whose runs are not timed (the pretraining studies).")
  if _FIGURES_ONLY.value and not os.path.isdir(output_dir):
    sys.exit(f"error: --output_dir={output_dir}: no such directory; --figures_only draws from the records there.")
  # One pass per declared round: a later round's runs are built from the records the passes before wrote (`later`).
  for _ in range(0 if _FIGURES_ONLY.value else REGISTRY.rounds):
    try:
      found = records.table(output_dir, REGISTRY.layouts)
      jobs = driver.runnable_here(driver.plan(presets.select(presets.build(REGISTRY, preset, found), _ONLY.value),
                                              preset, output_dir, _WORK_DIR.value))
      if _DRY_RUN.value:
        print("\n".join(driver.listing(jobs)))
        return
      driver.run(jobs, f"reproduce {preset}", os.path.join(output_dir, "runs", "driver_log.jsonl"), _JOBS.value)
    except (ValueError, driver.RunFailedError) as e:
      sys.exit(f"error: {e}")  # status 1, the message on stderr
  draw.draw(output_dir, REGISTRY)
  print(f"[reproduce] wrote {readme.write(output_dir, REGISTRY)}")
  if os.path.abspath(output_dir) == os.path.join(ROOT, "results"):
    print(f"[reproduce] wrote the headline of {readme.write_top_readme(output_dir, REGISTRY)}")


if __name__ == "__main__":
  app.run(main)
