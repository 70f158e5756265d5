"""Figures, tables and the generated results README, computed from run records alone (no TensorFlow).

  series.py    what each figure and table shows, computed from the records and benchmark summaries.
  tables.py    per entry: a markdown table beside the report's numbers, and what agrees or differs.
  figures.py   every figure (drawing only).
  readme.py, headline.py   results/README.md (with the benchmarks' and other machines' tables) and its headline.
  style.py     names, number formats, markdown tables.
"""
