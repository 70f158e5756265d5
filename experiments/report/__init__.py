"""Figures, tables and the generated results README, computed from run records alone.

  series.py        what each figure and table shows, computed from the records.
  tables.py        per entry: a markdown table beside the report's numbers, and what agrees or differs.
  other_tables.py  benchmark summaries, another machine's single runs, the finetuning sweeps (history).
  scaling.py, accuracy.py, comparison.py, data_parallel.py   the figures (drawing only).
  style.py         colours, names, footers, number formats.
  figures.py, readme.py   every figure; results/README.md and the top README's headline.
"""
