"""Benchmarks: configurations timed side by side by one harness (`experiments/harness.py`); each module defines
BENCHMARK (a `presets.Study` with `summarize`), runs as `python -m experiments.benchmarks.<name>`, and lists it in
STUDIES, where `experiments.reproduce` finds it (in their `order`) for results/README.md."""
