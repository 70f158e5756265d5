"""Figures, tables and the generated results README from run records alone (no TensorFlow): tables.py computes
what is shown and makes the tables, figures.py draws, readme.py writes results/README.md and the README headline."""
