"""Draws <output_dir>/figures/<entry>.png for each entry with records, from the records alone (other
machines' records beside this one's in the scaling figures)."""

import os
from typing import Callable, Dict, Iterable, List

from experiments import records
from experiments.report import accuracy
from experiments.report import comparison
from experiments.report import data_parallel
from experiments.report import pipeline
from experiments.report import scaling
from experiments.report import style

# Entry -> draw(EntryData, {machine: EntryData}) -> figure. Entries without one are tables only.
DRAW: Dict[str, Callable] = {
    "mp_scaling_b100": scaling.draw,
    "mp_scaling_b5000": scaling.draw,
    "dp_scaling": scaling.draw,
    "dp_batch_sweep": data_parallel.draw_sweep,
    "dp_op_profile": data_parallel.draw_profile,
    "mp_vs_dp": comparison.draw_mp_vs_dp,
    "accuracy_vs_epochs": accuracy.draw_accuracy,
    "dp_accuracy": accuracy.draw_dp_accuracy,
    "strategy_comparison": comparison.draw_strategy_comparison,
    "convergence": comparison.draw_convergence,
    "pp_scaling": pipeline.draw,
}
_WITH_OTHER_MACHINES = ("mp_scaling_b100", "mp_scaling_b5000", "dp_scaling")


def figure_path(output_dir: str, entry: str) -> str:
  """<output_dir>/figures/<entry>.png"""
  return os.path.join(output_dir, "figures", f"{entry}.png")


def make(output_dir: str, entry: str, data: records.EntryData):
  """The figure of `entry` drawn from `data` (and the other machines' records in `output_dir`)."""
  if entry in _WITH_OTHER_MACHINES:
    return DRAW[entry](data, records.other_machines(output_dir, entry))
  return DRAW[entry](data)


def draw(output_dir: str, entries: Iterable[str], out: Callable[[str], None] = print) -> List[str]:
  """Draws the figures of `entries` that have one and have records; returns the paths written."""
  os.makedirs(os.path.join(output_dir, "figures"), exist_ok=True)
  written = []
  for entry in (e for e in entries if e in DRAW):
    data = records.EntryData.load(output_dir, entry)
    if data is None:
      out(f"[figures] {entry}: no records yet, no figure")
      continue
    path = figure_path(output_dir, entry)
    style.save(make(output_dir, entry, data), path)
    out(f"[figures] {entry}: {path} (preset {data.preset}, {len(data.runs)} records)")
    written.append(path)
  return written
