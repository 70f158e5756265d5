"""Benchmarks: configurations timed side by side by one harness (`harness.py`); each module defines BENCHMARK and
runs as `python -m experiments.benchmarks.<name>`; `catalog.py` lists them for results/README.md."""
