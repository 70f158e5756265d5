"""Benchmarks, timed side by side by one harness (`experiments/harness.py`): each module declares BENCHMARK (a
`presets.Benchmark`, found by `experiments.reproduce`) and runs as `python -m experiments.benchmarks.<name>`."""
