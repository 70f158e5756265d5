"""Draws <output_dir>/figures/<entry>.png for each entry from the records in <output_dir>/runs/ alone."""

import os
from typing import Callable, Dict, Iterable, List

from experiments import plot_accuracy
from experiments import plot_comparison
from experiments import plot_data_parallel
from experiments import plot_scaling
from experiments import plot_style

DRAW: Dict[str, Callable] = {
    "mp_scaling_b100": plot_scaling.draw_mp,
    "mp_scaling_b5000": plot_scaling.draw_mp,
    "dp_scaling": plot_scaling.draw_dp,
    "dp_batch_sweep": plot_data_parallel.draw_sweep,
    "dp_op_profile": plot_data_parallel.draw_profile,
    "mp_vs_dp": plot_comparison.draw_mp_vs_dp,
    "accuracy_vs_epochs": plot_accuracy.draw_accuracy,
    "dp_accuracy": plot_accuracy.draw_dp_accuracy,
    "strategy_comparison": plot_comparison.draw_strategy_comparison,
    "convergence": plot_comparison.draw_convergence,
}


def figure_path(output_dir: str, entry: str) -> str:
  """<output_dir>/figures/<entry>.png"""
  return os.path.join(output_dir, "figures", f"{entry}.png")


def draw(output_dir: str, entries: Iterable[str], out: Callable[[str], None] = print) -> List[str]:
  """Draws the figures of `entries` that have records; returns the paths written."""
  os.makedirs(os.path.join(output_dir, "figures"), exist_ok=True)
  written = []
  for entry in entries:
    data = plot_style.EntryData.load(output_dir, entry)
    if data is None:
      out(f"[figures] {entry}: no records yet, no figure")
      continue
    path = figure_path(output_dir, entry)
    plot_style.save(DRAW[entry](data), path)
    out(f"[figures] {entry}: {path} (preset {data.preset}, {len(data.runs)} records)")
    written.append(path)
  return written
