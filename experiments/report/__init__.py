"""Figures and the generated results README from run records alone (no TensorFlow): readme.py computes what is
shown and writes the tables and results/README.md (and the top README's headline), figures.py draws."""
