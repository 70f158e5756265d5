"""The experiments of the report (docs/experiments.md): studies and runs (presets.py), the runner (driver.py), the
command (reproduce.py), records (records.py, check_ratios.py), performance models, the report and the benchmarks."""

import importlib
import os

# The repository root: every training program runs from here (`python -m <program>.train`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(dotted: str):
  """The object a dotted path names (imported on use), e.g. "experiments.report.tables.scaling"."""
  module, _, name = dotted.rpartition(".")
  return getattr(importlib.import_module(module), name)
