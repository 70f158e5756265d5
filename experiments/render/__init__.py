"""The rendering helpers of the studies, the benchmarks and the report, from run records alone (no TensorFlow):
series.py computes what is shown (and gathers a study's records), tables.py the number formats and shared tables,
figures.py the drawing, cells.py the headline's cells; `template` reads the prose of a page or section
(experiments/report/templates/<name>.md)."""

import os
import string

TEMPLATES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "report", "templates")


def template(name: str) -> string.Template:
  """The prose of a generated page or section (`experiments/report/templates/<name>.md`, without its last newline),
  its numbers and tables as $fields."""
  with open(os.path.join(TEMPLATES, f"{name}.md")) as f:
    return string.Template(f.read().removesuffix("\n"))
