"""Figures, tables and the generated results README from run records alone (no TensorFlow): series.py computes,
tables.py and figures.py show, readme.py writes results/README.md and the top README's headline."""
