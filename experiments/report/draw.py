"""Every figure: <output_dir>/figures/<study>.png of each study given with records, and each benchmark's figure."""

import os
from typing import Callable, Dict, List, Optional

from experiments import presets, records
from experiments.render import series


def make(data: records.StudyRecords, others: Dict[str, series.Data]):
  """The figure of `data`'s study drawn from `data` and the other folders' records of it (`others`: `series.others`)."""
  return data.declared.figure(data, series.others_of(others, data.study))


def save(fig, path: str) -> None:
  """Writes the figure as PNG, creating its folder."""
  os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
  fig.savefig(path, dpi=110)


def draw(output_dir: str, registry: presets.Registry, out: Callable[[str], None] = print) -> List[str]:
  """Draws the figures of every study of `registry` that has records, and every benchmark's; returns their paths."""
  written, found, others = [], series.load_all(output_dir, registry), series.others(output_dir, registry)
  for study in (e.name for e in registry.studies if e.figure):
    if (data := found[study]) is None:
      out(f"[figures] {study}: no records yet, no figure")
      continue
    written.append(series.figure_path(output_dir, study))
    save(make(data, others), written[-1])
    out(f"[figures] {study}: {written[-1]} (preset {data.preset}, {len(data.runs)} records)")
  return written + [p for p in (benchmark_figure(output_dir, b) for b in registry.benchmarks if b.figure) if p]


def benchmark_figure(output_dir: str, benchmark: presets.Benchmark) -> Optional[str]:
  """<output_dir>/figures/<its figure_file>: a benchmark's `figure` of its summaries; None without summaries or when
  the figure draws none of them (returns None)."""
  if not (found := records.load_summaries(output_dir, benchmark.name)) or (fig := benchmark.figure(found)) is None:
    return None
  path = os.path.join(output_dir, "figures", benchmark.figure_file)
  save(fig, path)
  return path
