"""The experiments of the report as one pipeline (docs/experiments.md): the registry of entries and their runs
(presets.py), the one runner with its estimates (driver.py), the command (reproduce.py), run records and their
provenance (records.py, check_ratios.py), performance models (perf_model.py), the report drawn from the records
alone (report/) and the benchmarks with their one harness (benchmarks/)."""

import importlib
import os

# The repository root: every training program runs from here (`python -m <program>.train`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(dotted: str):
  """The object a dotted path names (imported on use), e.g. "experiments.report.tables.scaling"."""
  module, _, name = dotted.rpartition(".")
  return getattr(importlib.import_module(module), name)
