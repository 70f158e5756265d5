"""Helpers shared by the data-parallel benchmarks."""

import statistics
from typing import Dict, Sequence


def spread(values: Sequence[float]) -> Dict[str, object]:
  """{"min", "median", "max", "values"} of `values` (seconds, ratios, ...)."""
  return {"min": min(values), "median": statistics.median(values), "max": max(values), "values": list(values)}
