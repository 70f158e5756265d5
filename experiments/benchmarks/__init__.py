"""Benchmarks: configurations timed side by side by one harness (`experiments/harness.py`); each module declares
BENCHMARK (a `presets.Benchmark`), where `experiments.reproduce` finds it (in their `order`) for results/README.md,
and runs as `python -m experiments.benchmarks.<name>`."""
