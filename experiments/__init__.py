"""The experiments of the report as one pipeline: run list, runner, records, figures and tables.

  presets.py     the run list: entries (one per figure or table) of training runs, at named sizes.
  driver.py      the one runner: starts every training subprocess (skip if recorded, logs, ETA).
  reproduce.py   the command: runs a preset, then draws figures and writes <output_dir>/README.md.
  records.py     reading run records; budget.py, perf_model.py: estimates and the performance model.
  report/        figures, tables and the generated results README, from the records alone.
  benchmarks/    side-by-side timings with one harness (alternation, repeats, spread, summary).
"""

import os

# The repository root: every training program runs from here (`python -m <program>.train`).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
