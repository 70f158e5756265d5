"""Figures and the generated results README from run records alone (no TensorFlow): series.py computes what is
shown, tables.py makes each study's table, headline.py the headline, readme.py writes results/README.md (and the top
README's headline), figures.py draws; `template` reads the prose of a page or section (templates/<name>.md)."""

import os
import string

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")


def template(name: str) -> string.Template:
  """The prose of a generated page or section (`experiments/report/templates/<name>.md`, without its last newline),
  its numbers and tables as $fields."""
  with open(os.path.join(TEMPLATES, f"{name}.md")) as f:
    return string.Template(f.read().removesuffix("\n"))
