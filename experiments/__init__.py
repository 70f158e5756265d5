"""The experiments of the report (docs/experiments.md), in one direction: declarations (presets.py) and records
(records.py) -> the runner and rendering helpers (driver.py, harness.py, perf_model.py, sweep.py, render/) -> the
studies and benchmarks (studies/, benchmarks/: one file each) -> the report (report/) -> the command (reproduce.py, the
one place that finds the study files). `.importlinter` states the layers."""

import os

# The repository root: every training program runs from here (`python -m <program>.train`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
