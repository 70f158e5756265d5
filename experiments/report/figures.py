"""Draws <output_dir>/figures/<entry>.png for each entry that has a figure and records (its `Entry.figure`,
given the entry's records and the other machines'), and the equal-cores benchmark's figure."""

import os
from typing import Callable, List, Optional, Sequence

from experiments import load
from experiments import presets
from experiments import records
from experiments.report import equal_cores
from experiments.report import style


def figure_path(output_dir: str, entry: str) -> str:
  """<output_dir>/figures/<entry>.png"""
  return os.path.join(output_dir, "figures", f"{entry}.png")


def make(output_dir: str, entry: str, data: records.EntryData):
  """The figure of `entry` drawn from `data` and the other machines' records in `output_dir`."""
  return load(presets.get(entry).figure)(data, records.other_machines(output_dir, entry))


def draw(output_dir: str, entries: Optional[Sequence[str]] = None, out: Callable[[str], None] = print) -> List[str]:
  """Draws the figures of `entries` (default: every entry, and equal_cores) that have records; returns the
  paths written."""
  os.makedirs(os.path.join(output_dir, "figures"), exist_ok=True)
  written = []
  for entry in (e.name for e in presets.ENTRIES if e.figure and (entries is None or e.name in entries)):
    data = records.EntryData.load(output_dir, entry)
    if data is None:
      out(f"[figures] {entry}: no records yet, no figure")
      continue
    path = figure_path(output_dir, entry)
    style.save(make(output_dir, entry, data), path)
    out(f"[figures] {entry}: {path} (preset {data.preset}, {len(data.runs)} records)")
    written.append(path)
  path = equal_cores.draw(output_dir) if entries is None else None
  return written + ([path] if path else [])
