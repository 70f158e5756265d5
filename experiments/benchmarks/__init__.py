"""Benchmarks: named configurations (program + flags) timed side by side by one harness (`harness.py`).

Each module defines BENCHMARK (its configurations and summary) and runs as
`python -m experiments.benchmarks.<name>`; `catalog.py` lists them for results/README.md.
"""
