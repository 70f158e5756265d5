"""Figures and the generated results README from run records alone (no TensorFlow): series.py computes what is
shown, tables.py makes each study's table, headline.py the headline, readme.py writes results/README.md (and the top
README's headline), figures.py draws."""
