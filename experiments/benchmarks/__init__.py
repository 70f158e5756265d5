"""Benchmarks: configurations timed side by side by one harness (`harness.py`); each module defines BENCHMARK and
runs as `python -m experiments.benchmarks.<name>`; `catalog.py` finds them (each module declaring `BENCHMARK`, in its `order`) for results/README.md and the campaign."""
