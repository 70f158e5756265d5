"""The experiments of the report as one pipeline: run list, runner, records, figures and tables.

  presets.py     the registry of entries (one per figure or table): title, sizes per preset, runs, table, figure.
  driver.py      the one runner: starts every training subprocess (skip if recorded, logs, ETA).
  reproduce.py   the command: runs a preset, then draws figures and writes <output_dir>/README.md.
  records.py     reading run records and their provenance; budget.py, perf_model.py: estimates and models.
  check_ratios.py  every ratio of the report, checked to take both sides from one machine and one code.
  report/        figures, tables and the generated results README, from the records alone (no TensorFlow).
  benchmarks/    side-by-side timings with one harness (alternation, repeats, spread, summary).
"""

import importlib
import os

# The repository root: every training program runs from here (`python -m <program>.train`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(dotted: str):
  """The object a dotted path names, e.g. "experiments.report.tables.scaling" (imported on use).

  Raises:
    ImportError, AttributeError: no such module or attribute.
  """
  module, _, name = dotted.rpartition(".")
  return getattr(importlib.import_module(module), name)
