"""Rendering from run records alone (no TensorFlow): series.py what is shown (and a study's records), tables.py number
formats and shared tables, figures.py drawing, cells.py the headline's cells; `template`: a page's prose."""

import os
import string

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "report", "templates")


def template(name: str) -> string.Template:
  """The prose of a page or section (experiments/report/templates/<name>.md, no last newline), numbers as $fields."""
  with open(os.path.join(TEMPLATES, f"{name}.md")) as f:
    return string.Template(f.read().removesuffix("\n"))
